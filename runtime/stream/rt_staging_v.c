/* Staging mode, V-ops. A chunk takes the element range [off, off + cmax) of every block (cmax:
 * a staging buffer holds one such range of every rank's block), so its V tables are the call's
 * clamped to that range, with the blocks packed in staging at a stride of cmax (AllGatherV,
 * ReduceScatterV) or back to back (AlltoAllVC's layout). The number of chunks comes from the
 * largest block, which every rank knows for these three: their tables are the same on every
 * rank. AlltoAllV's are not (each rank has its own row and column), so ranks could not agree on
 * a number of chunks without a message: it runs staged when it fits, else fails naming the sizes
 * (docs/ascend.md). */
#include <stdlib.h>

#include "runtime/stream/rt_staging.h"

static uint64_t clamp(uint64_t count, uint64_t off, uint64_t cmax)
{
    return count <= off ? 0 : count - off < cmax ? count - off : cmax;
}

/* AllGatherV (counts = recv counts, displs) and ReduceScatterV (send counts, displs): t gets the
 * chunk's tables, sc its copies. */
static void gv_chunk(const rt_comm *c, const rt_call *call, uint64_t off, uint64_t cmax, uint64_t *t,
                     rt_stage_copies *sc)
{
    uint32_t n = c->nranks;
    size_t es = hal_dtype_size(call->op.dtype);
    const uint64_t *cnt = call->op.counts, *dsp = call->op.counts + n;
    char *in = call->in, *out = call->out, *sin = c->stage, *sout = sin + c->stage_half;
    for (uint32_t j = 0; j < n; j++) {
        t[j] = clamp(cnt[j], off, cmax);
        t[n + j] = j * cmax;
    }
    sc->npre = sc->npost = 0;
    if (call->op.coll == ALGO_COLL_ALLGATHERV) {
        rt_stage_copy(sc->pre, &sc->npre, sin, in + off * es, t[c->rank] * es);
        for (uint32_t j = 0; j < n; j++)
            rt_stage_copy(sc->post, &sc->npost, out + (dsp[j] + off) * es, sout + t[n + j] * es, t[j] * es);
    } else {
        for (uint32_t j = 0; j < n; j++)
            rt_stage_copy(sc->pre, &sc->npre, sin + t[n + j] * es, in + (dsp[j] + off) * es, t[j] * es);
        rt_stage_copy(sc->post, &sc->npost, out + off * es, sout, t[c->rank] * es);
    }
}

/* AlltoAllVC: m[i*n+j] elements from rank i to rank j, packed in send and receive order. */
static void vc_chunk(const rt_comm *c, const rt_call *call, uint64_t off, uint64_t cmax, uint64_t *t,
                     rt_stage_copies *sc)
{
    uint32_t n = c->nranks, r = c->rank;
    size_t es = hal_dtype_size(call->op.dtype);
    const uint64_t *m = call->op.counts;
    char *in = call->in, *out = call->out, *sin = c->stage, *sout = sin + c->stage_half;
    for (size_t k = 0; k < (size_t)n * n; k++)
        t[k] = clamp(m[k], off, cmax);
    sc->npre = sc->npost = 0;
    uint64_t uso = 0, sso = 0, uro = 0, sro = 0; /* user / staging offsets, send and receive side */
    for (uint32_t j = 0; j < n; j++) {
        rt_stage_copy(sc->pre, &sc->npre, sin + sso * es, in + (uso + off) * es, t[(size_t)r * n + j] * es);
        uso += m[(size_t)r * n + j];
        sso += t[(size_t)r * n + j];
        rt_stage_copy(sc->post, &sc->npost, out + (uro + off) * es, sout + sro * es, t[(size_t)j * n + r] * es);
        uro += m[(size_t)j * n + r];
        sro += t[(size_t)j * n + r];
    }
}

/* AlltoAllV, not chunked: IN and OUT staged whole (their extents), received blocks copied out. */
static HcclResult a2av(rt_comm *c, const rt_call *call, rt_stage_copies *sc)
{
    uint32_t n = c->nranks;
    size_t es = hal_dtype_size(call->op.dtype);
    uint64_t in = 0, out = 0;
    algo_buffer_elems(&call->op, &in, &out);
    uint64_t need = (in > out ? in : out) * es;
    CHECK_ARG(need <= c->stage_half, HCCL_E_MEMORY, "staging",
              "rank %u: HcclAlltoAllV moves up to %llu bytes per buffer here but a staging buffer holds %llu (a "
              "quarter of HCCL_BUFFSIZE) and AlltoAllV is not cut into chunks: raise HCCL_BUFFSIZE to at least %llu MB "
              "on every rank", c->rank, (unsigned long long)need, (unsigned long long)c->stage_half,
              (unsigned long long)((need * 4 + (1u << 20) - 1) >> 20));
    const uint64_t *rc = call->op.counts + 2 * (size_t)n, *rd = call->op.counts + 3 * (size_t)n;
    char *sin = c->stage, *sout = sin + c->stage_half;
    sc->npre = sc->npost = 0;
    rt_stage_copy(sc->pre, &sc->npre, sin, call->in, in * es);
    for (uint32_t j = 0; j < n; j++)
        rt_stage_copy(sc->post, &sc->npost, (char *)call->out + rd[j] * es, sout + rd[j] * es, rc[j] * es);
    algo_op op = call->op;
    op.in_place = false;
    return rt_stage_launch(c, call, &op, sc);
}

HcclResult rt_staging_v(rt_comm *c, const rt_call *call, rt_stage_copies *sc)
{
    if (call->op.coll == ALGO_COLL_ALLTOALLV)
        return a2av(c, call, sc);
    uint32_t n = c->nranks;
    size_t es = hal_dtype_size(call->op.dtype);
    bool vc = call->op.coll == ALGO_COLL_ALLTOALLVC;
    size_t nt = vc ? (size_t)n * n : 2 * (size_t)n;
    uint64_t cmax = c->stage_half / (es * n), biggest = 0;
    CHECK_ARG(cmax > 0, HCCL_E_MEMORY, "staging", "rank %u: a staging buffer of %llu bytes cannot hold one element "
              "of each of %u blocks of %zu bytes: raise HCCL_BUFFSIZE", c->rank, (unsigned long long)c->stage_half,
              n, es);
    for (size_t k = 0; k < (vc ? nt : n); k++)
        biggest = call->op.counts[k] > biggest ? call->op.counts[k] : biggest;
    uint64_t *t = malloc(nt * sizeof *t);
    if (!t)
        return HCCL_E_MEMORY;
    HcclResult rc = HCCL_SUCCESS;
    uint64_t off = 0;
    do { /* all blocks empty: one empty launch, as without staging */
        if (vc)
            vc_chunk(c, call, off, cmax, t, sc);
        else
            gv_chunk(c, call, off, cmax, t, sc);
        algo_op op = call->op;
        op.counts = t;
        op.in_place = false;
        rc = rt_stage_launch(c, call, &op, sc);
        off += cmax;
    } while (rc == HCCL_SUCCESS && off < biggest);
    free(t);
    return rc;
}
