/* A communicator's first V-op: this process's first touch of the publication and V-table rings,
 * its own and its local peers', which every V-op reads and writes (record mode: rt_publish.c).
 * A ring slot is taken per call (seq % RT_PUB_RING), so without this the first RT_PUB_RING V-ops
 * each start pages of every rank's rings: a page costs a fault, or about 7 us at its first use on a
 * VM (rt_inbox_warm.c). Measured on the 2-CPU VM, 16 B blocks, out of place: AllGatherV at 4 ranks
 * 12.6 us a call over 2000-call loops, 6.4 over 20 000 (docs/perf-history.md). Done at the first V-op, not
 * at init: communicators that never run one do not pay it. */
#include <unistd.h>

#include "runtime/rt_internal.h"

void rt_warm_range(const rt_comm *c, const void *from, const void *to, size_t page)
{
    volatile const char *p = from;
    size_t bytes = (size_t)((const char *)to - (const char *)from);
    if (c->hal->mem_prefault)
        (void)c->hal->mem_prefault((void *)from, bytes);
    for (size_t off = 0; off < bytes; off += page)
        (void)p[off];
}

/* Both rings of one control block: the records and the tables, each RT_PUB_RING slots. */
static void warm_rings(const rt_comm *c, rt_ctrl *ctrl, size_t page)
{
    rt_warm_range(c, rt_ctrl_pub(ctrl, 0), rt_ctrl_pub(ctrl, RT_PUB_RING - 1) + 1, page);
    rt_warm_range(c, rt_ctrl_vtable(ctrl, 0), rt_ctrl_vtable(ctrl, RT_PUB_RING - 1) + RT_VTABLE_ENTRIES(c->nranks),
                  page);
}

void rt_vring_warm(rt_comm *c)
{
    if (c->vring_warm) /* every later V-op: one load */
        return;
    c->vring_warm = true;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    warm_rings(c, c->ctrl, page);
    for (uint32_t q = 0; q < c->nranks; q++)
        if (q != c->rank && !c->peers[q].remote)
            warm_rings(c, c->peers[q].ctrl, page);
}
