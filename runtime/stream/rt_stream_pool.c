/* The communicator's slave streams and the events that fork them off / join them back to the
 * user's stream. Created on first need, kept for the communicator's life. */
#include "runtime/rt_internal.h"

HcclResult rt_streams_ensure(rt_comm *c, uint32_t nstreams)
{
    for (uint32_t s = 1; s < nstreams && s < RT_MAX_STREAMS; s++) {
        if (c->slaves[s])
            continue;
        CHECK_MAP(c->hal->stream_create(c->dev, &c->slaves[s]), rt_from_hal);
        CHECK_MAP(c->hal->event_create(c->dev, 0, &c->fork_ev[s]), rt_from_hal);
        CHECK_MAP(c->hal->event_create(c->dev, 0, &c->join_ev[s]), rt_from_hal);
    }
    return HCCL_SUCCESS;
}

void rt_streams_teardown(rt_comm *c)
{
    for (uint32_t s = 1; s < RT_MAX_STREAMS; s++) {
        if (c->slaves[s])
            c->hal->stream_destroy(c->slaves[s]);
        if (c->fork_ev[s])
            c->hal->event_destroy(c->fork_ev[s]);
        if (c->join_ev[s])
            c->hal->event_destroy(c->join_ev[s]);
        c->slaves[s] = NULL;
        c->fork_ev[s] = c->join_ev[s] = NULL;
    }
}
