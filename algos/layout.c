/* What each collective's IN and OUT hold, in elements: block layouts, buffer extents and the
 * validation of an op descriptor. The compilers and the verifier's reference both use these. */
#include "algos/algo_build.h"
#include "common/oh_check.h"

#include <string.h>

static bool is_v(const algo_op *op)
{
    return op->coll == ALGO_COLL_ALLGATHERV || op->coll == ALGO_COLL_REDUCE_SCATTERV;
}

uint64_t algo_blk_off(const algo_op *op, uint32_t j)
{
    return is_v(op) ? op->counts[op->nranks + j] : (uint64_t)j * op->count;
}

uint64_t algo_blk_len(const algo_op *op, uint32_t j)
{
    return is_v(op) ? op->counts[j] : op->count;
}

uint64_t algo_a2a_len(const algo_op *op, uint32_t i, uint32_t j)
{
    uint32_t n = op->nranks;
    switch (op->coll) {
    case ALGO_COLL_ALLTOALLVC:
        return op->counts[(uint64_t)i * n + j];
    case ALGO_COLL_ALLTOALLV: /* [sc, sd, rc, rd] of op->rank */
        return i == op->rank ? op->counts[j] : op->counts[2 * n + i];
    default:
        return op->count;
    }
}

uint64_t algo_a2a_send_off(const algo_op *op, uint32_t i, uint32_t j)
{
    uint32_t n = op->nranks;
    uint64_t off = 0;
    switch (op->coll) {
    case ALGO_COLL_ALLTOALLVC:
        for (uint32_t k = 0; k < j; k++)
            off += op->counts[(uint64_t)i * n + k];
        return off;
    case ALGO_COLL_ALLTOALLV:
        return op->counts[n + j];
    default:
        return (uint64_t)j * op->count;
    }
}

uint64_t algo_a2a_recv_off(const algo_op *op, uint32_t i, uint32_t j)
{
    uint32_t n = op->nranks;
    uint64_t off = 0;
    switch (op->coll) {
    case ALGO_COLL_ALLTOALLVC:
        for (uint32_t k = 0; k < i; k++)
            off += op->counts[(uint64_t)k * n + j];
        return off;
    case ALGO_COLL_ALLTOALLV:
        return op->counts[3 * n + i];
    default:
        return (uint64_t)i * op->count;
    }
}

bool algo_counts_symbolic(algo_coll coll)
{
    return coll == ALGO_COLL_ALLTOALLV || coll == ALGO_COLL_ALLTOALLVC || coll == ALGO_COLL_ALLGATHERV ||
           coll == ALGO_COLL_REDUCE_SCATTERV;
}

uint64_t algo_vt_entry(const algo_op *op, algo_vsym sym)
{
    uint32_t n = op->nranks, r = op->rank, i = sym.idx;
    if (!sym.tab || sym.tab >= ALGO_VT_NTABS || i >= n || !op->counts)
        return 0;
    uint64_t acc = 0;
    switch (op->coll) {
    case ALGO_COLL_ALLTOALLV: /* [sc, sd, rc, rd]: the tables in order */
        return op->counts[(size_t)(sym.tab - 1) * n + i];
    case ALGO_COLL_ALLTOALLVC:
        switch (sym.tab) {
        case ALGO_VT_COUNT: return algo_a2a_len(op, r, i);
        case ALGO_VT_RCOUNT: return algo_a2a_len(op, i, r);
        case ALGO_VT_DISPL:
            for (uint32_t k = 0; k < i; k++)
                acc += algo_a2a_len(op, r, k);
            return acc;
        default:
            for (uint32_t k = 0; k < i; k++)
                acc += algo_a2a_len(op, k, r);
            return acc;
        }
    case ALGO_COLL_ALLGATHERV:
    case ALGO_COLL_REDUCE_SCATTERV:
        return sym.tab == ALGO_VT_COUNT ? op->counts[i] : sym.tab == ALGO_VT_DISPL ? op->counts[n + i] : 0;
    default:
        return 0;
    }
}

void algo_vtables(const algo_op *op, uint64_t *vt)
{
    uint32_t n = op->nranks, r = op->rank;
    uint64_t *cnt = vt, *dsp = vt + n, *rcnt = vt + 2 * (size_t)n, *rdsp = vt + 3 * (size_t)n;
    memset(vt, 0, 4 * (size_t)n * sizeof *vt);
    if (!op->counts)
        return;
    switch (op->coll) {
    case ALGO_COLL_ALLTOALLV:
        memcpy(vt, op->counts, 4 * (size_t)n * sizeof *vt);
        return;
    case ALGO_COLL_ALLTOALLVC: /* prefix sums in O(n), not one O(n) sum per entry */
        for (uint32_t k = 0; k < n; k++) {
            cnt[k] = op->counts[(size_t)r * n + k];
            rcnt[k] = op->counts[(size_t)k * n + r];
            dsp[k] = k ? dsp[k - 1] + cnt[k - 1] : 0;
            rdsp[k] = k ? rdsp[k - 1] + rcnt[k - 1] : 0;
        }
        return;
    case ALGO_COLL_ALLGATHERV:
    case ALGO_COLL_REDUCE_SCATTERV:
        memcpy(vt, op->counts, 2 * (size_t)n * sizeof *vt);
        return;
    default:
        return;
    }
}

static uint32_t counts_needed(const algo_op *op);

static uint64_t max_end(const uint64_t *cnt, const uint64_t *dsp, uint32_t n)
{
    uint64_t m = 0;
    for (uint32_t j = 0; j < n; j++)
        if (cnt[j] && dsp[j] + cnt[j] > m)
            m = dsp[j] + cnt[j];
    return m;
}

static void p2p_elems(const algo_op *op, uint64_t *in, uint64_t *out)
{
    size_t esz = hal_dtype_size(op->dtype);
    for (uint32_t k = 0; k < op->nitems; k++) {
        const algo_p2p_item *it = &op->items[k];
        uint64_t end = (esz ? it->offset / esz : 0) + it->count;
        uint64_t *m = it->is_send ? in : out;
        if (it->count && end > *m)
            *m = end;
    }
}

void algo_buffer_elems(const algo_op *op, uint64_t *in_elems, uint64_t *out_elems)
{
    uint32_t n = op->nranks, r = op->rank;
    uint64_t in = 0, out = 0, c = op->count;
    switch (op->counts || !counts_needed(op) ? op->coll : ALGO_COLL_COUNT) { /* no counts: unknown */
    case ALGO_COLL_ALLREDUCE:
    case ALGO_COLL_BROADCAST:
        in = out = c;
        break;
    case ALGO_COLL_REDUCE:
        in = c;
        out = r == op->root ? c : 0;
        break;
    case ALGO_COLL_ALLGATHER:
        in = c;
        out = c * n;
        break;
    case ALGO_COLL_REDUCE_SCATTER:
        in = c * n;
        out = c;
        break;
    case ALGO_COLL_SCATTER:
        in = r == op->root ? c * n : 0;
        out = c;
        break;
    case ALGO_COLL_ALLTOALL:
        in = out = c * n;
        break;
    case ALGO_COLL_ALLTOALLV:
        in = max_end(op->counts, op->counts + n, n);
        out = max_end(op->counts + 2 * n, op->counts + 3 * n, n);
        break;
    case ALGO_COLL_ALLTOALLVC:
        for (uint32_t j = 0; j < n; j++) {
            in += op->counts[(uint64_t)r * n + j];
            out += op->counts[(uint64_t)j * n + r];
        }
        break;
    case ALGO_COLL_ALLGATHERV:
        in = op->counts[r];
        out = max_end(op->counts, op->counts + n, n);
        break;
    case ALGO_COLL_REDUCE_SCATTERV:
        in = max_end(op->counts, op->counts + n, n);
        out = op->counts[r];
        break;
    case ALGO_COLL_SENDRECV:
        p2p_elems(op, &in, &out);
        break;
    default:
        break;
    }
    *in_elems = in;
    *out_elems = out;
}

uint64_t algo_plan_scratch(const algo_plan *plan, const algo_op *op)
{
    uint64_t elems = 0, esz = hal_dtype_size(op->dtype);
    for (uint32_t j = 0; plan->vscratch && j < op->nranks; j++) {
        uint64_t cnt = algo_vt_entry(op, algo_vs(ALGO_VT_COUNT, j)), end = cnt;
        if (plan->vscratch == ALGO_VSCR_EXTENT && cnt) /* an empty block's displacement may be anything */
            end += algo_vt_entry(op, algo_vs(ALGO_VT_DISPL, j));
        if (end > elems)
            elems = end;
    }
    return elems * esz > plan->scratch_bytes ? elems * esz : plan->scratch_bytes;
}

static uint32_t counts_needed(const algo_op *op)
{
    uint32_t n = op->nranks;
    switch (op->coll) {
    case ALGO_COLL_ALLTOALLV: return 4 * n;
    case ALGO_COLL_ALLTOALLVC: return n * n;
    case ALGO_COLL_ALLGATHERV:
    case ALGO_COLL_REDUCE_SCATTERV: return 2 * n;
    default: return 0;
    }
}

/* Rejects what no compiler can turn into a sane plan; every element/byte offset a plan computes
 * stays below 2^63 once this passes. */
int algo_op_check(const algo_op *op)
{
    const uint64_t lim = (uint64_t)1 << 62;
    CHECK_ARG(op && op->nranks >= 1 && op->nranks <= (1u << 20), HAL_E_PARAM, "algos", "bad nranks");
    CHECK_ARG(op->rank < op->nranks, HAL_E_PARAM, "algos", "rank %u >= nranks %u", op->rank, op->nranks);
    CHECK_ARG((unsigned)op->coll < ALGO_COLL_COUNT, HAL_E_PARAM, "algos", "bad collective %d", (int)op->coll);
    size_t esz = hal_dtype_size(op->dtype);
    CHECK_ARG(esz, HAL_E_PARAM, "algos", "bad dtype %d", (int)op->dtype);
    CHECK_ARG((unsigned)op->redop < HAL_OP_COUNT, HAL_E_PARAM, "algos", "bad reduce op %d", (int)op->redop);
    CHECK_ARG(op->root < op->nranks, HAL_E_PARAM, "algos", "root %u >= nranks %u", op->root, op->nranks);
    uint32_t need = counts_needed(op);
    if (need && !op->counts && algo_counts_symbolic(op->coll))
        need = 0; /* compiled for any counts */
    CHECK_ARG(!need || (op->counts && op->ncounts >= need), HAL_E_PARAM, "algos",
              "%s needs %u counts, got %u", algo_coll_name(op->coll), need, op->counts ? op->ncounts : 0);
    for (uint32_t k = 0; k < need; k++)
        CHECK_ARG(op->counts[k] < lim / esz / op->nranks, HAL_E_PARAM, "algos", "count %u too large", k);
    CHECK_ARG(op->count < lim / esz / op->nranks, HAL_E_PARAM, "algos", "count too large");
    if (op->coll == ALGO_COLL_SENDRECV) {
        CHECK_ARG(!op->nitems || op->items, HAL_E_PARAM, "algos", "items missing");
        for (uint32_t k = 0; k < op->nitems; k++) {
            const algo_p2p_item *it = &op->items[k];
            CHECK_ARG(it->peer < op->nranks, HAL_E_PARAM, "algos", "item %u: peer %u out of range", k, it->peer);
            CHECK_ARG(it->offset % esz == 0 && it->offset < lim && it->count < lim / esz, HAL_E_PARAM,
                      "algos", "item %u: bad offset/count", k);
        }
    }
    return 0;
}
