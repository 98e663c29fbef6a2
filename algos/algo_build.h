/* Internal to algos/: the plan builder the compilers share, slot numbers, chunking and the
 * per-collective buffer layouts (also used by the verifier to build its reference). */
#ifndef ALGOS_ALGO_BUILD_H
#define ALGOS_ALGO_BUILD_H

#include "algos/plan.h"

/* Notify slots (ALGO_SLOT_PUB = 0 is publication). DATA: "I wrote/reduced into your buffer" (or
 * "my data is ready"); READY: "my accumulator is initialised, you may reduce into it"; DONE: "I no
 * longer touch your buffers" (the end-of-plan handshake, see algo_b_epilogue). */
#define ALGO_SLOT_DATA 1
#define ALGO_SLOT_READY 2
#define ALGO_SLOT_DONE 3
#define ALGO_NSLOTS 4

/* Plan under construction. Step appends never fail on the spot: an allocation failure is sticky
 * in err and reported by algo_b_finish, so compilers stay linear. */
typedef struct algo_b {
    algo_plan *p;
    const algo_op *op; /* == &p->op (plan-owned copy) */
    uint32_t n, r;
    uint64_t esz;
    uint8_t *fetch;      /* fetch[q]: this rank FETCHes q (and may touch q's IN/OUT) */
    uint8_t *fetched_by; /* fetched_by[q]: q FETCHes this rank, so this rank SIGNALs PUB to q */
    bool no_ring_check; /* SENDRECV: only the item peers take part in the call */
    const algo_topo *topo; /* where ranks sit (algo_compile's), may be NULL */
    uint8_t when;          /* algo_when of the steps pushed now (algo_b_when), of the block when_sym */
    algo_vsym when_sym;
    int err;
} algo_b;

int algo_b_init(algo_b *b, const algo_op *op, algo_kind kind);
/* Hands the plan over (0) or frees it and returns the sticky error. */
int algo_b_finish(algo_b *b, algo_plan **out);
void algo_b_abort(algo_b *b);

void algo_b_push(algo_b *b, uint32_t stream, algo_step st);
/* The steps pushed from now on run only when block `sym` is small / large (plan.h, algo_when), or
 * always (ALGO_WHEN_ALWAYS). */
static inline void algo_b_when(algo_b *b, algo_when when, algo_vsym sym)
{
    b->when = (uint8_t)when;
    b->when_sym = sym;
}
/* A ref to `owner`'s buffer at `elem_off` elements (owner == this rank -> ALGO_SELF). */
algo_ref algo_b_ref(const algo_b *b, algo_buf buf, uint32_t owner, uint64_t elem_off);
/* COPY/REDUCE of `elems` elements; nothing is emitted for 0 elements. */
void algo_b_copy(algo_b *b, uint32_t s, algo_ref dst, algo_ref src, uint64_t elems);
/* The last step of stream s, if a COPY, writes what this rank reads again in its next call
 * (algo_step copy.reread). */
void algo_b_mark_reread(algo_b *b, uint32_t s);
void algo_b_reduce(algo_b *b, uint32_t s, algo_ref dst, algo_ref src, uint64_t elems);
/* COPY whose element count is the V-table entry `count` (always emitted: a zero count is
 * skipped at launch). */
void algo_b_copy_v(algo_b *b, uint32_t s, algo_ref dst, algo_ref src, algo_vsym count);
static inline algo_vsym algo_vs(algo_vtab tab, uint32_t idx)
{
    algo_vsym v = {(uint8_t)tab, idx};
    return v;
}
/* ref + V-table entry sym (elements). */
static inline algo_ref algo_ref_v(algo_ref ref, algo_vsym sym)
{
    ref.vsym = sym;
    return ref;
}
/* dst = src op src2 (dst only written). */
void algo_b_reduce3(algo_b *b, uint32_t s, algo_ref dst, algo_ref src, algo_ref src2, uint64_t elems);
void algo_b_signal(algo_b *b, uint32_t s, uint32_t peer, uint32_t slot);
void algo_b_wait(algo_b *b, uint32_t s, uint32_t peer, uint32_t slot);
void algo_b_fork(algo_b *b, uint32_t s);
void algo_b_join(algo_b *b, uint32_t s);

/* Marks the ring neighbours (left fetched, right fetches me), then emits on stream 0: PUBLISH,
 * SIGNAL{q, PUB} for every q in fetched_by, FETCH{p} for every p in fetch. All PUB signals come
 * before the first FETCH, so no two ranks can wait on each other's publication. */
void algo_b_prologue(algo_b *b);
/* On stream s: SIGNAL{p, DONE} to every fetched p, then WAIT{q, DONE} from every q that fetched
 * this rank. Orders every access a peer made to this rank's buffers, and every peer's FETCH of
 * this rank's record, before this plan's end. Plans whose data signals already give that order
 * skip it (the verifier checks they do). */
void algo_b_epilogue(algo_b *b, uint32_t s);
/* Marks every other rank as fetched and fetching (direct algorithms). */
void algo_b_fetch_all(algo_b *b);
/* Rooted ops: the root fetches every rank, every other rank is fetched by the root. */
void algo_b_fetch_rooted(algo_b *b);
/* Both ring neighbours fetched and fetching (ring plans). */
void algo_b_ring_neighbours(algo_b *b);

/* Balanced split of count elements into parts: part i = [off(i), off(i+1)). */
static inline uint64_t algo_chunk_off(uint64_t count, uint32_t parts, uint32_t i)
{
    uint64_t q = count / parts, rem = count % parts;
    return (uint64_t)i * q + (i < rem ? i : rem);
}
static inline uint64_t algo_chunk_len(uint64_t count, uint32_t parts, uint32_t i)
{
    return algo_chunk_off(count, parts, i + 1) - algo_chunk_off(count, parts, i);
}
static inline uint32_t algo_mod(int64_t x, uint32_t n)
{
    int64_t m = x % (int64_t)n;
    return (uint32_t)(m < 0 ? m + n : m);
}

/* Block layouts, in elements. A "block" is what one rank contributes to / receives from another. */
/* ALLGATHER(V) OUT / REDUCE_SCATTER(V) IN / SCATTER IN: block j of the n-block buffer. */
uint64_t algo_blk_off(const algo_op *op, uint32_t j);
uint64_t algo_blk_len(const algo_op *op, uint32_t j);
/* Block j of a V layout (ALLGATHERV, REDUCE_SCATTERV) as plan refs: symbolic (V-table entries DISPL[j] / COUNT[j],
 * the same on every rank, which FETCH checks) when algo_counts_symbolic, else numeric. */
algo_ref algo_blk_ref(const algo_b *b, algo_buf buf, uint32_t owner, uint32_t j);
/* COPY of block j's elements (dst/src already point at the block). */
void algo_b_copy_blk(algo_b *b, uint32_t s, algo_ref dst, algo_ref src, uint32_t j);
/* REDUCE of block j's elements (dst/src/src2 already point at the block; src2 NULL: none). */
void algo_b_reduce_blk(algo_b *b, uint32_t s, algo_ref dst, algo_ref src, const algo_ref *src2, uint32_t j);
/* ALLTOALL family: where rank i's block for rank j starts in i's IN, where it lands in j's OUT,
 * and its length. For ALLTOALLV only the sender side and length are known locally: *vdispl_out is
 * set to i (the index into j's published recv displacements) and the returned offset is 0. */
uint64_t algo_a2a_len(const algo_op *op, uint32_t i, uint32_t j);
uint64_t algo_a2a_send_off(const algo_op *op, uint32_t i, uint32_t j);
uint64_t algo_a2a_recv_off(const algo_op *op, uint32_t i, uint32_t j);

/* Validates op for compilation (HAL_E_PARAM with a log line on a bad one). */
int algo_op_check(const algo_op *op);

/* The compilers: 0, HAL_E_NOT_SUPPORTED for a collective they do not do. */
int algo_ring_build(algo_b *b);
/* Ring reductions in deterministic mode: a rank-ordered chain (ring_ordered.c). */
int algo_ring_ordered_build(algo_b *b);
int algo_mesh_build(algo_b *b);
/* Ring with receive-side reduction through scratch (ring_push.c): AllReduce, ReduceScatter,
 * Reduce for ranks on several servers (only copies cross ranks). */
int algo_ring_push_build(algo_b *b);
/* Hierarchical AllReduce (hier.c): intra reduce-scatter, inter ring_push, intra allgather; needs
 * S >= 2 servers of m ranks each (algo_hier_fits: and m >= 2, where it pays). */
int algo_hier_build(algo_b *b);
bool algo_hier_fits(const algo_op *op, const algo_topo *topo);
/* Are the first n ranks all on one server (no topology: yes)? */
bool algo_topo_one_server(const algo_topo *topo, uint32_t n);
/* "hier" for every collective that has one (hier_coll.c): the collectives it can do (whatever the
 * placement), whether op on topo fits it (several servers, deterministic reductions excluded),
 * and the compiler (AllReduce: algo_hier_build). */
bool algo_hier_coll_supported(algo_coll c);
bool algo_hier_coll_fits(const algo_op *op, const algo_topo *topo);
int algo_hier_coll_build(algo_b *b);
int algo_pairwise_build(algo_b *b);
int algo_p2p_build(algo_b *b);
int algo_eager_build(algo_b *b);
/* The collectives and sizes eager plans do (algo_supports(ALGO_EAGER)). */
bool algo_eager_supports(const algo_op *op);
/* All-to-all pieces shared by pairwise, ring and mesh: the pairwise body; my block to rank j
 * written into j's OUT, then SIGNAL{j, DATA}; my block to myself. */
void algo_a2a_pairwise_body(algo_b *b);
void algo_a2a_send(algo_b *b, uint32_t s, uint32_t j);
void algo_a2a_self(algo_b *b, uint32_t s);
/* A plan that moves nothing but still publishes, checks and ends in step (count 0). */
void algo_b_empty(algo_b *b);

#endif
