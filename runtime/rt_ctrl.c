/* The peer-visible control block: layout, publication rings, the communicator-wide abort and the
 * epoch-guarded access to peers' blocks (the pool that owns the blocks is rt_ctrl_pool.c). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "runtime/bootstrap/bootstrap.h"
#include "runtime/net/rt_net.h"
#include "runtime/rt_internal.h"

static size_t align64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

static size_t off_notify(void)
{
    return align64(sizeof(rt_ctrl));
}

static size_t off_pub(uint32_t n)
{
    return off_notify() + align64((size_t)n * RT_SLOTS * sizeof(hal_notify_handle));
}

static size_t off_p2p(uint32_t n)
{
    return off_pub(n) + align64(RT_PUB_RING * sizeof(rt_pub_record));
}

static size_t off_vtable(uint32_t n)
{
    return off_p2p(n) + align64((size_t)n * RT_P2P_RING * sizeof(rt_pub_record));
}

static size_t off_fetched(uint32_t n)
{
    return off_vtable(n) + align64((size_t)RT_PUB_RING * RT_VTABLE_ENTRIES(n) * sizeof(uint64_t));
}

size_t rt_ctrl_size(uint32_t n)
{
    return off_fetched(n) + align64((size_t)n * sizeof(uint64_t));
}

/* Everything a reused block may still hold but its guarded words. The V tables stay as they are:
 * a table is read only through a record of its call, written after it (rt_publish.c), and at
 * 8 ranks they are 400 KiB of the block's 660 that a communicator without V-ops never touches. */
void rt_ctrl_clear(rt_ctrl *c, uint32_t n)
{
    memset((char *)c + RT_CTRL_GUARDED_BYTES, 0, off_vtable(n) - RT_CTRL_GUARDED_BYTES);
    memset((char *)c + off_fetched(n), 0, rt_ctrl_size(n) - off_fetched(n));
}

_Atomic uint64_t *rt_ctrl_fetched(rt_ctrl *c)
{
    return (_Atomic uint64_t *)((char *)c + off_fetched(c->nranks));
}

/* Has peer q read my record of call `seq` (or can it no longer)? Reads q's block, then checks
 * its epoch: a block q released is not ours to read, and q fetches nothing any more. */
static bool peer_fetched(const rt_comm *c, uint32_t q, uint64_t seq)
{
    rt_ctrl *pc = c->peers[q].ctrl;
    if (!pc)
        return true;
    uint64_t got = atomic_load_explicit(&rt_ctrl_fetched(pc)[c->rank], memory_order_acquire);
    bool destroyed = atomic_load(&pc->destroyed);
    return !rt_ctrl_peer_live(c, q) || destroyed || got >= seq;
}

/* An eager call ends before its peers' FETCHes of this rank's record (algos/eager.c): before the
 * block goes back to the pool, wait until every peer read the last one, left, or the
 * communicator failed; bounded by HCCL_EXEC_TIMEOUT, the longest a peer's FETCH may take. */
void rt_ctrl_wait_fetched(rt_comm *c)
{
    struct timespec nap = {0, 200000};
    uint64_t waited_us = 0, limit_us = (uint64_t)(c->exec_timeout_s > 0 ? c->exec_timeout_s : 0) * 1000000u;
    for (uint32_t q = 0; q < c->nranks; q++) {
        while (q != c->rank && !atomic_load(&c->ctrl->abort) && !peer_fetched(c, q, c->seq)) {
            if (limit_us && waited_us >= limit_us) {
                OH_WARN("comm", "rank %u: destroying with rank %u not having read op #%llu's record after %d s",
                        c->rank, q, (unsigned long long)c->seq, c->exec_timeout_s);
                return;
            }
            nanosleep(&nap, NULL); /* rare and short: peers are inside the same call */
            waited_us += 200;
        }
    }
}

hal_notify_handle *rt_ctrl_notify_tbl(rt_ctrl *c, uint32_t sender)
{
    return (hal_notify_handle *)((char *)c + off_notify()) + (size_t)sender * RT_SLOTS;
}

rt_pub_record *rt_ctrl_pub(rt_ctrl *c, uint64_t seq)
{
    return (rt_pub_record *)((char *)c + off_pub(c->nranks)) + seq % RT_PUB_RING;
}

rt_pub_record *rt_ctrl_p2p(rt_ctrl *c, uint32_t peer, uint64_t seq)
{
    return (rt_pub_record *)((char *)c + off_p2p(c->nranks)) + (size_t)peer * RT_P2P_RING + seq % RT_P2P_RING;
}

uint64_t *rt_ctrl_vtable(rt_ctrl *c, uint64_t seq)
{
    return (uint64_t *)((char *)c + off_vtable(c->nranks)) + (seq % RT_PUB_RING) * RT_VTABLE_ENTRIES(c->nranks);
}

/* Lifetime rule (docs/runtime.md, "Lifetime"): a peer's control block is touched only through
 * the epoch it had when we connected. Writes are CASes on words that hold that epoch; reads of
 * anything else in the block are validated against it afterwards (rt_ctrl_peer_live). */

static uint32_t epoch_of(uint64_t w)
{
    return (uint32_t)(w >> 32);
}

static void abort_one(rt_ctrl *ctrl, uint32_t epoch, HcclResult code, const char *msg)
{
    uint64_t idle = (uint64_t)epoch << 32, expected = idle;
    /* 1 = claimed (message being written), 2 = published. Fails if the block already failed or
     * has left this communicator (another epoch). */
    if (!atomic_compare_exchange_strong(&ctrl->abort_word, &expected, idle | 1))
        return;
    ctrl->abort_code = (uint32_t)code;
    snprintf(ctrl->abort_msg, sizeof ctrl->abort_msg, "%s", msg);
    expected = idle | 1;
    atomic_compare_exchange_strong(&ctrl->abort_word, &expected, idle | 2);
}

/* Writes the reason into every rank's control block, then raises the flags: a waiting rank
 * polls its own flag, so it fails within a poll interval with the first reason recorded. */
void rt_abort_local(rt_comm *c, HcclResult code, const char *msg)
{
    for (uint32_t r = 0; r < c->nranks; r++) {
        if (r == c->rank) {
            if (c->ctrl)
                abort_one(c->ctrl, c->ctrl_epoch, code, msg);
        } else if (c->peers && c->peers[r].ctrl && !c->peers[r].remote) { /* a remote's is our mirror */
            abort_one(c->peers[r].ctrl, c->peers[r].ctrl_epoch, code, msg);
        }
    }
}

void rt_abort_all(rt_comm *c, HcclResult code, const char *msg)
{
    rt_abort_local(c, code, msg);
    if (c->net)
        rt_net_abort_push(c); /* ranks of other servers, over the links */
}

bool rt_ctrl_peer_live(const rt_comm *c, uint32_t p)
{
    const rt_peer *peer = &c->peers[p];
    /* Seqlock-style validation: the caller's reads of the block come before this epoch load. */
    atomic_thread_fence(memory_order_acquire);
    return peer->ctrl && epoch_of(atomic_load(&peer->ctrl->abort_word)) == peer->ctrl_epoch;
}

bool rt_ctrl_peer_left(const rt_comm *c, uint32_t p)
{
    /* destroyed first: a block reused since then shows the new epoch, which counts as left too. */
    const rt_peer *peer = &c->peers[p];
    return atomic_load(&peer->ctrl->destroyed) || !rt_ctrl_peer_live(c, p);
}

#define JOIN_FAILED (1u << 31) /* in a rank's own join word: some rank's init failed */

static HcclResult join_failed(rt_comm *c)
{
    if (atomic_load(&c->ctrl->abort) == 2) {
        OH_ERR("comm", "rank %u: communicator init failed on another rank: %s", c->rank, c->ctrl->abort_msg);
        return (HcclResult)c->ctrl->abort_code;
    }
    OH_ERR("comm", "rank %u: another rank failed to initialise the communicator", c->rank);
    return HCCL_E_INTERNAL;
}

void rt_ctrl_join_fail_all(rt_comm *c)
{
    for (uint32_t r = 0; r < c->nranks && c->peers; r++) {
        rt_ctrl *ctrl = r == c->rank ? c->ctrl : c->peers[r].ctrl;
        uint32_t epoch = r == c->rank ? c->ctrl_epoch : c->peers[r].ctrl_epoch;
        if (!ctrl)
            continue;
        uint64_t w = atomic_load(&ctrl->join_word);
        while (epoch_of(w) == epoch && !atomic_compare_exchange_weak(&ctrl->join_word, &w, w | JOIN_FAILED))
            ;
    }
}

/* Init returns only once every rank has mapped every peer: a rank that finishes its first op and
 * exits early must not take its memory away from a peer still connecting to it. A rank whose init
 * fails marks every rank it reached (JOIN_FAILED in their own join word) before it leaves, so
 * rank 0's epoch moving on without that mark means rank 0 saw everyone count in. The abort flag
 * is no verdict here: a fast rank's first op may already have failed the communicator.
 * Init path only, so a 1 ms poll costs nothing. */
HcclResult rt_ctrl_join(rt_comm *c)
{
    /* Per server: the first rank of this rank's server keeps the count (peers on other servers
     * never map this memory; runtime/net's hello exchange is their handshake). */
    uint32_t leader = c->nranks, members = 0;
    for (uint32_t r = 0; r < c->nranks; r++) {
        if (c->peers[r].remote)
            continue;
        leader = leader < r ? leader : r;
        members++;
    }
    _Atomic uint64_t *word = &c->peers[leader].ctrl->join_word;
    uint32_t epoch = c->peers[leader].ctrl_epoch;
    uint64_t w = atomic_load(word);
    do {
        if (epoch_of(w) != epoch)
            return join_failed(c);
    } while (!atomic_compare_exchange_weak(word, &w, w + 1));
    struct timespec nap = {0, 1000000};
    int limit_ms = rt_bootstrap_timeout_s() * 1000;
    for (int waited = 0;; waited++) {
        if ((uint32_t)atomic_load(&c->ctrl->join_word) & JOIN_FAILED)
            return join_failed(c);
        w = atomic_load(word);
        if (epoch_of(w) != epoch || ((uint32_t)w & ~JOIN_FAILED) >= members)
            return HCCL_SUCCESS;
        if (waited > limit_ms) {
            OH_ERR("comm", "rank %u: only %u of %u ranks of its server finished connecting within "
                   "HCCL_CONNECT_TIMEOUT=%d s", c->rank, (uint32_t)w & ~JOIN_FAILED, members, rt_bootstrap_timeout_s());
            return HCCL_E_TIMEOUT;
        }
        nanosleep(&nap, NULL);
    }
}
