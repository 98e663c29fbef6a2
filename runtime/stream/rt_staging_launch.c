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
 * so a count mismatch is still reported at the first chunk. V-ops are not chunked: they run
 * staged when they fit, else fail with the sizes named. */
#include <stdlib.h>

#include "runtime/rt_internal.h"

typedef struct stage_copies {
    hal_dma_desc *pre, *post;
    uint32_t npre, npost;
} stage_copies;

static void add_copy(hal_dma_desc *d, uint32_t *n, void *dst, const void *src, uint64_t bytes)
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
                         stage_copies *sc)
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
                add_copy(sc->pre, &sc->npre, sin + r * len * es, in + (r * total + off) * es, len * es);
    } else if (op->coll != ALGO_COLL_BROADCAST || root) {
        add_copy(sc->pre, &sc->npre, sin, in + off * es, len * es);
    }
    if (blocks_out(op->coll)) {
        for (uint32_t r = 0; r < c->nranks; r++)
            add_copy(sc->post, &sc->npost, out + (r * total + off) * es, sout + r * len * es, len * es);
    } else if ((op->coll != ALGO_COLL_REDUCE || root) && (op->coll != ALGO_COLL_BROADCAST || !root)) {
        add_copy(sc->post, &sc->npost, out + off * es, sout, len * es);
    }
}

static HcclResult launch_chunk(rt_comm *c, const rt_call *call, uint64_t len, const stage_copies *sc)
{
    rt_call sub = *call;
    sub.op.count = len;
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

static HcclResult chunked(rt_comm *c, const rt_call *call, stage_copies *sc)
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
        CHECK(launch_chunk(c, call, len, sc));
        off += len;
    } while (off < total);
    return HCCL_SUCCESS;
}

/* A V-op's staged extent: IN and OUT as one contiguous range each. Ranks must reach the same
 * verdict (one rank refusing while the others launch would leave them waiting): the tables of
 * AllGatherV, ReduceScatterV and AlltoAllVC are the same on every rank and the check uses what
 * every rank can compute; AlltoAllV's are per rank (docs/ascend.md). */
static uint64_t v_need(const rt_comm *c, const algo_op *op)
{
    uint64_t in = 0, out = 0, need = 0;
    uint32_t first = op->coll == ALGO_COLL_ALLTOALLVC ? 0 : c->rank;
    uint32_t last = op->coll == ALGO_COLL_ALLTOALLVC ? c->nranks : c->rank + 1;
    for (uint32_t q = first; q < last; q++) {
        algo_op o = *op;
        o.rank = q;
        algo_buffer_elems(&o, &in, &out);
        need = in > need ? in : need;
        need = out > need ? out : need;
    }
    if (op->coll == ALGO_COLL_ALLGATHERV || op->coll == ALGO_COLL_REDUCE_SCATTERV) {
        uint32_t n = c->nranks;
        for (uint32_t j = 0; j < n; j++) /* the whole OUT (AllGatherV) / IN (ReduceScatterV) extent */
            if (op->counts[j] && op->counts[n + j] + op->counts[j] > need)
                need = op->counts[n + j] + op->counts[j];
    }
    return need;
}

static HcclResult v_staged(rt_comm *c, const rt_call *call, stage_copies *sc)
{
    const algo_op *op = &call->op;
    uint32_t n = c->nranks;
    size_t es = hal_dtype_size(op->dtype);
    uint64_t need = v_need(c, op), in = 0, out = 0;
    CHECK_ARG(need * es <= c->stage_half, HCCL_E_MEMORY, "staging",
              "rank %u: %s moves up to %llu bytes per buffer but a staging buffer holds %llu (a quarter of "
              "HCCL_BUFFSIZE): V-ops are not cut into chunks; raise HCCL_BUFFSIZE to at least %llu MB", c->rank,
              rt_cmd_name(call->cmd), (unsigned long long)(need * es), (unsigned long long)c->stage_half,
              (unsigned long long)((need * es * 4 + (1u << 20) - 1) >> 20));
    algo_buffer_elems(op, &in, &out);
    char *sin = c->stage, *sout = sin + c->stage_half, *uout = call->out;
    sc->npre = sc->npost = 0;
    add_copy(sc->pre, &sc->npre, sin, call->in, in * es);
    if (op->coll == ALGO_COLL_ALLGATHERV || op->coll == ALGO_COLL_ALLTOALLV) { /* only the blocks received */
        const uint64_t *cnt = op->coll == ALGO_COLL_ALLGATHERV ? op->counts : op->counts + 2 * n;
        for (uint32_t j = 0; j < n; j++)
            add_copy(sc->post, &sc->npost, uout + cnt[n + j] * es, sout + cnt[n + j] * es, cnt[j] * es);
    } else {
        add_copy(sc->post, &sc->npost, uout, sout, out * es);
    }
    rt_call sub = *call;
    sub.in = sin;
    sub.out = sout;
    sub.op.in_place = false;
    sub.staged = true;
    sub.pre = sc->pre;
    sub.post = sc->post;
    sub.npre = sc->npre;
    sub.npost = sc->npost;
    return rt_launch(c, &sub);
}

HcclResult rt_staging_launch(rt_comm *c, rt_call *call)
{
    if (call->cmd == HCCL_CMD_BARRIER) /* on the communicator's scratch: imported at init already */
        return rt_launch(c, call);
    hal_dma_desc *d = calloc(2 * (size_t)c->nranks + 2, sizeof *d);
    if (!d)
        return HCCL_E_MEMORY;
    stage_copies sc = {d, d + c->nranks + 1, 0, 0};
    HcclResult rc = call->op.counts ? v_staged(c, call, &sc) : chunked(c, call, &sc);
    free(d);
    return rc;
}
