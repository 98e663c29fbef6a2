/* hal/ascend internals: hal_ops over CANN's public ACL runtime, bound with dlsym at init. */
#ifndef ASC_INTERNAL_H
#define ASC_INTERNAL_H

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>

#include "acl/acl.h"
#include "common/oh_log.h"
#include "hal/ascend/asc_syms.h"
#include "hal/hal.h"

/* One function pointer per bound call, typed from our CANN-compatible declarations. */
typedef struct asc_api {
#define ASC_FIELD(name, group) __typeof__(name) *name;
    ASC_SYMS(ASC_FIELD)
#undef ASC_FIELD
} asc_api;

extern asc_api asc_acl;
#define ACL(fn) (asc_acl.fn)

#define ASC_MAX_DEVICES 64
#define ASC_KEY_SLOTS 4096 /* notifies one device can publish at a time */
#define ASC_LANES 4        /* CANN notifies behind one HAL notify (asc_notify.c: counting emulation) */

/* The backend-private key directory of one opened device (asc_keydir.c): a small host shared-memory
 * file named by (pid, device id) through which IPC keys travel to the other processes of the server,
 * so that hal handles (fixed-size, no room for a 65-byte key) only carry a slot number. */
typedef struct asc_keyslot {
    _Atomic uint32_t gen; /* odd while being written; bumped on every reuse */
    char key[ASC_LANES][HAL_IPC_KEY_LEN]; /* one per lane; key[0][0] == 0: free */
    char pad[4];
} asc_keyslot;

typedef struct asc_keydir {
    uint32_t magic;
    uint32_t version;
    char mem_key[HAL_IPC_KEY_LEN]; /* the device's anchor allocation (mem_import) */
    char pad[3];
    asc_keyslot slot[ASC_KEY_SLOTS];
} asc_keydir;

struct hal_device {
    int32_t id;
    int refs;
    hal_device_handle handle;
    asc_keydir *dir;       /* this process's directory for the device (created on first export) */
    void *anchor;          /* exported allocation that makes the device importable */
    struct hal_stream *streams; /* every wrapper of this device (created and user streams) */
    struct hal_stream *retired; /* destroyed wrappers, kept for late readers until device close */
    aclrtStream host_rec;  /* notify_host_record's stream (asc_notify.c), created on first use */
};

struct hal_stream {
    struct hal_stream *next;
    hal_device *dev;
    aclrtStream acl;
    aclrtStream helper; /* private stream for copies resolved inside callbacks */
    aclrtNotify gate;   /* task_async: a passing fn records it (on helper), the stream waits for it */
    int owned;          /* created by stream_create (else the user's stream, wrapped) */
    void *stage;        /* device buffer of this stream's device for reductions with a remote operand */
    uint64_t stage_bytes;
    void **retired;     /* outgrown stage buffers: queued tasks may still use them until destroy */
    size_t nretired;
    pthread_t reporter; /* the thread serving aclrtLaunchCallback for this stream */
    sem_t subscribed;   /* posted once aclrtSubscribeReport returned */
    atomic_int stop;
    _Atomic int err;    /* sticky hal_result of a failed task fn, 0 = none */
    struct hal_stream *_Atomic upstream; /* last stream this one waited on (an event's recorder) */
    char msg[256];
};

struct hal_event {
    hal_device *dev;
    aclrtEvent acl;
    uint32_t flags;
    atomic_int recorded;
    struct hal_stream *_Atomic src; /* stream of the last record: its sticky error travels with it */
};

struct hal_notify {
    hal_device *dev;
    aclrtNotify lane[ASC_LANES];
    int nlanes;
    _Atomic uint32_t records, waits; /* enqueued so far: the next record/wait uses lane count % nlanes */
    int imported;
    int slot; /* key-directory slot once exported, else -1 */
    const volatile uint32_t *abort_flag; /* watched by asc_abort.c (the flag of its last aborting wait) */
    struct hal_stream *abort_stream; /* the stream of its last wait with that flag */
    atomic_int host_used; /* recorded on the host-record stream at least once (drained at destroy) */
    uint32_t abort_ticks; /* asc_abort.c: polls that released it since the flag was set */
};

extern const hal_ops asc_dev_ops, asc_stream_ops, asc_notify_ops;
extern pthread_mutex_t asc_lock; /* device table, stream lists, key directories */

/* asc_bind.c */
hal_result asc_bind(void);
const char *asc_bind_error(void);
const char *asc_ipc_missing(void); /* NULL when every IPC call is present */
hal_result asc_from_acl(aclError e);
const char *asc_errmsg(void);

/* asc_device.c */
hal_device *asc_dev(int32_t id); /* the table entry (never NULL for a valid id) */
hal_result asc_select(hal_device *dev); /* makes dev the calling thread's current device */
extern _Thread_local int asc_thread_fresh; /* set by threads of ours that never selected a device */
uint32_t asc_exec_timeout_ms(void);

/* asc_notify.c */
void asc_host_record_close(hal_device *dev); /* device_close: drains and destroys host_rec */
hal_result asc_host_record_lane(hal_notify *n, int lane); /* one record of one lane, from any thread */
void asc_host_record_drain(hal_device *dev);

/* asc_abort.c: the abort flag of notify_wait */
void asc_abort_watch(hal_notify *n, hal_stream *s, const volatile uint32_t *flag);
int asc_abort_forget_notify(hal_notify *n);
void asc_abort_forget_stream(hal_stream *s);

/* asc_alloc.c: extents of mem_alloc's allocations */
hal_result asc_alloc_add(int32_t dev, void *ptr, uint64_t size);
void asc_alloc_forget_device(int32_t dev);
void asc_alloc_del(void *ptr);
int asc_alloc_find(const void *ptr, uint64_t *bytes_after);

/* asc_keydir.c */
void asc_keydir_publish(hal_device *dev); /* best effort; errors surface at import */
hal_result asc_keydir_put(hal_device *dev, char keys[][HAL_IPC_KEY_LEN], int *slot, uint32_t *gen);
void asc_keydir_drop(hal_device *dev, int slot);
hal_result asc_keydir_get(const hal_device_handle *owner, int slot, uint32_t gen, char keys[][HAL_IPC_KEY_LEN]);
hal_result asc_keydir_mem_key(const hal_device_handle *owner, char *key);
void asc_keydir_close(hal_device *dev);

/* asc_reduce.c */
int asc_reduce_kind(hal_redop op, hal_dtype dt, int *kind, int *acl_type);
int asc_host_reduce_supported(hal_dtype dt); /* SDMA types are also host-reducible */
hal_result asc_host_reduce(void *dst, const void *a, const void *b, uint64_t count, hal_dtype dt, hal_redop op);

/* asc_stream.c / asc_task.c */
hal_result asc_stream_destroy(hal_stream *s);
hal_result asc_stream_wrap(hal_device *dev, aclrtStream acl, int owned, hal_stream **out);
hal_result asc_stream_fail(hal_stream *s, hal_result rc, const char *fmt, ...);
hal_result asc_dma_run_now(hal_stream *s, const hal_dma_desc *d);
hal_result asc_dma_enqueue(hal_stream *s, const hal_dma_desc *d);
hal_result asc_inherit_error(hal_stream *s, hal_stream *from);

#endif
