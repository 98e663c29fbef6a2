/* Fan-outs (runtime/stream/rt_fanout.c, hal/emu/emu_dma.c): where the backend runs copies of one
 * source in a row as one pass over it, a mesh plan's copies of one source into every peer
 * (AllGather's block, AllReduce's reduced slice, a rank's slice of a Broadcast root's buffer) are
 * put in a row on stream 0 and read their source once. Ranks are threads of this process
 * (HcclCommInitAll), so the emulator's process-wide count of fan-outs sees every rank: each call
 * must fan out exactly where it should (Scatter and AlltoAll copy other sources to each peer:
 * never), and every output must be right. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#include "common/comm_fixture.h"
#include "hal/emu/emu_internal.h"

#define NRANKS 4
#define COUNT (1u << 20) /* int32 per rank: 4 MiB blocks, 1 MiB AllReduce and Broadcast slices */

typedef enum { C_ALLGATHER, C_ALLGATHER_IN_PLACE, C_ALLREDUCE, C_BROADCAST, C_SCATTER, C_ALLTOALL } coll;

typedef struct rank_t {
    HcclComm comm;
    uint32_t rank;
    coll what;
    int bad;
} rank_t;

static int32_t value(uint32_t rank, uint64_t j)
{
    return (int32_t)(rank * 1000003u + (uint32_t)j * 7u);
}

/* Element j of rank r's output after the collective (inputs: value(q, j) on rank q, over the
 * whole IN: COUNT, or NRANKS x COUNT for Scatter's root and AlltoAll). */
static int32_t want(coll what, uint32_t r, uint64_t j)
{
    switch (what) {
    case C_ALLGATHER:
    case C_ALLGATHER_IN_PLACE: return value((uint32_t)(j / COUNT), j % COUNT);
    case C_ALLREDUCE: {
        int32_t sum = 0;
        for (uint32_t q = 0; q < NRANKS; q++)
            sum += value(q, j);
        return sum;
    }
    case C_BROADCAST: return value(0, j);
    case C_SCATTER: return value(0, (uint64_t)r * COUNT + j);
    case C_ALLTOALL: return value((uint32_t)(j / COUNT), (uint64_t)r * COUNT + j % COUNT);
    }
    return 0;
}

static uint64_t out_count(coll what)
{
    return what == C_ALLGATHER || what == C_ALLGATHER_IN_PLACE || what == C_ALLTOALL ? (uint64_t)NRANKS * COUNT
                                                                                      : COUNT;
}

static HcclResult issue(rank_t *r, void *in, void *out, aclrtStream s)
{
    HcclDataType t = HCCL_DATA_TYPE_INT32;
    switch (r->what) {
    case C_ALLGATHER: return HcclAllGather(in, out, COUNT, t, r->comm, s);
    case C_ALLGATHER_IN_PLACE:
        return HcclAllGather((int32_t *)out + (size_t)r->rank * COUNT, out, COUNT, t, r->comm, s);
    case C_ALLREDUCE: return HcclAllReduce(in, out, COUNT, t, HCCL_REDUCE_SUM, r->comm, s);
    case C_BROADCAST: return HcclBroadcast(r->rank == 0 ? in : out, COUNT, t, 0, r->comm, s);
    case C_SCATTER: return HcclScatter(in, out, COUNT, t, 0, r->comm, s);
    case C_ALLTOALL: return HcclAlltoAll(in, COUNT, t, out, COUNT, t, r->comm, s);
    }
    return HCCL_E_PARA;
}

static void *rank_main(void *arg)
{
    rank_t *r = arg;
    size_t in_n = (size_t)NRANKS * COUNT, out_n = out_count(r->what);
    int32_t *h = malloc(in_n * sizeof *h);
    void *in, *out;
    aclrtStream s;
    cr_assert(h);
    cr_assert_eq(aclrtSetDevice((int32_t)r->rank), ACL_SUCCESS);
    cr_assert_eq(aclrtCreateStream(&s), ACL_SUCCESS);
    cr_assert_eq(aclrtMalloc(&in, in_n * sizeof *h, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    cr_assert_eq(aclrtMalloc(&out, in_n * sizeof *h, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    for (size_t j = 0; j < in_n; j++)
        h[j] = value(r->rank, j);
    cr_assert_eq(aclrtMemcpy(in, in_n * sizeof *h, h, in_n * sizeof *h, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    if (r->what == C_ALLGATHER_IN_PLACE) /* my block already in place */
        cr_assert_eq(aclrtMemcpy((int32_t *)out + (size_t)r->rank * COUNT, COUNT * sizeof *h, h, COUNT * sizeof *h,
                                 ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    cr_assert_eq(issue(r, in, out, s), HCCL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
    const void *res = r->what == C_BROADCAST && r->rank == 0 ? in : out;
    cr_assert_eq(aclrtMemcpy(h, out_n * sizeof *h, res, out_n * sizeof *h, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    for (size_t j = 0; j < out_n && r->bad < 3; j++)
        if (h[j] != want(r->what, r->rank, j)) {
            cr_log_error("rank %u collective %d: element %zu is %d, want %d", r->rank, (int)r->what, j, h[j],
                         want(r->what, r->rank, j));
            r->bad++;
        }
    cr_assert_eq(aclrtFree(in), ACL_SUCCESS);
    cr_assert_eq(aclrtFree(out), ACL_SUCCESS);
    cr_assert_eq(aclrtDestroyStream(s), ACL_SUCCESS);
    free(h);
    return NULL;
}

/* One call of `what` on every rank; returns the fan-outs the emulator ran. */
static uint64_t run(HcclComm *comms, coll what)
{
    rank_t ranks[NRANKS];
    pthread_t th[NRANKS];
    uint64_t before = emu_dma_test_fanouts();
    for (uint32_t i = 0; i < NRANKS; i++) {
        ranks[i] = (rank_t){comms[i], i, what, 0};
        cr_assert_eq(pthread_create(&th[i], NULL, rank_main, &ranks[i]), 0);
    }
    for (uint32_t i = 0; i < NRANKS; i++) {
        pthread_join(th[i], NULL);
        cr_expect_eq(ranks[i].bad, 0, "rank %u: collective %d computed wrong values", i, (int)what);
    }
    return emu_dma_test_fanouts() - before;
}

Test(launch_fanout, mesh_copies_of_one_source_fan_out, .timeout = 120)
{
    const char *noprog = getenv("HCCL_EMU_NO_PROG");
    if (noprog && *noprog && strcmp(noprog, "0") != 0)
        cr_skip_test("HCCL_EMU_NO_PROG is set: one task per instruction, so nothing runs in a row to fan out");
    HcclComm comms[NRANKS];
    comm_fixture_init_all(NRANKS, comms);
    /* Each rank: its block (and, out of place, its own copy first) into every peer, one fan-out. */
    cr_expect_eq(run(comms, C_ALLGATHER), NRANKS, "AllGather out of place: a fan-out per rank");
    cr_expect_eq(run(comms, C_ALLGATHER_IN_PLACE), NRANKS, "AllGather in place: a fan-out per rank");
    cr_expect_eq(run(comms, C_ALLREDUCE), NRANKS, "AllReduce: each rank's reduced slice into every peer");
    cr_expect_eq(run(comms, C_BROADCAST), NRANKS, "Broadcast: each rank's slice of the root's buffer into every "
                                                  "receiver");
    cr_expect_eq(run(comms, C_SCATTER), 0u, "Scatter: another block to each peer, no fan-out");
    cr_expect_eq(run(comms, C_ALLTOALL), 0u, "AlltoAll: another block to each peer, no fan-out");
    for (uint32_t i = 0; i < NRANKS; i++)
        cr_expect_eq(HcclCommDestroy(comms[i]), HCCL_SUCCESS);
}
