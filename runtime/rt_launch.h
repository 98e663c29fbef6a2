/* One launch of a plan: the bindings its tasks read on the device, and its lifetime. */
#ifndef RT_LAUNCH_H
#define RT_LAUNCH_H

#include "runtime/rt_internal.h"

typedef struct rt_launch_ctx rt_launch_ctx;

typedef struct rt_fetch_arg {
    rt_launch_ctx *ctx;
    uint32_t peer;
} rt_fetch_arg;

struct rt_launch_ctx {
    rt_comm *c;
    const algo_plan *plan;
    uint64_t seq;              /* collective seq, or 0 for p2p (per-peer seqs below) */
    rt_sig sig;
    bool p2p;
    hal_event *done;           /* recorded after the last task: reclaim when complete */
    hal_stream *stream;        /* the stream the launch was issued on */
    rt_launch_ctx *next;       /* comm's in-flight list */
    size_t esize;
    void **base;               /* [3][nranks]: IN, OUT, SCRATCH of every rank (peers' IN/OUT after FETCH) */
    void **vbase;              /* [nranks]: peer OUT + its recv displacement for me (ALLTOALLV) */
    uint64_t *vtable;          /* [2*nranks] my recv counts, displs (ALLTOALLV) to publish */
    uint64_t *p2p_seq;         /* [nranks] pair sequence of this call per peer (p2p) */
    uint64_t *p2p_recv_addr;   /* [nranks] my recv buffer for data from each peer (p2p) */
    uint64_t *p2p_send;        /* [nranks] elements I send to each peer */
    uint64_t *p2p_recv;        /* [nranks] elements I receive from each peer */
    uint8_t *p2p_dir;          /* [nranks] bit0 send to peer, bit1 recv from peer */
    algo_plan *owned_plan;     /* p2p plans are per call (their buffers are part of the shape) */
    rt_fetch_arg *fetch;       /* [nranks] */
    uint32_t trace_op;         /* id in the timeline trace, 0 when not traced (rt_trace.h) */
};

rt_launch_ctx *rt_launch_ctx_new(rt_comm *c, const algo_plan *plan);
void rt_launch_ctx_free(rt_launch_ctx *ctx);

/* Device-side tasks (hal_task_fn). */
int rt_publish_task(void *arg, char *msg, size_t len);
int rt_fetch_task(void *arg, char *msg, size_t len);

/* runtime/dma: turns a COPY/REDUCE step into DMA descriptors bound to this launch. */
hal_result rt_dma_submit(rt_launch_ctx *ctx, hal_stream *s, const algo_step *step);
/* Binds a symbolic ref: direct for own/static buffers, indirect through ctx for peers' IN/OUT. */
hal_ref rt_dma_bind(rt_launch_ctx *ctx, const algo_ref *r);

/* Allocates what a launch needs before it takes a sequence number (slave streams, its completion
 * event): a failure here leaves the communicator usable. The caller frees ctx on failure. */
HcclResult rt_launch_prepare(rt_comm *c, rt_launch_ctx *ctx);
/* Enqueues a prepared context on s, ordered after the communicator's previous launch (caller holds
 * c->lock); on failure frees ctx and fails the communicator (its seq is taken). */
HcclResult rt_launch_ctx_enqueue(rt_comm *c, rt_launch_ctx *ctx, hal_stream *s);

/* Pending launches: reclaim the finished ones; wait for all (destroy). */
void rt_launch_reclaim(rt_comm *c, bool wait_all);

#endif
