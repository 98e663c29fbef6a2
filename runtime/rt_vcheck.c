/* V-op validation: what AlltoAllV(C), AllGatherV and ReduceScatterV ranks must agree on, checked
 * on the device inside FETCH, before any step can address the fetched peer's buffers.
 *
 * Each rank publishes (rt_vpublish) into its control block, per call, RT_VTABLE_ENTRIES(n) words:
 *  AlltoAllV(C):   [what I send to each rank (n), what I expect from each (n), where each block
 *                  lands in my OUT (n, the recv displacements senders write at), matrix hash]
 *                  (AlltoAllVC: my row and my column of the matrix, so n^2 words are never stored
 *                  per ring slot; the hash catches differences in entries a pair does not share);
 *  AllGatherV / ReduceScatterV: [counts (n), displs (n)], which must be identical on every rank
 *                  because the plans address peers' buffers through their own view of the layout.
 * A fetcher compares the peer's words with its own call. Together with the fetch sets this gives
 * the rule: no byte is written outside a receive buffer its receiver described, since every rank
 * whose buffers another touches has been checked against it first (AlltoAll and the mesh/ring
 * V-ops fetch every peer; ring AllGatherV writes only into its right neighbour, which it
 * fetches, and a disagreement anywhere breaks the chain of neighbour checks somewhere, so some
 * rank notices it and fails the op everywhere). */
#include <stdio.h>
#include <string.h>

#include "runtime/stream/rt_launch.h"

bool rt_vop_is_a2a(const rt_launch_ctx *ctx)
{
    algo_coll coll = ctx->plan->op.coll;
    return coll == ALGO_COLL_ALLTOALLV || coll == ALGO_COLL_ALLTOALLVC;
}

static const uint64_t *my_tab(const rt_launch_ctx *ctx, algo_vtab tab)
{
    return ctx->vt + (size_t)(tab - 1) * ctx->c->nranks;
}

/* An entry of this call's table tab, in bytes, is past the eager AlltoAllV's crossover (0: the
 * launch is no eager AlltoAllV). */
static bool block_direct(const rt_launch_ctx *ctx, algo_vtab tab, uint32_t peer, uint64_t small)
{
    return small && peer != ctx->c->rank && my_tab(ctx, tab)[peer] * ctx->esize > small;
}

/* The eager AlltoAllV's crossover, 0 for every other launch (its tables are not filled then). */
static uint64_t a2av_crossover(const rt_launch_ctx *ctx)
{
    return ctx->vop ? ctx->plan->v_small_bytes : 0;
}

bool rt_a2av_sends_directly(const rt_launch_ctx *ctx, uint32_t peer)
{
    return block_direct(ctx, ALGO_VT_COUNT, peer, a2av_crossover(ctx));
}

/* Called for every eager post and launch: other collectives leave at the first test. */
bool rt_a2av_receives_directly(const rt_launch_ctx *ctx)
{
    uint64_t small = a2av_crossover(ctx);
    for (uint32_t q = 0; small && q < ctx->c->nranks; q++)
        if (block_direct(ctx, ALGO_VT_RCOUNT, q, small))
            return true;
    return false;
}

uint64_t rt_vmatrix_hash(const uint64_t *m, size_t entries)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < entries; i++) {
        h ^= m[i] + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
        h *= 0x100000001b3ull;
    }
    return h;
}

void rt_vpublish(const rt_launch_ctx *ctx, uint64_t *t)
{
    size_t n = ctx->c->nranks, sz = n * sizeof *t;
    bool a2a = rt_vop_is_a2a(ctx);
    memcpy(t, my_tab(ctx, ALGO_VT_COUNT), sz);
    memcpy(t + n, my_tab(ctx, a2a ? ALGO_VT_RCOUNT : ALGO_VT_DISPL), sz);
    if (a2a)
        memcpy(t + 2 * n, my_tab(ctx, ALGO_VT_RDISPL), sz);
    t[3 * n] = ctx->vhash;
}

static int vfail(rt_launch_ctx *ctx, char *msg)
{
    rt_comm *c = ctx->c;
    if (!atomic_load(&c->ctrl->abort)) /* the peer may have noticed first: one line is enough */
        OH_ERR("mismatch", "%s", msg);
    rt_abort_all(c, HCCL_E_PARA, msg);
    return HAL_E_ABORTED;
}

int rt_vself_check(rt_launch_ctx *ctx, char *msg, size_t len)
{
    rt_comm *c = ctx->c;
    uint32_t r = c->rank;
    if (ctx->plan->op.coll != ALGO_COLL_ALLTOALLV)
        return 0;
    uint64_t sends = my_tab(ctx, ALGO_VT_COUNT)[r], expects = my_tab(ctx, ALGO_VT_RCOUNT)[r];
    if (sends == expects)
        return 0;
    snprintf(msg, len, "comm %s: rank %u sends %llu elements to rank %u, rank %u expects %llu from rank %u "
             "(HcclAlltoAllV, op #%llu)", c->name, r, (unsigned long long)sends, r, r,
             (unsigned long long)expects, r, (unsigned long long)ctx->seq);
    return vfail(ctx, msg);
}

/* One direction of an all-to-all pair: what `from` sends to `to` against what `to` expects. */
static int a2a_dir(rt_launch_ctx *ctx, uint32_t from, uint32_t to, uint64_t sends, uint64_t expects, char *msg,
                   size_t len)
{
    if (sends == expects)
        return 0;
    rt_comm *c = ctx->c;
    unsigned long long seq = (unsigned long long)ctx->seq;
    if (ctx->plan->op.coll == ALGO_COLL_ALLTOALLV) {
        snprintf(msg, len, "comm %s: rank %u sends %llu elements to rank %u, rank %u expects %llu from rank %u "
                 "(HcclAlltoAllV, op #%llu)", c->name, from, (unsigned long long)sends, to, to,
                 (unsigned long long)expects, from, seq);
    } else { /* the sender's view of entry [from][to] against the receiver's */
        snprintf(msg, len, "comm %s: rank %u has sendCountMatrix[%u][%u]=%llu where rank %u has %llu "
                 "(HcclAlltoAllVC, op #%llu)", c->name, from, from, to, (unsigned long long)sends, to,
                 (unsigned long long)expects, seq);
    }
    return vfail(ctx, msg);
}

/* AlltoAllVC, the matrices differ somewhere: the peer published its row and column (as it sees
 * them); compare them with mine and name the first entry that differs. Finding none is fine: the
 * difference then lies in entries neither of us uses (our pair entries agreed above), and the
 * pair that does disagree on it names it, since every pair of ranks fetches each other in every
 * all-to-all plan: if ranks a and b see entry [i][j] differently, one of them differs from rank
 * i's own view, and that rank and i compare row i. */
static int check_matrix(rt_launch_ctx *ctx, uint32_t p, const uint64_t *theirs, char *msg, size_t len)
{
    rt_comm *c = ctx->c;
    uint32_t n = c->nranks, q = c->rank;
    const uint64_t *m = ctx->vmatrix;
    if (!m)
        return 0;
    for (uint32_t k = 0; k < 2 * n; k++) {
        uint32_t i = k < n ? p : k - n, j = k < n ? k : p; /* row p, then column p */
        uint64_t pv = theirs[k < n ? k : n + (k - n)], qv = m[(size_t)i * n + j];
        if (pv == qv)
            continue;
        uint32_t lo = p < q ? p : q, hi = p < q ? q : p;
        snprintf(msg, len, "comm %s: rank %u has sendCountMatrix[%u][%u]=%llu where rank %u has %llu "
                 "(HcclAlltoAllVC, op #%llu)", c->name, lo, i, j, (unsigned long long)(lo == p ? pv : qv), hi,
                 (unsigned long long)(lo == p ? qv : pv), (unsigned long long)ctx->seq);
        return vfail(ctx, msg);
    }
    return 0;
}

static int check_a2a(rt_launch_ctx *ctx, uint32_t p, const uint64_t *theirs, char *msg, size_t len)
{
    rt_comm *c = ctx->c;
    uint32_t n = c->nranks, q = c->rank;
    /* Per side of the pair: what it sends the other, what it expects from the other. The lower
     * rank's sends are checked first, so both ranks of a pair word a disagreement alike. */
    uint32_t lo = p < q ? p : q, hi = p < q ? q : p;
    uint64_t sends_p = theirs[q], expects_p = theirs[n + q];
    uint64_t sends_q = my_tab(ctx, ALGO_VT_COUNT)[p], expects_q = my_tab(ctx, ALGO_VT_RCOUNT)[p];
    uint64_t sends_lo = lo == p ? sends_p : sends_q, expects_lo = lo == p ? expects_p : expects_q;
    uint64_t sends_hi = lo == p ? sends_q : sends_p, expects_hi = lo == p ? expects_q : expects_p;
    if (a2a_dir(ctx, lo, hi, sends_lo, expects_hi, msg, len) || a2a_dir(ctx, hi, lo, sends_hi, expects_lo, msg, len))
        return HAL_E_ABORTED;
    if (ctx->plan->op.coll == ALGO_COLL_ALLTOALLVC && theirs[3 * n] != ctx->vhash)
        return check_matrix(ctx, p, theirs, msg, len);
    return 0;
}

/* AllGatherV / ReduceScatterV: counts and displs identical on both ranks. */
static int check_layout(rt_launch_ctx *ctx, uint32_t p, const uint64_t *theirs, char *msg, size_t len)
{
    rt_comm *c = ctx->c;
    uint32_t n = c->nranks, q = c->rank;
    bool ag = ctx->plan->op.coll == ALGO_COLL_ALLGATHERV;
    const uint64_t *mine[2] = {my_tab(ctx, ALGO_VT_COUNT), my_tab(ctx, ALGO_VT_DISPL)};
    for (uint32_t t = 0; t < 2; t++)
        for (uint32_t k = 0; k < n; k++) {
            uint64_t a = theirs[(size_t)t * n + k], b = mine[t][k];
            if (a == b)
                continue;
            const char *what = ag ? (t ? "recvDispls" : "recvCounts") : (t ? "sendDispls" : "sendCounts");
            uint32_t lo = p < q ? p : q, hi = p < q ? q : p;
            snprintf(msg, len, "comm %s: rank %u has %s[%u]=%llu where rank %u has %llu (%s, op #%llu)", c->name,
                     lo, what, k, (unsigned long long)(lo == p ? a : b), hi, (unsigned long long)(lo == p ? b : a),
                     algo_coll_name(ctx->plan->op.coll), (unsigned long long)ctx->seq);
            return vfail(ctx, msg);
        }
    return 0;
}

int rt_vcheck_peer(rt_launch_ctx *ctx, uint32_t peer, const uint64_t *theirs, char *msg, size_t len)
{
    if (!theirs) { /* same signature, so the peer is a V-op too: it must have published */
        snprintf(msg, len, "comm %s: rank %u published no count tables for %s (op #%llu)", ctx->c->name, peer,
                 algo_coll_name(ctx->plan->op.coll), (unsigned long long)ctx->seq);
        return vfail(ctx, msg);
    }
    return rt_vop_is_a2a(ctx) ? check_a2a(ctx, peer, theirs, msg, len) : check_layout(ctx, peer, theirs, msg, len);
}
