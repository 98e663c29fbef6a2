/* Eager sends run ahead (runtime/stream/rt_prog_p2p.c, docs/runtime.md "Point to point"): while a
 * p2p launch waits for its receive, the eager sends of the launches queued after it go out, unless
 * they read a buffer a launch before them still writes. Two ranks as threads of one process. */
#include <criterion/criterion.h>
#include <sched.h>

#include "common/hal_testutil.h"
#include "common/pair_ranks.h"
#include "hal/emu/emu_internal.h"

#define NR 2
#define COUNT 5 /* int32 elements: eager */
#define SENDS 5

static void expect_buf(int32_t *dev, int p, uint32_t from, const char *what)
{
    int32_t h[COUNT];
    cr_assert_eq(aclrtMemcpy(h, sizeof h, dev, sizeof h, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    for (int j = 0; j < COUNT; j++) {
        int32_t want = pair_ranks_value(p, from, j);
        cr_expect_eq(h[j], want, "%s: element %d is %d, want %d", what, j, h[j], want);
    }
}

/* Until the emulator ran `n` prefixes ahead since `before`; false if that never happens (a bound
 * against a hang, not a measure of speed: without running ahead the count never moves). */
static bool ahead_runs_reach(uint64_t before, uint64_t n)
{
    for (long i = 0; i < 20L * 1000 * 1000; i++) {
        if (emu_prog_test_ahead_runs() - before >= n)
            return true;
        sched_yield();
    }
    return false;
}

/* Both ranks' buffers filled; rank 0 queues, behind a gate, a receive from rank 1 into OUT 0 and
 * then SENDS sends to rank 1: of IN k % PAIRS, or (forward) of OUT 0, what the receive writes. */
static void rank0_queues(pair_rank *ranks, ht_gate *gate, bool forward)
{
    for (uint32_t r = 0; r < NR; r++) {
        cr_assert_eq(aclrtSetDevice((int32_t)r), ACL_SUCCESS);
        pair_ranks_fill(&ranks[r], COUNT);
    }
    pair_rank *r0 = &ranks[0];
    ht_gate_init(gate);
    cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
    cr_assert_eq(aclrtLaunchHostFunc(r0->s, ht_gate_fn, gate), ACL_SUCCESS);
    cr_assert_eq(HcclRecv(r0->out[0], COUNT, HCCL_DATA_TYPE_INT32, 1, r0->comm, r0->s), HCCL_SUCCESS);
    for (int k = 0; k < SENDS; k++) {
        int32_t *buf = forward ? r0->out[0] : r0->in[k % PAIR_RANKS_PAIRS];
        cr_assert_eq(HcclSend(buf, COUNT, HCCL_DATA_TYPE_INT32, 1, r0->comm, r0->s), HCCL_SUCCESS, "send %d", k);
    }
}

/* Rank 1 sends its IN `pair` to rank 0 and receives rank 0's sends into OUT k % PAIRS; both ranks
 * synchronize. */
static void rank1_answers(pair_rank *ranks, int pair)
{
    pair_rank *r1 = &ranks[1];
    cr_assert_eq(aclrtSetDevice(1), ACL_SUCCESS);
    cr_assert_eq(HcclSend(r1->in[pair], COUNT, HCCL_DATA_TYPE_INT32, 0, r1->comm, r1->s), HCCL_SUCCESS);
    for (int k = 0; k < SENDS; k++)
        cr_assert_eq(HcclRecv(r1->out[k % PAIR_RANKS_PAIRS], COUNT, HCCL_DATA_TYPE_INT32, 0, r1->comm, r1->s),
                     HCCL_SUCCESS, "receive %d", k);
    for (uint32_t r = 0; r < NR; r++) {
        cr_assert_eq(aclrtSetDevice((int32_t)r), ACL_SUCCESS);
        cr_assert_eq(aclrtSynchronizeStream(ranks[r].s), ACL_SUCCESS, "rank %u", r);
    }
}

/* Once the gate opens, rank 0's receive waits (rank 1 has sent nothing yet): its sends go out
 * meanwhile, and only then does rank 1 send and receive. In order, they would wait for it. */
Test(p2p_ahead, eager_sends_pass_a_waiting_receive, .timeout = 120)
{
    pair_rank ranks[NR];
    ht_gate gate;
    pair_ranks_open(ranks, NR, COUNT * sizeof(int32_t));
    rank0_queues(ranks, &gate, false);
    uint64_t before = emu_prog_test_ahead_runs();
    ht_gate_open(&gate);
    cr_expect(ahead_runs_reach(before, SENDS), "rank 0's sends did not run ahead of its receive (%llu of %d)",
              (unsigned long long)(emu_prog_test_ahead_runs() - before), SENDS);
    rank1_answers(ranks, 0);
    expect_buf(ranks[0].out[0], 0, 1, "rank 0's receive");
    for (int p = 0; p < PAIR_RANKS_PAIRS; p++) /* the last send into each OUT came from IN p */
        expect_buf(ranks[1].out[p], p, 0, "rank 1's receives");
    ht_gate_fini(&gate);
    pair_ranks_close(ranks, NR);
}

/* The same, but rank 0's sends read the buffer its receive writes: they wait for it, and send
 * what it received. */
Test(p2p_ahead, a_send_of_what_the_receive_before_writes_waits, .timeout = 120)
{
    pair_rank ranks[NR];
    ht_gate gate;
    pair_ranks_open(ranks, NR, COUNT * sizeof(int32_t));
    rank0_queues(ranks, &gate, true);
    ht_gate_open(&gate);
    rank1_answers(ranks, 2);
    for (int p = 0; p < PAIR_RANKS_PAIRS; p++) /* rank 1's IN 2 came back every time */
        expect_buf(ranks[1].out[p], 2, 1, "what rank 0 forwarded");
    ht_gate_fini(&gate);
    pair_ranks_close(ranks, NR);
}
