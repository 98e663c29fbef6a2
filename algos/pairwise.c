/* Pairwise AlltoAll(V/VC): at step k rank i writes its block for (i+k)%n straight into that
 * rank's OUT, then waits for the block from (i-k)%n before the next step. One peer per step keeps
 * every receiver's ingress to a single sender (no incast), which is why HCCL uses it on RDMA. */
#include "algos/algo_build.h"

/* ALLTOALLV/VC plans are independent of the counts (algo_counts_symbolic): sizes and my own
 * offsets are entries of this call's V tables, the offset in a peer's OUT is the recv
 * displacement it published for me (`vdispl = me`, checked by FETCH against what I send). So one
 * cached plan serves every call, whatever its counts. AlltoAll keeps plain offsets. */
static bool a2a_symbolic(const algo_b *b)
{
    return algo_counts_symbolic(b->op->coll);
}

/* The block to myself, a local copy. */
static void a2a_self(algo_b *b, uint32_t s)
{
    const algo_op *op = b->op;
    uint32_t r = b->r;
    if (a2a_symbolic(b)) {
        algo_b_copy_v(b, s, algo_ref_v(algo_b_ref(b, ALGO_BUF_OUT, r, 0), algo_vs(ALGO_VT_RDISPL, r)),
                      algo_ref_v(algo_b_ref(b, ALGO_BUF_IN, r, 0), algo_vs(ALGO_VT_DISPL, r)),
                      algo_vs(ALGO_VT_COUNT, r));
        return;
    }
    algo_b_copy(b, s, algo_b_ref(b, ALGO_BUF_OUT, r, algo_a2a_recv_off(op, r, r)),
                algo_b_ref(b, ALGO_BUF_IN, r, algo_a2a_send_off(op, r, r)), algo_a2a_len(op, r, r));
}

void algo_a2a_send(algo_b *b, uint32_t s, uint32_t j)
{
    const algo_op *op = b->op;
    if (a2a_symbolic(b)) {
        algo_ref dst = algo_b_ref(b, ALGO_BUF_OUT, j, 0);
        dst.vdispl = (int32_t)b->r;
        algo_b_copy_v(b, s, dst, algo_ref_v(algo_b_ref(b, ALGO_BUF_IN, b->r, 0), algo_vs(ALGO_VT_DISPL, j)),
                      algo_vs(ALGO_VT_COUNT, j));
    } else {
        algo_b_copy(b, s, algo_b_ref(b, ALGO_BUF_OUT, j, algo_a2a_recv_off(op, b->r, j)),
                    algo_b_ref(b, ALGO_BUF_IN, b->r, algo_a2a_send_off(op, b->r, j)), algo_a2a_len(op, b->r, j));
    }
    algo_b_signal(b, s, j, ALGO_SLOT_DATA);
}

void algo_a2a_pairwise_body(algo_b *b)
{
    uint32_t n = b->n, r = b->r;
    algo_b_fetch_all(b);
    algo_b_prologue(b);
    a2a_self(b, 0);
    for (uint32_t k = 1; k < n; k++) {
        algo_a2a_send(b, 0, (r + k) % n);
        algo_b_wait(b, 0, (r + n - k) % n, ALGO_SLOT_DATA);
    }
}

void algo_a2a_self(algo_b *b, uint32_t s)
{
    a2a_self(b, s);
}

int algo_pairwise_build(algo_b *b)
{
    switch (b->op->coll) {
    case ALGO_COLL_ALLTOALL:
    case ALGO_COLL_ALLTOALLV:
    case ALGO_COLL_ALLTOALLVC:
        if (b->op->in_place)
            return HAL_E_NOT_SUPPORTED;
        algo_a2a_pairwise_body(b);
        return 0;
    default:
        return HAL_E_NOT_SUPPORTED;
    }
}
