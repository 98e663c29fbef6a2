/* The launches of a communicator not yet reclaimed, oldest first: a ring of pointers
 * (rt_launch.h has the accessors), so that the host's help and throttle (rt_launch.c) find "the
 * launch after which k are younger" in one step. As a linked list that was a walk of up to 127
 * launches on every call while the device was behind: 8 B calls enqueued behind a held stream
 * cost 244-262 ns each with 100 pending against 146-160 with 16 (enqueue_bench). Point-to-point
 * launches are helped but not throttled (a receive may wait for a send its own thread issues
 * later), so the ring grows by doubling; rt_pending_reserve makes room before a launch takes its
 * seq, so that its push cannot fail. */
#include <stdlib.h>

#include "runtime/stream/rt_launch.h"

/* Capacity of a new ring: more than the throttle lets collectives have in flight. */
#define PENDING_CAP_FIRST (2u * RT_LAUNCH_INFLIGHT_MAX)

HcclResult rt_pending_grow(rt_comm *c)
{
    uint32_t cap = c->pending_cap ? 2u * c->pending_cap : PENDING_CAP_FIRST;
    rt_launch_ctx **ring = cap > c->pending_cap ? malloc((size_t)cap * sizeof *ring) : NULL;
    if (!ring) {
        OH_ERR("launch", "comm %s: rank %u: no room for more than %u pending launches", c->name, c->rank,
               c->npending);
        return HCCL_E_MEMORY;
    }
    for (uint32_t i = 0; i < c->npending; i++) /* unrolled from the old ring: the oldest at 0 */
        ring[i] = rt_pending_at(c, i);
    free(c->pending);
    c->pending = ring;
    c->pending_cap = cap;
    c->pending_first = 0;
    return HCCL_SUCCESS;
}

void rt_pending_free(rt_comm *c)
{
    free(c->pending);
    c->pending = NULL;
    c->pending_cap = c->pending_first = c->npending = 0;
}
