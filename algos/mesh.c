/* Mesh (direct): the intra-server fast path. Every rank addresses every peer's IN/OUT directly:
 * reductions read the peers' IN straight into the rank's own OUT slice, gathers write the rank's
 * block into every peer's OUT. O(1) rounds; writes to different peers run on slave streams (one
 * per group of peers) so that parallel links are busy at once. */
#include "algos/algo_build.h"

/* Slave streams used for n ranks: none for n <= 2, else one per peer up to the limit. */
static uint32_t mesh_nslaves(uint32_t n)
{
    if (n <= 2)
        return 0;
    return n - 1 < ALGO_MAX_STREAMS - 1 ? n - 1 : ALGO_MAX_STREAMS - 1;
}

/* Stream handling the peer at distance k (1..n-1). */
static uint32_t mesh_stream(uint32_t n, uint32_t k)
{
    uint32_t ns = mesh_nslaves(n);
    return ns ? 1 + (k - 1) % ns : 0;
}

typedef void (*mesh_peer_fn)(algo_b *b, uint32_t s, uint32_t peer);

/* Runs fn for every peer (r+1, r+2, ...) but `skip` on its stream, between FORKs and JOINs on
 * stream 0 (skip >= n or r: every peer). */
static void mesh_fanout_but(algo_b *b, mesh_peer_fn fn, uint32_t skip)
{
    uint32_t n = b->n, m = n - (skip < n && skip != b->r), ns = mesh_nslaves(m);
    for (uint32_t s = 1; s <= ns; s++)
        algo_b_fork(b, s);
    for (uint32_t k = 1, j = 0; k < n; k++)
        if ((b->r + k) % n != skip)
            fn(b, mesh_stream(m, ++j), (b->r + k) % n);
    for (uint32_t s = 1; s <= ns; s++)
        algo_b_join(b, s);
}

static void mesh_fanout(algo_b *b, mesh_peer_fn fn)
{
    mesh_fanout_but(b, fn, b->n);
}

static void wait_all(algo_b *b)
{
    for (uint32_t k = 1; k < b->n; k++)
        algo_b_wait(b, 0, (b->r + b->n - k) % b->n, ALGO_SLOT_DATA);
}

/* What a reduction covers: my OUT at dst_off <- everyone's IN at src_off, len elements; or, with
 * blk >= 0, block blk (algo_blk_ref / algo_b_reduce_blk: symbolic for ReduceScatterV, so one plan
 * serves every count table) into my OUT at 0. */
typedef struct span {
    uint64_t dst_off, src_off, len;
    int64_t blk;
} span;

static algo_ref span_in(const algo_b *b, const span *sp, uint32_t owner)
{
    return sp->blk >= 0 ? algo_blk_ref(b, ALGO_BUF_IN, owner, (uint32_t)sp->blk)
                        : algo_b_ref(b, ALGO_BUF_IN, owner, sp->src_off);
}

static void span_copy(algo_b *b, algo_ref dst, algo_ref src, const span *sp)
{
    if (sp->blk >= 0)
        algo_b_copy_blk(b, 0, dst, src, (uint32_t)sp->blk);
    else
        algo_b_copy(b, 0, dst, src, sp->len);
}

/* dst = dst op src, or with src2: dst = src op src2. */
static void span_reduce(algo_b *b, algo_ref dst, algo_ref src, const algo_ref *src2, const span *sp)
{
    if (sp->blk >= 0)
        algo_b_reduce_blk(b, 0, dst, src, src2, (uint32_t)sp->blk);
    else if (src2)
        algo_b_reduce3(b, 0, dst, src, *src2, sp->len);
    else
        algo_b_reduce(b, 0, dst, src, sp->len);
}

/* `owner`'s OUT span = everyone's IN span reduced (owner: me, or Reduce's root), peers in rotating
 * order from mine so each peer serves one reader at a time. In place the owner's IN slice already
 * is the OUT slice; out of place the first step reads both my IN and the next rank's (no copy
 * first). The reduce target is one region: one stream, no RMW race. */
static void reduce_ordered(algo_b *b, const span *sp, uint32_t owner);

static void reduce_from_all(algo_b *b, const span *sp, uint32_t owner)
{
    if (b->op->deterministic) {
        reduce_ordered(b, sp, owner);
        return;
    }
    algo_ref out = algo_b_ref(b, ALGO_BUF_OUT, owner, sp->dst_off);
    uint32_t k = 0;
    if (!b->op->in_place && b->n == 1) {
        span_copy(b, out, span_in(b, sp, b->r), sp);
        return;
    }
    if (!b->op->in_place) {
        algo_ref first = span_in(b, sp, (b->r + 1) % b->n);
        span_reduce(b, out, span_in(b, sp, b->r), &first, sp);
        k = 2;
    }
    for (; k < b->n; k++) {
        uint32_t q = (b->r + k) % b->n;
        if (!b->op->in_place || q != owner)
            span_reduce(b, out, span_in(b, sp, q), NULL, sp);
    }
}

/* In-place ordered reductions accumulate in SCRATCH: for a symbolic block the need comes from
 * the call's tables (algo_plan_scratch: the largest block, the same verdict on every rank). */
static void need_scratch(algo_b *b, const span *sp)
{
    if (sp->blk >= 0 && algo_counts_symbolic(b->op->coll)) {
        b->p->vscratch = ALGO_VSCR_MAX_COUNT;
        return;
    }
    uint64_t len = sp->blk >= 0 ? algo_blk_len(b->op, (uint32_t)sp->blk) : sp->len;
    if (len * b->esz > b->p->scratch_bytes)
        b->p->scratch_bytes = len * b->esz;
}

/* Deterministic mode: OUT = ((IN_0 op IN_1) op IN_2) ... op IN_(n-1), the same order on every rank
 * and in every algorithm (ring falls back to an ordered chain, ring_ordered.c). In place my IN
 * slice is the OUT slice and still an operand, so the accumulator is SCRATCH, copied at the end. */
static void reduce_ordered(algo_b *b, const span *sp, uint32_t owner)
{
    uint32_t n = b->n;
    algo_ref out = algo_b_ref(b, ALGO_BUF_OUT, owner, sp->dst_off);
    if (n == 1) {
        if (!b->op->in_place)
            span_copy(b, out, span_in(b, sp, b->r), sp);
        return;
    }
    algo_ref acc = out;
    if (b->op->in_place) {
        acc = algo_b_ref(b, ALGO_BUF_SCRATCH, b->r, 0);
        need_scratch(b, sp);
    }
    algo_ref in1 = span_in(b, sp, 1);
    span_reduce(b, acc, span_in(b, sp, 0), &in1, sp);
    for (uint32_t q = 2; q < n; q++)
        span_reduce(b, acc, span_in(b, sp, q), NULL, sp);
    if (b->op->in_place)
        span_copy(b, out, acc, sp);
}

/* My reduced slice into p's OUT: in place that is p's IN, which my next call reduces from (reread). */
static void put_my_slice(algo_b *b, uint32_t s, uint32_t p)
{
    uint64_t c = b->op->count, off = algo_chunk_off(c, b->n, b->r);
    algo_b_copy(b, s, algo_b_ref(b, ALGO_BUF_OUT, p, off), algo_b_ref(b, ALGO_BUF_OUT, b->r, off),
                algo_chunk_len(c, b->n, b->r));
    algo_b_mark_reread(b, s);
    algo_b_signal(b, s, p, ALGO_SLOT_DATA);
}

/* Reduce my 1/n slice from everyone's IN, then write it into every peer's OUT. In place, a peer
 * reads my IN slice p before it writes my OUT slice p (its own program order), and only I write
 * my slice r, so no extra synchronisation is needed. */
static void mesh_allreduce(algo_b *b)
{
    uint64_t c = b->op->count, off = algo_chunk_off(c, b->n, b->r);
    span sp = {off, off, algo_chunk_len(c, b->n, b->r), -1};
    algo_b_fetch_all(b);
    algo_b_prologue(b);
    reduce_from_all(b, &sp, b->r);
    mesh_fanout(b, put_my_slice);
    wait_all(b);
}

/* AllGatherV block refs are symbolic (algo_blk_ref): one plan for every count table. */
static void put_my_block(algo_b *b, uint32_t s, uint32_t p)
{
    algo_b_copy_blk(b, s, algo_blk_ref(b, ALGO_BUF_OUT, p, b->r), algo_b_ref(b, ALGO_BUF_IN, b->r, 0), b->r);
    algo_b_signal(b, s, p, ALGO_SLOT_DATA);
}

static void mesh_allgather(algo_b *b)
{
    const algo_op *op = b->op;
    algo_b_fetch_all(b);
    algo_b_prologue(b);
    if (!op->in_place)
        algo_b_copy_blk(b, 0, algo_blk_ref(b, ALGO_BUF_OUT, b->r, b->r), algo_b_ref(b, ALGO_BUF_IN, b->r, 0), b->r);
    mesh_fanout(b, put_my_block);
    wait_all(b);
}

/* Reduce my block from everyone's IN into my OUT; DONE tells the peers I stopped reading them.
 * ReduceScatterV's block is symbolic: one plan for every count table. */
static void mesh_reduce_scatter(algo_b *b)
{
    span sp = {0, 0, 0, b->r};
    algo_b_fetch_all(b);
    algo_b_prologue(b);
    reduce_from_all(b, &sp, b->r);
    algo_b_epilogue(b, 0);
}

/* Every rank reduces its 1/n slice from everyone's IN straight into the root's OUT, as
 * ReduceScatter with the root's OUT for every block: all ranks compute at once (the root alone,
 * reducing the whole buffer while the others waited, was one core of two at 2 ranks: 1 MiB at
 * 0.56x Open MPI's busbw, docs/perf-history.md). The epilogue's DONE handshake (every rank fetched every
 * rank) orders every slice's writes before the root's end and every read of an IN before its
 * owner's end. In place the root's IN slice r is read only by rank r, which writes it last. */
static void mesh_reduce(algo_b *b)
{
    uint64_t c = b->op->count, off = algo_chunk_off(c, b->n, b->r);
    span sp = {off, off, algo_chunk_len(c, b->n, b->r), -1};
    algo_b_fetch_all(b);
    algo_b_prologue(b);
    if (sp.len)
        reduce_from_all(b, &sp, b->op->root);
    algo_b_epilogue(b, 0);
}

/* Broadcast's split: the root writes elements [split, count) into every peer, each peer reads
 * [0, split) from the root itself: (n-1)/n of the buffer each, so every rank copies at once. */
static uint64_t bcast_split(const algo_b *b)
{
    return algo_chunk_off(b->op->count, b->n, b->n - 1);
}

static void put_bcast_tail(algo_b *b, uint32_t s, uint32_t p)
{
    uint64_t c = b->op->count, off = bcast_split(b);
    algo_b_copy(b, s, algo_b_ref(b, ALGO_BUF_OUT, p, off), algo_b_ref(b, ALGO_BUF_OUT, b->r, off), c - off);
}

/* Broadcast shares the copying between the root and the receivers: the root pushes the last 1/n
 * of its buffer into every peer while every peer pulls the rest straight from the root's buffer
 * (pushing everything left the root copying (n-1) buffers while the others waited; on the
 * emulator that was one core of two). No DATA signal: the epilogue's DONE handshake orders the
 * root's writes before each receiver's end and the receivers' reads before the root's. */
static void fetch_root_both_ways(algo_b *b)
{
    uint32_t r = b->r, root = b->op->root;
    algo_b_fetch_rooted(b);
    for (uint32_t q = 0; q < b->n; q++) /* ...and every receiver fetches the root it reads */
        if (q != r && (q == root || r == root))
            b->fetch[q] = b->fetched_by[q] = 1;
}

static void mesh_broadcast_pull(algo_b *b)
{
    uint32_t r = b->r, root = b->op->root;
    fetch_root_both_ways(b);
    algo_b_prologue(b);
    if (r == root)
        mesh_fanout(b, put_bcast_tail);
    else
        algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, r, 0), algo_b_ref(b, ALGO_BUF_OUT, root, 0), bcast_split(b));
    algo_b_epilogue(b, 0);
}

/* Rank r's slice of the root's buffer into rank p's OUT (p = r: its own). */
static void copy_bcast_slice(algo_b *b, uint32_t s, uint32_t p)
{
    uint64_t c = b->op->count, off = algo_chunk_off(c, b->n, b->r);
    algo_b_copy(b, s, algo_b_ref(b, ALGO_BUF_OUT, p, off), algo_b_ref(b, ALGO_BUF_OUT, b->op->root, off),
                algo_chunk_len(c, b->n, b->r));
}

/* ...into peer p's, then DATA: p may end once every slice is in (and the root once every rank
 * stopped reading its buffer). */
static void put_bcast_slice(algo_b *b, uint32_t s, uint32_t p)
{
    copy_bcast_slice(b, s, p);
    algo_b_signal(b, s, p, ALGO_SLOT_DATA);
}

/* From 3 to ALGO_MAX_STREAMS ranks, an AllGather of the root's slices: rank r reads slice r of the root's buffer
 * once and writes it into every receiver's OUT, its own included (a fan-out, rt_fanout.c). Each
 * rank reads 1/n of a buffer and writes (n-1)/n. Where every receiver pulled (n-1)/n itself
 * (mesh_broadcast_pull), the ranks together moved 2(n-1)^2/n + 1 buffers through memory instead of
 * n: at 8 ranks 13.3 against 8. The root's slice needs no copy to itself; a receiver's DATA to
 * the root says it stopped reading the root's buffer. */
static void mesh_broadcast_slices(algo_b *b)
{
    uint32_t r = b->r, root = b->op->root;
    algo_b_fetch_all(b);
    algo_b_prologue(b);
    if (r == root) {
        mesh_fanout(b, put_bcast_slice);
    } else {
        copy_bcast_slice(b, 0, r);
        mesh_fanout_but(b, put_bcast_slice, root);
        algo_b_signal(b, 0, root, ALGO_SLOT_DATA);
    }
    wait_all(b);
}

/* Below it the slices' all-to-all DATA signals cost more than the copies they save (loops on
 * 2 CPUs, us a call, pull / slices: 64 KiB at 8 ranks 14.4 / 17.0, 256 KiB 34.2 / 37.5, 512 KiB
 * 81.9 / 79.9; 1 MiB 197 / 184, at 4 ranks 68.0 / 51.9; 64 MiB at 8 ranks 23.4 / 12.8 ms). Past
 * ALGO_MAX_STREAMS ranks a slave stream serves two peers, its list is no fan-out (rt_fanout.c),
 * every copy reads its slice again, and the slices lose: 16 MiB at 12 ranks 5.9 / 11.2 ms, 64 MiB
 * at 16 ranks 57 / 69 ms. */
#define MESH_BCAST_SLICES_MIN_BYTES (1u << 20)

static void mesh_broadcast(algo_b *b)
{
    if (b->n >= 3 && b->n <= ALGO_MAX_STREAMS && b->op->count * b->esz >= MESH_BCAST_SLICES_MIN_BYTES)
        mesh_broadcast_slices(b);
    else
        mesh_broadcast_pull(b);
}

/* Scatter on one server: every receiver copies its block straight out of the root's IN while the
 * root copies its own, so all ranks copy at once (the root writing every block while the others
 * waited was one core of two at 2 ranks: 1 MiB at 0.70x Open MPI's busbw, docs/perf-history.md). The
 * epilogue orders the reads before the root's end, as Broadcast's. */
static void mesh_scatter(algo_b *b)
{
    uint32_t r = b->r, root = b->op->root;
    fetch_root_both_ways(b);
    algo_b_prologue(b);
    algo_ref out = algo_b_ref(b, ALGO_BUF_OUT, r, 0);
    if (r != root)
        algo_b_copy(b, 0, out, algo_b_ref(b, ALGO_BUF_IN, root, algo_blk_off(b->op, r)), b->op->count);
    else if (!b->op->in_place)
        algo_b_copy(b, 0, out, algo_b_ref(b, ALGO_BUF_IN, r, algo_blk_off(b->op, r)), b->op->count);
    algo_b_epilogue(b, 0);
}

static void put_whole(algo_b *b, uint32_t s, uint32_t p)
{
    algo_b_copy(b, s, algo_b_ref(b, ALGO_BUF_OUT, p, 0), algo_b_ref(b, ALGO_BUF_OUT, b->r, 0), b->op->count);
    algo_b_signal(b, s, p, ALGO_SLOT_DATA);
}

static void put_scatter_block(algo_b *b, uint32_t s, uint32_t p)
{
    algo_b_copy(b, s, algo_b_ref(b, ALGO_BUF_OUT, p, 0), algo_b_ref(b, ALGO_BUF_IN, b->r, algo_blk_off(b->op, p)),
                b->op->count);
    algo_b_signal(b, s, p, ALGO_SLOT_DATA);
}

/* Scatter and Broadcast across servers: the root writes each peer its block or its buffer (a rank
 * may read no other server's memory, so receivers cannot pull). */
static void mesh_rooted_put(algo_b *b, mesh_peer_fn put)
{
    uint32_t r = b->r, root = b->op->root;
    algo_b_fetch_rooted(b);
    algo_b_prologue(b);
    if (r == root) {
        if (b->op->coll == ALGO_COLL_SCATTER && !b->op->in_place)
            algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, r, 0), algo_b_ref(b, ALGO_BUF_IN, r, algo_blk_off(b->op, r)),
                        b->op->count);
        mesh_fanout(b, put);
    } else {
        algo_b_wait(b, 0, root, ALGO_SLOT_DATA);
    }
    algo_b_epilogue(b, 0); /* the ring-check fetch of the root must precede the root's end */
}

static void mesh_alltoall(algo_b *b)
{
    algo_b_fetch_all(b);
    algo_b_prologue(b);
    algo_a2a_self(b, 0);
    mesh_fanout(b, algo_a2a_send);
    wait_all(b);
}

int algo_mesh_build(algo_b *b)
{
    const algo_op *op = b->op;
    switch (op->coll) {
    case ALGO_COLL_ALLREDUCE: mesh_allreduce(b); break;
    case ALGO_COLL_ALLGATHER:
    case ALGO_COLL_ALLGATHERV: mesh_allgather(b); break;
    case ALGO_COLL_REDUCE_SCATTER:
    case ALGO_COLL_REDUCE_SCATTERV: mesh_reduce_scatter(b); break;
    case ALGO_COLL_REDUCE: mesh_reduce(b); break;
    case ALGO_COLL_BROADCAST:
        if (algo_topo_one_server(b->topo, b->n))
            mesh_broadcast(b);
        else
            mesh_rooted_put(b, put_whole);
        break;
    case ALGO_COLL_SCATTER:
        if (algo_topo_one_server(b->topo, b->n))
            mesh_scatter(b);
        else
            mesh_rooted_put(b, put_scatter_block);
        break;
    case ALGO_COLL_ALLTOALL:
    case ALGO_COLL_ALLTOALLV:
    case ALGO_COLL_ALLTOALLVC:
        if (op->in_place)
            return HAL_E_NOT_SUPPORTED;
        mesh_alltoall(b);
        break;
    default:
        return HAL_E_NOT_SUPPORTED;
    }
    return 0;
}
