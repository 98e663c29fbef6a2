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

#define RT_PUB_RING 64          /* publication records kept per rank (by seq % RT_PUB_RING); ranks drift at most ~nranks ops apart */
#define RT_SLOTS (ALGO_MAX_SLOTS + 1) /* notify slots per sender; the last one publishes p2p */
#define RT_SLOT_P2P_PUB ALGO_MAX_SLOTS
#define RT_MAX_STREAMS ALGO_MAX_STREAMS
#define RT_CTRL_MAGIC 0x4f48434cu /* "OHCL" */
#define RT_MSG_LEN 512

/* An op's signature: what every rank must agree on for one collective call. */
typedef struct rt_sig {
    uint64_t seq;     /* 1-based op number within the communicator (p2p: within the pair) */
    uint32_t cmd;     /* HcclCMDType of the API called (HCCL_CMD_FINALIZE for a destroy) */
    uint32_t dtype;
    uint32_t redop;
    uint32_t root;
    uint64_t count;
    uint32_t nranks;
    uint32_t pad;
} rt_sig;

/* One published call: written by its owner's PUBLISH task, read by peers' FETCH. */
typedef struct rt_pub_record {
    _Atomic uint64_t ready; /* seq of the record once complete (written last) */
    rt_sig sig;
    uint64_t in, out;       /* this call's buffer addresses */
    uint64_t vdispl;        /* device address of recv displacements (ALLTOALLV), else 0 */
    uint64_t vcounts;       /* device address of recv counts (ALLTOALLV), else 0 */
    _Atomic uint64_t p2p_taken; /* p2p receive record: its ordinal once the sender's FETCH took it */
} rt_pub_record;

/* Peer-visible control block in device memory, one per rank per communicator. Layout after
 * this header (sized by nranks): notify handles [nranks][RT_SLOTS], publication ring
 * [RT_PUB_RING], p2p rings [nranks][RT_PUB_RING], V-op tables [RT_PUB_RING][2*nranks]. */
typedef struct rt_ctrl {
    uint32_t magic;
    uint32_t nranks;
    _Atomic uint32_t abort;   /* non-zero once the communicator failed: waits end */
    uint32_t abort_code;      /* HcclResult */
    char abort_msg[RT_MSG_LEN];
    _Atomic uint32_t destroyed; /* set by HcclCommDestroy: this rank left on purpose */
    _Atomic uint32_t joined;    /* rank 0's block: ranks that mapped every peer (end of init) */
    _Atomic uint64_t mailbox_tag; /* sub-communicator creation: subCommId + 1 once mailbox is valid */
    HcclRootInfo mailbox;
} rt_ctrl;

typedef struct rt_peer {
    hal_device_handle dev;
    rt_ctrl *ctrl;            /* peer's control block (mapped here) */
    void *scratch;            /* peer's scratch base */
    hal_notify *to_peer[RT_SLOTS]; /* imported: notifies the peer owns that I signal */
    hal_notify *from_peer[RT_SLOTS]; /* mine: notifies the peer signals */
    uint64_t p2p_sent;        /* p2p items sent to this peer so far (the last send's ordinal) */
    uint64_t p2p_recvd;       /* p2p items received from this peer so far */
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
    rt_ctrl *ctrl;            /* mine */
    size_t ctrl_bytes;
    void *scratch;
    uint64_t scratch_bytes;
    rt_peer *peers;           /* [nranks]; peers[rank] describes myself */
    uint32_t *server_of;      /* [nranks] */
    pthread_mutex_t lock;     /* op issue: seq numbers, plan cache, slave streams */
    uint64_t seq;             /* last collective op number issued */
    rt_plan_cache *cache;
    hal_stream *slaves[RT_MAX_STREAMS];
    hal_event *fork_ev[RT_MAX_STREAMS];
    hal_event *join_ev[RT_MAX_STREAMS];
    struct rt_launch_ctx *pending_head, *pending_tail; /* launches not yet reclaimed (FIFO) */
    /* config */
    uint32_t buffsize_mb;
    uint32_t deterministic;
    int32_t exec_timeout_s;
    char algo_spec[HCCL_COMM_ALGO_MAX_LENGTH];
    bool is_sub;
    struct rt_comm *next;     /* registry of live comms (by name) */
} rt_comm;

/* --- results, names --- */
HcclResult rt_from_hal(int hal_rc);
const char *rt_cmd_name(uint32_t cmd);
/* Formats a signature as the call a user wrote, e.g. "HcclAllReduce(count=1024, fp32, sum)". */
void rt_sig_format(const rt_sig *sig, char *buf, size_t len);

/* --- communicator --- */
rt_comm *rt_comm_check(HcclComm comm); /* NULL if not a live communicator (the caller logs) */
HcclResult rt_comm_create(uint32_t nranks, uint32_t rank, const HcclCommConfig *config, const char *default_name,
                          const HcclRootInfo *root, rt_comm **out);
HcclResult rt_comm_destroy(rt_comm *c);
HcclResult rt_config_apply(rt_comm *c, const HcclCommConfig *config);
void rt_registry_add(rt_comm *c);
void rt_registry_remove(rt_comm *c);
/* Calls fn for every live communicator, under the registry lock. */
void rt_registry_each(void (*fn)(rt_comm *c));
/* Starts (once per process) the thread that fails communicators whose peer process died. */
void rt_watchdog_start(void);
rt_comm *rt_registry_find(const char *name);

/* --- control block layout --- */
size_t rt_ctrl_size(uint32_t nranks);
hal_notify_handle *rt_ctrl_notify_tbl(rt_ctrl *c, uint32_t sender); /* [RT_SLOTS] */
rt_pub_record *rt_ctrl_pub(rt_ctrl *c, uint64_t seq);
/* p2p: the ring of this rank's receives from peer, by the receive's ordinal (seq). */
rt_pub_record *rt_ctrl_p2p(rt_ctrl *c, uint32_t peer, uint64_t seq);
/* HcclCommDestroy: a FINALIZE record as the next receive from every peer, and a signal to each
 * peer, so a peer blocked in p2p with this rank fails at once naming the destroy. */
void rt_p2p_finalize(rt_comm *c);
uint64_t *rt_ctrl_vtable(rt_ctrl *c, uint64_t seq); /* [2*nranks]: recv counts, recv displs */
/* Marks the communicator failed on every rank (first reason wins) and wakes nobody: waits poll. */
void rt_abort_all(rt_comm *c, HcclResult code, const char *msg);

/* --- notify slots (runtime/notify) --- */
HcclResult rt_notify_setup_local(rt_comm *c);
HcclResult rt_notify_connect_peers(rt_comm *c);
void rt_notify_teardown(rt_comm *c);

/* --- slave streams (runtime/stream) --- */
HcclResult rt_streams_ensure(rt_comm *c, uint32_t nstreams);
void rt_streams_teardown(rt_comm *c);

/* --- launch --- */
typedef struct rt_call {
    algo_op op;           /* op.rank/nranks filled */
    uint32_t cmd;         /* HcclCMDType of the API */
    void *in, *out;
    const uint64_t *vcounts;  /* ALLTOALLV: this rank's recv counts / displs (host) */
    const uint64_t *vdispls;
    hal_stream *stream;
} rt_call;

HcclResult rt_launch(rt_comm *c, rt_call *call);
/* A buffer a call touches must be memory of this rank's device with `bytes` left in its allocation. */
HcclResult rt_check_buffer(rt_comm *c, const char *api, const char *what, const void *p, uint64_t bytes);
/* Validates and launches a collective (shared by every public entry point). */
HcclResult rt_collective(HcclComm comm, rt_call *call, aclrtStream stream, const char *api);

/* --- plan cache --- */
rt_plan_cache *rt_plan_cache_new(void);
void rt_plan_cache_free(rt_plan_cache *pc);
/* Finds or compiles the plan for op (cache key: the op's shape and the algorithm). */
HcclResult rt_plan_get(rt_comm *c, const algo_op *op, const algo_plan **plan);

/* Plans compiled by this process so far (tests check reuse). */
uint64_t rt_plan_compile_count(void);

/* --- environment --- */
int32_t rt_env_exec_timeout_s(void);

#endif
