/* Ranks as threads of one process (comm_fixture.h), each with its stream, PAIR_RANKS_PAIRS pairs of
 * device buffers (IN, OUT) and a host buffer of the same size: for suites that issue calls on
 * several buffer pairs back to back and check every element afterwards. */
#ifndef PAIR_RANKS_H
#define PAIR_RANKS_H

#include <pthread.h>
#include <stdlib.h>

#include "common/comm_fixture.h"

#define PAIR_RANKS_PAIRS 3

typedef struct pair_rank {
    HcclComm comm;
    uint32_t rank;
    aclrtStream s;
    int32_t *in[PAIR_RANKS_PAIRS], *out[PAIR_RANKS_PAIRS];
    int32_t *host;
    int calls, bad; /* the suite's counts: calls issued, wrong elements seen */
} pair_rank;

/* One communicator over devices 0..n-1; rank i's buffers of `bytes` each on device i. */
static inline void pair_ranks_open(pair_rank *ranks, uint32_t n, size_t bytes)
{
    HcclComm comms[COMM_FIXTURE_MAX];
    comm_fixture_init_all(n, comms);
    for (uint32_t i = 0; i < n; i++) {
        pair_rank *r = &ranks[i];
        *r = (pair_rank){.comm = comms[i], .rank = i};
        cr_assert_eq(aclrtSetDevice((int32_t)i), ACL_SUCCESS);
        cr_assert_eq(aclrtCreateStream(&r->s), ACL_SUCCESS);
        for (int p = 0; p < PAIR_RANKS_PAIRS; p++) {
            cr_assert_eq(aclrtMalloc((void **)&r->in[p], bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
            cr_assert_eq(aclrtMalloc((void **)&r->out[p], bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
        }
        r->host = malloc(bytes);
        cr_assert_not_null(r->host);
    }
}

/* Runs fn on one thread per rank, with jobs[i] (each job_size bytes) for rank i, and then expects
 * no rank to have seen a wrong element. */
static inline void pair_ranks_run(pair_rank *ranks, uint32_t n, void *(*fn)(void *), void *jobs, size_t job_size)
{
    pthread_t th[COMM_FIXTURE_MAX];
    for (uint32_t i = 0; i < n; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, fn, (char *)jobs + i * job_size), 0);
    for (uint32_t i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    for (uint32_t i = 0; i < n; i++)
        cr_assert_eq(ranks[i].bad, 0, "rank %u: %d wrong elements", i, ranks[i].bad);
}

/* What pair p's IN of `rank` holds at element j after pair_ranks_fill. */
static inline int32_t pair_ranks_value(int p, uint32_t rank, int j)
{
    return p * 1000 + (int32_t)rank * 100 + j;
}

/* Every pair's first `count` elements: IN pair_ranks_value, OUT -1 (r's device is current). */
static inline void pair_ranks_fill(pair_rank *r, int count)
{
    for (int p = 0; p < PAIR_RANKS_PAIRS; p++) {
        size_t bytes = (size_t)count * sizeof *r->host;
        for (int j = 0; j < count; j++)
            r->host[j] = pair_ranks_value(p, r->rank, j);
        cr_assert_eq(aclrtMemcpy(r->in[p], bytes, r->host, bytes, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
        for (int j = 0; j < count; j++)
            r->host[j] = -1;
        cr_assert_eq(aclrtMemcpy(r->out[p], bytes, r->host, bytes, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    }
}

static inline void pair_ranks_close(pair_rank *ranks, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        pair_rank *r = &ranks[i];
        cr_assert_eq(aclrtSetDevice((int32_t)i), ACL_SUCCESS);
        cr_assert_eq(HcclCommDestroy(r->comm), HCCL_SUCCESS);
        for (int p = 0; p < PAIR_RANKS_PAIRS; p++) {
            aclrtFree(r->in[p]);
            aclrtFree(r->out[p]);
        }
        aclrtDestroyStream(r->s);
        free(r->host);
    }
    aclFinalize();
}

#endif
