/* The verifier's symbolic memory and reference semantics. IN element i of rank r holds H(r, i);
 * everything else starts as a rank-specific poison value. COPY moves values, REDUCE adds them, so
 * the expected OUT of a reduction is the sum of the contributions' H values, of a gather/scatter/
 * all-to-all the H value of the origin element. */
#include <stdlib.h>
#include <string.h>

#include "algos/algo_build.h"
#include "algos/verify_int.h"

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t h_in(uint32_t r, uint64_t i)
{
    return mix(((uint64_t)r << 40) ^ i);
}

static uint64_t h_poison(uint32_t r, uint64_t i)
{
    return mix(((uint64_t)(r + 0x100000u) << 40) ^ i ^ 0x5a5a5a5a5a5a5a5aull);
}

/* How IN and OUT of this rank alias: 0 apart, 1 OUT = IN + delta, 2 IN = OUT + delta (elements). */
static int alias(const algo_op *op, uint64_t *delta)
{
    bool root = op->rank == op->root;
    *delta = 0;
    switch (op->coll) {
    case ALGO_COLL_BROADCAST: return 1; /* one buffer, always */
    case ALGO_COLL_ALLREDUCE: return op->in_place ? 1 : 0;
    case ALGO_COLL_REDUCE: return op->in_place && root ? 1 : 0;
    case ALGO_COLL_ALLGATHER:
    case ALGO_COLL_ALLGATHERV:
        *delta = algo_blk_off(op, op->rank);
        return op->in_place ? 2 : 0;
    case ALGO_COLL_REDUCE_SCATTER:
    case ALGO_COLL_REDUCE_SCATTERV:
        *delta = algo_blk_off(op, op->rank);
        return op->in_place ? 1 : 0;
    case ALGO_COLL_SCATTER:
        *delta = algo_blk_off(op, op->root);
        return op->in_place && root ? 1 : 0;
    default: return 0;
    }
}

static int layout(vsim *s, uint32_t r)
{
    const algo_op *op = &s->plans[r]->op;
    vspace *sp = &s->sp[r];
    uint64_t d;
    algo_buffer_elems(op, &sp->in_len, &sp->out_len);
    sp->scr_len = algo_plan_scratch(s->plans[r], op) / s->esz; /* with its call's counts */
    int mode = alias(op, &d);
    if ((mode == 1 && !sp->out_len) || (mode == 2 && !sp->in_len))
        mode = 0; /* an empty block aliases nothing */
    switch (mode) {
    case 1:
        if (d + sp->out_len > sp->in_len)
            return HAL_E_PARAM;
        sp->in_base = 0, sp->out_base = d, sp->scr_base = sp->in_len;
        break;
    case 2:
        if (d + sp->in_len > sp->out_len)
            return HAL_E_PARAM;
        sp->out_base = 0, sp->in_base = d, sp->scr_base = sp->out_len;
        break;
    default:
        sp->in_base = 0, sp->out_base = sp->in_len, sp->scr_base = sp->in_len + sp->out_len;
    }
    sp->ibx_base = sp->scr_base + sp->scr_len;
    for (uint32_t q = 0; q < s->n; q++) /* every box as large as any plan uses */
        if (s->plans[q]->inbox_bytes / s->esz > sp->box_len)
            sp->box_len = s->plans[q]->inbox_bytes / s->esz;
    sp->len = sp->ibx_base + (uint64_t)s->n * sp->box_len;
    return 0;
}

static uint64_t init_val(const vspace *sp, uint32_t r, uint64_t i)
{
    if (i >= sp->in_base && i < sp->in_base + sp->in_len)
        return h_in(r, i - sp->in_base);
    return h_poison(r, i);
}

int vref_alloc(vsim *s)
{
    for (uint32_t r = 0; r < s->n; r++) {
        vspace *sp = &s->sp[r];
        if (layout(s, r))
            return HAL_E_PARAM;
        sp->mem = malloc((sp->len ? sp->len : 1) * sizeof(uint64_t));
        if (!sp->mem)
            return HAL_E_NOMEM;
        for (uint64_t i = 0; i < sp->len; i++)
            sp->mem[i] = init_val(sp, r, i);
    }
    return 0;
}

/* SENDRECV: the n-th (0-based) item of op with peer in one direction, and an item's n. */
static const algo_p2p_item *nth_item(const algo_op *op, uint32_t peer, bool send, uint32_t n)
{
    for (uint32_t k = 0; k < op->nitems; k++)
        if (op->items[k].peer == peer && (bool)op->items[k].is_send == send && n-- == 0)
            return &op->items[k];
    return NULL;
}

static uint32_t ordinal_of(const algo_op *op, uint32_t k)
{
    uint32_t n = 0;
    for (uint32_t j = 0; j < k; j++)
        n += op->items[j].peer == op->items[k].peer && op->items[j].is_send == op->items[k].is_send;
    return n;
}

/* A SENDRECV ref of `reader` names its item k: its own (owner = reader) or the owner's matching one. */
static const algo_p2p_item *p2p_ref_item(const vsim *s, uint32_t reader, uint32_t owner, uint32_t k)
{
    const algo_op *op = &s->plans[reader]->op;
    if (k >= op->nitems)
        return NULL;
    const algo_p2p_item *it = &op->items[k];
    if (owner == reader)
        return it;
    return it->peer == owner ? nth_item(&s->plans[owner]->op, reader, !it->is_send, ordinal_of(op, k)) : NULL;
}

uint64_t vref_displ(const vsim *s, uint32_t reader, uint32_t owner, int32_t vdispl, int *ok)
{
    const algo_op *op = &s->plans[owner]->op;
    if (op->coll == ALGO_COLL_SENDRECV) {
        const algo_p2p_item *it = p2p_ref_item(s, reader, owner, (uint32_t)vdispl);
        if (it)
            return it->offset / s->esz;
    } else if ((op->coll == ALGO_COLL_ALLTOALLV || op->coll == ALGO_COLL_ALLTOALLVC) && (uint32_t)vdispl < s->n) {
        return algo_vt_entry(op, algo_vs(ALGO_VT_RDISPL, (uint32_t)vdispl)); /* as the runtime publishes it */
    }
    *ok = 0;
    return 0;
}

static uint64_t sum_in(uint32_t n, uint64_t i)
{
    uint64_t v = 0;
    for (uint32_t q = 0; q < n; q++)
        v += h_in(q, i);
    return v;
}

/* Deterministic mode's reference: the contributions folded in rank order. */
static uint64_t fold_in(uint32_t n, uint64_t i)
{
    uint64_t v = h_in(0, i);
    for (uint32_t q = 1; q < n; q++)
        v = vdet_fold(v, h_in(q, i));
    return v;
}

static uint64_t reduced_in(const algo_op *op, uint32_t n, uint64_t i)
{
    return op->deterministic ? fold_in(n, i) : sum_in(n, i);
}

/* The reference OUT of rank r into out[0..out_len). Returns false if the ops are inconsistent. */
static bool ref_out(vsim *s, uint32_t r, uint64_t *out)
{
    const algo_op *op = &s->plans[r]->op;
    uint32_t n = s->n;
    switch (op->coll) {
    case ALGO_COLL_ALLREDUCE:
    case ALGO_COLL_REDUCE:
        if (r > 0 && s->sp[r].out_len == s->sp[r - 1].out_len && op->coll == ALGO_COLL_ALLREDUCE) {
            memcpy(out, s->sp[r - 1].mem + s->sp[r - 1].out_base, s->sp[r].out_len * sizeof(*out));
            return true; /* rank r-1 matched the same reference (checked before this one) */
        }
        for (uint64_t i = 0; i < s->sp[r].out_len; i++)
            out[i] = reduced_in(op, n, i);
        return true;
    case ALGO_COLL_BROADCAST:
        for (uint64_t i = 0; i < op->count; i++)
            out[i] = h_in(op->root, i);
        return true;
    case ALGO_COLL_ALLGATHER:
    case ALGO_COLL_ALLGATHERV:
        for (uint32_t j = 0; j < n; j++)
            for (uint64_t i = 0, o = algo_blk_off(op, j); i < algo_blk_len(op, j); i++)
                out[o + i] = h_in(j, i);
        return true;
    case ALGO_COLL_REDUCE_SCATTER:
    case ALGO_COLL_REDUCE_SCATTERV:
        for (uint64_t i = 0, o = algo_blk_off(op, r); i < algo_blk_len(op, r); i++)
            out[i] = reduced_in(op, n, o + i);
        return true;
    case ALGO_COLL_SCATTER:
        for (uint64_t i = 0; i < op->count; i++)
            out[i] = h_in(op->root, algo_blk_off(op, r) + i);
        return true;
    case ALGO_COLL_ALLTOALL:
    case ALGO_COLL_ALLTOALLV:
    case ALGO_COLL_ALLTOALLVC:
        for (uint32_t j = 0; j < n; j++) {
            const algo_op *oj = &s->plans[j]->op;
            uint64_t len = algo_a2a_len(op, j, r), so = algo_a2a_send_off(oj, j, r);
            if (len != algo_a2a_len(oj, j, r))
                return false;
            for (uint64_t i = 0, o = algo_a2a_recv_off(op, j, r); i < len; i++)
                out[o + i] = h_in(j, so + i);
        }
        return true;
    case ALGO_COLL_SENDRECV:
        for (uint32_t k = 0; k < op->nitems; k++) {
            const algo_p2p_item *rv = &op->items[k];
            if (rv->is_send)
                continue;
            const algo_p2p_item *sd = nth_item(&s->plans[rv->peer]->op, r, true, ordinal_of(op, k));
            if (!sd || sd->count != rv->count)
                return false;
            for (uint64_t i = 0; i < rv->count; i++)
                out[rv->offset / s->esz + i] = h_in(rv->peer, sd->offset / s->esz + i);
        }
        return true;
    default:
        return false;
    }
}

static void compare(vsim *s, uint32_t r, const uint64_t *exp)
{
    const vspace *sp = &s->sp[r];
    uint64_t bad = 0;
    for (uint64_t i = 0; i < sp->scr_base; i++) {
        if (sp->mem[i] == exp[i] || bad++)
            continue;
        uint64_t init = init_val(sp, r, i);
        bool in_out = i >= sp->out_base && i < sp->out_base + sp->out_len;
        const char *why = sp->mem[i] == init ? "never written"
                          : exp[i] == init   ? "written but must not be"
                                             : "wrong value (missing, extra or doubled contribution, or wrong origin)";
        vsim_error(s, "rank %u %s[%llu]: %s", r, in_out ? "OUT" : "IN",
                   (unsigned long long)(in_out ? i - sp->out_base : i - sp->in_base), why);
    }
    if (bad > 1)
        vsim_error(s, "rank %u: %llu wrong elements in all", r, (unsigned long long)bad);
}

void vref_check(vsim *s)
{
    for (uint32_t r = 0; r < s->n; r++) {
        const vspace *sp = &s->sp[r];
        uint64_t *exp = malloc((sp->scr_base ? sp->scr_base : 1) * sizeof(uint64_t));
        if (!exp) {
            s->oom = 1;
            return;
        }
        for (uint64_t i = 0; i < sp->scr_base; i++)
            exp[i] = init_val(sp, r, i);
        if (!ref_out(s, r, exp + sp->out_base))
            vsim_error(s, "rank %u: the ranks' counts/items are inconsistent (no reference)", r);
        else
            compare(s, r, exp);
        free(exp);
    }
}

int algo_verify_derive(const algo_op *tmpl, uint32_t rank, algo_op *out, uint64_t *counts_buf)
{
    uint32_t n = tmpl->nranks;
    *out = *tmpl;
    out->rank = rank;
    if (tmpl->coll != ALGO_COLL_ALLTOALLV)
        return 0;
    if (!tmpl->counts || tmpl->ncounts < n * n)
        return HAL_E_PARAM;
    const uint64_t *m = tmpl->counts;
    uint64_t *sc = counts_buf, *sd = sc + n, *rc = sd + n, *rd = rc + n, cur = 0;
    for (uint32_t j = 0; j < n; j++) { /* send blocks in peer order, one-element gaps */
        sc[j] = m[(uint64_t)rank * n + j];
        sd[j] = cur;
        cur += sc[j] + 1;
    }
    cur = 0;
    for (uint32_t i = n; i-- > 0;) { /* recv blocks in reverse peer order, gaps too */
        rc[i] = m[(uint64_t)i * n + rank];
        rd[i] = cur;
        cur += rc[i] + 1;
    }
    out->counts = counts_buf;
    out->ncounts = 4 * n;
    return 0;
}
