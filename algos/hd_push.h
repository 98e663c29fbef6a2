/* Internal to algos/: the halving-doubling inter stage (hd_push.c), copy-only across servers. */
#ifndef ALGOS_HD_PUSH_H
#define ALGOS_HD_PUSH_H

#include "algos/push.h"

typedef struct algo_hd {
    const uint32_t *group; /* [S] the members, by index */
    uint32_t S, i;         /* members, my index */
    uint32_t stream;
    uint64_t base, maxlen; /* my SCRATCH slots from element base; the largest slice (elements) */
    uint32_t round, rounds;
} algo_hd;

/* SCRATCH elements the slots need for slices of at most maxlen elements among S members. */
uint64_t algo_hd_scratch_elems(uint64_t maxlen, uint32_t S);
/* Allreduce of OUT[off, off + len) among the members, in place in OUT (round h->round of h->rounds:
 * every member calls it once per round, with the same maxlen). */
void algo_hd_allreduce(algo_b *b, const algo_hd *h, uint64_t off, uint64_t len);

#endif
