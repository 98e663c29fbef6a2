/* Staging mode, the calls: a collective runs as plans bound to this communicator's staging buffers
 * (rt_staging.c), so peers only ever address memory imported at init. Each chunk is one launch on
 * the caller's stream: copy user IN -> staging IN, the plan (staging IN -> staging OUT), copy
 * staging OUT -> user OUT, all device work in stream order (rt_prog.c puts the copies in the
 * launch, so they are ordered after the communicator's previous launch like the plan itself).
 *
 * A call larger than a staging buffer is cut into chunks of elements: AllReduce/Reduce/Broadcast
 * take element ranges; AllGather/ReduceScatter/Scatter/AlltoAll take the same range of every
 * rank's block, copied block by block (strided). Every rank computes the same chunks from the
 * same HCCL_BUFFSIZE (checked at init), and each chunk's signature carries the user call's count,
 * so a count mismatch is still reported at the first chunk. V-ops: rt_staging_v.c. */
#include <stdlib.h>

#include "runtime/stream/rt_staging.h"

void rt_stage_copy(hal_dma_desc *d, uint32_t *n, void *dst, const void *src, uint64_t bytes)
{
    if (bytes == 0)
        return;
    d[(*n)++] = (hal_dma_desc){.kind = HAL_DMA_COPY, .dst = hal_ref_ptr(dst), .src = hal_ref_ptr((void *)src),
                               .bytes = bytes};
}

static bool blocks_in(algo_coll coll)
{
    return coll == ALGO_COLL_REDUCE_SCATTER || coll == ALGO_COLL_SCATTER || coll == ALGO_COLL_ALLTOALL;
}

static bool blocks_out(algo_coll coll)
{
    return coll == ALGO_COLL_ALLGATHER || coll == ALGO_COLL_ALLTOALL;
}

/* The copies of the chunk [off, off + len) of a call of `total` elements per block. */
static void chunk_copies(const rt_comm *c, const rt_call *call, uint64_t total, uint64_t off, uint64_t len,
                         rt_stage_copies *sc)
{
    const algo_op *op = &call->op;
    size_t es = hal_dtype_size(op->dtype);
    char *in = call->in, *out = call->out, *sin = c->stage;
    char *sout = op->coll == ALGO_COLL_BROADCAST ? sin : sin + c->stage_half;
    bool root = c->rank == op->root;
    sc->npre = sc->npost = 0;
    if (blocks_in(op->coll)) {
        if (op->coll != ALGO_COLL_SCATTER || root)
            for (uint32_t r = 0; r < c->nranks; r++)
                rt_stage_copy(sc->pre, &sc->npre, sin + r * len * es, in + (r * total + off) * es, len * es);
    } else if (op->coll != ALGO_COLL_BROADCAST || root) {
        rt_stage_copy(sc->pre, &sc->npre, sin, in + off * es, len * es);
    }
    if (blocks_out(op->coll)) {
        for (uint32_t r = 0; r < c->nranks; r++)
            rt_stage_copy(sc->post, &sc->npost, out + (r * total + off) * es, sout + r * len * es, len * es);
    } else if ((op->coll != ALGO_COLL_REDUCE || root) && (op->coll != ALGO_COLL_BROADCAST || !root)) {
        rt_stage_copy(sc->post, &sc->npost, out + off * es, sout, len * es);
    }
}

HcclResult rt_stage_launch(rt_comm *c, const rt_call *call, const algo_op *op, const rt_stage_copies *sc)
{
    rt_call sub = *call;
    sub.op = *op;
    sub.in = c->stage;
    sub.out = rt_staging_peer_buf(c, c->rank, call->op.coll, 1);
    sub.op.in_place = call->op.coll == ALGO_COLL_BROADCAST; /* one buffer; the others stage IN != OUT */
    sub.staged = true;
    sub.sig_count = call->op.count;
    sub.pre = sc->pre;
    sub.post = sc->post;
    sub.npre = sc->npre;
    sub.npost = sc->npost;
    return rt_launch(c, &sub);
}

static HcclResult chunked(rt_comm *c, const rt_call *call, rt_stage_copies *sc)
{
    const algo_op *op = &call->op;
    size_t es = hal_dtype_size(op->dtype);
    uint64_t per = blocks_in(op->coll) || blocks_out(op->coll) ? c->nranks : 1;
    uint64_t cmax = c->stage_half / (es * per), total = op->count;
    CHECK_ARG(cmax > 0, HCCL_E_MEMORY, "staging", "rank %u: a staging buffer of %llu bytes cannot hold one element "
              "of each of %llu blocks of %zu bytes: raise HCCL_BUFFSIZE", c->rank, (unsigned long long)c->stage_half,
              (unsigned long long)per, es);
    uint64_t off = 0;
    do { /* a zero count is one empty launch, as without staging (the op takes its seq) */
        uint64_t len = total - off < cmax ? total - off : cmax;
        chunk_copies(c, call, total, off, len, sc);
        algo_op sub = *op;
        sub.count = len;
        CHECK(rt_stage_launch(c, call, &sub, sc));
        off += len;
    } while (off < total);
    return HCCL_SUCCESS;
}

HcclResult rt_staging_launch(rt_comm *c, rt_call *call)
{
    if (call->cmd == HCCL_CMD_BARRIER) /* on the communicator's scratch: imported at init already */
        return rt_launch(c, call);
    /* Copy lists on the stack for the usual server sizes: no allocation per call. */
    enum { STACK_RANKS = 16 };
    hal_dma_desc stack[2 * STACK_RANKS + 2];
    size_t nd = 2 * (size_t)c->nranks + 2;
    hal_dma_desc *d = c->nranks <= STACK_RANKS ? stack : calloc(nd, sizeof *d);
    CHECK_ARG(d, HCCL_E_MEMORY, "staging", "rank %u: no memory for the %zu staging copies of a call", c->rank, nd);
    rt_stage_copies sc = {d, d + c->nranks + 1, 0, 0};
    HcclResult rc = call->op.counts ? rt_staging_v(c, call, &sc) : chunked(c, call, &sc);
    if (d != stack)
        free(d);
    return rc;
}
