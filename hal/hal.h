/* The device interface: one table of functions per backend (emu, ascend).
 *
 * Everything above the HAL (runtime/, the ACL front of the emulator, tests) reaches devices only
 * through `const hal_ops *`. Work is asynchronous: calls that take a stream enqueue a task and
 * return; the task runs later in stream order on the device. A task that fails puts its stream
 * into a sticky error state: later device tasks of that stream are skipped and the error (with
 * its message) is reported by stream_sync / stream_query / event sync on events recorded after
 * it. Host functions (host_func_async) still run, in order: they are the host's code, and often
 * release what the device work used (CANN runs a stream's later tasks after a failure too, by
 * default).
 *
 * Threading: every function may be called from any thread of the process. A device is opened
 * by exactly one process of its emulated server; other processes reach its memory and notifies
 * by import (mem_import / notify_import, or by key: ipc_*).
 */
#ifndef HAL_H
#define HAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hal/hal_types.h"

typedef struct hal_device hal_device; /* an opened device of this process */
typedef struct hal_stream hal_stream; /* FIFO task queue executed by the device */
typedef struct hal_event hal_event;   /* cross-stream marker (local to one device) */
typedef struct hal_notify hal_notify; /* counting semaphore in device memory, reachable by peers */

/* Plain-data handles that travel between processes (through the bootstrap). */
typedef struct hal_device_handle {
    uint64_t server_key;  /* identifies the emulated server (namespace); equal = same server */
    uint32_t server_index; /* position of the server in the job (HCCL_EMU_TOPO), 0 by default */
    uint32_t device_id;    /* device id on that server */
    uint32_t pid;          /* owning process, for liveness checks and logs */
    uint32_t reserved[3];
} hal_device_handle;

typedef struct hal_notify_handle {
    hal_device_handle owner; /* the device whose memory holds the counter */
    uint64_t offset;         /* backend-private locator (emu: notify index) */
} hal_notify_handle;

/* How two devices reach each other; the cost model names the same classes. */
typedef enum hal_link_class {
    HAL_LINK_SELF = 0,   /* same device */
    HAL_LINK_INTRA = 1,  /* same server: load/store into peer memory (HCCS-like), zero copy */
    HAL_LINK_NET = 2,    /* different servers: through hal/net (RoCE/TCP) */
} hal_link_class;

/* A device address that may be resolved only when the task executes: address =
 * (indirect ? *indirect : base) + offset. Plans use `indirect` for a peer's buffer whose address
 * becomes known on the device (published per call), after the task was enqueued. */
typedef struct hal_ref {
    void *base;
    void *const *indirect;
    uint64_t offset;
} hal_ref;

static inline hal_ref hal_ref_ptr(void *p)
{
    hal_ref r = {p, NULL, 0};
    return r;
}

static inline void *hal_ref_resolve(hal_ref r)
{
    char *b = r.indirect ? (char *)*r.indirect : (char *)r.base;
    return b ? b + r.offset : NULL;
}

typedef enum hal_dma_kind { HAL_DMA_COPY = 0, HAL_DMA_REDUCE = 1 } hal_dma_kind;

/* One DMA descriptor: COPY moves `bytes`; REDUCE does dst[i] = dst[i] op src[i] for `count`
 * elements of `dtype` (an SDMA inline reduce), or dst[i] = src[i] op src2[i] when src2 resolves
 * to an address (dst is then only written: an out-of-place reduce needs no copy first). */
typedef struct hal_dma_desc {
    hal_dma_kind kind;
    uint8_t reread;   /* COPY, a hint: the writer reads dst again soon (a copy kernel that streams
                         past the caches would make it read memory); backends may ignore it. In
                         the hole before dst: the descriptor stays 104 bytes */
    hal_ref dst;
    hal_ref src;
    hal_ref src2;     /* REDUCE: optional second operand (zero = none) */
    uint64_t bytes;   /* COPY */
    uint64_t count;   /* REDUCE */
    hal_dtype dtype;  /* REDUCE */
    hal_redop op;     /* REDUCE */
} hal_dma_desc;

/* A task run by the stream's executor. Returning non-zero fails the stream with that code;
 * `msg` (size msg_len) may be filled with the reason and becomes the stream's error message. */
typedef int (*hal_task_fn)(void *arg, char *msg, size_t msg_len);
/* A plain host function (compute stand-in, callbacks): cannot fail the stream. */
typedef void (*hal_host_fn)(void *arg);

/* A stream program: a short list of device instructions that runs as ONE task of its stream (one
 * queue entry, one hand-off to the executor), in order. The first failing instruction fails the
 * stream (sticky error, as a failing task) and ends the program. The array, the descriptors and
 * arguments it points to, and the notifies it names must stay valid until the program has run (the
 * caller learns it from an event recorded after it): nothing is copied at launch. */
typedef enum hal_insn_kind {
    HAL_INSN_DMA = 0,        /* u.dma: a DMA batch, as dma_batch */
    HAL_INSN_NOTIFY_RECORD,  /* u.notify: as notify_record */
    HAL_INSN_NOTIFY_WAIT,    /* u.notify: as notify_wait (timeout_ms 0 = the default); at_least > 0:
                                as notify_wait_count; keep_rest: see below */
    HAL_INSN_FN,             /* u.fn: as task_async */
    HAL_INSN_AHEAD,          /* u.ahead: the end of a prefix that may run ahead (below); in order, nothing */
    HAL_INSN_FLAG_WAIT,      /* u.flag: as flag_wait (a wait: nothing runs ahead past it) */
    HAL_INSN_NOTIFY_WAKE,    /* u.notify (n only): as notify_wake */
} hal_insn_kind;

/* A wait for a flag (hal_ops.flag_wait, HAL_INSN_FLAG_WAIT): until the 8-byte word at `flag`, in
 * device memory the host maps (host_mapped_mem), holds at least `at_least` (read with acquire:
 * what its writer stored before the flag is visible after the wait). Where data and its flag
 * travel in one cache line, the reader needs nothing else, and the writer no count on a line
 * the reader polls. When the wait would sleep, it sleeps on `wake`, a notify of the waiting
 * device: the writer, after storing the flag, calls notify_wake on it. The same timeout and abort
 * rules as notify_wait. `check` (optional) runs before the wait first sleeps and after every
 * wake-up while the flag is short: the caller's test for a writer that will never store it (it
 * left, or runs another call); non-zero fails the stream as a task function does. Signals on
 * `wake` are wake-ups only: the wait takes whatever is there when it wakes. The struct must stay
 * valid until the wait has run, as a program's descriptors. */
typedef struct hal_flag_wait {
    const volatile uint64_t *flag;
    uint64_t at_least;
    hal_notify *wake;
    uint32_t timeout_ms; /* 0: the default (HCCL_EXEC_TIMEOUT) */
    const volatile uint32_t *abort_flag;
    hal_task_fn check;
    void *check_arg;
} hal_flag_wait;

/* Whether the wait's flag holds `at_least` now (acquire), as the wait tests it: for a backend's
 * wait, and for a caller that must not wait (a send run ahead of the calls before it, a check). */
static inline bool hal_flag_met(const hal_flag_wait *w)
{
    return atomic_load_explicit((const volatile _Atomic uint64_t *)w->flag, memory_order_acquire) >= w->at_least;
}

/* Running ahead. A program with an AHEAD mark of group g != 0 and depth d (at most one mark, no
 * wait before it) says: the instructions before the mark may run while the program queued j <= d
 * places before it on the same stream waits, if that program and every program in between
 * passed marks of group g (those in between maybe only their prefixes, also run ahead) and
 * nothing else is queued in between. A backend may do so (the emulator does, when a wait is not
 * met at once, for up to HAL_AHEAD_MAX programs) or not (in order is always correct). The caller
 * guarantees what makes that safe: the prefix reads nothing those d programs write after their
 * own marks, and writes nothing they read or write. Depth 0: the prefix runs in order, later
 * programs may still run ahead of this one. Group 0: the mark is off. */
#define HAL_AHEAD_MAX 7u /* the most programs a backend runs ahead of one that waits */

typedef struct hal_insn {
    uint8_t kind; /* hal_insn_kind */
    union {
        struct { const hal_dma_desc *descs; uint32_t n; } dma;
        /* keep_rest: this handle is the notify's only waiter, so a wait that finds k signals may
         * take them all at once and keep k - 1 in the handle for its next waits (one access to
         * the shared count per batch instead of per signal; every wait and notify_pending through
         * the handle counts the kept ones). A hint: a backend may take one as notify_wait does. */
        struct {
            hal_notify *n;
            uint32_t timeout_ms;
            const volatile uint32_t *abort_flag;
            uint32_t at_least;
            bool keep_rest;
            /* check (optional): as hal_flag_wait's, for a wait that may sleep on a peer that will
             * never signal; it runs once the wait counts among the notify's sleepers, so a
             * notify_wake after what the check reads wakes it (notify_wait_checked). */
            hal_task_fn check;
            void *check_arg;
        } notify;
        struct { hal_task_fn fn; void *arg; } fn;
        struct { uint64_t group; uint32_t depth; } ahead; /* depth: how many programs before it */
        struct { const hal_flag_wait *w; } flag;
    } u;
} hal_insn;

/* An instruction that may wait for a signal (nothing runs ahead past it: "Running ahead"). */
static inline bool hal_insn_waits(const hal_insn *in)
{
    return in->kind == HAL_INSN_NOTIFY_WAIT || in->kind == HAL_INSN_FLAG_WAIT;
}

enum hal_event_flags {
    HAL_EVENT_TIMING = 1u << 0,    /* record a timestamp (for elapsed_time) */
    HAL_EVENT_WAIT_UNRECORDED_BLOCKS = 1u << 1, /* a wait on a never-recorded event blocks until a record
                                                   (default: completes at once, like a CUDA event) */
    HAL_EVENT_SERIAL = 1u << 2,    /* the caller never makes two calls on the event at once (record, wait,
                                      sync, help, query, destroy): a backend may skip locking what a
                                      record leaves for a later sync (a launch's completion event,
                                      used under its communicator's lock) */
};

/* Inter-process sharing by key (aclrtIpcMem*, aclrtNotify*Key): a key is a NUL-terminated string
 * of at most HAL_IPC_KEY_LEN - 1 characters (CANN's 65-byte key buffers). */
#define HAL_IPC_KEY_LEN 65
enum hal_ipc_flags {
    HAL_IPC_NO_PID_CHECK = 1u << 0, /* any process of the server may import (no whitelist) */
};

typedef struct hal_device_info {
    hal_device_handle handle;
    uint64_t mem_total;   /* bytes of device memory */
    uint64_t mem_free;
    uint32_t dma_engines; /* engines a DMA batch is spread over */
    const char *soc_name; /* e.g. "Ascend910B1" */
} hal_device_info;

/* Virtual memory management (for aclrtReserveMemAddress & co). Granularity: vmm_granularity. */
typedef struct hal_phys_mem hal_phys_mem;

/* A free listener (hal_ops.mem_free_listen): [base, base + size) of a device of this process is
 * about to stop being the memory it was (freed, or other pages mapped at those addresses). */
typedef void (*hal_mem_free_fn)(void *arg, void *base, size_t size);

#define HAL_FANOUT_MIN_BYTES (1u << 20) /* hal_ops.prog_fans_out_copies */

typedef struct hal_ops {
    const char *name; /* "emu", "ascend" */
    /* Device memory of this process's devices and of imported peers is plain host memory at the
     * device address: a task function (task_async, HAL_INSN_FN) may read and write it directly.
     * True on the emulator only; hardware needs DMA for device memory. */
    bool host_mapped_mem;
    /* DMA instructions in a row of a program that copy the same sources, each at least
     * HAL_FANOUT_MIN_BYTES, to other destinations run as one pass over the sources (the emulator:
     * a fan-out reads each source once for all its destinations). The runtime then puts a mesh
     * fan-out's copies (one source into every peer) in a row instead of on slave streams. False
     * where prog_launch is NULL (no program, no row: hal.c clears it for HCCL_EMU_NO_PROG). */
    bool prog_fans_out_copies;

    /* --- devices --- */
    hal_result (*device_count)(uint32_t *count);
    /* Opens device `id` in this process (reference counted: open twice, close twice). */
    hal_result (*device_open)(int32_t id, hal_device **dev);
    /* Last close: drains streams, frees memory, notifies, streams and events of the device. */
    hal_result (*device_close)(hal_device *dev);
    /* dev NULL: what every device of this backend shares (soc_name, mem_total; handle zeroed),
     * answered without opening or claiming any device (aclrtGetSocName before aclrtSetDevice). */
    hal_result (*device_info)(hal_device *dev, hal_device_info *info);
    hal_result (*device_sync)(hal_device *dev, int32_t timeout_ms); /* all streams; -1 = no limit */
    /* Link class between this device and a peer named by its handle. */
    hal_link_class (*link_class)(hal_device *dev, const hal_device_handle *peer);
    /* The device this thread selected (aclrtSetDevice on emu); HAL_E_INVALID_DEVICE if none. */
    hal_result (*current_device)(hal_device **dev);
    /* Selects dev for this thread (opens nothing). */
    hal_result (*set_current_device)(hal_device *dev);

    /* --- memory --- */
    hal_result (*mem_alloc)(hal_device *dev, size_t bytes, void **ptr);
    /* HAL_E_FOREIGN if ptr is not the start of a live allocation of dev. */
    hal_result (*mem_free)(hal_device *dev, void *ptr);
    /* Which device (of this server, opened here or imported) owns ptr, and how many bytes of its
     * allocation follow ptr. HAL_E_FOREIGN if ptr is not device memory. */
    hal_result (*mem_lookup)(const void *ptr, hal_device_handle *owner, uint64_t *bytes_after);
    /* Makes a peer device's memory addressable from this process (same server only): after it,
     * device addresses the peer publishes are valid here as they are. Idempotent. */
    hal_result (*mem_import)(hal_device *dev, const hal_device_handle *peer);
    /* Process-wide free listeners, for caches keyed by device address (hal/net's registrations:
     * a verbs MR pins pages, so memory freed and reallocated at the same address must be registered
     * anew). fn(arg, base, size) runs on the freeing thread BEFORE the range changes, for: mem_free
     * (the allocation), device_close (the device's whole heap), vmm_map / vmm_unmap (the mapped
     * range gets other pages), vmm_release (the reservation), vmm_phys_free (the chunk). No HAL lock
     * is held while fn runs: it may take its own locks and call the HAL, but not mem_free_unlisten.
     * *id names the listener. Cheap when none is registered (one atomic load per free). Optional:
     * NULL when the backend does not see the frees (hal/ascend: the application's aclrtFree goes to
     * CANN directly; docs/runtime.md says what the runtime relies on then). */
    hal_result (*mem_free_listen)(hal_mem_free_fn fn, void *arg, uint64_t *id);
    /* Removes listener id; returns once no call of it is running, so its arg may then be freed.
     * HAL_E_PARAM for an unknown id. */
    hal_result (*mem_free_unlisten)(uint64_t id);

    /* Virtual memory: reserve address space of dev, allocate physical chunks, map them. */
    size_t (*vmm_granularity)(hal_device *dev);
    hal_result (*vmm_reserve)(hal_device *dev, size_t size, void **va);
    hal_result (*vmm_release)(hal_device *dev, void *va);
    hal_result (*vmm_phys_alloc)(hal_device *dev, size_t size, hal_phys_mem **pm);
    hal_result (*vmm_phys_free)(hal_phys_mem *pm);
    hal_result (*vmm_map)(void *va, size_t size, size_t offset, hal_phys_mem *pm);
    hal_result (*vmm_unmap)(void *va);

    /* --- streams --- */
    hal_result (*stream_create)(hal_device *dev, hal_stream **s);
    /* Waits for queued work, then destroys. */
    hal_result (*stream_destroy)(hal_stream *s);
    /* Blocks (no spinning) until all queued tasks ran; timeout_ms -1 = no limit.
     * Returns the sticky error if a task failed (HAL_E_TIMEOUT if the deadline passed). */
    hal_result (*stream_sync)(hal_stream *s, int32_t timeout_ms);
    /* HAL_OK if idle, HAL_E_NOT_READY if work is pending, or the sticky error. */
    hal_result (*stream_query)(hal_stream *s);
    /* Sticky error message of the stream ("" when none). */
    const char *(*stream_error_msg)(hal_stream *s);
    /* Clears the sticky error (aclrtSetStreamFailureMode-style recovery, tests). */
    void (*stream_clear_error)(hal_stream *s);
    hal_device *(*stream_device)(hal_stream *s);
    /* The HAL stream behind a user's aclrtStream (emu: the same object). NULL = the default
     * stream of this thread's current device. HAL_E_PARAM if it is not a live stream. */
    hal_result (*stream_from_native)(void *native, hal_stream **s);

    /* --- tasks (all enqueue and return) --- */
    hal_result (*dma_batch)(hal_stream *s, const hal_dma_desc *descs, uint32_t n); /* parallel, completes as one task */
    hal_result (*memset_async)(hal_stream *s, void *dst, int value, size_t bytes);
    hal_result (*task_async)(hal_stream *s, hal_task_fn fn, void *arg);
    /* Runs fn(arg) on the host in stream order, also on a failed stream (above). */
    hal_result (*host_func_async)(hal_stream *s, hal_host_fn fn, void *arg);
    /* Enqueues a stream program (see hal_insn). Optional: NULL when the backend has no program
     * executor; callers then enqueue the instructions one task each (same semantics, more tasks). */
    hal_result (*prog_launch)(hal_stream *s, const hal_insn *insns, uint32_t n);
    /* prog_launch, then event_record(done, s), as one task: one queue entry and one hand-off per
     * launch instead of two (the runtime's completion event of every collective). The record
     * completes after the program, carrying the stream's error if the program or an earlier task
     * failed, as a record of its own would. Optional (NULL: callers issue the two). */
    hal_result (*prog_launch_record)(hal_stream *s, const hal_insn *insns, uint32_t n, hal_event *done);

    /* --- events (same device) --- */
    hal_result (*event_create)(hal_device *dev, uint32_t flags, hal_event **e);
    hal_result (*event_destroy)(hal_event *e);
    /* The record completes once everything enqueued on s before it has: in stream order, or at
     * the call where s is idle then (the emulator does so). */
    hal_result (*event_record)(hal_event *e, hal_stream *s);
    hal_result (*event_reset)(hal_event *e, hal_stream *s);
    /* Later work on s waits for e's latest record (none: nothing to wait for); a record that
     * failed fails s. One already completed without error holds nothing back (the emulator
     * queues nothing for it). */
    hal_result (*stream_wait_event)(hal_stream *s, hal_event *e);
    hal_result (*event_sync)(hal_event *e, int32_t timeout_ms);
    /* HAL_OK when the last record completed (or never recorded), HAL_E_NOT_READY if pending. */
    hal_result (*event_query)(hal_event *e);
    /* 1 once some record of it has been enqueued (recorded status), else 0. */
    int (*event_recorded)(hal_event *e);
    hal_result (*event_elapsed_ms)(hal_event *start, hal_event *end, float *ms);

    /* --- notifies (counting semaphores in device memory, cross-device, cross-process) --- */
    hal_result (*notify_create)(hal_device *dev, hal_notify **n);
    hal_result (*notify_destroy)(hal_notify *n);
    hal_result (*notify_export)(hal_notify *n, hal_notify_handle *h);
    /* Opens a notify of another device of the same server (after mem_import of its owner). */
    hal_result (*notify_import)(hal_device *dev, const hal_notify_handle *h, hal_notify **n);
    uint32_t (*notify_id)(hal_notify *n);
    /* Enqueue: count += 1 and wake. A record through an import of a notify its owner has since
     * destroyed is dropped (generation-tagged slots): it never counts for a notify created later
     * in the same slot, and import of such a handle fails with HAL_E_PEER. */
    hal_result (*notify_record)(hal_notify *n, hal_stream *s);
    /* Enqueue: wait until count > 0, then count -= 1; past timeout_ms (0 = the default,
     * HCCL_EXEC_TIMEOUT) the stream fails with HAL_E_TIMEOUT. `abort_flag`, if not NULL, is
     * polled while waiting (a few times a second); non-zero fails the wait with HAL_E_ABORTED.
     * Waiting through an import of a notify its owner destroyed fails with HAL_E_PEER. */
    hal_result (*notify_wait)(hal_notify *n, hal_stream *s, uint32_t timeout_ms, const volatile uint32_t *abort_flag);
    /* Enqueue: wait until count > 0, then count = 0 (aclrtWaitAndResetNotify). */
    hal_result (*notify_wait_reset)(hal_notify *n, hal_stream *s, uint32_t timeout_ms);

    /* --- inter-process sharing by key (same server) --- */
    /* Exports [ptr, ptr + size), inside one allocation of any device this process opened (dev:
     * the caller's current device), under a new key. Unless flags has HAL_IPC_NO_PID_CHECK, only
     * processes named by ipc_set_pids may import it. */
    hal_result (*ipc_mem_export)(hal_device *dev, void *ptr, size_t size, uint32_t flags, char *key);
    /* Exports a notify created by this process; exporting it again returns the same key. */
    hal_result (*ipc_notify_export)(hal_notify *n, uint32_t flags, char *key);
    /* Owner only: adds pids to the key's whitelist. */
    hal_result (*ipc_set_pids)(const char *key, const int32_t *pids, size_t n);
    /* Maps the exported memory for dev (the pointer is the exporter's: same address in every
     * process). HAL_E_DENIED if this process is not whitelisted, HAL_E_PEER if the export is
     * closed or its owner gone, HAL_E_PARAM for a malformed key or another server's. */
    hal_result (*ipc_mem_import)(hal_device *dev, const char *key, void **ptr);
    /* Opens an exported notify (destroy it with notify_destroy). Same errors as ipc_mem_import. */
    hal_result (*ipc_notify_import)(hal_device *dev, const char *key, hal_notify **n);
    /* Owner: ends the export (later imports fail). Importer: forgets its import of the key. */
    hal_result (*ipc_close)(const char *key);

    /* --- host side --- */
    /* count += 1 and wake, now, from any host thread (no stream): what a network link's receive
     * path does when a write that names the notify has landed (runtime/net). Same generation rule
     * as notify_record. Optional (NULL: the backend cannot take host records). */
    hal_result (*notify_host_record)(hal_notify *n);
    /* The count now, from any host thread: a snapshot for the notify's only waiter, which then
     * knows a wait will not block (the count only grows under it). 0 for a notify its owner
     * destroyed. While the handle keeps signals (keep_rest), the kept ones only: the wait will not
     * block, and the shared count is not read. Optional (NULL: unknown). */
    uint32_t (*notify_pending)(hal_notify *n);
    /* The count now, signals this handle keeps included: what notify_wait_count compares with its
     * target (reads the shared count; notify_pending may not). 0 for a notify its owner destroyed.
     * Optional (NULL: unknown). */
    uint32_t (*notify_count)(hal_notify *n);
    /* Enqueue: waits until the notify holds at least `at_least` (>= 1) signals and takes none of
     * them; the same timeout, abort and generation rules as notify_wait. What a root's one-way
     * drain needs: all the credits back, in one wait (runtime/rt_oneway.c). Optional (NULL). */
    hal_result (*notify_wait_count)(hal_notify *n, hal_stream *s, uint32_t at_least, uint32_t timeout_ms,
                                    const volatile uint32_t *abort_flag);
    /* Maps [ptr, ptr + bytes) of device memory this process reaches (its own or imported) for
     * writing now, so that first writes there do not fault one page at a time: what the runtime
     * does at init for the inbox pages its calls will write (host_mapped_mem backends). Contents
     * unchanged. HAL_E_PARAM outside device memory. Optional (NULL: nothing to map). */
    hal_result (*mem_prefault)(void *ptr, size_t bytes);
    /* event_sync without deadline, as far as it goes without waiting on anything but a poll: the
     * calling thread runs the recording stream's queued work up to e's latest record, taking over
     * from the worker at its next task boundary if that comes within a poll. It stops before a task
     * that could wait on the caller itself (a host or task function, a wait outside a program, an
     * event wait not yet met), and where a program's wait would sleep it leaves the program there;
     * the worker goes on with the rest. HAL_OK (or the record's error) once e completed, else
     * HAL_E_NOT_READY. What a runtime that runs ahead of the device does before it queues more:
     * on fewer cores than threads, the host runs its launches instead of competing with the
     * worker, and never blocks on a hold only it would release. Optional (NULL: nothing to help). */
    hal_result (*event_help)(hal_event *e);
    /* Enqueue: notify_wait with the check of a program's notify wait (hal_insn). Optional (NULL,
     * with flag_wait). */
    hal_result (*notify_wait_checked)(hal_notify *n, hal_stream *s, uint32_t timeout_ms,
                                      const volatile uint32_t *abort_flag, hal_task_fn check, void *arg);
    /* Enqueue: the wait of a hal_flag_wait (w stays valid until it ran). Optional (NULL). */
    hal_result (*flag_wait)(hal_stream *s, const hal_flag_wait *w);
    /* Enqueue: wakes the flag waits asleep on n, after the stores before it are visible; where
     * none sleeps, nothing is recorded (no write to a line the waiter polls). Same generation rule
     * as notify_record. Optional (NULL, with flag_wait). */
    hal_result (*notify_wake)(hal_notify *n, hal_stream *s);
    /* prog_launch_record, run at once on the calling thread where s is idle (nothing queued, no
     * executor, no error): HAL_OK with *queued false once the program ran to its end (done is
     * not recorded: nothing is left to wait for). Where a wait is not met within a short poll (a
     * late peer) or an instruction failed, what is left is queued with its record (*queued true):
     * the rest of the program from that wait, or only the record, carrying the failure.
     * HAL_E_NOT_READY: s is not idle, nothing ran (launch it). The program is not checked here:
     * it passed prog_check, and since then only its addresses, sizes and flag waits' targets
     * changed (a launch reuses its program call after call; checking it every time was a tenth of
     * a small call's host work). Optional (NULL: launch; set with prog_check). */
    hal_result (*prog_run_now)(hal_stream *s, const hal_insn *insns, uint32_t n, hal_event *done, bool *queued);
    /* What prog_launch checks of a program (every instruction's kind and operands), alone:
     * HAL_E_PARAM (or the code prog_launch would return) for a program prog_launch refuses. */
    hal_result (*prog_check)(const hal_insn *insns, uint32_t n);
    /* prog_launch (done NULL) or prog_launch_record (done set) of a program that passed prog_check
     * and has since changed only as prog_run_now allows (addresses, sizes, flag waits' targets): it
     * is not checked again (a queued launch that reuses its program was checked at every call, about
     * 175 instructions of an 8 B Send/Recv's 4200 on a rank). Optional (NULL: prog_launch and
     * prog_launch_record; set with prog_check). */
    hal_result (*prog_launch_checked)(hal_stream *s, const hal_insn *insns, uint32_t n, hal_event *done);
} hal_ops;

/* Version of hal_ops between libhccl and the emulator's libascendcl: bump on any change of the
 * table's layout or semantics. */
#define HAL_ABI_VERSION 18u /* 6: notify_pending; 7: notify_wait_count, mem_prefault; 8: prog_launch_record;
                             * 9: keep_rest in a program's notify wait; 10: event_help; 11: notify_count;
                             * 12: HAL_INSN_AHEAD; 13: prog_fans_out_copies; 14: flag_wait, notify_wake,
                             * notify_wait_checked; 15: the AHEAD mark's depth; 16: prog_run_now;
                             * 17: prog_check, prog_run_now without a check; 18: prog_launch_checked */

/* The backend chosen for this process: HCCL_HAL=auto|emu|ascend (default auto: emu when the loaded
 * libascendcl.so is the emulator, else ascend), logged once. libhccl only. */
const hal_ops *hal_get(void);
/* true when the libascendcl.so loaded is OpenHCCL's emulator (it exports aclExtGetEmuHal). */
bool hal_acl_is_emulator(void);
/* The emulator's table (hal/emu; its ACL front uses it directly). */
extern const hal_ops emu_hal_ops;

/* Human-readable name of a hal_result. */
const char *hal_result_name(hal_result rc);

#endif
