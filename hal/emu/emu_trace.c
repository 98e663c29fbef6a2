/* The trace recorder: per-thread buffers of fixed-size records, sessions, the hal_trace_api
 * table (aclExtGetTrace) and the HCCL_TRACE environment mode.
 *
 * Each recording thread owns a buffer (a list of chunks of records) linked into a process-wide
 * list; chunks come from a process-wide budget (HCCL_TRACE_MAX_EVENTS records, default 262144), so
 * memory never exceeds the cap; past it records are dropped and counted. When a session stops and
 * its file is written, every chunk is freed (and the buffers of threads that exited). A recording thread marks its buffer busy, then re-checks the active flag
 * (both with sequentially consistent fences); stopping clears the flag, then waits until no buffer
 * is busy: after that nothing writes and the buffers can be read and reset. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/oh_log.h"
#include "hal/emu/emu_internal.h"
#include "hal/emu/emu_sys.h"
#include "hal/emu/emu_trace.h"

#define CHUNK_RECS 1024u
#define DEFAULT_MAX_EVENTS 262144ull

typedef struct trace_chunk {
    struct trace_chunk *next;
    _Atomic uint32_t n; /* committed records */
    emu_trace_rec rec[CHUNK_RECS];
} trace_chunk;

typedef struct trace_buf {
    struct trace_buf *next;
    _Atomic uint32_t busy;
    _Atomic uint32_t dead; /* its thread exited: freed at the next reset */
    trace_chunk *head, *cur;
} trace_buf;

_Atomic uint32_t emu_trace_active;

static _Atomic(trace_buf *) g_bufs;    /* pushed at the head under g_bufs_mu; walked without it */
static pthread_mutex_t g_bufs_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t g_buf_key;        /* marks a thread's buffer dead when the thread exits */
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;
static _Atomic uint64_t g_chunks;     /* allocated so far */
static uint64_t g_chunk_cap;          /* set when the first session starts */
static _Atomic uint64_t g_dropped;
static _Atomic uint32_t g_next_op = 1;
static _Thread_local trace_buf *t_buf;
static _Thread_local emu_trace_tag t_tag;

static pthread_mutex_t g_ses_mu = PTHREAD_MUTEX_INITIALIZER;
static emu_trace_session g_ses;
static bool g_running, g_env_mode;
static uint32_t g_sessions;

/* --- recording ---------------------------------------------------------------------------- */

static void buf_thread_exit(void *b)
{
    atomic_store(&((trace_buf *)b)->dead, 1);
}

static void key_create(void)
{
    if (pthread_key_create(&g_buf_key, buf_thread_exit) != 0)
        OH_WARN("trace", "no thread-exit hook: buffers of exited threads are kept until exit");
}

static trace_buf *buf_get(void)
{
    if (t_buf)
        return t_buf;
    pthread_once(&g_key_once, key_create);
    trace_buf *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    pthread_setspecific(g_buf_key, b);
    pthread_mutex_lock(&g_bufs_mu);
    b->next = atomic_load(&g_bufs);
    atomic_store(&g_bufs, b);
    pthread_mutex_unlock(&g_bufs_mu);
    t_buf = b;
    return b;
}

/* The chunk to append to: the current one, or a new one within the cap. */
static trace_chunk *chunk_for_append(trace_buf *b)
{
    trace_chunk *c = b->cur;
    if (c && atomic_load_explicit(&c->n, memory_order_relaxed) < CHUNK_RECS)
        return c;
    if (atomic_fetch_add(&g_chunks, 1) >= g_chunk_cap) {
        atomic_fetch_sub(&g_chunks, 1);
        return NULL;
    }
    trace_chunk *n = malloc(sizeof *n);
    if (!n) {
        atomic_fetch_sub(&g_chunks, 1);
        return NULL;
    }
    n->next = NULL;
    atomic_store_explicit(&n->n, 0, memory_order_relaxed);
    if (c)
        c->next = n;
    else
        b->head = n;
    b->cur = n;
    return n;
}

/* A slot to fill, or NULL (session stopped, cap reached); then rec_commit(b). */
static emu_trace_rec *rec_begin(trace_buf **out)
{
    trace_buf *b = buf_get();
    if (!b)
        return NULL;
    atomic_store_explicit(&b->busy, 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
    if (!atomic_load_explicit(&emu_trace_active, memory_order_relaxed)) {
        atomic_store_explicit(&b->busy, 0, memory_order_release);
        return NULL;
    }
    trace_chunk *c = chunk_for_append(b);
    if (!c) {
        atomic_fetch_add_explicit(&g_dropped, 1, memory_order_relaxed);
        atomic_store_explicit(&b->busy, 0, memory_order_release);
        return NULL;
    }
    *out = b;
    emu_trace_rec *r = &c->rec[atomic_load_explicit(&c->n, memory_order_relaxed)];
    memset(r, 0, sizeof *r);
    return r;
}

static void rec_commit(trace_buf *b)
{
    atomic_fetch_add_explicit(&b->cur->n, 1, memory_order_release);
    atomic_store_explicit(&b->busy, 0, memory_order_release);
}

void emu_trace_tag_copy(emu_trace_tag *tag)
{
    *tag = t_tag;
}

static void task_payload(const emu_task *t, emu_trace_rec *r)
{
    r->u.task.dtype = r->u.task.redop = -1;
    switch (t->kind) {
    case EMU_T_DMA:
        r->u.task.ndesc = t->u.dma.n;
        for (uint32_t i = 0; i < t->u.dma.n; i++) {
            const hal_dma_desc *d = &t->u.dma.descs[i];
            if (d->kind == HAL_DMA_REDUCE) {
                r->u.task.bytes += d->count * hal_dtype_size(d->dtype);
                r->u.task.dtype = (int16_t)d->dtype;
                r->u.task.redop = (int16_t)d->op;
            } else {
                r->u.task.bytes += d->bytes;
            }
        }
        break;
    case EMU_T_MEMSET:
        r->u.task.bytes = t->u.set.bytes;
        break;
    case EMU_T_FN:
        r->u.task.aux = (uint64_t)(uintptr_t)t->u.fn.arg;
        break;
    case EMU_T_HOST:
        r->u.task.aux = (uint64_t)(uintptr_t)t->u.host.arg;
        break;
    case EMU_T_EVENT_RECORD:
    case EMU_T_EVENT_WAIT:
        r->u.task.aux = (uint64_t)(uintptr_t)t->u.ev.e;
        break;
    case EMU_T_NOTIFY_RECORD:
    case EMU_T_NOTIFY_WAIT:
    case EMU_T_FLAG_WAIT:
    case EMU_T_NOTIFY_WAKE:
        r->u.task.aux = emu_notify_id(t->u.nt.n);
        break;
    case EMU_T_PROG:
        r->u.task.aux = t->u.prog.n;
        break;
    }
}

void emu_trace_task(hal_stream *s, const emu_task *t, uint64_t t0_ns, hal_result sticky)
{
    uint64_t t1 = emu_now_ns();
    trace_buf *b;
    emu_trace_rec *r = rec_begin(&b);
    if (!r)
        return;
    r->kind = EMU_TR_TASK;
    r->task = (uint8_t)t->kind;
    r->device = (uint16_t)s->dev->id;
    r->stream = (uint64_t)(uintptr_t)s;
    r->is_default = s == s->dev->default_stream;
    r->skipped = sticky != HAL_OK && t->kind != EMU_T_EVENT_RECORD;
    r->t0 = t0_ns;
    r->t1 = t1;
    r->u.task.tag = t->trace_tag;
    task_payload(t, r);
    rec_commit(b);
}

static void copy_str(char *dst, size_t len, const char *src)
{
    snprintf(dst, len, "%s", src ? src : "");
}

static uint32_t trace_op_begin(const hal_trace_op *op, hal_stream *s)
{
    if (!op || !s)
        return 0;
    trace_buf *b;
    emu_trace_rec *r = rec_begin(&b);
    if (!r)
        return 0;
    uint32_t id = atomic_fetch_add(&g_next_op, 1);
    r->kind = EMU_TR_OP;
    r->device = (uint16_t)s->dev->id;
    r->stream = (uint64_t)(uintptr_t)s;
    r->is_default = s == s->dev->default_stream;
    r->t0 = r->t1 = emu_now_ns();
    r->u.op.id = id;
    r->u.op.rank = op->rank;
    r->u.op.nranks = op->nranks;
    r->u.op.root = op->root;
    r->u.op.count = op->count;
    r->u.op.bytes = op->bytes;
    r->u.op.seq = op->seq;
    copy_str(r->u.op.name, sizeof r->u.op.name, op->name);
    copy_str(r->u.op.algo, sizeof r->u.op.algo, op->algorithm);
    copy_str(r->u.op.dtype, sizeof r->u.op.dtype, op->dtype);
    copy_str(r->u.op.redop, sizeof r->u.op.redop, op->redop);
    copy_str(r->u.op.comm, sizeof r->u.op.comm, op->comm);
    rec_commit(b);
    t_tag = (emu_trace_tag){.op = id, .peer = -1};
    return id;
}

static void trace_step(uint32_t op, const char *kind, int32_t peer, uint32_t stream, uint32_t index)
{
    t_tag.op = op;
    t_tag.peer = peer;
    t_tag.stream = (uint16_t)stream;
    t_tag.index = (uint16_t)index;
    copy_str(t_tag.step, sizeof t_tag.step, kind);
}

static void trace_op_end(void)
{
    memset(&t_tag, 0, sizeof t_tag);
}

/* --- sessions ------------------------------------------------------------------------------ */

void emu_trace_for_each(void (*fn)(const emu_trace_rec *r, void *arg), void *arg)
{
    for (trace_buf *b = atomic_load(&g_bufs); b; b = b->next)
        for (trace_chunk *c = b->head; c; c = c->next) {
            uint32_t n = atomic_load_explicit(&c->n, memory_order_acquire);
            for (uint32_t i = 0; i < n; i++)
                fn(&c->rec[i], arg);
        }
}

static void count_rec(const emu_trace_rec *r, void *arg)
{
    (void)r;
    ++*(uint64_t *)arg;
}

/* After the flag is cleared: waits out recorders still inside rec_begin/rec_commit. */
static void quiesce(void)
{
    atomic_thread_fence(memory_order_seq_cst);
    for (trace_buf *b = atomic_load(&g_bufs); b; b = b->next)
        while (atomic_load_explicit(&b->busy, memory_order_acquire))
            sched_yield();
}

/* With recording stopped and quiesced: frees every chunk (memory goes back after each session)
 * and the buffers of threads that exited. Threads keep their buffer and take new chunks when a
 * session records again. */
static void reset_buffers(void)
{
    pthread_mutex_lock(&g_bufs_mu);
    trace_buf *prev = NULL, *b = atomic_load(&g_bufs);
    while (b) {
        trace_buf *next = b->next;
        for (trace_chunk *c = b->head, *cn; c; c = cn) {
            cn = c->next;
            free(c);
        }
        b->head = b->cur = NULL;
        if (atomic_load(&b->dead)) {
            if (prev)
                prev->next = next;
            else
                atomic_store(&g_bufs, next);
            free(b);
        } else {
            prev = b;
        }
        b = next;
    }
    atomic_store(&g_chunks, 0);
    atomic_store(&g_dropped, 0);
    pthread_mutex_unlock(&g_bufs_mu);
}

/* mkdir -p */
static hal_result make_dir(const char *dir)
{
    char p[sizeof g_ses.dir];
    snprintf(p, sizeof p, "%s", dir);
    for (char *q = p + 1; *q; q++)
        if (*q == '/') {
            *q = 0;
            if (mkdir(p, 0777) != 0 && errno != EEXIST)
                break;
            *q = '/';
        }
    if (mkdir(p, 0777) != 0 && errno != EEXIST) {
        OH_ERR("trace", "cannot create the trace folder %s: %s", dir, strerror(errno));
        return HAL_E_SYSCALL;
    }
    return HAL_OK;
}

static uint64_t chunk_cap(void)
{
    const char *v = getenv("HCCL_TRACE_MAX_EVENTS");
    char *end;
    unsigned long long n = v && *v ? strtoull(v, &end, 10) : DEFAULT_MAX_EVENTS;
    if (v && *v && (*end || n == 0)) {
        OH_WARN("trace", "HCCL_TRACE_MAX_EVENTS=%s is not a positive number: using %llu", v, DEFAULT_MAX_EVENTS);
        n = DEFAULT_MAX_EVENTS;
    }
    return (n + CHUNK_RECS - 1) / CHUNK_RECS;
}

static hal_result trace_start(const char *dir, uint64_t device_mask, uint32_t what)
{
    if (!dir || !*dir || strlen(dir) >= sizeof g_ses.dir)
        return HAL_E_PARAM;
    pthread_mutex_lock(&g_ses_mu);
    if (g_running) { /* another aclprofStart: more devices or switches for the same session */
        g_ses.device_mask |= device_mask;
        g_ses.what |= what;
        pthread_mutex_unlock(&g_ses_mu);
        return HAL_OK;
    }
    hal_result rc = make_dir(dir);
    if (rc == HAL_OK) {
        if (!g_chunk_cap)
            g_chunk_cap = chunk_cap();
        memset(&g_ses, 0, sizeof g_ses);
        snprintf(g_ses.dir, sizeof g_ses.dir, "%s", dir);
        g_ses.device_mask = device_mask;
        g_ses.what = what;
        g_ses.first_op = atomic_load(&g_next_op);
        g_ses.index = g_sessions++;
        g_running = true;
        atomic_store(&emu_trace_active, 1);
    }
    pthread_mutex_unlock(&g_ses_mu);
    return rc;
}

static hal_result trace_stop(char *path, size_t len)
{
    pthread_mutex_lock(&g_ses_mu);
    if (!g_running) {
        pthread_mutex_unlock(&g_ses_mu);
        return HAL_E_PARAM;
    }
    atomic_store(&emu_trace_active, 0);
    quiesce();
    g_ses.end_op = atomic_load(&g_next_op);
    g_ses.dropped = atomic_load(&g_dropped);
    if (g_ses.dropped)
        OH_WARN("trace", "the trace buffers were full (cap %llu events, HCCL_TRACE_MAX_EVENTS): %llu events dropped",
                (unsigned long long)(g_chunk_cap * CHUNK_RECS), (unsigned long long)g_ses.dropped);
    uint64_t nrec = 0;
    emu_trace_for_each(count_rec, &nrec);
    /* HCCL_TRACE reaches every process of a job, launchers included: no file for one that never
     * touched a device. */
    hal_result rc = g_env_mode && nrec == 0 ? HAL_E_NOT_READY : emu_trace_write(&g_ses, path, len);
    reset_buffers();
    g_running = false;
    g_env_mode = false;
    pthread_mutex_unlock(&g_ses_mu);
    return rc;
}

static int trace_env_mode(void)
{
    pthread_mutex_lock(&g_ses_mu);
    int on = g_env_mode;
    pthread_mutex_unlock(&g_ses_mu);
    return on;
}

static const hal_trace_api g_api = {
    .abi_version = HAL_TRACE_ABI_VERSION,
    .active = &emu_trace_active,
    .op_begin = trace_op_begin,
    .step = trace_step,
    .op_end = trace_op_end,
    .start = trace_start,
    .stop = trace_stop,
    .env_mode = trace_env_mode,
};

/* The one entry point libhccl and libmsprofiler use (docs/tracing.md, "For developers"). */
const hal_trace_api *aclExtGetTrace(uint32_t abiVersion);

const hal_trace_api *aclExtGetTrace(uint32_t abiVersion)
{
    return abiVersion == HAL_TRACE_ABI_VERSION ? &g_api : NULL;
}

/* --- HCCL_TRACE: from library load to aclFinalize or exit --------------------------------- */

void emu_trace_env_finish(void)
{
    if (!trace_env_mode())
        return;
    char path[4200];
    if (trace_stop(path, sizeof path) == HAL_OK)
        OH_INFO("trace", "HCCL_TRACE: wrote %s", path);
}

static void env_at_exit(void)
{
    emu_trace_env_finish();
}

__attribute__((constructor)) static void env_start(void)
{
    const char *dir = getenv("HCCL_TRACE");
    if (!dir || !*dir)
        return;
    if (trace_start(dir, UINT64_MAX, HAL_TRACE_TASKS | HAL_TRACE_HCCL) != HAL_OK) {
        OH_ERR("trace", "HCCL_TRACE=%s: cannot start the trace", dir);
        return;
    }
    pthread_mutex_lock(&g_ses_mu);
    g_env_mode = true;
    pthread_mutex_unlock(&g_ses_mu);
    atexit(env_at_exit);
}
