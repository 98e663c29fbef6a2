/* The emulator's objects and the functions its files share (hal/emu only). See docs/emulator.md,
 * "Emulator internals", for the picture: per device a memfd region at a fixed address (control
 * area + heap), a listener that hands the memfd to peers, stream workers, DMA engine threads. */
#ifndef EMU_INTERNAL_H
#define EMU_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hal/emu/emu_heap.h"
#include "hal/emu/emu_stream.h"
#include "hal/emu/emu_trace.h"
#include "hal/hal.h"

#define EMU_MAX_DEVICES 16
/* 20 TiB .. 28 TiB: above ASan's high shadow (ends near 16 TiB), below the range where Criterion's
 * BoxFort maps its arenas at random fixed addresses (32 TiB .. 96 TiB) and ASan's allocator (96 TiB),
 * and far below the kernel's mmap area (~127 TiB). */
#define EMU_REGION_BASE 0x140000000000ull /* 20 TiB */
#define EMU_REGION_SIZE (16ull << 30)      /* per device: control area + heap */
#define EMU_CTRL_SIZE (64ull << 20)        /* control area at the start of the region */
#define EMU_REGION_SLOTS 512u              /* 8 TiB; slots wrap after 32 servers (never co-mapped) */
#define EMU_MAX_NOTIFIES 65536u
#define EMU_NOTIFY_OFFSET 4096u /* notify counters start here in the control area */
#define EMU_MAGIC 0x4f48454d55000001ull /* "OHEMU" v1 */

/* --- configuration (emu_env.c): read once per process --- */
typedef struct emu_config {
    char ns[128];           /* HCCL_EMU_NAMESPACE */
    uint64_t server_key;    /* FNV-1a of ns */
    uint32_t server_index;  /* HCCL_EMU_SERVER_INDEX */
    uint32_t ndev;          /* HCCL_EMU_DEVICES */
    uint32_t dma_engines;   /* HCCL_EMU_DMA_ENGINES */
    uint64_t dma_split_bytes; /* HCCL_EMU_DMA_SPLIT_BYTES: batches this large are shared with the engines */
    uint64_t copy_nt_bytes; /* HCCL_EMU_COPY_NT_BYTES: copies this large stream around the caches; 0 = never */
    bool copy_nt_auto;      /* HCCL_EMU_COPY_NT_BYTES unset: such copies use the kernel measured faster */
    uint64_t exec_timeout_ms; /* HCCL_EXEC_TIMEOUT (s) in ms, 0 = never */
    uint64_t spin_ns;       /* HCCL_EMU_SPIN_US: waits poll with cpu_relax this long, then yield */
    bool spin_auto;         /* HCCL_EMU_SPIN_US unset: notify waits choose (emu_wait_poll_init) */
    uint32_t ncpus;         /* online CPUs */
    uint64_t yield_ns;      /* HCCL_EMU_YIELD_US: then poll with sched_yield this long, then sleep */
    uint64_t sync_yield_ns; /* HCCL_EMU_SYNC_YIELD_US: a synchronizing host's window past the CPUs */
    uint64_t worker_poll_ns; /* HCCL_EMU_WORKER_POLL_US: an idle worker polls for work this long */
    bool worker_batch;      /* HCCL_EMU_WORKER_BATCH (default 1): stream workers run SCHED_BATCH (emu_stream.c) */
    uint32_t connect_timeout_s; /* HCCL_CONNECT_TIMEOUT: bounds the memory hand-over of mem_import */
} emu_config;
/* The configuration, read on first use. Waits and DMAs ask for it on every call: once read, an
 * inline load instead of a call into pthread_once. */
extern _Atomic(const emu_config *) emu_cfg_read;
const emu_config *emu_cfg_first(void);
static inline const emu_config *emu_cfg(void)
{
    const emu_config *c = atomic_load_explicit(&emu_cfg_read, memory_order_acquire);
    return c ? c : emu_cfg_first();
}
/* Fixed address of device `id`'s region on this process's server. */
void *emu_region_base(uint32_t server_index, uint32_t id);

/* --- control area header, at the region base (peers read it after import) --- */
/* One notify counter. `word` = generation << 32 | count, updated only by CAS, so a record or a
 * wait through a handle of an earlier generation (the slot was destroyed and handed out again)
 * can never touch the new owner's count. Freeing a slot bumps the generation and zeroes the count
 * in one store. Waiters sleep on the count half (a futex is 32 bits wide). */
typedef struct emu_notify_slot {
    _Atomic uint64_t word;
    _Atomic uint32_t waiters; /* > 0: a record must FUTEX_WAKE; its wake counts the woken out */
    uint32_t pad;
} emu_notify_slot;

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "emu_notify_slot: the futex sleeps on the low (count) half of `word`: little-endian only"
#endif
#define EMU_NOTIFY_GEN(w) ((uint32_t)((w) >> 32))
#define EMU_NOTIFY_COUNT(w) ((uint32_t)(w))
static inline _Atomic uint32_t *emu_notify_count_word(emu_notify_slot *s)
{
    return (_Atomic uint32_t *)(void *)&s->word; /* the low half on little-endian */
}

/* One IPC export (emu_ipc.c): a table of them follows the notify slots in the control area. */
#define EMU_IPC_OFFSET (2u << 20)
#define EMU_IPC_ENTRIES 1024u
#define EMU_IPC_MAX_PIDS 64u
typedef struct emu_ipc_entry {
    _Atomic uint32_t state;  /* free / being written / live */
    uint32_t gen;            /* bumped at each export in this slot: keys of closed exports go stale */
    uint32_t kind;           /* 'm' memory, 'n' notify */
    uint32_t flags;          /* hal_ipc_flags */
    uint64_t offset;         /* memory: from the region base; notify: generation << 32 | index */
    uint64_t size;           /* memory: bytes exported */
    _Atomic uint32_t npids;  /* whitelist length, published after the pids */
    int32_t pids[EMU_IPC_MAX_PIDS];
} emu_ipc_entry;

typedef struct emu_ctrl {
    uint64_t magic;
    uint32_t owner_pid;
    uint32_t device_id;
    uint64_t heap_offset; /* heap = base + heap_offset, heap_size bytes */
    uint64_t heap_size;
} emu_ctrl;

static inline emu_notify_slot *emu_notify_slots(void *base)
{
    return (emu_notify_slot *)((char *)base + EMU_NOTIFY_OFFSET);
}

/* --- regions (emu_region.c): every device region mapped in this process --- */
typedef struct emu_region {
    void *base;
    uint64_t size;
    int fd;
    int refs;            /* owner: 1; imports: one per importing device */
    bool owned;          /* opened here (heap allocator valid) */
    hal_device_handle handle;
    struct hal_device *dev; /* owned: the device */
    _Atomic uint64_t vmm_seen; /* import: generation of the owner's VMM table mirrored here (emu_vmm_share.c) */
    struct emu_vmm_mirror *vmm_mirror; /* import: the owner's mappings applied in this process */
} emu_region;

/* Maps a new region for device `id` owned by this process (memfd + MAP_FIXED_NOREPLACE). */
hal_result emu_region_create(uint32_t id, emu_region **out);
/* Unmaps and forgets a region (owner close, or last import reference). */
void emu_region_destroy(emu_region *r);
/* Maps a peer's region from its memfd (fd ownership moves in), or adds a reference. */
hal_result emu_region_import(const hal_device_handle *peer, int fd, uint64_t size, emu_region **out);
/* Drops one import reference. */
void emu_region_release(emu_region *r);
/* Region already mapped for device `id` of this server, or NULL. Caller holds emu_regions_lock. */
emu_region *emu_region_find_locked(uint32_t id);
void emu_regions_lock(void);
void emu_regions_unlock(void);
/* Lock-free reading of the region table: between begin and end, emu_region_peek's result stays
 * mapped and allocated (writers wait for readers before they unmap). Keep it to a few loads. */
void emu_regions_read_begin(void);
void emu_regions_read_end(void);
/* A writer, once a region left the table: returns when no reader can still hold it. */
void emu_regions_wait_readers(void);
/* Devices of this server this process has mapped (its own and imported ones). */
uint32_t emu_regions_mapped(void);
/* Does every device this process works with have a CPU of its own (mapped regions <= online CPUs)?
 * Then a peer is likely running right now: notify waits spin. */
bool emu_devices_fit_cpus(void);
emu_region *emu_region_peek(uint32_t id);
/* Which device id of this process's server owns the region that would hold ptr (UINT32_MAX: none). */
uint32_t emu_region_id_of(const void *ptr);

/* --- sharing (emu_share.c) --- */
typedef struct emu_listener {
    int fd;
    pthread_t thread;
    atomic_bool stop;
    bool running;
    const struct emu_region *region;
} emu_listener;
/* Claims device id on this server (abstract socket bind): HAL_E_INVALID_DEVICE if another live
 * process owns it. Then emu_listener_run starts the thread that hands the region's fd to peers. */
hal_result emu_listener_claim(emu_listener *l, uint32_t id);
hal_result emu_listener_run(emu_listener *l, const emu_region *r);
void emu_listener_stop(emu_listener *l);
/* Connects to the owner of `peer` and receives its memfd and region size. */
hal_result emu_share_fetch(const hal_device_handle *peer, int *fd, uint64_t *size, uint32_t *pid);

/* --- DMA engines (emu_dma.c) --- */
typedef struct emu_dma_job emu_dma_job;
typedef struct emu_dma {
    pthread_mutex_t mu;
    pthread_cond_t cv_work; /* engines wait for pieces */
    pthread_cond_t cv_done; /* stream workers wait for their job */
    emu_dma_job *head, *tail;
    bool stop;
    uint32_t nthreads;
    pthread_t *threads;
} emu_dma;
hal_result emu_dma_start(emu_dma *d, uint32_t engines);
void emu_dma_stop(emu_dma *d);
/* Runs a batch on the engines (plus the calling worker); error message into msg. Each address is
 * resolved with what its device's owner changed in its VMM table mapped first (emu_vmm_sync_at). */
hal_result emu_dma_run(emu_dma *d, const hal_dma_desc *descs, uint32_t n, char *msg, size_t len);
/* Runs the longest run (2 or more) of batch[0..k) that copies one set of sources: batch j has
 * n descriptors, its descriptor i a COPY of the same source and size as batch 0's (each batch a
 * DMA instruction of a program: a mesh AllGather's own block into its output and then into each
 * peer's), no destination overlapping a source or another destination, together at least
 * HAL_FANOUT_MIN_BYTES. Those batches run as one whose pieces read each source once for all their
 * destinations, which is the batches in order. Returns how many ran (their result in *rc), 0 if
 * none (nothing ran). Addresses are resolved as by emu_dma_run. */
uint32_t emu_dma_run_fanout(emu_dma *d, const hal_dma_desc *const *batch, uint32_t k, uint32_t n, hal_result *rc,
                            char *msg, size_t len);
/* Whether a batch of n descriptors is large enough to start a fan-out (a cheap first check). */
bool emu_dma_fanout_worth(const hal_dma_desc *descs, uint32_t n);
uint64_t emu_dma_test_fanouts(void); /* fan-outs emu_dma_run_fanout ran, since the process started */
uint64_t emu_dma_test_fanouts_streamed(void); /* those of them that streamed a piece (non-temporal) */
hal_result emu_dma_memset(emu_dma *d, void *dst, int value, size_t bytes, char *msg, size_t len);

/* --- the device --- */
struct hal_device {
    uint32_t id;
    uint64_t gen;             /* open generation (per-thread current device checks) */
    int refs;                 /* opens in this process (under the device table lock) */
    emu_region *region;
    emu_heap heap;
    emu_listener listener;
    emu_dma dma;
    atomic_bool closing;      /* set at last close: blocked waits give up */
    pthread_mutex_t mu;       /* guards the object lists below */
    struct hal_stream *streams;
    struct hal_event *events;
    struct hal_notify *notifies;
    struct hal_stream *default_stream;
    uint8_t *notify_bitmap;   /* EMU_MAX_NOTIFIES bits, owner side */
    emu_region *imports[EMU_MAX_DEVICES]; /* mem_import references held by this device */
};
hal_device_handle emu_device_handle(const hal_device *dev);
/* 1 if dev is a live device of this process. */
bool emu_device_live(const hal_device *dev);

/* --- task pool (emu_task_pool.c) --- */
/* Tasks a new stream starts with in its pool, as a device's submission queue exists before the
 * first launch: a loop of enqueues running ahead (a launch is a program and an event record; the
 * runtime keeps up to 128 launches in flight) takes them instead of allocating, and faulting in
 * fresh heap pages, on the hot path: on a VM a page fault costs ~10 us, and the first 8 B
 * AllReduce loop of a process ran 2-3x slower than the next (docs/perf-history.md). */
#define EMU_STREAM_WARM_TASKS 256u
/* Drops what a task references (events, notifies) once it ran or was discarded. */
void emu_task_release_refs(emu_task *t);
/* Puts a task that ran into s's pool (s->mu held; refs already released). */
void emu_task_recycle_locked(hal_stream *s, emu_task *t);
/* Refills the calling thread's spare task from s's pool (s->mu held). */
void emu_task_refill_locked(hal_stream *s);
/* Tasks emu_task_new had to allocate (no spare at hand), process-wide: tests. */
uint64_t emu_task_enqueue_allocs(void);
/* Puts up to n new tasks, their memory written, into s's pool (s->mu held). */
void emu_task_pool_fill_locked(hal_stream *s, uint32_t n);
/* Frees s's pool (stream teardown). */
void emu_task_pool_drain(hal_stream *s);

/* --- task bodies run by the worker (emu_tasks.c, emu_event.c, emu_notify.c) --- */
/* false: t is a program a helping host thread (help) suspended at a wait; it stays queued. */
bool emu_task_run(hal_stream *s, emu_task *t, hal_result sticky, bool help);
/* Releases refs and frees the task's memory (a task that will not run). */
void emu_task_free(emu_task *t);
/* Checks a DMA descriptor before its addresses are known (kind, dtype, op); i names it in the log. */
hal_result emu_dma_check(const hal_dma_desc *d, uint32_t i);
void emu_event_run_record(hal_stream *s, emu_task *t, hal_result sticky);
/* Completes record seq of e (a record task, or the record at the end of a program task). */
void emu_event_complete(hal_stream *s, struct hal_event *e, uint64_t seq, hal_result sticky);
/* Enqueues task t (kind and operands set) as the next record of e, numbering it in *seq_slot (a
 * field of t) and taking the task's reference of e; frees t on failure (emu_event.c). */
hal_result emu_event_push_record(struct hal_event *e, hal_stream *s, emu_task *t, uint64_t *seq_slot);
/* The stream's sticky error now (under its lock). */
hal_result emu_stream_err(hal_stream *s);
/* Runs wait task t (sticky: the stream's error before it; a failed stream skips the wait) and
 * completes the record that rode on it, carrying the stream's error after the wait. */
void emu_event_run_wait(hal_stream *s, emu_task *t, hal_result sticky);
/* An event wait task that would not wait: its record has completed. */
bool emu_event_wait_met(const emu_task *t);
/* The record event wait task t waits for, its event kept alive past the task (s->mu held: t is
 * queued; emu_event_put lets it go): a thread waits for it or helps towards it without s->mu. */
emu_rec emu_event_hold(const emu_task *t);
/* Waits until record r completed or dev closes. */
void emu_event_await(emu_rec r, hal_device *dev);
/* Whether record r has completed. */
bool emu_event_reached(emu_rec r);
void emu_event_put(struct hal_event *e);
void emu_notify_run(hal_stream *s, emu_task *t);
/* The same, without a task (stream programs): wait (timeout_ms 0 = no limit here; callers pass the
 * resolved default) and record; a failure fails stream s and returns false. */
bool emu_notify_do_wait(hal_stream *s, hal_notify *n, uint32_t timeout_ms, const volatile uint32_t *abort_flag,
                        const emu_take *take);
/* How a helping host thread's wait ended (emu_stream_help_until). */
typedef enum emu_wait_end { EMU_WAIT_MET, EMU_WAIT_FAILED, EMU_WAIT_LATER } emu_wait_end;
/* How long a helping host thread polls, for the worker to hand the stream over and in a program's
 * wait for a peer: it is not the executor, and a peer that is late is the worker's to wait for. */
#define EMU_HELP_POLL_NS 20000ull
/* How long a program run at once on the calling thread (emu_prog_run_now) polls in a wait for a
 * peer: where every rank has a CPU the peers run beside it, so the wait is a call's time or the
 * peer is late; with more ranks than CPUs the poll yields the CPU (emu_wait_poll_init), so a peer
 * that has yet to run gets it. Either way the calling thread is not the executor to sleep. */
#define EMU_RUN_NOW_POLL_NS 2000ull
/* emu_notify_do_wait's poll, at most poll_ns: EMU_WAIT_LATER (nothing taken) where that wait would
 * poll on or sleep. */
emu_wait_end emu_notify_help_wait(hal_stream *s, hal_notify *n, const volatile uint32_t *abort_flag,
                                  const emu_take *take, uint64_t poll_ns);
/* Takes one signal the handle keeps (hal_insn keep_rest), if it has one: what a plain wait takes
 * first, before it reads the shared count. */
bool emu_notify_take_kept(hal_notify *n);
/* How a program task's run ended. */
typedef enum emu_prog_end { EMU_PROG_DONE, EMU_PROG_FAILED, EMU_PROG_SUSPENDED } emu_prog_end;
/* Runs program task t's instructions in order from t->u.prog.pc; the first failure fails s and ends
 * it (emu_prog.c). poll_ns 0: the stream's executor, whose waits sleep; else a host thread helping
 * (emu_stream_help_until, EMU_HELP_POLL_NS) or running it at once (EMU_RUN_NOW_POLL_NS): a wait not
 * met within that poll suspends the program there instead of sleeping, and the next run resumes at
 * that wait. */
emu_prog_end emu_prog_run(hal_stream *s, emu_task *t, uint64_t poll_ns);
bool emu_notify_do_record(hal_stream *s, const hal_notify *n);
void emu_notify_put(struct hal_notify *n);
/* A record only if a flag wait sleeps on n (hal_ops.notify_wake), after a full fence (fence false:
 * the caller fenced since its last store, a wake right before this one): the flag stored before
 * it, then n's sleepers read; false when it failed s. */
bool emu_notify_do_wake(hal_stream *s, const hal_notify *n, bool fence);
/* The slot and generation of n, for the flag waits that sleep on it (emu_flag.c). */
emu_notify_slot *emu_notify_slot_of(const struct hal_notify *n, uint32_t *gen);
/* The poll of a wait for a peer device, at most budget ns: spin (HCCL_EMU_SPIN_US, or chosen:
 * docs/emulator.md, "Waits"), then yield (emu_wait_yield_ns). */
struct emu_poll;
void emu_wait_poll_init(struct emu_poll *p, uint64_t budget);
/* How long the calling thread's waits poll with sched_yield before they sleep: HCCL_EMU_YIELD_US,
 * or, in a host thread blocked in a synchronize (emu_stream_run_until) with more devices mapped
 * than CPUs, at least HCCL_EMU_SYNC_YIELD_US (docs/emulator.md, "Waits"). */
uint64_t emu_wait_yield_ns(void);
/* A notify wait's futex slice, and the wake bit every plain wait sleeps with. */
#define EMU_NOTIFY_SLICE_NS 200000000ull
#define EMU_WAKE_ANY (1u << 31)
/* Why a sleeping wait must end unmet, if it must: its abort flag is up, its device is closing, or
 * its deadline (0: none) passed; emu_wait_fail fails s saying so (what: the wait, start: when it
 * began). */
typedef enum emu_wait_stop { EMU_STOP_NONE, EMU_STOP_ABORTED, EMU_STOP_CLOSING, EMU_STOP_TIMEOUT } emu_wait_stop;
emu_wait_stop emu_wait_stopped(hal_stream *s, const volatile uint32_t *abort_flag, uint64_t deadline);
void emu_wait_fail(hal_stream *s, emu_wait_stop why, const char *what, uint64_t start);
/* A wait's check (hal_insn, hal_flag_wait): true if none or it passed; else s failed with its message. */
bool emu_wait_check_ok(hal_stream *s, hal_task_fn check, void *arg);
/* How long the next futex sleep of a wait with this deadline (0: none) may last. */
uint64_t emu_wait_slice_ns(uint64_t deadline);
/* A flag wait (hal_flag_wait) on stream s; poll_ns: a host thread's poll (emu_prog_run), 0 none. */
emu_wait_end emu_flag_do_wait(hal_stream *s, const hal_flag_wait *w, uint64_t poll_ns);

/* Freeing leftovers at device close. */
void emu_events_free_all(hal_device *dev);
void emu_notifies_free_all(hal_device *dev);

/* --- the op table pieces --- */
hal_result emu_device_count(uint32_t *count);
hal_result emu_device_open(int32_t id, hal_device **dev);
hal_result emu_device_close(hal_device *dev);
hal_result emu_device_info(hal_device *dev, hal_device_info *info);
hal_result emu_device_sync(hal_device *dev, int32_t timeout_ms);
hal_link_class emu_link_class(hal_device *dev, const hal_device_handle *peer);
hal_result emu_current_device(hal_device **dev);
hal_result emu_set_current_device(hal_device *dev);

hal_result emu_mem_alloc(hal_device *dev, size_t bytes, void **ptr);
hal_result emu_mem_free(hal_device *dev, void *ptr);
hal_result emu_mem_lookup(const void *ptr, hal_device_handle *owner, uint64_t *bytes_after);
hal_result emu_mem_prefault(void *ptr, size_t bytes);
hal_result emu_mem_import(hal_device *dev, const hal_device_handle *peer);
/* Free listeners (emu_memfree.c). emu_mem_freeing: tells every listener that [base, base + size)
 * is about to go away; call it with no emulator lock held, before the memory changes. */
hal_result emu_mem_free_listen(hal_mem_free_fn fn, void *arg, uint64_t *id);
hal_result emu_mem_free_unlisten(uint64_t id);
void emu_mem_freeing(void *base, size_t size);

size_t emu_vmm_granularity(hal_device *dev);
hal_result emu_vmm_reserve(hal_device *dev, size_t size, void **va);
hal_result emu_vmm_release(hal_device *dev, void *va);
hal_result emu_vmm_phys_alloc(hal_device *dev, size_t size, hal_phys_mem **pm);
hal_result emu_vmm_phys_free(hal_phys_mem *pm);
hal_result emu_vmm_map(void *va, size_t size, size_t offset, hal_phys_mem *pm);
hal_result emu_vmm_unmap(void *va);
/* Drops the VMM bookkeeping of a device being closed (its memory goes with the region). */
void emu_vmm_forget_device(hal_device *dev);
/* VMM mappings seen by other processes (emu_vmm_share.c): the owner lists each mapping
 * {va, size, memfd offset} in its control area; a process that imported the device applies the
 * list to its own view of the region before a DMA touches it, so peers' copies into a mapped
 * range land in the physical chunk, as in the owner. */
void emu_vmm_share_add(const emu_region *r, const void *va, size_t size, uint64_t file_off);
void emu_vmm_share_remove(const emu_region *r, const void *va);
/* Before a DMA touches p: if p lies in an imported device's region whose table moved, mirror it. */
void emu_vmm_sync_at(const void *p);
/* Device slot `id` was mapped, replaced or dropped (regions lock held): its table is new to us. */
void emu_vmm_slot_changed(uint32_t id);
/* Frees an import's mirror bookkeeping (its mappings go with the region's munmap). */
void emu_vmm_mirror_free(emu_region *r);

hal_result emu_stream_create(hal_device *dev, hal_stream **s);
hal_result emu_stream_destroy(hal_stream *s);
hal_result emu_stream_sync(hal_stream *s, int32_t timeout_ms);
hal_result emu_stream_query(hal_stream *s);
const char *emu_stream_error_msg(hal_stream *s);
void emu_stream_clear_error(hal_stream *s);
hal_device *emu_stream_device(hal_stream *s);
hal_result emu_stream_from_native(void *native, hal_stream **s);

hal_result emu_dma_batch(hal_stream *s, const hal_dma_desc *descs, uint32_t n);
hal_result emu_memset_async(hal_stream *s, void *dst, int value, size_t bytes);
hal_result emu_task_async(hal_stream *s, hal_task_fn fn, void *arg);
hal_result emu_host_func_async(hal_stream *s, hal_host_fn fn, void *arg);
hal_result emu_prog_launch(hal_stream *s, const hal_insn *insns, uint32_t n);
hal_result emu_prog_launch_record(hal_stream *s, const hal_insn *insns, uint32_t n, struct hal_event *done);
hal_result emu_prog_launch_checked(hal_stream *s, const hal_insn *insns, uint32_t n, struct hal_event *done);
hal_result emu_prog_run_now(hal_stream *s, const hal_insn *insns, uint32_t n, struct hal_event *done, bool *queued);
hal_result emu_prog_check(const hal_insn *insns, uint32_t n);

hal_result emu_event_create(hal_device *dev, uint32_t flags, struct hal_event **e);
hal_result emu_event_destroy(struct hal_event *e);
hal_result emu_event_record(struct hal_event *e, hal_stream *s);
hal_result emu_event_reset(struct hal_event *e, hal_stream *s);
hal_result emu_stream_wait_event(hal_stream *s, struct hal_event *e);
hal_result emu_event_sync(struct hal_event *e, int32_t timeout_ms);
hal_result emu_event_query(struct hal_event *e);
hal_result emu_event_help(struct hal_event *e);
int emu_event_recorded(struct hal_event *e);
hal_result emu_event_elapsed_ms(struct hal_event *start, struct hal_event *end, float *ms);

hal_result emu_notify_create(hal_device *dev, struct hal_notify **n);
hal_result emu_notify_destroy(struct hal_notify *n);
hal_result emu_notify_export(struct hal_notify *n, hal_notify_handle *h);
/* n got an IPC key (emu_ipc_notify_export): its destroy must close the key (emu_ipc_forget_notify). */
void emu_notify_mark_ipc(struct hal_notify *n);
hal_result emu_notify_import(hal_device *dev, const hal_notify_handle *h, struct hal_notify **n);
uint32_t emu_notify_id(struct hal_notify *n);
hal_result emu_notify_record(struct hal_notify *n, hal_stream *s);
hal_result emu_notify_wait(struct hal_notify *n, hal_stream *s, uint32_t timeout_ms,
                           const volatile uint32_t *abort_flag);
hal_result emu_notify_wait_reset(struct hal_notify *n, hal_stream *s, uint32_t timeout_ms);
hal_result emu_notify_wait_count(struct hal_notify *n, hal_stream *s, uint32_t at_least, uint32_t timeout_ms,
                                 const volatile uint32_t *abort_flag);
hal_result emu_notify_host_record(struct hal_notify *n);
uint32_t emu_notify_pending(struct hal_notify *n);
uint32_t emu_notify_count(struct hal_notify *n);
hal_result emu_flag_wait(hal_stream *s, const hal_flag_wait *w);
hal_result emu_notify_wait_checked(struct hal_notify *n, hal_stream *s, uint32_t timeout_ms,
                                   const volatile uint32_t *abort_flag, hal_task_fn check, void *arg);
hal_result emu_notify_wake(struct hal_notify *n, hal_stream *s);
/* For tests: records so far that made a futex wake call; the waits a notify's slot counts as asleep. */
uint64_t emu_notify_test_wake_calls(void);
/* Program prefixes run ahead so far in this process (emu_prog.c): for tests. */
uint64_t emu_prog_test_ahead_runs(void);
/* Programs prog_run_now ran to their end on the calling thread (emu_prog.c): for tests. */
uint64_t emu_prog_test_runs_now(void);
/* Event records completed at once on an idle stream (emu_event.c, record_now): for tests. */
uint64_t emu_event_test_records_now(void);
/* For tests: numbers two records of e, completes the older under the lock carrying err (as from
 * the failed stream s), then raises rec_done to the newer as a completion without the lock does
 * that read e's error before that failure was written (emu_event.c, emu_event_err). */
void emu_event_test_fast_past_failed(struct hal_event *e, hal_stream *s, hal_result err);
/* Waits a worker began for an event wait's record without the stream's role (emu_stream.c). */
uint64_t emu_stream_test_asides(void);
/* Tests only: kicks that found their stream awaiting (emu_stream_kick.c). */
uint64_t emu_stream_test_kicks(void);
/* Programs checked so far (emu_prog_check, as prog_check and in every prog_launch): for tests. */
uint64_t emu_prog_test_checks(void);
uint32_t emu_notify_test_waiters(const struct hal_notify *n);

hal_result emu_ipc_mem_export(hal_device *dev, void *ptr, size_t size, uint32_t flags, char *key);
hal_result emu_ipc_notify_export(struct hal_notify *n, uint32_t flags, char *key);
hal_result emu_ipc_set_pids(const char *key, const int32_t *pids, size_t n);
hal_result emu_ipc_mem_import(hal_device *dev, const char *key, void **ptr);
/* Bytes exported under a memory key (the ACL front's HCCL_EMU_ACL_STRICT_IPC, acl_strict.c). */
hal_result emu_ipc_mem_size(hal_device *dev, const char *key, uint64_t *size);
hal_result emu_ipc_notify_import(hal_device *dev, const char *key, struct hal_notify **n);
hal_result emu_ipc_close(const char *key);
/* Ends every export of a notify its owner destroys (offset = generation << 32 | index). */
void emu_ipc_forget_notify(void *region_base, uint64_t notify_offset);

#endif
