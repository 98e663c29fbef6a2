/* Pairwise AlltoAll(V/VC): at step k rank i writes its block for (i+k)%n straight into that
 * rank's OUT, then waits for the block from (i-k)%n before the next step. One peer per step keeps
 * every receiver's ingress to a single sender (no incast), which is why HCCL uses it on RDMA. */
#include "algos/algo_build.h"

/* Destination of my block for rank j in j's OUT. ALLTOALLV: only j knows where (its recv displs),
 * so the ref names j's published displacement number `me` and the offset is 0. */
static algo_ref a2a_dst(const algo_b *b, uint32_t j)
{
    if (b->op->coll == ALGO_COLL_ALLTOALLV) {
        algo_ref ref = algo_b_ref(b, ALGO_BUF_OUT, j, 0);
        ref.vdispl = (int32_t)b->r;
        return ref;
    }
    return algo_b_ref(b, ALGO_BUF_OUT, j, algo_a2a_recv_off(b->op, b->r, j));
}

/* The block to myself, a local copy (ALLTOALLV: my own recv displacement is in my counts). */
static void a2a_self(algo_b *b, uint32_t s)
{
    const algo_op *op = b->op;
    uint32_t r = b->r;
    algo_b_copy(b, s, algo_b_ref(b, ALGO_BUF_OUT, r, algo_a2a_recv_off(op, r, r)),
                algo_b_ref(b, ALGO_BUF_IN, r, algo_a2a_send_off(op, r, r)), algo_a2a_len(op, r, r));
}

void algo_a2a_send(algo_b *b, uint32_t s, uint32_t j)
{
    const algo_op *op = b->op;
    algo_b_copy(b, s, a2a_dst(b, j), algo_b_ref(b, ALGO_BUF_IN, b->r, algo_a2a_send_off(op, b->r, j)),
                algo_a2a_len(op, b->r, j));
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
