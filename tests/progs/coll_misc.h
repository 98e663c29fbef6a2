/* coll_misc: scenarios beyond element-wise correctness (stream ordering, overlap, plan reuse,
 * two communicators, barrier ordering, mismatches, bad input). Each returns 0 on success. */
#ifndef COLL_MISC_H
#define COLL_MISC_H

#include "prog_common.h"

#include <pthread.h>

/* A host function that blocks its stream until released (or a 30 s safety timeout, reported). */
typedef struct hold {
    pthread_mutex_t m;
    pthread_cond_t cv;
    int entered, released, timed_out;
} hold;

void hold_init(hold *h);
void hold_fn(void *arg); /* aclrtHostFunc */
void hold_wait_entered(hold *h);
void hold_release(hold *h);

int64_t now_ns(void);

/* Prints "FAIL: ..." and sets the caller's `bad` when cond holds. */
#define FAILIF(cond, ...)                                                                   \
    do {                                                                                   \
        if (cond) {                                                                        \
            printf("FAIL: " __VA_ARGS__);                                                  \
            printf("\n");                                                                  \
            bad = 1;                                                                       \
        }                                                                                  \
    } while (0)


int misc_mismatch(prog_env *e, const char *kind);
int misc_badinput(prog_env *e);
int misc_twostreams(prog_env *e);
int misc_framework(prog_env *e); /* coll_streams.c */
int misc_framework_lean(prog_env *e); /* coll_streams.c */
int misc_eagerseq(prog_env *e); /* coll_eager.c */
int misc_deepqueue(prog_env *e); /* coll_eager.c */
int misc_onewayseq(prog_env *e); /* coll_eager.c */
int misc_onewayreduce(prog_env *e); /* coll_eager.c */
int misc_eagerchain(prog_env *e); /* coll_eager.c */
int misc_randomseq(prog_env *e, const char *seed, bool can_recreate); /* coll_random.c */
int misc_random_threads(const char *spec);         /* coll_random.c: "N-random-SEED" */

#endif
