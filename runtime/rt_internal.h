/* runtime/: communicators, op entry, plan cache, launch, publication and mismatch detection. */
#ifndef RT_INTERNAL_H
#define RT_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "algos/plan.h"
#include "common/oh_check.h"
#include "common/oh_log.h"
#include "hal/hal.h"
#include "hccl/hccl.h"

#define RT_PUB_RING 2048        /* collective records and V tables kept per rank (by seq % RT_PUB_RING); ranks
                                   drift apart by up to the one-way slots (rt_comm.ow_slots) */
#define RT_P2P_RING 64          /* p2p records kept per peer (by ordinal); the most items per peer in one call */
#define RT_SLOTS (ALGO_MAX_SLOTS + 3) /* notify slots per sender: the plans', then the three below */
#define RT_SLOT_P2P_PUB ALGO_MAX_SLOTS     /* publishes p2p (rt_p2p_on_flags: wakes a sender asleep in its
                                              wait for the receive record) */
#define RT_SLOT_HDR_WAKE (ALGO_MAX_SLOTS + 1) /* wakes a rank asleep in its flag wait for a header: a one-way
                                               receiver (rt_oneway.c), an eager exchange's FETCH (flag_waits) */
#define RT_SLOT_P2P_CREDIT (ALGO_MAX_SLOTS + 2) /* a p2p box read: wakes its sender asleep in its wait for it */
#define RT_MAX_STREAMS ALGO_MAX_STREAMS
#define RT_INBOX_KINDS 5 /* kinds of inbox slot (rt_inbox.h, rt_slot_kind) */
#define RT_CTRL_MAGIC 0x4f48434cu /* "OHCL" */
#define RT_MSG_LEN 512
#define RT_EAGER_AUTO ALGO_EAGER_AUTO /* rt_comm.eager_max: HCCL_EAGER_MAX_BYTES unset (algo_eager_default) */

/* An op's signature: what every rank must agree on for one collective call. */
typedef struct rt_sig {
    uint64_t seq;     /* 1-based op number within the communicator (p2p: within the pair) */
    uint32_t cmd;     /* HcclCMDType of the API called (HCCL_CMD_FINALIZE for a destroy) */
    uint32_t dtype;
    uint32_t redop;
    uint32_t root;
    uint64_t count;
    uint32_t nranks;
    uint32_t deterministic; /* reductions: the fixed-order mode every rank must share */
    uint32_t eager;   /* RT_SIG_EAGER / _ONEWAY when the plan is eager (algos/eager.c): ranks configured
                         with different crossovers (HCCL_EAGER_MAX_BYTES) or one-way settings
                         (HCCL_EAGER_ONEWAY) would run plans that cannot meet */
    uint32_t vtab;    /* V-ops whose tables every rank shares (AllGatherV, ReduceScatterV, AlltoAllVC):
                         a hash of them, so that an eager header, which carries no table, tells
                         calls with other tables apart (rt_publish.c names the entry); else 0 */
} rt_sig;
enum { RT_SIG_EAGER = 1, RT_SIG_ONEWAY = 2 };

/* One published call: written by its owner's PUBLISH task, read by peers' FETCH. */
typedef struct rt_pub_record {
    _Atomic uint64_t ready; /* seq of the record once complete (written last) */
    rt_sig sig;
    uint64_t in, out;       /* this call's buffer addresses */
    uint64_t vdispl;        /* device address of recv displacements (ALLTOALLV/VC), else 0 */
    uint64_t vcounts;       /* device address of the V-op table (rt_ctrl_vtable), else 0 */
    _Atomic uint64_t p2p_taken; /* p2p receive record: its ordinal once the sender's FETCH took it */
    uint32_t rkey_in, rkey_out; /* remote keys of in/out for peers on other servers (runtime/net) */
} rt_pub_record;

/* A sub-communicator's root info as its first member leaves it for the others in its control
 * block (rt_subcomm.c). Across servers the block's mirror receives it through a link whose writes
 * may land in any order (several sockets), the tag write before the info: so the info carries its
 * tag and a checksum of both, and a reader takes only a copy whose checksum holds for its tag. */
typedef struct rt_mailbox {
    HcclRootInfo info;
    uint64_t tag;   /* subCommId + 1 */
    uint64_t check; /* FNV-1a of info and tag (rt_subcomm.c) */
} rt_mailbox;

/* Peer-visible control block in device memory, one per rank per communicator. Layout after
 * this header (sized by nranks): notify handles [nranks][RT_SLOTS], publication ring
 * [RT_PUB_RING], p2p rings [nranks][RT_P2P_RING], V-op tables [RT_PUB_RING][3*nranks+1].
 *
 * Lifetime (docs/runtime.md, "Lifetime"): blocks come from a per-device pool that only ever holds
 * control blocks (rt_ctrl_pool.c), so a peer's late access still lands in a control block. The
 * words peers write carry the block's epoch in their high half; the owner bumps it when it
 * releases the block, and every cross-rank write is a CAS that names the epoch the writer saw at
 * connect time: a write meant for a destroyed communicator can never land in the next one. */
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "rt_ctrl: the 32-bit views of the epoch-tagged words assume little-endian"
#endif
typedef struct rt_ctrl {
    union {                   /* epoch << 32 | abort state */
        _Atomic uint64_t abort_word;
        struct {
            _Atomic uint32_t abort; /* non-zero once the communicator failed: waits end (1 claimed, 2 published) */
            uint32_t abort_epoch;
        };
    };
    union {                   /* epoch << 32 | ranks joined (rank 0's block, end of init) */
        _Atomic uint64_t join_word;
        struct {
            _Atomic uint32_t joined;
            uint32_t join_epoch;
        };
    };
    uint32_t magic;
    uint32_t nranks;
    uint32_t abort_code;      /* HcclResult */
    char abort_msg[RT_MSG_LEN];
    _Atomic uint32_t destroyed; /* set by HcclCommDestroy: this rank left on purpose */
    _Atomic uint64_t mailbox_tag; /* sub-communicator creation: subCommId + 1 once mailbox is valid */
    rt_mailbox mailbox;
} rt_ctrl;
#define RT_CTRL_GUARDED_BYTES 16 /* the epoch-tagged words at the start, never cleared by reuse */

/* Staging mode (rt_staging.c): what each rank exports by key at init, peers import. */
enum { RT_KEY_SCRATCH = 0, RT_KEY_INBOX, RT_KEY_STAGE, RT_STAGE_KEYS };

typedef struct rt_peer {
    hal_device_handle dev;
    rt_ctrl *ctrl;            /* peer's control block (mapped here) */
    uint32_t ctrl_epoch;      /* its epoch when we connected: guards every access (rt_ctrl.c) */
    void *scratch;            /* peer's scratch base */
    void *inbox;              /* peer's eager inbox (algos/plan.h, INBOX) */
    hal_notify *to_peer[RT_SLOTS]; /* imported: notifies the peer owns that I signal */
    hal_notify *from_peer[RT_SLOTS]; /* mine: notifies the peer signals */
    uint64_t p2p_sent;        /* p2p items sent to this peer so far (the last send's ordinal) */
    uint64_t p2p_recvd;       /* p2p items received from this peer so far */
    bool remote;              /* on another server: reached through runtime/net, ctrl is a local mirror */
    void *stage;              /* staging mode: the peer's staging buffers as imported here (rt_staging.c) */
    uint64_t stage_va;        /* ... and as the peer addresses them (what its p2p records name) */
    size_t ctrl_map_bytes;    /* staging mode: ctrl is our mapping of its host shared memory (unmapped at destroy) */
    char ipc_key[RT_STAGE_KEYS][HAL_IPC_KEY_LEN]; /* staging mode: keys this rank imported ("" = none) */
} rt_peer;

typedef struct rt_plan_cache rt_plan_cache;

typedef struct rt_comm {
    uint32_t magic;
    char name[COMM_NAME_MAX_LENGTH];
    uint32_t rank, nranks;
    const hal_ops *hal;
    hal_device *dev;
    hal_device_handle dev_handle; /* this rank's device, for pointer ownership checks */
    uint32_t dma_engines;
    bool entry_log;           /* HCCL_ENTRY_LOG_ENABLE=1: log every call */
    rt_ctrl *ctrl;            /* mine (from the control-block pool) */
    size_t ctrl_bytes;
    uint32_t ctrl_epoch;      /* my block's epoch in this communicator */
    uint32_t ctrl_shm;        /* staging mode: my block's host shared-memory segment (rt_ctrl_shm.c); 0: device memory */
    HcclComm handle;          /* what the user holds (rt_handle.c): slot + generation, never this pointer */
    void *scratch;
    uint64_t scratch_bytes;
    uint64_t scratch_budget;  /* the least scratch_bytes of all ranks: plans' rounds depend on it (algo_topo
                               * scratch_max), so every rank must compile with the same */
    void *inbox;              /* eager inbox: rt_inbox_slots() x nranks boxes (pooled; rt_inbox_bytes) */
    bool eager_hdr;           /* eager plans in header mode (rt_publish.c): task functions can write
                                 peers' inboxes (hal host_mapped_mem) */
    bool flag_waits;          /* header mode on a backend with flag waits and notify_wake: p2p goes
                               * through boxes (rt_p2p_boxes), and eager exchanges signal by their
                               * headers' seq, which their peers' FETCHes wait for, not by PUB counts
                               * (rt_hdr_flags, rt_prog.c) */
    bool p2p_eager;           /* HCCL_EAGER_P2P (default on): this rank sends small messages eager */
    uint32_t p2p_box_bytes;   /* a p2p box's data, the eager limit (RT_P2P_EAGER_FIT / _SHARED) */
    uint64_t inbox_kind_at[RT_INBOX_KINDS]; /* where each kind of slot starts in an inbox, and */
    uint64_t inbox_p2p_at;    /* its p2p part: from nranks, ow_slots, flag_waits and p2p_box_bytes,
                                 once (rt_inbox_layout_set; rt_inbox.h computed them per call) */
    size_t inbox_pool_bytes;
    bool staging;             /* HCCL_ASCEND_STAGING: calls go through the staging buffers (rt_staging.c) */
    void *stage;              /* staging IN (stage_half bytes), then staging OUT (stage_half bytes) */
    uint64_t stage_half;
    char ipc_key[RT_STAGE_KEYS][HAL_IPC_KEY_LEN]; /* staging mode: my exports ("" = none) */
    rt_peer *peers;           /* [nranks]; peers[rank] describes myself */
    uint32_t *server_of;      /* [nranks] */
    struct rt_net *net;       /* links to peers on other servers (runtime/net), NULL when none */
    HcclResult prep_rc;       /* why the links could not be prepared at init (runtime/net), if so */
    pthread_mutex_t lock;     /* op issue: seq numbers, plan cache, slave streams */
    uint64_t seq;             /* last collective op number issued */
    bool last_eager;          /* op #seq's plan is eager: peers may still read its record after it ends */
    bool vring_warm;          /* rt_vring_warm ran (the first V-op) */
    bool p2p_warm;            /* rt_p2p_warm ran (the first p2p launch through the boxes) */
    uint32_t gather_warm;     /* peers whose gather slots rt_gather_warm mapped (bit q; at most
                                 ALGO_MESH_MAX_RANKS ranks run one-way calls) */
    bool oneway;              /* eager Broadcast/Scatter go one-way (HCCL_EAGER_ONEWAY, header mode): the
                                 roots' credits were given at init (rt_notify.c) */
    uint32_t able_run;        /* calls up to op #seq of one root that could go one-way, back to back
                                 (saturates) */
    uint32_t able_last_run;   /* ... in the run before: a run expected (rt_oneway_expect_run) */
    uint32_t able_root;       /* the root of that run */
    bool able_gather;         /* ... and its direction: Reduces (one-way gathers) or Broadcasts/Scatters */
    uint64_t full_calls;      /* calls issued that end full: they take the eager slots in turn */
    uint64_t oneway_calls;    /* one-way calls issued: they take the one-way slots in turn */
    uint32_t oneway_run;      /* one-way calls this rank rooted since its last drain (rt_oneway.c) */
    uint32_t ow_slots;        /* one-way slots, the credits a receiver gives every root (algo_oneway_slots) */
    uint64_t oneway_seq[ALGO_ONEWAY_SLOTS_MAX]; /* their seqs, by run position modulo ow_slots */
    rt_plan_cache *cache;
    hal_stream *slaves[RT_MAX_STREAMS];
    hal_event *fork_ev[RT_MAX_STREAMS];
    hal_event *join_ev[RT_MAX_STREAMS];
    struct rt_launch_ctx **pending; /* launches not yet reclaimed, a ring (rt_launch_pending.c) */
    uint32_t pending_cap;     /* its size, a power of two */
    uint32_t pending_first;   /* where the oldest is */
    uint32_t npending;
    uint32_t help_at;         /* npending from which the host helps again (rt_launch.c; 0: rt_launch_help_from) */
    uint32_t run_now_skip;    /* launches that go to the queue before one runs at once again (rt_prog_submit.c) */
    uint32_t run_now_backoff; /* ... after the last one that had to queue a wait: doubles while they do */
    bool ranks_fit_cpus;      /* this server's ranks are no more than its CPUs (rt_launch_help_setup): the
                                 host helps early, and plans get topo ranks_concurrent */
    struct rt_launch_ctx *ctx_pool; /* reclaimed launch contexts, reused by the next launches */
    uint32_t ctx_pooled;
    /* config */
    uint32_t buffsize_mb;
    uint64_t eager_max;       /* HCCL_EAGER_MAX_BYTES (0: eager off; RT_EAGER_AUTO: unset) */
    bool oneway_wanted;       /* HCCL_EAGER_ONEWAY (default on; `oneway` says whether it runs) */
    uint32_t deterministic;
    int32_t exec_timeout_s;
    char algo_spec[HCCL_COMM_ALGO_MAX_LENGTH];
    uint32_t op_expansion_mode; /* hcclOpExpansionMode as configured (0-6); no effect here */
    uint32_t sq_depth;        /* hcclChannelSqDepth rounded up, or HCCL_COMM_SQ_DEPTH_CONFIG_NOT_SET */
    bool *nic_backup;         /* [nranks] HcclCommWorkingDevNicSet's record; NULL until first set */
    bool is_sub;
    uint64_t symwin_max_bytes; /* hcclSymWinMaxMemSizePerRank in bytes (rt_symwin.c) */
    _Atomic bool failure_reported; /* the "failed earlier" error was logged once (then debug level) */
    struct rt_comm *next;     /* registry of live comms (by name) */
} rt_comm;

/* --- mismatch detection (rt_publish.c) --- */
bool rt_sig_equal(const rt_sig *a, const rt_sig *b); /* the same call (seq aside) */
/* Fails the communicator on every rank with one line naming rank peer's call and this rank's
 * (mine: its seq is this rank's op number); returns HAL_E_ABORTED. */
int rt_mismatch_report(rt_comm *c, uint32_t peer, const rt_sig *theirs, const rt_sig *mine, char *msg, size_t len);

/* --- sub-communicator mailboxes (rt_subcomm.c, rt_mailbox) --- */
/* Leaves info in ctrl's mailbox for sub-communicator `tag`, then says so in its tag word. */
void rt_mailbox_put(rt_ctrl *ctrl, const HcclRootInfo *info, uint64_t tag);
/* A whole copy of sub-communicator `tag`'s info from ctrl (the owner's block or its mirror), or
 * false: the tag word says another, or the info landed only in part or is another's. */
bool rt_mailbox_take(const rt_ctrl *ctrl, uint64_t tag, HcclRootInfo *info);

/* --- results, names --- */
HcclResult rt_from_hal(int hal_rc);
const char *rt_cmd_name(uint32_t cmd);
/* Formats a signature as the call a user wrote, e.g. "HcclAllReduce(count=1024, fp32, sum)". */
void rt_sig_format(const rt_sig *sig, char *buf, size_t len);

/* --- communicator handles (rt_handle.c): the only way from an HcclComm to an rt_comm --- */
rt_comm *rt_comm_check(HcclComm comm); /* NULL if not a live communicator (the caller logs) */
/* Like rt_comm_check, with one log line naming api: NULL -> HCCL_E_PTR, destroyed/stale -> HCCL_E_PARA. */
HcclResult rt_comm_get(HcclComm comm, const char *api, rt_comm **out);
HcclResult rt_handle_new(rt_comm *c);   /* sets c->handle */
/* Every later lookup of c->handle fails; false if it was retired already (or never issued). */
bool rt_handle_retire(rt_comm *c);

/* --- communicator --- */
HcclResult rt_comm_create(uint32_t nranks, uint32_t rank, const HcclCommConfig *config, const char *default_name,
                          const HcclRootInfo *root, rt_comm **out);
HcclResult rt_comm_destroy(rt_comm *c);
HcclResult rt_config_apply(rt_comm *c, const HcclCommConfig *config);
/* Calls every registered HcclCommStateCallback with phase, in registration order (rt_comm_state.c). */
void rt_comm_state_notify(HcclComm comm, HcclCommStatePhase phase);
void rt_registry_add(rt_comm *c);
void rt_registry_remove(rt_comm *c);
/* Calls fn for every live communicator, under the registry lock. */
void rt_registry_each(void (*fn)(rt_comm *c));
/* Starts (once per process) the thread that fails communicators whose peer process died. */
void rt_watchdog_start(void);
HcclComm rt_registry_find(const char *name); /* the live communicator's handle, or NULL */

/* --- control block layout --- */
size_t rt_ctrl_size(uint32_t nranks);
void rt_ctrl_clear(rt_ctrl *c, uint32_t nranks);
hal_notify_handle *rt_ctrl_notify_tbl(rt_ctrl *c, uint32_t sender); /* [RT_SLOTS] */
rt_pub_record *rt_ctrl_pub(rt_ctrl *c, uint64_t seq);
/* [nranks]: fetched[q] = the last collective seq whose record this rank FETCHed from rank q. */
_Atomic uint64_t *rt_ctrl_fetched(rt_ctrl *c);
/* Destroy after an eager call: waits (bounded) until every peer read this rank's last record. */
void rt_ctrl_wait_fetched(rt_comm *c);
/* Init, peers connected (rt_inbox_warm.c): maps this process's view of the inbox parts it will use
 * (every box of its own eager slots, its box of each eager slot of every local peer's, the peers'
 * one-way slots), so a loop's first calls take no page faults. */
void rt_inbox_warm(rt_comm *c);
/* A writer's first one-way Reduce to `root` (c->lock held): the same for root's gather slots. At
 * init they made an 8-rank init and teardown 10% slower, 16 ranks' 18% (rt_inbox_warm.c). */
void rt_gather_warm(rt_comm *c, uint32_t root);
/* The first V-op (c->lock held): maps this process's view of its own and its local peers'
 * publication and V-table rings (rt_vring_warm.c). */
void rt_vring_warm(rt_comm *c);
/* This process's first touch of [from, to) of device memory it reaches: mapped in one call
 * (hal_ops.mem_prefault), then read once a page (rt_vring_warm.c). */
void rt_warm_range(const rt_comm *c, const void *from, const void *to, size_t page);
/* The first p2p launch through the boxes (c->lock held): the same for each local peer's part of
 * this rank's inbox and this rank's part of the peer's (rt_p2p_box.c). */
void rt_p2p_warm(rt_comm *c);
/* Destroy after one-way calls this rank rooted (rt_oneway.c): compares its receivers' views of
 * them with its own, waiting (bounded) for views not written yet, then for every credit back (a
 * Broadcast's receivers copy out of this rank's inbox). */
void rt_oneway_destroy_check(rt_comm *c);
/* Ranks drift apart by at most the one-way slots (algos/plan.h, INBOX: a run's receivers are at most
 * that many calls behind its one root) and the two calls an eager call may run ahead: records and
 * V tables of a call must still be there when the slowest rank reads them. */
_Static_assert(RT_PUB_RING > ALGO_ONEWAY_SLOTS_MAX + ALGO_EAGER_SLOTS, "publication ring too short");
/* p2p: the ring of this rank's receives from peer, by the receive's ordinal (seq). */
rt_pub_record *rt_ctrl_p2p(rt_ctrl *c, uint32_t peer, uint64_t seq);
/* HcclCommDestroy: a FINALIZE record as the next receive from every peer, and a signal to each
 * peer, so a peer blocked in p2p with this rank fails at once naming the destroy. */
void rt_p2p_finalize(rt_comm *c);
uint64_t *rt_ctrl_vtable(rt_ctrl *c, uint64_t seq); /* [RT_VTABLE_ENTRIES(nranks)], see rt_vcheck.c */
#define RT_VTABLE_ENTRIES(n) (3 * (size_t)(n) + 1)
/* Marks the communicator failed on every rank (first reason wins) and wakes nobody: waits poll.
 * A peer that already released its block (destroyed) is skipped: epoch-guarded CAS. */
void rt_abort_all(rt_comm *c, HcclResult code, const char *msg);
/* The same for this server's ranks only (what a failure pushed from another server triggers). */
void rt_abort_local(rt_comm *c, HcclResult code, const char *msg);
/* 1 while peer p still holds the control block it connected with (it has not destroyed). */
bool rt_ctrl_peer_live(const rt_comm *c, uint32_t p);
/* 1 if peer p destroyed the communicator (or released its block): the watchdog spares it. */
bool rt_ctrl_peer_left(const rt_comm *c, uint32_t p);
/* Init's join barrier on rank 0's block: counts this rank in; 0 or the failure. */
HcclResult rt_ctrl_join(rt_comm *c);
/* A failed init tells every rank it reached, so none of them waits out HCCL_CONNECT_TIMEOUT. */
void rt_ctrl_join_fail_all(rt_comm *c);
/* --- control-block pool (rt_ctrl_pool.c) --- */
HcclResult rt_ctrl_acquire(rt_comm *c); /* sets ctrl, ctrl_bytes, ctrl_epoch; header filled */
void rt_ctrl_release(rt_comm *c);       /* bumps the epoch, back to the pool (never to the heap) */
HcclResult rt_inbox_acquire(rt_comm *c); /* sets inbox: the eager inbox, from the same pool */
void rt_inbox_release(rt_comm *c);       /* back to the pool (never to the heap) */

/* --- control blocks in host shared memory (rt_ctrl_shm.c), staging mode --- */
void *rt_ctrl_shm_create(size_t bytes, uint32_t *seg); /* a new segment, mapped; NULL: logged */
rt_ctrl *rt_ctrl_shm_map(uint32_t pid, uint32_t seg, size_t bytes); /* a peer's; NULL: logged */
void rt_ctrl_shm_unmap(void *p, size_t bytes);

/* --- notify slots (runtime/notify) --- */
HcclResult rt_notify_setup_local(rt_comm *c);
HcclResult rt_notify_connect_peers(rt_comm *c);
void rt_notify_teardown(rt_comm *c);

/* --- slave streams (runtime/stream) --- */
HcclResult rt_streams_ensure(rt_comm *c, uint32_t nstreams);
void rt_streams_teardown(rt_comm *c);

/* --- launch --- */
typedef struct rt_call { /* rt_call_init sets every field: a new one goes there too */
    algo_op op;           /* op.rank/nranks filled */
    uint32_t cmd;         /* HcclCMDType of the API */
    void *in, *out;
    hal_stream *stream;
    /* Staging mode (rt_staging.c): one chunk of a user call, bound to the staging buffers, with
     * the copies user IN -> staging IN before the plan and staging OUT -> user OUT after it. */
    bool staged;
    uint64_t sig_count;   /* the user call's count (signature), 0: op.count */
    const hal_dma_desc *pre, *post;
    uint32_t npre, npost;
} rt_call;

HcclResult rt_launch(rt_comm *c, rt_call *call);
/* A call of the public API: the op's fields given, every other field 0 (rt_coll.c). */
void rt_call_init(rt_call *call, algo_coll coll, uint32_t cmd, void *in, void *out, uint64_t count, HcclDataType dt,
                  HcclReduceOp op, uint32_t root);

/* --- staging mode (runtime/stream/rt_staging.c) --- */
/* HCCL_ASCEND_STAGING=auto|on|off for this backend (auto: on for hal/ascend over a libascendcl
 * that is not ours, i.e. CANN's); logged once per process. */
bool rt_staging_wanted(const hal_ops *hal);
/* Init: allocates the staging buffers and exports scratch, inbox and staging by key. */
HcclResult rt_staging_alloc(rt_comm *c);
/* Init: imports peer p's exports (keys from its init blob); same-server peers only. */
HcclResult rt_staging_connect(rt_comm *c, uint32_t p, const char keys[RT_STAGE_KEYS][HAL_IPC_KEY_LEN]);
/* Destroy: closes imports, then exports, then frees the staging buffers. */
void rt_staging_teardown(rt_comm *c);
/* A collective through the staging buffers, in chunks when it does not fit (one launch each). */
HcclResult rt_staging_launch(rt_comm *c, rt_call *call);
/* Staging mode: peer p's IN (buf 0) or OUT (buf 1) of a call of coll, as mapped here. */
void *rt_staging_peer_buf(const rt_comm *c, uint32_t p, algo_coll coll, uint32_t buf);
/* A buffer a call touches must be memory of this rank's device with `bytes` left in its allocation. */
HcclResult rt_check_buffer(rt_comm *c, const char *api, const char *what, const void *p, uint64_t bytes);
/* Buffers rt_check_buffer found good, until the process frees device memory (rt_buf_cache.c):
 * true if [p, p + bytes) lies in one of them, of c's device; else *epoch is what to note a
 * successful lookup of p (bytes_after: the allocation's bytes from p) under (0: no caching). */
bool rt_buf_cache_hit(const rt_comm *c, const void *p, uint64_t bytes, uint64_t *epoch);
void rt_buf_cache_note(const rt_comm *c, const void *p, uint64_t bytes_after, uint64_t epoch);
/* The epoch entries are noted under: it moves at every free of device memory in this process; 0
 * where the HAL does not report frees. */
uint64_t rt_buf_cache_epoch(const rt_comm *c);
/* The epoch a repeated-call check (rt_check.c, rt_p2p.c) keys a good call under, read before its
 * checks: 0 (check every call) where buffers may change without a free (HcclCommSetMemoryRange
 * ranges) or the HAL does not report frees. */
uint64_t rt_repeat_epoch(const rt_comm *c);
/* Registered VMM ranges (rt_mem_range.c): true if p lies in a range set by HcclCommSetMemoryRange
 * on c's device; then *verdict says whether [p, p + bytes) is activated memory (logged if not). */
bool rt_mem_range_check(rt_comm *c, const char *api, const char *what, const void *p, uint64_t bytes,
                        HcclResult *verdict);
/* Some range is set in this process (activations then decide what a buffer may be). */
bool rt_mem_ranges_set(void);
/* Ranges live while the process has a communicator on their device (CANN's reference count). */
void rt_mem_range_comm_created(const rt_comm *c);
void rt_mem_range_comm_destroyed(const rt_comm *c);
/* Symmetric windows and HcclCommRegister (rt_symwin.c, rt_comm_register.c): the per-communicator
 * entries, dropped at destroy; the window size limit a config gives. */
uint64_t rt_symwin_limit(const HcclCommConfig *config);
void rt_symwin_comm_destroyed(HcclComm comm);
void rt_comm_register_destroyed(HcclComm comm);
/* HCCL_SUCCESS while the communicator is healthy, else its recorded error (logged in full once). */
HcclResult rt_comm_failed(rt_comm *c, const char *api);
/* Validates and launches a collective (shared by every public entry point). */
HcclResult rt_collective(HcclComm comm, rt_call *call, aclrtStream stream, const char *api);

/* --- plan cache --- */
rt_plan_cache *rt_plan_cache_new(void);
void rt_plan_cache_free(rt_plan_cache *pc);
/* Finds or compiles the plan for op (cache key: the op's shape; AlltoAllV(C): without the counts)
 * and holds it for the caller until rt_plan_put (a held plan is never evicted). Under c->lock. */
HcclResult rt_plan_get(rt_comm *c, const algo_op *op, const algo_plan **plan);
void rt_plan_put(rt_comm *c, const algo_plan *plan);
uint32_t rt_plan_cache_size(const rt_plan_cache *pc); /* plans cached now */
/* Plans evicted from the cache so far: a plan's address names the same plan only while this is
 * unchanged (a freed plan's memory may hold the next one). Launch programs built for a plan are
 * reused under that key (runtime/stream/rt_prog.c). Under c->lock. */
uint64_t rt_plan_cache_evictions(const rt_plan_cache *pc);

/* Plans compiled by this process so far (tests check reuse). */
uint64_t rt_plan_compile_count(void);
/* Launch programs built by this process so far (rt_prog.c; tests check their reuse). */
uint64_t rt_prog_build_count(void);
/* Launch contexts allocated by this process so far past the pools warmed at init (rt_launch_pool.c;
 * tests check that loops recycle them). */
uint64_t rt_launch_ctx_alloc_count(void);

/* --- environment --- */
int32_t rt_env_exec_timeout_s(void);

#include "runtime/rt_inbox.h" /* the inbox layout: boxes, slots (inline) */

#endif
