/* One launch of a plan: the bindings and instructions the device reads, and their lifetime. */
#ifndef RT_LAUNCH_H
#define RT_LAUNCH_H

#include "runtime/rt_internal.h"

typedef struct rt_launch_ctx rt_launch_ctx;

/* A step that crosses servers (runtime/net): a COPY into a remote peer's buffer (its DMA pieces,
 * descs[first, first + n)) or a SIGNAL (n = 0), issued on the link to `peer`. */
typedef struct rt_net_op {
    rt_launch_ctx *ctx;
    uint32_t first, n;
    uint32_t peer;
    uint32_t slot;  /* SIGNAL */
    uint8_t buf;    /* COPY: the target's algo_buf (which rkey) */
    uint32_t item;  /* COPY of a p2p launch: the send item (its receiver's record holds the rkey) */
} rt_net_op;

typedef struct rt_fetch_arg {
    rt_launch_ctx *ctx;
    uint32_t peer;
    hal_flag_wait wait; /* a one-way receiver's wait for peer's header, its writer's (rt_prog.c, per call) */
} rt_fetch_arg;

/* One point-to-point item of a launch: what PUBLISH announces, what its FETCH (send) or receive
 * check reads, and the argument of those tasks. Buffers are bound here, not in the plan. */
typedef struct rt_p2p_item {
    rt_launch_ctx *ctx;
    uint32_t peer;
    uint8_t is_send;
    uint32_t cmd;              /* HCCL_CMD_SEND / _RECEIVE / _BATCH_SEND_RECV: the call that made it */
    uint32_t dtype;            /* HcclDataType */
    uint64_t count;            /* elements */
    uint64_t ordinal;          /* 1-based: this rank's n-th send to (receive from) peer */
    void *buf;                 /* this rank's buffer */
    void *peer_buf;            /* sends: the receiver's buffer, bound by FETCH */
    bool eager;                /* sends: bytes and header into the receiver's box (rt_p2p_eager_send_task) */
    bool sent;                 /* an eager send done ahead of the launches before (rt_p2p_eager_try_task) */
    hal_flag_wait wait;        /* with a peer on flags (rt_p2p_on_flags, runtime/stream/rt_prog_p2p.c):
                                  an eager send's for its box, another send's for the receive record,
                                  a receive's for its box's header; flag and value set with the
                                  ordinal (rt_p2p_bind_waits) */
} rt_p2p_item;

static inline uint64_t rt_p2p_item_bytes(const rt_p2p_item *it)
{
    return it->count * hal_dtype_size((hal_dtype)it->dtype);
}

/* A descriptor address bound directly to what changes per call (this rank's IN/OUT, the inbox
 * slot: rt_dma_per_call), set again from the context's bindings when a built program serves
 * another call (rt_prog_reuse.c). Direct, not indirect: a backend may run direct transfers cheaper
 * (hal/ascend enqueues them as they are, an indirect one costs a host callback). */
typedef struct rt_rebind {
    uint32_t at;    /* where the address goes: the byte offset of a hal_ref's base in ctx->descs
                       (an offset, not a pointer: a clone copies the array, rt_prog_clone.c) */
    uint8_t buf;    /* ALGO_BUF_IN, _OUT or _INBOX, or RT_REBIND_ITEM */
    uint32_t index; /* IN/OUT: in ctx->base (buf x nranks + this rank); INBOX: the rank whose inbox;
                       RT_REBIND_ITEM: the p2p item. Set once at build: rebinding is a load and a store */
} rt_rebind;
#define RT_REBIND_ITEM 0xffu /* a p2p item's buffer of this rank (rt_p2p_bind) */

/* Where one instruction of a launch came from: its plan stream and step (the trace tags of an
 * unrolled launch, logs) and, for a DMA instruction, its first descriptor in ctx->descs. */
typedef struct rt_insn_src {
    uint32_t step;
    uint32_t desc;
    uint8_t stream;
} rt_insn_src;

typedef enum rt_seg_kind { RT_SEG_PROG = 0, RT_SEG_RECORD, RT_SEG_WAIT } rt_seg_kind;

/* One submission of a launch, in submission order (rt_prog.c): a program (consecutive steps of one
 * plan stream up to a FORK/JOIN), or an event record / stream wait between streams (FORK, JOIN). */
typedef struct rt_seg {
    uint8_t kind;      /* rt_seg_kind */
    uint8_t stream;    /* plan stream it goes to: 0 the launch's stream, k the slave stream k */
    uint32_t step;     /* RECORD/WAIT: the FORK/JOIN step of stream 0 (trace tag) */
    uint32_t first, n; /* PROG: insns[first, first + n) */
    hal_event *ev;     /* RECORD/WAIT */
} rt_seg;

struct rt_launch_ctx {
    rt_comm *c;
    const algo_plan *plan;
    uint64_t seq;              /* collective seq, or 0 for p2p (per-item ordinals below) */
    rt_sig sig;
    bool p2p;
    bool hdr;                  /* eager plan in header mode: PUBLISH/FETCH via box headers (rt_publish.c) */
    hal_event *done;           /* recorded after the last task: reclaim when complete (kept when pooled) */
    hal_stream *stream;        /* the stream the launch was issued on */
    rt_launch_ctx *next;       /* comm's in-flight list, or its pool of free contexts */
    size_t esize;
    void **base;               /* [3][nranks]: IN, OUT, SCRATCH of every rank (peers' IN/OUT after FETCH) */
    void **vbase;              /* [nranks]: peer OUT + its recv displacement for me (ALLTOALLV) */
    uint64_t inbox_at;         /* this op's slot in every rank's eager inbox (rt_oneway_slot_offset): rt_ctx_inbox */
    uint64_t credit_seq;       /* one-way root: the call whose credits this one takes (0: credits given at
                                  init, nothing to check); rt_oneway.c */
    uint64_t drain_seq[ALGO_ONEWAY_SLOTS_MAX]; /* the one-way calls this rank rooted whose credits the launch */
    uint32_t ndrain;           /* takes back before its plan (0: no drain); rt_oneway.c */
    bool peer_oneway;          /* a peer may root this call one-way where this rank runs another: its
                                  FETCH waits check (rt_oneway_peer_check) */
    uint64_t *vt;              /* [4*nranks] this call's V tables (algo_vtables): V-op steps' sizes and
                                  offsets are bound from them; PUBLISH shares them, FETCH checks peers' */
    bool vop;                  /* AlltoAllV(C), AllGatherV, ReduceScatterV: vt is filled */
    uint64_t *vmatrix;         /* AlltoAllVC: [nranks*nranks] this call's count matrix (checks), else NULL */
    uint64_t *vmatrix_mem;     /* its memory, kept when pooled */
    uint64_t vhash;            /* AlltoAllVC: hash of the whole count matrix */
    bool plan_held;            /* plan came from rt_plan_get: putting the context back releases it */
    bool scratch_bound;        /* base's SCRATCH row holds every rank's (set at its first launch) */
    rt_p2p_item *p2p_items;    /* [plan->op.nitems] (p2p; rt_launch_ctx_items) */
    uint32_t p2p_cap;
    rt_fetch_arg *fetch;       /* [nranks] */
    uintptr_t out_at;          /* the call's OUT and its length (0 where unset): what the next launch's */
    uint64_t out_bytes;        /* prefix must not read before this one ends (rt_prog_ahead); kept from
                                  the call, as a cached V plan's counts are no longer the call's */
    bool runs_ahead;           /* its prefix could pass a launch like it still in flight before it
                                  (rt_prog_ahead): the queue lets it, running at once does not */
    uint32_t trace_op;         /* id in the timeline trace, 0 when not traced (rt_trace.h) */
    /* The launch as device instructions (rt_prog.c), built before the op takes its seq and read
     * by the device until `done` completes. The arrays keep their memory when the context goes
     * back to the pool, so they end up sized for the largest plan the communicator launched. */
    hal_insn *insns;
    rt_insn_src *isrc;         /* [ninsns], parallel to insns */
    uint32_t ninsns, insns_cap, isrc_cap;
    hal_dma_desc *descs;
    uint32_t ndescs, descs_cap;
    rt_seg *segs;
    uint32_t nsegs, segs_cap;
    bool staged;               /* staging mode: peers' IN/OUT are their staging buffers, known now */
    const hal_dma_desc *pre, *post; /* staging copies before / after the plan (caller's, read at build) */
    uint32_t npre, npost;
    rt_net_op *netops;         /* steps across servers, arguments of FN instructions (rt_prog.c) */
    uint32_t nnetops, netops_cap;
    /* The plan the arrays above hold the program of, when that program depends on nothing of one
     * call but the addresses in `rebinds`: the next launch of the same plan from this context
     * sets those again and skips the build (rt_prog_reuse.c). NULL: build anew. */
    const algo_plan *built;
    uint64_t built_evictions;  /* the plan cache's evictions then: a later plan may reuse the address */
    uint64_t *built_vt;        /* [4*nranks] a V-op's: the tables its offsets and sizes came from */
    rt_rebind *rebinds;        /* what such a program binds per call */
    uint32_t nrebinds, rebinds_cap;
    /* The program in the arrays passed hal prog_check and moves run_bytes (rt_prog_run_now): kept
     * while launches reuse it as it is, cleared by whatever changes more than its addresses. */
    bool checked;
    uint64_t run_bytes;
};

/* Staging mode, point to point (rt_staging.c): binds this call's receives from same-server peers to
 * staging OUT, with the copies to the user's buffers in post (room for n); the sender's side: the
 * imported address of a peer's published receive buffer, NULL when it is not in its staging. */
HcclResult rt_staging_p2p(rt_comm *c, rt_p2p_item *items, uint32_t n, hal_dma_desc *post, uint32_t *npost);
void *rt_staging_p2p_peer(const rt_comm *c, uint32_t p, uint64_t addr, uint64_t bytes);

/* A launch context for plan, from the communicator's pool (or new), bindings reset; NULL when out
 * of memory. Caller holds c->lock. */
rt_launch_ctx *rt_launch_ctx_get(rt_comm *c, const algo_plan *plan);
/* Back to the pool once the device is done with it (its plan released if held). c->lock held. */
void rt_launch_ctx_put(rt_launch_ctx *ctx);
/* p2p: room for n items in ctx->p2p_items (zeroed); NULL when out of memory. */
rt_p2p_item *rt_launch_ctx_items(rt_launch_ctx *ctx, uint32_t n);
/* Fills the pool with warmed contexts (communicator init); HCCL_E_MEMORY when out of memory. */
HcclResult rt_launch_pool_warm(rt_comm *c);
/* Frees the pooled contexts and their events (communicator destroy, after every launch was reclaimed). */
void rt_launch_pool_free(rt_comm *c);
/* Grows *arr (elements of size elem) to hold at least need; false when out of memory. */
bool rt_grow(void **arr, uint32_t *cap, uint32_t need, size_t elem);

/* The launch's instructions and submissions from its plan (rt_prog.c): bindings must be set
 * (bind_self, p2p items); nothing is submitted. Keeps the program this context built for the same
 * plan before when it is reusable (see `built`). HAL_E_PARAM for a malformed plan (logged). */
hal_result rt_prog_build(rt_launch_ctx *ctx);
/* Makes ctx's arrays hold a program for ctx's plan without a build where one serves: the one this
 * context built for it before, or the launch before's (rt_prog_reuse.c); false: build it. */
bool rt_prog_reuse(rt_launch_ctx *ctx, uint64_t evictions);
/* After a build: the program serves later launches of its plan if it depends on nothing of this
 * call but what a reuse sets again. */
void rt_prog_mark_built(rt_launch_ctx *ctx, uint64_t evictions);
/* Copies donor's program (built for ctx->plan, reusable, still in flight) into ctx, its pointers
 * into donor moved to ctx (rt_prog_clone.c); false when ctx must build its own. */
bool rt_prog_clone(rt_launch_ctx *ctx, const rt_launch_ctx *donor);
/* How a V-op's program built from tables `built` serves this call's (rt_prog_vop.c): as it is
 * (the same tables; every fixed-size op), with its descriptors bound again (other tables of the
 * same shape: rt_prog_vop_rebind), or not at all. */
typedef enum rt_vfit { RT_VFIT_NONE, RT_VFIT_SAME, RT_VFIT_SHAPE } rt_vfit;
rt_vfit rt_prog_vop_fit(const rt_launch_ctx *ctx, const uint64_t *built);
/* Binds every descriptor of ctx's program to this call's tables; false when a step's number of
 * descriptors changed (then the program must be built anew). */
bool rt_prog_vop_rebind(rt_launch_ctx *ctx);
/* Submits what rt_prog_build made, on ctx->stream and the slave streams: one program per segment
 * where the backend runs programs, else (or while the timeline trace records) one task each.
 * *recorded: ctx->done was recorded with the last program (hal prog_launch_record), so the caller
 * need not record it. */
hal_result rt_prog_submit(rt_launch_ctx *ctx, bool *recorded);
/* Runs the launch's program at once on this thread where the backend can (hal prog_run_now: the
 * stream idle) and it pays: one program on the launch stream, nothing of the communicator in
 * flight, and with more ranks than CPUs a launch that cannot run ahead (runs_ahead false)
 * (rt_prog_submit.c). *finished: it ran to its end (nothing to record or reclaim); *recorded: what
 * it left is queued with ctx->done's record. HAL_E_NOT_READY: submit it (rt_prog_submit). */
hal_result rt_prog_run_now(rt_launch_ctx *ctx, bool *finished, bool *recorded);
/* After rt_prog_build, before the launch takes its place (c->lock held): turns its AHEAD mark on
 * (hal.h, "Running ahead"; docs/runtime.md) unless the call's IN meets the OUT of the launch before
 * it on the same stream, which may still be written when the prefix would run, or peers write its
 * own OUT once it publishes (an eager AlltoAllV's large blocks) (rt_prog_ahead.c). Sets
 * ctx->runs_ahead: whether the prefix could pass a launch like it at all. */
void rt_prog_ahead(rt_launch_ctx *ctx, const rt_call *call);
/* The same for a p2p launch on `stream`, its ordinals taken: its eager sends of stream 0 run ahead
 * of as many launches before as write none of their send buffers (rt_prog_ahead.c). */
void rt_prog_p2p_ahead(rt_launch_ctx *ctx, hal_stream *stream);
/* A p2p launch's flag waits for this call's items, before its program is built or reused
 * (rt_prog_p2p.c). */
void rt_prog_p2p_waits(rt_launch_ctx *ctx);

/* AlltoAllVC: a hash of the count matrix, published so that ranks notice disagreements in the
 * entries no pair of them exchanges (rt_publish.c). */
uint64_t rt_vmatrix_hash(const uint64_t *m, size_t entries);

/* V-op tables (rt_vcheck.c), on the device inside PUBLISH / FETCH. */
bool rt_vop_is_a2a(const rt_launch_ctx *ctx);
/* An eager AlltoAllV's blocks past its plan's crossover (v_small_bytes), which go straight into the
 * receiver's OUT: one to peer, or one from any peer. False for every other launch. */
bool rt_a2av_sends_directly(const rt_launch_ctx *ctx, uint32_t peer);
bool rt_a2av_receives_directly(const rt_launch_ctx *ctx);
/* Writes what peers check into t (RT_VTABLE_ENTRIES(nranks) entries of the control block). */
void rt_vpublish(const rt_launch_ctx *ctx, uint64_t *t);
/* This rank's own tables (AlltoAllV: what it sends itself must be what it expects from itself).
 * 0, or the op fails on every rank (message in msg). */
int rt_vself_check(rt_launch_ctx *ctx, char *msg, size_t len);
/* Compares a peer's published table with this call's: 0, or the op fails on every rank with one
 * line naming both ranks and the entry. */
int rt_vcheck_peer(rt_launch_ctx *ctx, uint32_t peer, const uint64_t *theirs, char *msg, size_t len);

/* One-way calls (rt_oneway.c; algos/plan.h, INBOX). Before the launch is built (c->lock held):
 * the inbox slot it binds, the credits it takes (credit_seq) and the drain before it (ndrain);
 * commit once it took its seq. */
uint64_t rt_oneway_slot_offset(const rt_comm *c, const algo_plan *plan);
void rt_oneway_prepare(rt_comm *c, rt_launch_ctx *ctx);
void rt_oneway_commit(rt_comm *c, const rt_launch_ctx *ctx);
/* Whether the next call, if it can go one-way, continues or starts a run (algo_op.oneway_run). */
bool rt_oneway_expect_run(const rt_comm *c, const algo_op *op);
/* Does this rank write the one-way call (take credits, signal with a flag, drain after)? A
 * Broadcast's or Scatter's root; every rank but the root of a one-way Reduce (a gather). */
static inline bool rt_oneway_writer(const rt_comm *c, const algo_plan *plan)
{
    return plan->oneway && (plan->op.root == c->rank) != plan->oneway_gather;
}
/* This op's slot of rank q's eager inbox (exchanged at init; the slot moves per call). */
static inline char *rt_ctx_inbox(const rt_launch_ctx *ctx, uint32_t q)
{
    return (char *)ctx->c->peers[q].inbox + ctx->inbox_at;
}
/* Whether a header-mode launch's PUB signals are the seq it stores into the headers it wrote (flags
 * its peers' FETCHes wait for: rt_hdr_flag_task), not counts: one-way calls, and eager exchanges
 * where the backend has flag waits (c->flag_waits). */
static inline bool rt_hdr_flags(const rt_launch_ctx *ctx)
{
    return ctx->hdr && !ctx->p2p && (ctx->plan->oneway || ctx->c->flag_waits);
}
/* Device-side checks of peers' views of one-way calls, each where its wait would sleep: a receiver's
 * of its writer's (hal_flag_wait.check of the writer's rt_fetch_arg.wait, arg: that rt_fetch_arg),
 * a FETCH's of a peer that may root a one-way call (arg: the rt_fetch_arg), a writer's of the
 * receiver whose credit it waits for; and a drain's (arg: ctx). An eager exchange's flag wait for
 * a peer's header checks the peer's record, where it published one (arg: the rt_fetch_arg). A
 * writer's store of the flag, its PUB signal (arg: ctx). */
int rt_oneway_writer_check(void *arg, char *msg, size_t len);
int rt_oneway_peer_check(void *arg, char *msg, size_t len);
int rt_eager_flag_check(void *arg, char *msg, size_t len);
int rt_oneway_credit_check(void *arg, char *msg, size_t len);
int rt_hdr_flag_task(void *arg, char *msg, size_t len);
int rt_oneway_drain_check_task(void *arg, char *msg, size_t len);

/* Device-side tasks (hal_task_fn). */
int rt_publish_task(void *arg, char *msg, size_t len);
int rt_fetch_task(void *arg, char *msg, size_t len);
int rt_eager_post_task(void *arg, char *msg, size_t len);  /* header mode's PUBLISH (arg: ctx) */
int rt_eager_check_task(void *arg, char *msg, size_t len); /* header mode's FETCH (arg: rt_fetch_arg) */
/* p2p (runtime/rt_p2p_pub.c): PUBLISH (arg: ctx), FETCH of a send item, an eager send's write
 * into its receiver's box, and the check (an eager receive: the copy out) after a receive item's
 * data signal (arg: the rt_p2p_item). */
int rt_p2p_publish_task(void *arg, char *msg, size_t len);
int rt_p2p_fetch_task(void *arg, char *msg, size_t len);
int rt_p2p_eager_send_task(void *arg, char *msg, size_t len);
/* The same in a launch's prefix run ahead (rt_prog_p2p.c): only if its box is free now. */
int rt_p2p_eager_try_task(void *arg, char *msg, size_t len);
int rt_p2p_delivered_task(void *arg, char *msg, size_t len); /* a direct send's header, after its copy */
int rt_p2p_recv_task(void *arg, char *msg, size_t len);
/* A receive with a peer on flags, after its box's header came: the check (an eager send: the
 * copy out) and the box given back (runtime/rt_p2p_box.c). */
int rt_p2p_box_receive(rt_p2p_item *it, char *msg, size_t len);
/* Fails the communicator on every rank with msg (logged), naming the peer's destroy / both calls,
 * the send first; return the hal_result the task returns (rt_p2p_pub.c). */
int rt_p2p_fail(rt_comm *c, HcclResult code, int hal_rc, const char *msg);
int rt_p2p_report_destroy(const rt_p2p_item *it, char *msg, size_t len);
int rt_p2p_report_mismatch(rt_comm *c, const rt_p2p_item *send, uint32_t sender, const rt_p2p_item *recv,
                           char *msg, size_t len);
/* The check of a flag wait with a peer (hal_flag_wait.check, arg: the item): fails it naming the
 * destroy once the peer has left and the flag is still short. */
int rt_p2p_peer_check(void *arg, char *msg, size_t len);
/* After the ordinals (caller holds c->lock): what each item's flag wait waits for. */
void rt_p2p_bind_waits(rt_comm *c, rt_p2p_item *items, uint32_t n);
/* runtime/dma: a p2p ref (vdispl = item index): the item's own buffer or the peer's for it. */
hal_ref rt_p2p_bind(rt_launch_ctx *ctx, const algo_ref *r);

/* Whether r is a buffer of a peer on another server (only the network reaches it). */
static inline bool rt_ref_remote(const rt_launch_ctx *ctx, const algo_ref *r)
{
    return r->owner != ALGO_SELF && (uint32_t)r->owner < ctx->c->nranks && ctx->c->peers[r->owner].remote;
}

/* rt_fanout.c: how many FORKs from stream 0's step `step` on start a fan-out the backend runs as
 * one pass over its source (hal_ops.prog_fans_out_copies): two or more slave lists, each one large
 * COPY of the same source followed only by signals; 0 if they do not. */
uint32_t rt_fanout_forks(const rt_launch_ctx *ctx, uint32_t step);

/* runtime/dma: turns a COPY/REDUCE step into DMA descriptors bound to this launch, written to d
 * (room for RT_DMA_MAX_PIECES); returns how many (0: nothing to move). */
#define RT_DMA_MAX_PIECES 8
uint32_t rt_dma_build(rt_launch_ctx *ctx, const algo_step *step, hal_dma_desc *d);
/* The n descriptors rt_dma_build made for step, bound again to this call's tables (a V-op's
 * program that serves other tables of the same shape, rt_prog_vop.c); false, d untouched, when
 * the step now needs a different number of them. */
bool rt_dma_rebuild(const rt_launch_ctx *ctx, const algo_step *step, hal_dma_desc *d, uint32_t n);
/* Bytes a COPY/REDUCE step moves in this launch. */
uint64_t rt_dma_step_bytes(const rt_launch_ctx *ctx, const algo_step *step);
/* Binds a symbolic ref: direct for own/static buffers and the inbox slot, indirect through ctx for
 * peers' IN/OUT. */
hal_ref rt_dma_bind(rt_launch_ctx *ctx, const algo_ref *r);
/* Whether rt_dma_bind binds r directly to an address of this call (own IN/OUT, the inbox slot, a
 * p2p item's buffer):
 * a reused program sets it again (rt_rebind). */
bool rt_dma_per_call(const rt_launch_ctx *ctx, const algo_ref *r);

/* Allocates and builds what a launch needs before it takes a sequence number (slave streams, its
 * completion event, its instructions): a failure here leaves the communicator usable. Bindings
 * must be set. The caller puts ctx back on failure. */
HcclResult rt_launch_prepare(rt_comm *c, rt_launch_ctx *ctx);
/* Enqueues a prepared context on s, ordered after the communicator's previous launch (caller holds
 * c->lock); on failure puts ctx back and fails the communicator (its seq is taken). */
HcclResult rt_launch_ctx_enqueue(rt_comm *c, rt_launch_ctx *ctx, hal_stream *s);

/* Pending launches: reclaim the finished ones; wait for all (destroy). */
void rt_launch_reclaim(rt_comm *c, bool wait_all);
/* With a window of launches in flight (rt_launch_help_from), runs the older half of them on the
 * calling thread as far as that cannot block it, and reclaims what completed (c->lock held). */
void rt_launch_help(rt_comm *c);
/* The ring of pending launches (rt_launch_pending.c; what is used on every launch is inline):
 * grow it by doubling (HCCL_E_MEMORY if it cannot); free it (destroy, after the last reclaim). */
HcclResult rt_pending_grow(rt_comm *c);
void rt_pending_free(rt_comm *c);

/* Room for one more, made before a launch takes its seq, so that its push cannot fail. */
static inline HcclResult rt_pending_reserve(rt_comm *c)
{
    return c->npending < c->pending_cap ? HCCL_SUCCESS : rt_pending_grow(c);
}

/* The i-th oldest pending launch, NULL past the newest. */
static inline rt_launch_ctx *rt_pending_at(const rt_comm *c, uint32_t i)
{
    return i < c->npending ? c->pending[(c->pending_first + i) & (c->pending_cap - 1)] : NULL;
}

/* The newest pending launch, NULL if none. */
static inline rt_launch_ctx *rt_pending_newest(const rt_comm *c)
{
    return c->npending ? rt_pending_at(c, c->npending - 1) : NULL;
}

/* Appends ctx as the newest (after rt_pending_reserve). */
static inline void rt_pending_push(rt_comm *c, rt_launch_ctx *ctx)
{
    c->pending[(c->pending_first + c->npending) & (c->pending_cap - 1)] = ctx;
    c->npending++;
}

/* Removes and returns the oldest, NULL if none. */
static inline rt_launch_ctx *rt_pending_pop(rt_comm *c)
{
    rt_launch_ctx *ctx = rt_pending_at(c, 0);
    if (ctx) {
        c->pending_first = (c->pending_first + 1) & (c->pending_cap - 1);
        c->npending--;
    }
    return ctx;
}

/* At init, once the peers are known: do this server's ranks fit its CPUs (rt_launch_help_from)? */
void rt_launch_help_setup(rt_comm *c);
/* Are `ranks` ranks on this server no more than its online CPUs? */
bool rt_ranks_fit_cpus(uint32_t ranks);
/* Launches in flight from which the next call's host helps: RT_LAUNCH_HELP_EARLY or _AT. */
uint32_t rt_launch_help_from(const rt_comm *c);

/* Launches of one communicator in flight (enqueued, not yet complete) before the host runs the
 * older half of them itself (rt_launch.c, throttle); the launch context pool keeps as many, all
 * warmed at init. 128: with 256, the second half of the window took fresh contexts on the hot path
 * (8 B Broadcast N = 4, 300 back-to-back calls: 33 us against 16), and warming 256 cost every
 * communicator init more than any loop gained. */
#define RT_LAUNCH_INFLIGHT_MAX 128u
/* Launches in flight from which the host helps run the older half itself (rt_launch.c, help)... */
#define RT_LAUNCH_HELP_AT 16u
/* ... or all but the newest, where a helped program's waits are short (rt_launch_help_from). */
#define RT_LAUNCH_HELP_EARLY 2u
/* Launches that go to the queue after one that ran at once had to leave its program at a wait,
 * doubling from RT_RUN_NOW_BACKOFF up to _MAX while the next ones have to as well: one thread that
 * drives several ranks (HcclCommInitAll) would otherwise poll at every call for a peer it has yet
 * to drive, and wake the worker for the rest (rt_prog_run_now). */
#define RT_RUN_NOW_BACKOFF 8u
#define RT_RUN_NOW_BACKOFF_MAX 128u

#endif
