/* Plan memory and the builder the compilers emit through. */
#include <stdlib.h>
#include <string.h>

#include "algos/algo_build.h"

void algo_plan_free(algo_plan *plan)
{
    if (!plan)
        return;
    for (uint32_t s = 0; s < ALGO_MAX_STREAMS; s++)
        free(plan->streams[s].steps);
    free(plan); /* op.counts / op.items live in the same block */
}

/* One allocation holds the plan and its copies of the op's arrays, so a cached plan owns
 * everything it points to. */
static algo_plan *plan_alloc(const algo_op *op)
{
    size_t nc = op->counts ? op->ncounts : 0, ni = op->items ? op->nitems : 0;
    size_t sz = sizeof(algo_plan) + nc * sizeof(uint64_t) + ni * sizeof(algo_p2p_item);
    algo_plan *p = calloc(1, sz);
    if (!p)
        return NULL;
    p->op = *op;
    uint8_t *tail = (uint8_t *)(p + 1);
    if (nc) {
        memcpy(tail, op->counts, nc * sizeof(uint64_t));
        p->op.counts = (const uint64_t *)tail;
        tail += nc * sizeof(uint64_t);
    } else {
        p->op.counts = NULL;
        p->op.ncounts = 0;
    }
    if (ni) {
        memcpy(tail, op->items, ni * sizeof(algo_p2p_item));
        p->op.items = (const algo_p2p_item *)tail;
    } else {
        p->op.items = NULL;
        p->op.nitems = 0;
    }
    return p;
}

int algo_b_init(algo_b *b, const algo_op *op, algo_kind kind)
{
    memset(b, 0, sizeof(*b));
    b->p = plan_alloc(op);
    b->fetch = calloc(op->nranks ? op->nranks : 1, 2);
    if (!b->p || !b->fetch) {
        algo_b_abort(b);
        return HAL_E_NOMEM;
    }
    b->fetched_by = b->fetch + op->nranks;
    b->op = &b->p->op;
    b->n = op->nranks;
    b->r = op->rank;
    b->esz = hal_dtype_size(op->dtype);
    b->p->algo = kind;
    b->p->nstreams = 1;
    b->p->nslots = ALGO_NSLOTS;
    strncpy(b->p->name, algo_kind_name(kind), sizeof(b->p->name) - 1);
    return 0;
}

void algo_b_abort(algo_b *b)
{
    algo_plan_free(b->p);
    free(b->fetch);
    b->p = NULL;
    b->fetch = b->fetched_by = NULL;
}

int algo_b_finish(algo_b *b, algo_plan **out)
{
    int err = b->err;
    free(b->fetch);
    b->fetch = b->fetched_by = NULL;
    if (err) {
        algo_plan_free(b->p);
        b->p = NULL;
        return err;
    }
    *out = b->p;
    b->p = NULL;
    return 0;
}

void algo_b_push(algo_b *b, uint32_t stream, algo_step st)
{
    if (b->err)
        return;
    algo_step_list *l = &b->p->streams[stream];
    if (l->nsteps == l->cap) {
        uint32_t cap = l->cap ? l->cap * 2 : 16;
        algo_step *ns = realloc(l->steps, (size_t)cap * sizeof(*ns));
        if (!ns) {
            b->err = HAL_E_NOMEM;
            return;
        }
        l->steps = ns;
        l->cap = cap;
    }
    st.when = b->when;
    st.when_sym = b->when_sym;
    l->steps[l->nsteps++] = st;
    if (stream + 1 > b->p->nstreams)
        b->p->nstreams = stream + 1;
}

algo_ref algo_b_ref(const algo_b *b, algo_buf buf, uint32_t owner, uint64_t elem_off)
{
    algo_ref ref = {.buf = (uint8_t)buf, .owner = owner == b->r ? ALGO_SELF : (int32_t)owner,
                    .vdispl = -1, .offset = elem_off * b->esz};
    return ref;
}

void algo_b_copy(algo_b *b, uint32_t s, algo_ref dst, algo_ref src, uint64_t elems)
{
    if (!elems)
        return;
    algo_step st = {.kind = ALGO_STEP_COPY};
    st.u.copy.dst = dst;
    st.u.copy.src = src;
    st.u.copy.bytes = elems * b->esz;
    algo_b_push(b, s, st);
}

void algo_b_mark_reread(algo_b *b, uint32_t s)
{
    if (s >= b->p->nstreams || !b->p->streams[s].nsteps)
        return;
    algo_step *st = &b->p->streams[s].steps[b->p->streams[s].nsteps - 1];
    if (st->kind == ALGO_STEP_COPY)
        st->u.copy.reread = 1;
}

void algo_b_copy_v(algo_b *b, uint32_t s, algo_ref dst, algo_ref src, algo_vsym count)
{
    algo_step st = {.kind = ALGO_STEP_COPY};
    st.u.copy.dst = dst;
    st.u.copy.src = src;
    st.u.copy.vcount = count;
    algo_b_push(b, s, st);
}

algo_ref algo_blk_ref(const algo_b *b, algo_buf buf, uint32_t owner, uint32_t j)
{
    if (algo_counts_symbolic(b->op->coll))
        return algo_ref_v(algo_b_ref(b, buf, owner, 0), algo_vs(ALGO_VT_DISPL, j));
    return algo_b_ref(b, buf, owner, algo_blk_off(b->op, j));
}

void algo_b_copy_blk(algo_b *b, uint32_t s, algo_ref dst, algo_ref src, uint32_t j)
{
    if (algo_counts_symbolic(b->op->coll))
        algo_b_copy_v(b, s, dst, src, algo_vs(ALGO_VT_COUNT, j));
    else
        algo_b_copy(b, s, dst, src, algo_blk_len(b->op, j));
}

static void push_reduce(algo_b *b, uint32_t s, algo_ref dst, algo_ref src, const algo_ref *src2, uint64_t elems,
                        algo_vsym vcount)
{
    if (!elems && !vcount.tab)
        return;
    algo_step st = {.kind = ALGO_STEP_REDUCE};
    st.u.reduce.dst = dst;
    st.u.reduce.src = src;
    if (src2) {
        st.u.reduce.src2 = *src2;
        st.u.reduce.has_src2 = 1;
    }
    st.u.reduce.count = vcount.tab ? 0 : elems;
    st.u.reduce.vcount = vcount;
    algo_b_push(b, s, st);
}

void algo_b_reduce(algo_b *b, uint32_t s, algo_ref dst, algo_ref src, uint64_t elems)
{
    push_reduce(b, s, dst, src, NULL, elems, algo_vs(ALGO_VT_NONE, 0));
}

void algo_b_reduce3(algo_b *b, uint32_t s, algo_ref dst, algo_ref src, algo_ref src2, uint64_t elems)
{
    push_reduce(b, s, dst, src, &src2, elems, algo_vs(ALGO_VT_NONE, 0));
}

void algo_b_reduce_blk(algo_b *b, uint32_t s, algo_ref dst, algo_ref src, const algo_ref *src2, uint32_t j)
{
    if (algo_counts_symbolic(b->op->coll))
        push_reduce(b, s, dst, src, src2, 0, algo_vs(ALGO_VT_COUNT, j));
    else
        push_reduce(b, s, dst, src, src2, algo_blk_len(b->op, j), algo_vs(ALGO_VT_NONE, 0));
}

static void sync_step(algo_b *b, uint32_t s, algo_step_kind k, uint32_t peer, uint32_t slot)
{
    algo_step st = {.kind = (uint8_t)k};
    st.u.sync.peer = peer;
    st.u.sync.slot = slot;
    algo_b_push(b, s, st);
}

void algo_b_signal(algo_b *b, uint32_t s, uint32_t peer, uint32_t slot)
{
    sync_step(b, s, ALGO_STEP_SIGNAL, peer, slot);
}

void algo_b_wait(algo_b *b, uint32_t s, uint32_t peer, uint32_t slot)
{
    sync_step(b, s, ALGO_STEP_WAIT, peer, slot);
}

void algo_b_fork(algo_b *b, uint32_t s)
{
    algo_step st = {.kind = ALGO_STEP_FORK};
    st.u.fork.stream = s;
    algo_b_push(b, 0, st);
    if (s + 1 > b->p->nstreams)
        b->p->nstreams = s + 1;
}

void algo_b_join(algo_b *b, uint32_t s)
{
    algo_step st = {.kind = ALGO_STEP_JOIN};
    st.u.fork.stream = s;
    algo_b_push(b, 0, st);
}

void algo_b_fetch_all(algo_b *b)
{
    for (uint32_t q = 0; q < b->n; q++)
        if (q != b->r)
            b->fetch[q] = b->fetched_by[q] = 1;
}

void algo_b_ring_neighbours(algo_b *b)
{
    uint32_t left = (b->r + b->n - 1) % b->n, right = (b->r + 1) % b->n;
    b->fetch[left] = b->fetch[right] = 1;
    b->fetched_by[left] = b->fetched_by[right] = 1;
}

void algo_b_fetch_rooted(algo_b *b)
{
    uint32_t root = b->op->root;
    for (uint32_t q = 0; q < b->n; q++)
        if (b->r == root)
            b->fetch[q] = q != root;
        else if (q == root)
            b->fetched_by[q] = 1;
}

void algo_b_prologue(algo_b *b)
{
    algo_step pub = {.kind = ALGO_STEP_PUBLISH};
    algo_b_push(b, 0, pub);
    if (b->n < 2)
        return;
    if (!b->no_ring_check) { /* the mandatory ring check: fetch left, right fetches me */
        b->fetch[(b->r + b->n - 1) % b->n] = 1;
        b->fetched_by[(b->r + 1) % b->n] = 1;
    }
    b->fetch[b->r] = b->fetched_by[b->r] = 0;
    for (uint32_t k = 1; k < b->n; k++) {
        uint32_t q = (b->r + k) % b->n;
        if (b->fetched_by[q])
            algo_b_signal(b, 0, q, ALGO_SLOT_PUB);
    }
    for (uint32_t k = 1; k < b->n; k++) {
        uint32_t q = (b->r + b->n - k) % b->n; /* left first: the ring check comes first */
        if (b->fetch[q]) {
            algo_step st = {.kind = ALGO_STEP_FETCH};
            st.u.fetch.peer = q;
            algo_b_push(b, 0, st);
        }
    }
}

void algo_b_epilogue(algo_b *b, uint32_t s)
{
    for (uint32_t k = 1; k < b->n; k++) {
        uint32_t q = (b->r + k) % b->n;
        if (b->fetch[q])
            algo_b_signal(b, s, q, ALGO_SLOT_DONE);
    }
    for (uint32_t k = 1; k < b->n; k++) {
        uint32_t q = (b->r + b->n - k) % b->n;
        if (b->fetched_by[q])
            algo_b_wait(b, s, q, ALGO_SLOT_DONE);
    }
}

void algo_b_empty(algo_b *b)
{
    algo_b_prologue(b);
    algo_b_epilogue(b, 0);
}
