/* The Plan: what one rank executes for one collective, as per-stream lists of steps.
 *
 * algos/ is pure: it compiles an op descriptor into a Plan and verifies Plans, with no HAL calls
 * and no I/O (it uses only hal_types.h for dtypes). runtime/ binds a Plan to the buffers of a call
 * and launches it onto HAL streams.
 *
 * Execution model the compilers target (and the verifier simulates):
 * - Stream 0 is the user's stream; streams 1..nstreams-1 are slave streams. A slave stream's list
 *   starts when stream 0 executes FORK{that stream}; stream 0's JOIN{s} waits until stream s has run
 *   its whole list. Each slave stream is forked and joined exactly once per plan.
 * - SIGNAL{peer, slot} increments the notify that `peer` owns for (sender = this rank, slot);
 *   WAIT{peer, slot} waits on this rank's notify for (sender = peer, slot) and consumes one count
 *   (counting semaphore). Signals and waits of one plan must balance exactly across all ranks.
 * - Slot ALGO_SLOT_PUB is reserved for publication: PUBLISH writes this rank's record for this call
 *   (sequence number, op signature, IN/OUT addresses, V-op displacements) into its peer-visible slot;
 *   the plan then SIGNALs {peer, ALGO_SLOT_PUB} to every rank that will FETCH it. FETCH{peer}
 *   implies WAIT{peer, ALGO_SLOT_PUB}, reads the peer's record, checks the peer's signature against
 *   this rank's (a mismatch fails the op on every rank) and makes the peer's IN/OUT refs usable.
 *   A peer's IN/OUT may be referenced only after FETCH of that peer on the same stream (or ordered
 *   after it through FORK/JOIN/WAIT). Peer SCRATCH is static (exchanged at init): no FETCH needed.
 * - Every plan starts its stream 0 with PUBLISH, SIGNAL{ring right} and FETCH{ring left} (plus
 *   whatever it needs) so that any disagreement between ranks is detected before data moves
 *   (algo_emit_prologue does this).
 * - A peer's buffer may be written only after that peer PUBLISHed this call (FETCH orders it; INBOX
 *   excepted, see below), and
 *   a rank's plan may finish only after every peer has finished reading/writing its IN/OUT for
 *   this call (peers SIGNAL it; it WAITs): buffers are the user's again when stream 0 passes the end.
 * - COPY: dst <- src, `bytes`. REDUCE: dst[i] = dst[i] op src[i] for `count` elements (plan's dtype
 *   and redop), in place, as an SDMA inline reduce; with has_src2, dst[i] = src[i] op src2[i] (dst is
 *   only written, so an out-of-place reduction needs no copy first). Any side may be a peer's.
 * - INBOX (eager protocol, algos/eager.c): every rank owns an inbox in device memory, allocated and
 *   exchanged at communicator init like SCRATCH: slots of nranks boxes of ALGO_EAGER_BOX bytes, box
 *   q written only by rank q; the runtime binds each call's slot. Relaxation: a rank may write its
 *   own box of a peer's inbox before FETCHing that peer (the inbox is the library's, bounded and
 *   static, so no address needs publishing); the peer reads it only after FETCHing the writer.
 *   Reuse across calls:
 *   . Calls that end full take ALGO_EAGER_SLOTS slots in turn, counted over those calls. Every
 *     plan of a communicator where eager plans can run, one-way ones aside, "ends full": a rank's
 *     stream 0 ends only after every rank PUBLISHed the call (the verifier reports it,
 *     algo_verify_report.full_end). So when a rank runs full call k, every rank has PUBLISHed full
 *     call k-1. The runtime may run an eager call's part up to its first FETCH (PUBLISH, the
 *     writes into peers' boxes, the PUB signals) while up to D = ALGO_AHEAD_MAX calls before it
 *     wait (hal.h, "Running ahead"): a rank may PUBLISH call k-1 while it runs k-1-D, so every
 *     rank has started k-1-D and finished k-2-D, and the rank, running k, may write the slot of
 *     k+D. Slots k-1-D .. k+D are 2D + 2.
 *     algo_select picks eager only where that holds (one server, n <= ALGO_MESH_MAX_RANKS, nothing
 *     forced).
 *   . One-way calls (topo->oneway: eager Broadcast and Scatter in a run of such calls, which the
 *     runtime says with op.oneway_run: a lone call stays full, as its end would cost a drain) do
 *     not end full: a Broadcast root writes its data once, into its own box of its own slot, and
 *     its receivers copy it out of there after they FETCH the root (the one read of a peer's
 *     inbox plans make: `oneway_pull`), and so do a Scatter's whose n blocks fit the box; a larger
 *     Scatter's root writes each receiver's block into its box of that receiver's slot. The root
 *     signals PUB and is done; receivers FETCH it, copy out and
 *     SIGNAL{root, ALGO_SLOT_CREDIT}. A run has one root. Its calls take S (the runtime's
 *     algo_oneway_slots) more slots in turn, and the root WAITs one credit per receiver before it
 *     writes, of which the runtime gave S at init: the k-th wait is met by the receiver's credit
 *     of the root's call k - S, the last reader of that slot. So a Broadcast's receivers read the
 *     root's box after the root's plan ended, which the credits, not the plan end, make safe. The
 *     verifier gives each receiver's credit queue one signal before the call and requires one
 *     left after it.
 *   . A one-way Reduce (a gather: `oneway_gather`) turns the roles round: every other rank takes a
 *     credit from the root, writes its IN into its own box (box index = its rank) of the root's
 *     gather slot (the runtime's S gather slots, apart from the one-way slots: a Broadcast's data
 *     there never reads as a writer's header), signals PUB and is done; the root FETCHes every
 *     writer, folds and gives each its credit back. A run has one root and one direction: a
 *     Reduce after a Broadcast of the same root starts a new run (runtime/rt_oneway.c).
 */
#ifndef ALGOS_PLAN_H
#define ALGOS_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hal/hal_types.h"

#define ALGO_MAX_STREAMS 8
#define ALGO_SLOT_PUB 0
#define ALGO_MAX_SLOTS 8 /* notify slots per (sender, receiver) pair, including ALGO_SLOT_PUB */
/* SENDRECV's data slot: no collective uses it, so a p2p signal never satisfies a collective's wait. */
#define ALGO_SLOT_P2P_DATA (ALGO_MAX_SLOTS - 1)
/* One-way rooted calls (INBOX below): "I took your data out of my inbox, the slot is yours again". */
#define ALGO_SLOT_CREDIT (ALGO_MAX_SLOTS - 2)
#define ALGO_SELF (-1)

/* Collective kinds. */
typedef enum algo_coll {
    ALGO_COLL_ALLREDUCE = 0,
    ALGO_COLL_BROADCAST,
    ALGO_COLL_ALLGATHER,
    ALGO_COLL_REDUCE_SCATTER,
    ALGO_COLL_REDUCE,
    ALGO_COLL_SCATTER,
    ALGO_COLL_ALLTOALL,
    ALGO_COLL_ALLTOALLV,   /* per-rank counts/displs; peers' recv displs come from their publication */
    ALGO_COLL_ALLTOALLVC,  /* full count matrix known to every rank */
    ALGO_COLL_ALLGATHERV,
    ALGO_COLL_REDUCE_SCATTERV,
    ALGO_COLL_SENDRECV,    /* Send/Recv/BatchSendRecv/group: a list of point-to-point items */
    ALGO_COLL_COUNT,
} algo_coll;

/* Algorithms. AUTO lets algo_select choose. */
typedef enum algo_kind {
    ALGO_AUTO = 0,
    ALGO_RING,      /* every collective */
    ALGO_MESH,      /* direct / full mesh: intra-server fast path */
    ALGO_PAIRWISE,  /* AlltoAll(V/VC) */
    ALGO_P2P,       /* SENDRECV */
    ALGO_EAGER,     /* small messages: through the peers' inboxes, no per-call address exchange */
    ALGO_RING_PUSH, /* ring whose cross-rank steps only copy (receiver reduces): several servers */
    ALGO_HIER,      /* several servers: intra-server stage, inter-server stage, intra (hier*.c) */
    ALGO_KIND_COUNT,
} algo_kind;

typedef enum algo_buf { ALGO_BUF_IN = 0, ALGO_BUF_OUT = 1, ALGO_BUF_SCRATCH = 2, ALGO_BUF_INBOX = 3 } algo_buf;

/* The eager inbox (see INBOX above): a ref's offset is box * ALGO_EAGER_BOX + bytes into the box. */
#define ALGO_EAGER_BOX (64u << 10)
/* How many calls before it an eager call's prefix may run ahead of (docs/runtime.md, "Running
 * ahead"): 2 cost 8 B AllReduce at 4 ranks on 2 CPUs 8.4 -> 6.0 us a call, 7 4.5, 15 no more
 * (docs/perf-history.md, twenty-third pass); each one costs two eager slots (INBOX above). */
#define ALGO_AHEAD_MAX 7u
#define ALGO_EAGER_SLOTS (2u * ALGO_AHEAD_MAX + 2u)
/* One-way slots (INBOX below): credits each receiver gives a root before its first one-way call,
 * so how far a root runs ahead. A root that never waits for a credit inside a loop of calls lets
 * its receivers drain the loop at their pace: at 4 ranks on 2 cores a 100-call loop of 8 B
 * Broadcasts took 7.0 us a call with 16 slots, 5.4 with 64 and 2.3 with 128 (docs/perf-history.md,
 * "One-way Broadcast, deeper"). With more ranks than CPUs, ranks leave the call before a loop
 * hundreds of microseconds apart and take turns on the CPUs: a 1000-call loop at 4 ranks on 2 CPUs
 * took 1.50 us a call with 128 slots, 0.56 with 1024 ("Deeper one-way queues"). Where every rank
 * has a CPU, receivers keep up and a deeper queue only spreads the root's writes over more pages:
 * 2 ranks on 2 CPUs, 0.26 us with 128 and 0.48 with 1024 in loops of 20 000. So 128 where the
 * ranks fit the CPUs (the runtime's `ranks_fit_cpus`), else 1024. A run has one root (a call with
 * another root ends it, runtime/rt_oneway.c), so every root shares one set of slots in an inbox. */
#define ALGO_ONEWAY_SLOTS_FIT 128u
#define ALGO_ONEWAY_SLOTS_MAX 1024u
static inline uint32_t algo_oneway_slots(bool ranks_fit_cpus)
{
    return ranks_fit_cpus ? ALGO_ONEWAY_SLOTS_FIT : ALGO_ONEWAY_SLOTS_MAX;
}
/* One-way calls carry at most this many bytes per box: up to 2 KiB they beat the full exchange at
 * 4 and 8 ranks and tie at 2; from 8 KiB the slots' pages and cache footprint cost more than the
 * round trip they save (docs/perf-history.md, "One-way Broadcast"). One-way boxes are this size
 * (runtime: RT_OW_BOX_STRIDE), and the runtime maps every peer's one-way boxes in each process at
 * init (a Scatter root writes its receivers', a Broadcast's receivers read their root's, and so
 * do a small Scatter's). */
#define ALGO_ONEWAY_MAX_BYTES 2048u
/* ... and need a receiver. From 3 ranks when one-way calls came with 16 credits: at 2 the root
 * then waited for its receiver (docs/perf-history.md, "One-way Broadcast"); with 128 they gain there too
 * (8 B, loops of 1000: 0.91 -> 0.59 us; "One-way at two ranks"). */
#define ALGO_ONEWAY_MIN_RANKS 2u
/* A one-way Reduce's writers share the root's gather box, ALGO_ONEWAY_MAX_BYTES of it: each owns
 * a part of whole cache lines (the runtime lays them out so: rt_gather_stride), its header in the
 * first, so at most algo_oneway_gather_bytes of IN go one-way (960 B at 2 ranks, 192 at 8, 64 at
 * 16). */
static inline uint64_t algo_oneway_gather_part(uint32_t n)
{
    return (ALGO_ONEWAY_MAX_BYTES / (n ? n : 1)) & ~(uint64_t)63;
}
static inline uint64_t algo_oneway_gather_bytes(uint32_t n)
{
    uint64_t part = algo_oneway_gather_part(n);
    return part > 64 ? part - 64 : 0;
}
/* Up to this many ranks on one server the selector takes mesh (and eager for small calls), beyond
 * it ring and pairwise; eager plans run only where every other plan is mesh (algo_select). 16: the
 * most devices one server has (HCCL_EMU_DEVICES' limit; 16 NPUs of an A3 server). At 9 and 16
 * ranks on 2 CPUs ring's 2(n - 1) steps, each a wake-up of a peer waiting for its CPU, took 0.2-1.2
 * ms a call at 8 B where mesh and eager take 1.6-80 us; at 64 MiB mesh was as fast or up to 1.9x
 * faster (docs/perf-history.md, "Mesh and eager up to 16 ranks"). */
#define ALGO_MESH_MAX_RANKS 16u
/* Default crossovers when HCCL_EAGER_MAX_BYTES is unset (topo eager_max ALGO_EAGER_AUTO): ops whose
 * per-box bytes are at most this many go eager (algo_eager_default), at every rank count eager
 * runs at (up to ALGO_MESH_MAX_RANKS). Eager copies every block twice (into the inboxes and out);
 * mesh copies once but pays a per-call address exchange and completion handshake, and never runs
 * ahead. Where a server's ranks outnumber its CPUs (topo ranks_concurrent false) every call needs
 * every rank to get a CPU once more, which an eager call running ahead of up to ALGO_AHEAD_MAX
 * calls pays once for several: 8 KiB blocks, where eager was faster than mesh at 3, 4 and 8
 * ranks on 2 CPUs, in and out of place, Broadcast included (8 KiB AllReduce at 4 ranks, loops of
 * 300, 13.3 against 22.2 us; at 16 KiB 19.5 against 22.7 out of place but 23.9 against 22.9 in
 * place; docs/perf-history.md, "The crossover where ranks share CPUs"). */
#define ALGO_EAGER_SHARED_BYTES (8u << 10)
/* ... but for the exchanges (every collective but the rooted ones of algo_coll_oneway), at most
 * this many bytes of boxes a rank fills in all, n blocks: 8 KiB at 2 ranks, 4 KiB at 4, 2 KiB at 8,
 * 1 KiB at 16. Every rank writes into every peer's inbox and reads its own, so each line crosses
 * between CPUs twice, and what that costs depends on where the machine puts its CPUs: on the 2-CPU
 * VM a phase that doubles a 2-rank ping-pong made 8 KiB blocks at 8 ranks 2.2-2.7x slower eager
 * than mesh (AlltoAll of 64 KiB: 68 against 31 us) where in the other phase they were as fast (23
 * against 27), and 4 KiB blocks at 8 ranks 1.5x slower (40 against 26; 15.5 against 22 in the
 * other); at 16 KiB in all eager was within 16% of mesh in the slow phase and faster in the other
 * (AllGather of 4 KiB blocks at 4 ranks: 8.3 against 8.2 us, 5.6 against 7.6). A rooted call's
 * lines cross once, and eager stays ahead in both phases (Reduce of 8 KiB at 8 ranks: 16.6
 * against 22.7 and 12.8 against 21.9; docs/perf-history.md, forty-fourth pass). Not further:
 * eager Reduce of 16 KiB, 1.7-2x faster than mesh in most launches, ran 2-4x slower for minutes
 * at a time in which 8 KiB did not (docs/perf.md, "Eager protocol crossover"). */
#define ALGO_EAGER_SHARED_TOTAL_BYTES (16u << 10)
/* ... 2 KiB where every rank of the server has a CPU of its own, for calls that may go one-way
 * (they need eager up to ALGO_ONEWAY_MAX_BYTES) ... */
#define ALGO_EAGER_DEFAULT_BYTES (2u << 10)
_Static_assert(ALGO_EAGER_DEFAULT_BYTES >= ALGO_ONEWAY_MAX_BYTES, "one-way calls are eager by default");
_Static_assert(ALGO_EAGER_SHARED_BYTES >= ALGO_ONEWAY_MAX_BYTES, "one-way calls are eager by default");
/* ... and 512 B for the others: there the host runs all its launches but the newest (docs/runtime.md,
 * "The host helps early"), mesh's exchange is cheap, and eager's two cross-core copies of every
 * line cost more from 1 KiB blocks (2 ranks on 2 CPUs, loops of 2000: AllReduce 1 KiB 1.07 us eager,
 * 0.75 mesh; 512 B 0.65 and 0.81; docs/perf-history.md, "The crossover at 2 ranks"). */
#define ALGO_EAGER_CONCURRENT_BYTES 512u
#define ALGO_EAGER_AUTO UINT64_MAX
#define ALGO_EAGER_MAX_DEFAULT ALGO_EAGER_BOX /* the largest setting: one box */

/* The per-call tables of a V-op, in elements, as algo_vtables derives them from the op (the
 * runtime fills them at launch from the call's arrays, the verifier from each rank's op):
 *  ALLTOALLV:  COUNT/DISPL = this rank's send counts/displs, RCOUNT/RDISPL = its recv counts/displs;
 *  ALLTOALLVC: COUNT = my row of the matrix, DISPL = its prefix sums (where each block starts in my
 *              IN), RCOUNT = my column, RDISPL = its prefix sums (where each block lands in my OUT);
 *  ALLGATHERV / REDUCE_SCATTERV: COUNT/DISPL = the counts/displs (the same on every rank). */
typedef enum algo_vtab {
    ALGO_VT_NONE = 0,
    ALGO_VT_COUNT,
    ALGO_VT_DISPL,
    ALGO_VT_RCOUNT,
    ALGO_VT_RDISPL,
    ALGO_VT_NTABS, /* tables 1..4, each nranks entries */
} algo_vtab;

/* An entry of the executing rank's V tables: element vt[tab][idx] (tab ALGO_VT_NONE: none). */
typedef struct algo_vsym {
    uint8_t tab;  /* algo_vtab */
    uint32_t idx;
} algo_vsym;

/* A symbolic buffer reference, bound to an address only at launch:
 * address = base(owner, buf) + offset
 *         + (vdispl >= 0 ? owner's published recv displacement number vdispl : 0) x element size
 *         + (vsym.tab ? the executing rank's table entry vsym : 0) x element size.
 * vdispl is the only part read from a peer (its publication, checked by FETCH); vsym is resolved
 * from this call's own tables. Both let one plan serve every call of a V-op, whatever its counts.
 * SENDRECV plans use vdispl >= 0 only, as an index k into the plan's own items: a self ref is the
 * buffer of item k, a peer ref is the buffer the peer gave for the item matching item k (its n-th
 * item of the other direction with this rank, where item k is this rank's n-th with that peer). */
typedef struct algo_ref {
    uint8_t buf;     /* algo_buf */
    int32_t owner;   /* ALGO_SELF or a peer's rank in the communicator */
    int32_t vdispl;  /* -1, or the index into the owner's published recv displacements (ALLTOALLV/VC) */
    algo_vsym vsym;  /* element offset from the executing rank's V tables */
    uint64_t offset; /* bytes */
} algo_ref;

typedef enum algo_step_kind {
    ALGO_STEP_COPY = 0,
    ALGO_STEP_REDUCE,
    ALGO_STEP_SIGNAL,
    ALGO_STEP_WAIT,
    ALGO_STEP_FORK,
    ALGO_STEP_JOIN,
    ALGO_STEP_PUBLISH,
    ALGO_STEP_FETCH,
} algo_step_kind;

/* A step that runs for some calls only: by the size of one block, the executing rank's V-table
 * entry `sym` (elements) against the plan's v_small_bytes. Eager AlltoAllV sends a block through the
 * receiver's inbox or straight into its OUT by that size, which both ends of the pair know (the
 * sender's count, the receiver's expected count), so both skip the same steps (algo_step_runs). */
typedef enum algo_when {
    ALGO_WHEN_ALWAYS = 0,
    ALGO_WHEN_SMALL, /* entry x element size <= v_small_bytes */
    ALGO_WHEN_LARGE, /* entry x element size > v_small_bytes */
} algo_when;

typedef struct algo_step {
    uint8_t kind; /* algo_step_kind */
    uint8_t when; /* algo_when, of the block when_sym */
    algo_vsym when_sym;
    union {
        /* vcount.tab != NONE: the size is that table entry (elements), bytes/count are 0 */
        /* reread: the writer's next call of this op reads dst again (a mesh AllReduce's slice in
         * its peers: in place, their IN it reduces from), a hint for copy kernels (hal_dma_desc) */
        struct { algo_ref dst, src; uint64_t bytes; algo_vsym vcount; uint8_t reread; } copy;
        struct { algo_ref dst, src, src2; uint64_t count; uint8_t has_src2; algo_vsym vcount; } reduce;
        struct { uint32_t peer, slot, item; } sync; /* SIGNAL, WAIT (item: SENDRECV item, else 0) */
        struct { uint32_t stream; } fork;       /* FORK, JOIN */
        struct { uint32_t peer, item; } fetch;  /* FETCH (item: the SENDRECV send item it binds) */
    } u;
} algo_step;

typedef struct algo_step_list {
    algo_step *steps;
    uint32_t nsteps, cap;
} algo_step_list;

/* One point-to-point item of a SENDRECV op. The k-th send from A to B matches the k-th receive
 * at B from A, whichever ops (plans) the two ranks put them in. */
typedef struct algo_p2p_item {
    uint8_t is_send;   /* 1 send (reads IN at offset), 0 recv (writes OUT at offset) */
    uint32_t peer;
    uint64_t count;    /* elements */
    uint64_t offset;   /* bytes into IN (send) / OUT (recv): where the verifier places the item; plans
                        * never read it (the runtime binds each item's own buffer, offset 0) */
} algo_p2p_item;

/* What to compile. Counts are elements, with HCCL's meaning per collective:
 *  ALLREDUCE/REDUCE/BROADCAST: count = buffer elements; ALLGATHER: count = send count per rank;
 *  REDUCE_SCATTER/SCATTER: count = recv count per rank; ALLTOALL: count = per-peer count.
 *  ALLTOALLV: counts = [send counts(n), send displs(n), recv counts(n), recv displs(n)] of THIS rank.
 *  ALLTOALLVC: counts = the n x n send-count matrix (row i = what rank i sends to each j).
 *  ALLGATHERV / REDUCE_SCATTERV: counts = [counts(n), displs(n)] (same on every rank).
 *  SENDRECV: items/nitems.
 * When algo_counts_symbolic(coll), counts may be NULL: the plan is compiled for any counts. */
typedef struct algo_op {
    algo_coll coll;
    uint32_t nranks, rank;
    uint64_t count;
    hal_dtype dtype;
    hal_redop redop;
    uint32_t root;
    bool in_place;           /* IN and OUT alias as HCCL defines in-place for the collective */
    bool deterministic;      /* reductions combine in rank order, ((x0 op x1) op x2) ... op x(n-1), for
                                every element, whatever the algorithm (HCCL_DETERMINISTIC) */
    bool oneway_run;         /* the runtime expects a run of calls that can go one-way (INBOX
                                above): only then does this one */
    bool v_eager;            /* AllGatherV, ReduceScatterV, AlltoAllVC compiled without counts: every
                                block of the call fits the eager crossover (the runtime's choice
                                from this call's tables, equal on every rank), so the plan is eager */
    const uint64_t *counts;  /* see above; copied into the plan */
    uint32_t ncounts;
    const algo_p2p_item *items;
    uint32_t nitems;
} algo_op;

/* Where ranks sit: server_of[r] for r < nranks (NULL = all on one server). */
typedef struct algo_topo {
    uint32_t nranks;
    const uint32_t *server_of;
    uint64_t eager_max; /* protocol crossover in bytes (HCCL_EAGER_MAX_BYTES); 0: no eager plans;
                         * ALGO_EAGER_AUTO: algo_eager_default per op */
    uint64_t scratch_max; /* scratch bytes a plan may use per rank (HCCL_BUFFSIZE; 0: no limit). Plans
                           * whose scratch would grow with the count (ring_push, hier, the ordered
                           * chain across servers) work in rounds that fit it; must be equal on every
                           * rank (HCCL requires one HCCL_BUFFSIZE per job) */
    bool oneway;          /* eager Broadcast and Scatter may go one-way (plan.h INBOX) when they
                           * are in a run (op.oneway_run): the runtime binds their one-way slots and
                           * gave every root its credits at init */
    bool ranks_concurrent; /* every rank on this server has a CPU of its own (the same on every
                            * rank of the server): the default crossover is lower */
} algo_topo;

/* Scratch a count-independent plan needs beyond scratch_bytes, from the call's COUNT/DISPL tables
 * (REDUCE_SCATTERV). Both are computed from tables identical on every rank, so every rank reaches
 * the same verdict when a call does not fit. */
typedef enum algo_vscratch {
    ALGO_VSCR_NONE = 0,
    ALGO_VSCR_MAX_COUNT, /* max_j COUNT[j] elements (one block's accumulator) */
    ALGO_VSCR_EXTENT,    /* max_j DISPL[j] + COUNT[j] elements (a whole IN's accumulators) */
} algo_vscratch;

typedef struct algo_plan {
    algo_op op;              /* a copy; op.counts/op.items point into plan-owned memory */
    algo_kind algo;
    char name[32];           /* e.g. "ring", "mesh" */
    uint32_t nstreams;
    algo_step_list streams[ALGO_MAX_STREAMS];
    uint64_t scratch_bytes;  /* per rank, this plan's need (its fixed part, see vscratch) */
    uint8_t vscratch;        /* algo_vscratch: a need that comes from the call's V tables */
    uint32_t nslots;         /* notify slots per peer used, incl. ALGO_SLOT_PUB */
    uint64_t inbox_bytes;    /* bytes used of each inbox box (<= ALGO_EAGER_BOX); 0: no INBOX refs */
    bool oneway;             /* a one-way rooted eager plan (INBOX above): it does not end full */
    bool oneway_pull;        /* ... whose receivers read the root's own box (Broadcast: the same
                              * bytes for all); else the root writes every receiver's (Scatter) */
    bool oneway_able;        /* goes one-way when op.oneway_run says the call is in a run */
    bool oneway_gather;      /* a one-way Reduce: every other rank writes its box of the root's
                              * gather slot and goes on; the root reads them (INBOX above) */
    uint64_t v_small_bytes;  /* the block size that splits ALGO_WHEN_SMALL from _LARGE steps (0: none) */
} algo_plan;

/* Whether step st of plan p runs, given its when_sym entry `elems` of the executing rank's tables. */
static inline bool algo_step_runs(const algo_plan *p, const algo_step *st, uint64_t elems)
{
    if (st->when == ALGO_WHEN_ALWAYS)
        return true;
    bool small = elems * hal_dtype_size(p->op.dtype) <= p->v_small_bytes;
    return st->when == ALGO_WHEN_SMALL ? small : !small;
}

/* Compiles op with algorithm `kind` (not AUTO). 0, or HAL_E_NOT_SUPPORTED if the algorithm does not
 * do this collective, HAL_E_PARAM for a bad op, HAL_E_NOMEM. */
int algo_compile(const algo_op *op, const algo_topo *topo, algo_kind kind, algo_plan **out);
void algo_plan_free(algo_plan *plan);

/* Chooses an algorithm for op: `forced` (from HCCL_ALGO / config; ALGO_AUTO = none) wins when it
 * supports the collective, else by size, rank count and topology. */
algo_kind algo_select(const algo_op *op, const algo_topo *topo, algo_kind forced);
/* Parses HCCL_ALGO's syntax ("level0:NA;level1:ring" or per-op "allreduce=level0:NA;level1:ring/...")
 * into the algorithm forced for coll; ALGO_AUTO when not named. -1 on a syntax error. */
int algo_parse_env(const char *spec, algo_coll coll, algo_kind *forced);
/* The same; on a syntax error `why` (len bytes) says what is wrong: the token and what it may be. */
int algo_parse_env_why(const char *spec, algo_coll coll, algo_kind *forced, char *why, size_t len);

const char *algo_kind_name(algo_kind kind);
const char *algo_coll_name(algo_coll coll); /* HCCL API name, e.g. "HcclAllReduce" */
/* Broadcast and Scatter: only the root's data goes out, nothing comes back to it (eager crossover,
 * one-way calls). */
static inline bool algo_coll_rooted_put(algo_coll coll)
{
    return coll == ALGO_COLL_BROADCAST || coll == ALGO_COLL_SCATTER;
}
/* Collectives that may go one-way: the rooted puts, and Reduce, whose non-roots write and go on
 * (a one-way gather, INBOX above). */
static inline bool algo_coll_oneway(algo_coll coll)
{
    return algo_coll_rooted_put(coll) || coll == ALGO_COLL_REDUCE;
}

/* Element counts of the IN and OUT buffers this rank's plan touches (for launch-time checks). */
void algo_buffer_elems(const algo_op *op, uint64_t *in_elems, uint64_t *out_elems);

/* True when plans of this collective do not depend on op->counts (every size and offset that
 * comes from the counts is a V-table reference): the runtime may compile them with counts NULL
 * and reuse one plan for every call, whatever its counts. */
bool algo_counts_symbolic(algo_coll coll);
/* Fills vt[(tab - 1) * nranks + i] for tab = ALGO_VT_COUNT..ALGO_VT_RDISPL from op->counts (see
 * algo_vtab); zeros for collectives without V tables. vt has 4 * nranks entries. */
void algo_vtables(const algo_op *op, uint64_t *vt);
/* One entry computed straight from op->counts (the verifier's way; O(nranks) for ALLTOALLVC). */
uint64_t algo_vt_entry(const algo_op *op, algo_vsym sym);
/* One entry: element count or offset named by sym, from vt as filled by algo_vtables. */
static inline uint64_t algo_vt_get(const uint64_t *vt, uint32_t nranks, algo_vsym sym)
{
    return sym.tab ? vt[(size_t)(sym.tab - 1) * nranks + sym.idx] : 0;
}

/* Scratch bytes one rank's plan needs for the call described by op (whose counts bind the plan's
 * V tables): max(plan->scratch_bytes, its vscratch need). O(nranks). */
uint64_t algo_plan_scratch(const algo_plan *plan, const algo_op *op);

/* Added by algos/: true when algo_compile(op, kind) can succeed for this op's collective and
 * in-place flag (AlltoAll(V/VC) in place is not supported by any algorithm yet). */
bool algo_supports(algo_kind kind, const algo_op *op);
/* Bytes one rank puts into one inbox box for op (count x element size; a V-op's largest block):
 * what the eager crossover compares, the same on every rank (from the op signature or tables
 * equal on every rank). A V-op without counts: 0 if op->v_eager, else more than any box. */
uint64_t algo_eager_bytes(const algo_op *op);
/* The default crossover for op (HCCL_EAGER_MAX_BYTES unset): ALGO_EAGER_CONCURRENT_BYTES for a
 * call that cannot go one-way where topo's ranks are concurrent, else ALGO_EAGER_DEFAULT_BYTES.
 * The same on every rank (from the op and the topology). */
uint64_t algo_eager_default(const algo_op *op, const algo_topo *topo);
/* The crossover for op on topo: topo->eager_max, or algo_eager_default where it is ALGO_EAGER_AUTO
 * or there is no topology; at most a box; 0: eager off. */
uint64_t algo_eager_crossover(const algo_op *op, const algo_topo *topo);

#endif
