/* DMA engines: per device a few threads that execute pieces of DMA batches. A batch is cut into
 * pieces (one per descriptor, large descriptors split into chunks); the stream worker posts the
 * job, runs pieces itself too, and returns when all are done. Small batches run inline. Batches in
 * a row that copy one source run as one whose pieces write every destination (fan-outs, below). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/oh_log.h"
#include "hal/emu/emu_copy.h"
#include "hal/emu/emu_copy_pick.h"
#include "hal/emu/emu_internal.h"
#include "hal/emu/emu_reduce.h"
#include "hal/emu/emu_sys.h"

#define DMA_MIN_CHUNK (512u << 10)
#define DMA_STACK_PIECES 16u /* batches up to this many descriptors resolve on the stack */

typedef enum { P_COPY, P_MOVE, P_REDUCE, P_SET } piece_kind;

typedef struct dma_piece {
    piece_kind kind;
    char *dst;
    const char *src;
    const char *src2; /* reduce: dst = src op src2 when set */
    size_t n; /* bytes (copy, move, set) or elements (reduce) */
    hal_dtype dt;
    hal_redop op;
    int value;
    bool nt; /* copy: non-temporal stores (the whole descriptor is larger than the caches) */
    uint32_t desc; /* descriptor index, for messages */
    uint32_t nfan; /* copy: > 1 when the same bytes go to fan[0..nfan), fan[0] == dst (emu_dma_run_fanout) */
    char *fan[EMU_COPY_FANOUT_MAX];
} dma_piece;

struct emu_dma_job {
    dma_piece *p;
    uint32_t n, next, remaining;
    hal_result rc;
    char msg[EMU_MSG_LEN];
    emu_dma_job *qnext;
};

static hal_result piece_run(const dma_piece *p, char *msg, size_t len)
{
    switch (p->kind) {
    case P_COPY:
        if (p->nfan > 1)
            emu_copy_fanout(p->fan, p->nfan, p->src, p->n, p->nt);
        else if (p->nt)
            emu_copy_nt(p->dst, p->src, p->n);
        else
            memcpy(p->dst, p->src, p->n);
        return HAL_OK;
    case P_MOVE:
        memmove(p->dst, p->src, p->n);
        return HAL_OK;
    case P_SET:
        memset(p->dst, p->value, p->n);
        return HAL_OK;
    case P_REDUCE: {
        hal_result rc = p->src2 ? emu_reduce3(p->dst, p->src, p->src2, p->n, p->dt, p->op)
                                : emu_reduce(p->dst, p->src, p->n, p->dt, p->op);
        if (rc != HAL_OK)
            snprintf(msg, len, "DMA reduce (descriptor %u, %zu x %s %s, dst %p, src %p) failed: %s", p->desc,
                     p->n, hal_dtype_name(p->dt), hal_redop_name(p->op), (void *)p->dst,
                     (const void *)p->src, hal_result_name(rc));
        return rc;
    }
    }
    return HAL_E_INTERNAL;
}

/* Takes the next piece of the queue head under d->mu; NULL if none. */
static dma_piece *take_locked(emu_dma *d, emu_dma_job **job)
{
    emu_dma_job *j = d->head;
    if (!j)
        return NULL;
    dma_piece *p = &j->p[j->next++];
    if (j->next == j->n) { /* fully handed out: leave the queue */
        d->head = j->qnext;
        if (!d->head)
            d->tail = NULL;
    }
    *job = j;
    return p;
}

static void finish_locked(emu_dma *d, emu_dma_job *j, hal_result rc, const char *msg)
{
    if (rc != HAL_OK && j->rc == HAL_OK) {
        j->rc = rc;
        snprintf(j->msg, sizeof j->msg, "%s", msg);
    }
    if (--j->remaining == 0)
        pthread_cond_broadcast(&d->cv_done);
}

static void *engine_main(void *arg)
{
    emu_dma *d = arg;
    char msg[EMU_MSG_LEN];
    pthread_mutex_lock(&d->mu);
    for (;;) {
        emu_dma_job *j;
        dma_piece *p = take_locked(d, &j);
        if (!p) {
            if (d->stop)
                break;
            pthread_cond_wait(&d->cv_work, &d->mu);
            continue;
        }
        pthread_mutex_unlock(&d->mu);
        msg[0] = 0;
        hal_result rc = piece_run(p, msg, sizeof msg);
        pthread_mutex_lock(&d->mu);
        finish_locked(d, j, rc, msg);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

hal_result emu_dma_start(emu_dma *d, uint32_t engines)
{
    memset(d, 0, sizeof *d);
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv_work, NULL);
    pthread_cond_init(&d->cv_done, NULL);
    d->threads = calloc(engines ? engines : 1, sizeof *d->threads);
    if (!d->threads)
        return HAL_E_NOMEM;
    for (uint32_t i = 0; i < engines; i++) {
        if (pthread_create(&d->threads[i], NULL, engine_main, d) != 0) {
            emu_dma_stop(d);
            return HAL_E_SYSCALL;
        }
        d->nthreads++;
    }
    return HAL_OK;
}

void emu_dma_stop(emu_dma *d)
{
    pthread_mutex_lock(&d->mu);
    d->stop = true;
    pthread_cond_broadcast(&d->cv_work);
    pthread_mutex_unlock(&d->mu);
    for (uint32_t i = 0; i < d->nthreads; i++)
        pthread_join(d->threads[i], NULL);
    free(d->threads);
    d->threads = NULL;
    d->nthreads = 0;
    pthread_cond_destroy(&d->cv_work);
    pthread_cond_destroy(&d->cv_done);
    pthread_mutex_destroy(&d->mu);
}

/* Runs the pieces: inline if one piece or no engines, else shared with the engines. */
static hal_result run_pieces(emu_dma *d, dma_piece *p, uint32_t n, char *msg, size_t len)
{
    if (n <= 1 || d->nthreads == 0) {
        for (uint32_t i = 0; i < n; i++) {
            hal_result rc = piece_run(&p[i], msg, len);
            if (rc != HAL_OK)
                return rc;
        }
        return HAL_OK;
    }
    emu_dma_job j = {.p = p, .n = n, .remaining = n};
    char m[EMU_MSG_LEN];
    pthread_mutex_lock(&d->mu);
    if (d->tail)
        d->tail->qnext = &j;
    else
        d->head = &j;
    d->tail = &j;
    pthread_cond_broadcast(&d->cv_work);
    while (j.next < j.n) { /* the worker takes pieces of its own job only */
        dma_piece *q = &j.p[j.next++];
        if (j.next == j.n) /* unlink: engines may still hold pieces, tracked by remaining */
            for (emu_dma_job **pp = &d->head, *prev = NULL; *pp; prev = *pp, pp = &(*pp)->qnext)
                if (*pp == &j) {
                    *pp = j.qnext;
                    if (d->tail == &j)
                        d->tail = prev;
                    break;
                }
        pthread_mutex_unlock(&d->mu);
        m[0] = 0;
        hal_result rc = piece_run(q, m, sizeof m);
        pthread_mutex_lock(&d->mu);
        finish_locked(d, &j, rc, m);
    }
    while (j.remaining)
        pthread_cond_wait(&d->cv_done, &d->mu);
    pthread_mutex_unlock(&d->mu);
    if (j.rc != HAL_OK)
        snprintf(msg, len, "%s", j.msg);
    return j.rc;
}

/* Chunk size in bytes for a batch of `total` bytes over `par` executors. */
static size_t chunk_bytes(uint64_t total, uint32_t par)
{
    if (total < emu_cfg()->dma_split_bytes || par <= 1)
        return SIZE_MAX;
    size_t c = (size_t)(total / ((uint64_t)par * 4));
    c = c < DMA_MIN_CHUNK ? DMA_MIN_CHUNK : c;
    return (c + 4095) & ~(size_t)4095;
}

static bool ranges_meet(const char *a, size_t an, const char *b, size_t bn)
{
    return an && bn && a < b + bn && b < a + an;
}

/* r's address, once what a peer changed in the VMM table of the device it lies in is mapped here
 * too (a peer maps memory before it tells us about it, and we learn before our DMA runs). */
static char *ref_at(hal_ref r)
{
    char *p = hal_ref_resolve(r);
    emu_vmm_sync_at(p); /* NULL lies in no region */
    return p;
}

/* Descriptor i's error if either address resolved to NULL. */
static hal_result null_address(uint32_t i, const char *dst, const char *src, char *msg, size_t len)
{
    if (dst && src)
        return HAL_OK;
    snprintf(msg, len, "DMA descriptor %u: %s address resolved to NULL", i, dst ? "source" : "destination");
    return HAL_E_PARAM;
}

/* Resolves descriptor i into p (unsplit); nt: the batch's large copies stream (batch_kernel). */
static hal_result resolve(const hal_dma_desc *d, uint32_t i, bool nt, dma_piece *p, char *msg, size_t len)
{
    p->dst = ref_at(d->dst);
    p->src = ref_at(d->src);
    p->src2 = NULL;
    p->nfan = 0;
    p->desc = i;
    p->nt = false;
    if (d->kind == HAL_DMA_COPY) {
        uint64_t nt_min = emu_cfg()->copy_nt_bytes;
        p->n = d->bytes;
        p->kind = ranges_meet(p->dst, p->n, p->src, p->n) ? P_MOVE : P_COPY;
        p->nt = nt && nt_min && p->n >= nt_min; /* decided on the whole descriptor, kept by its chunks */
    } else {
        p->kind = P_REDUCE;
        p->n = d->count;
        p->dt = d->dtype;
        p->op = d->op;
        p->src2 = ref_at(d->src2);
    }
    return p->n ? null_address(i, p->dst, p->src, msg, len) : HAL_OK;
}

/* Appends piece p cut into chunks of at most chunk bytes (element-aligned for reduces). */
static uint32_t split(const dma_piece *p, size_t chunk, dma_piece *out)
{
    size_t es = p->kind == P_REDUCE ? hal_dtype_size(p->dt) : 1;
    size_t per = p->kind == P_MOVE || chunk == SIZE_MAX ? p->n : chunk / es;
    if (per == 0 || per >= p->n) {
        out[0] = *p;
        return 1;
    }
    uint32_t k = 0;
    for (size_t at = 0; at < p->n; at += per, k++) {
        out[k] = *p;
        out[k].n = p->n - at < per ? p->n - at : per;
        out[k].dst = p->dst + at * es;
        for (uint32_t j = 0; j < p->nfan; j++)
            out[k].fan[j] = p->fan[j] + at * es;
        if (p->src)
            out[k].src = p->src + at * es;
        if (p->src2)
            out[k].src2 = p->src2 + at * es;
    }
    return k;
}

static uint64_t piece_bytes(const dma_piece *p)
{
    return p->kind == P_REDUCE ? p->n * hal_dtype_size(p->dt) : p->n;
}

/* Cuts n unsplit pieces into chunks and runs them. Frees base unless it is on the caller's stack. */
static hal_result run_split(emu_dma *d, dma_piece *base, uint32_t n, bool on_stack, char *msg, size_t len)
{
    uint64_t total = 0, count = 0;
    for (uint32_t i = 0; i < n; i++)
        total += piece_bytes(&base[i]);
    size_t chunk = chunk_bytes(total, d->nthreads + 1);
    for (uint32_t i = 0; i < n; i++)
        count += chunk == SIZE_MAX ? 1 : piece_bytes(&base[i]) / chunk + 1;
    dma_piece *all = count > n ? malloc(count * sizeof *all) : base;
    if (!all) {
        if (!on_stack)
            free(base);
        snprintf(msg, len, "DMA: out of host memory for %llu pieces", (unsigned long long)count);
        return HAL_E_NOMEM;
    }
    uint32_t k = 0;
    if (all != base)
        for (uint32_t i = 0; i < n; i++)
            k += split(&base[i], chunk, all + k);
    else
        k = n;
    hal_result rc = run_pieces(d, all, k, msg, len);
    if (all != base)
        free(all);
    if (!on_stack)
        free(base);
    return rc;
}

/* The copy kernel of a batch's large copies (those of at least copy_nt_bytes). */
typedef struct batch_kernel {
    bool nt;        /* they stream around the caches */
    bool timed;     /* the batch is a sample for the kernel choice */
    uint64_t bytes; /* bytes of large copies */
    emu_copy_pick *pick; /* their size class's choice (measured kernel only) */
} batch_kernel;

/* Per process (the machine's caches decide, not the device) and per size class: how much of a
 * copy the caches hold depends on its size. Class c holds batches of [2^c, 2^(c+1)) times the
 * threshold of large copies, the last one all larger ones. */
#define PICK_CLASSES 8u
static emu_copy_pick g_pick[PICK_CLASSES];

static emu_copy_pick *pick_for(uint64_t bytes, uint64_t nt_min)
{
    uint32_t c = 0;
    while (c + 1 < PICK_CLASSES && bytes / nt_min >= (2ull << c))
        c++;
    return &g_pick[c];
}

/* The kernel of a batch whose large copies (each at least copy_nt_bytes) move `bytes`. */
static batch_kernel kernel_for(uint64_t bytes, bool copies_only)
{
    const emu_config *cfg = emu_cfg();
    batch_kernel k = {false, false, bytes, NULL};
    if (!k.bytes)
        return k;
    if (!cfg->copy_nt_auto) {
        k.nt = true;
    } else {
        k.pick = pick_for(k.bytes, cfg->copy_nt_bytes);
        k.nt = emu_copy_pick_next(k.pick, &k.timed);
    }
    k.timed &= copies_only; /* a batch that also reduces would time the reductions */
    return k;
}

static batch_kernel batch_kernel_for(const hal_dma_desc *descs, uint32_t n)
{
    uint64_t nt_min = emu_cfg()->copy_nt_bytes, bytes = 0;
    bool copies_only = true;
    for (uint32_t i = 0; nt_min && i < n; i++) {
        copies_only &= descs[i].kind == HAL_DMA_COPY;
        if (descs[i].kind == HAL_DMA_COPY && descs[i].bytes >= nt_min)
            bytes += descs[i].bytes;
    }
    return kernel_for(bytes, copies_only);
}

static hal_result run_batch(emu_dma *d, const hal_dma_desc *descs, uint32_t n, bool nt, char *msg, size_t len)
{
    if (n == 1 && (descs[0].kind == HAL_DMA_COPY ? descs[0].bytes : descs[0].count * hal_dtype_size(descs[0].dtype)) <
                      emu_cfg()->dma_split_bytes) { /* the common small case: no allocation */
        dma_piece p;
        hal_result rc = resolve(&descs[0], 0, nt, &p, msg, len);
        return rc != HAL_OK ? rc : piece_run(&p, msg, len);
    }
    dma_piece stack[DMA_STACK_PIECES]; /* small batches: no allocation */
    bool on_stack = n <= DMA_STACK_PIECES;
    dma_piece *base = on_stack ? stack : malloc(n * sizeof *base);
    if (!base)
        return HAL_E_NOMEM;
    for (uint32_t i = 0; i < n; i++) {
        hal_result rc = resolve(&descs[i], i, nt, &base[i], msg, len);
        if (rc != HAL_OK) {
            if (!on_stack)
                free(base);
            return rc;
        }
    }
    return run_split(d, base, n, on_stack, msg, len);
}

/* One copy too small to split or stream (an eager call's): run_batch's result without a piece.
 * memmove, as a piece of overlapping ranges would (for small sizes glibc's memcpy is the same code). */
static hal_result run_small_copy(const hal_dma_desc *d, char *msg, size_t len)
{
    char *dst = ref_at(d->dst), *src = ref_at(d->src);
    if (!d->bytes)
        return HAL_OK;
    hal_result rc = null_address(0, dst, src, msg, len);
    if (rc == HAL_OK)
        memmove(dst, src, d->bytes);
    return rc;
}

hal_result emu_dma_run(emu_dma *d, const hal_dma_desc *descs, uint32_t n, char *msg, size_t len)
{
    if (n == 0)
        return HAL_OK;
    const emu_config *cfg = emu_cfg();
    if (n == 1 && descs[0].kind == HAL_DMA_COPY && descs[0].bytes < cfg->copy_nt_bytes &&
        descs[0].bytes < cfg->dma_split_bytes)
        return run_small_copy(&descs[0], msg, len);
    if (n == 1 && (descs[0].kind != HAL_DMA_COPY || descs[0].bytes < cfg->copy_nt_bytes))
        return run_batch(d, descs, n, false, msg, len); /* one small copy or reduce: no kernel to choose */
    batch_kernel k = batch_kernel_for(descs, n);
    uint64_t t0 = k.timed ? emu_now_ns() : 0;
    hal_result rc = run_batch(d, descs, n, k.nt, msg, len);
    if (k.timed && rc == HAL_OK)
        emu_copy_pick_record(k.pick, k.nt, k.bytes, emu_now_ns() - t0);
    return rc;
}

/* Fan-outs (emu_dma_run_fanout): batch j's descriptor i copies piece i's source to one more
 * destination. The batches give the same bytes in any order only if no destination overlaps a
 * source or another destination (a batch's own descriptors run in parallel anyway). */
static bool disjoint_from_pieces(const char *dst, size_t n, const dma_piece *p, uint32_t npieces)
{
    for (uint32_t i = 0; i < npieces; i++) {
        if (ranges_meet(dst, n, p[i].src, p[i].n))
            return false;
        for (uint32_t j = 0; j < p[i].nfan; j++)
            if (ranges_meet(dst, n, p[i].fan[j], p[i].n))
                return false;
    }
    return true;
}

/* Adds batch b (n descriptors) to the fan-out of pieces p, if it copies their sources and its
 * destinations are clear of every source and destination so far; false (p unchanged) if not. */
static bool fan_add(dma_piece *p, uint32_t n, const hal_dma_desc *b)
{
    char *dst[DMA_STACK_PIECES];
    for (uint32_t i = 0; i < n; i++) {
        dst[i] = ref_at(b[i].dst);
        if (b[i].kind != HAL_DMA_COPY || b[i].bytes != p[i].n || hal_ref_resolve(b[i].src) != p[i].src || !dst[i] ||
            !disjoint_from_pieces(dst[i], p[i].n, p, n))
            return false;
    }
    for (uint32_t i = 0; i < n; i++)
        p[i].fan[p[i].nfan++] = dst[i];
    return true;
}

/* Piece i of batch a as the start of a fan-out: a copy whose destination is clear of every source. */
static bool fan_start(dma_piece *p, uint32_t n, const hal_dma_desc *a)
{
    for (uint32_t i = 0; i < n; i++) {
        p[i] = (dma_piece){.kind = P_COPY, .src = ref_at(a[i].src), .n = a[i].bytes, .desc = i};
        if (a[i].kind != HAL_DMA_COPY || !p[i].src)
            return false;
    }
    for (uint32_t i = 0; i < n; i++) {
        char *dst = ref_at(a[i].dst);
        if (!dst || !disjoint_from_pieces(dst, p[i].n, p, n))
            return false;
        p[i].dst = p[i].fan[0] = dst;
        p[i].nfan = 1;
    }
    return true;
}

static _Atomic uint64_t g_fanouts; /* fan-outs run: for tests */

static _Atomic uint64_t g_fanouts_streamed;

uint64_t emu_dma_test_fanouts(void)
{
    return atomic_load(&g_fanouts);
}

uint64_t emu_dma_test_fanouts_streamed(void)
{
    return atomic_load(&g_fanouts_streamed);
}

bool emu_dma_fanout_worth(const hal_dma_desc *descs, uint32_t n)
{
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < n; i++)
        bytes += descs[i].kind == HAL_DMA_COPY ? descs[i].bytes : 0;
    return n && n <= DMA_STACK_PIECES && bytes >= HAL_FANOUT_MIN_BYTES; /* small: the source stays cached */
}

#define FANOUT_NT_COPIES 4u /* copies from which a fan-out's piece is large by all it writes (below) */

/* Whether any copy of the fan-out writes what its writer reads again soon (hal_dma_desc.reread). */
static bool fan_reread(const hal_dma_desc *const *batch, uint32_t m, uint32_t n)
{
    for (uint32_t j = 0; j < m; j++)
        for (uint32_t i = 0; i < n; i++)
            if (batch[j][i].reread)
                return true;
    return false;
}

uint32_t emu_dma_run_fanout(emu_dma *d, const hal_dma_desc *const *batch, uint32_t k, uint32_t n, hal_result *rc,
                            char *msg, size_t len)
{
    if (k < 2 || !emu_dma_fanout_worth(batch[0], n))
        return 0;
    dma_piece p[DMA_STACK_PIECES];
    if (!fan_start(p, n, batch[0]))
        return 0;
    uint32_t m = 1;
    while (m < k && m < EMU_COPY_FANOUT_MAX && fan_add(p, n, batch[m]))
        m++;
    if (m < 2)
        return 0;
    /* From FANOUT_NT_COPIES copies on, a piece is large by all it writes: a 2 MiB slice fanned out
     * to 7 destinations writes 14 MiB, past the caches as one 14 MiB copy (streaming made a 16-32
     * MiB Broadcast's slices at 8 ranks 2.2-2.7x faster, AllGather at 5-8 ranks 1.7-2.1x, 16 MiB).
     * Not with fewer copies (in-place AllGather at 3 and 4 ranks, 12-16 MiB: 10-15% slower
     * streamed), nor where a destination is read again by its writer (a mesh AllReduce's slices
     * in place at 3-6 ranks, 8-16 MiB: 20-30% slower): the kernel choice times only the copy, not
     * the reads after it. */
    uint64_t nt_min = emu_cfg()->copy_nt_bytes, large = 0;
    uint32_t mult = m >= FANOUT_NT_COPIES && !fan_reread(batch, m, n) ? m : 1;
    for (uint32_t i = 0; nt_min && i < n; i++)
        large += p[i].n * mult >= nt_min ? p[i].n * m : 0;
    batch_kernel kern = kernel_for(large, true); /* chosen and timed as the copies it replaces */
    bool streamed = false;
    for (uint32_t i = 0; i < n; i++)
        streamed |= p[i].nt = kern.nt && nt_min && p[i].n * mult >= nt_min;
    atomic_fetch_add_explicit(&g_fanouts, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_fanouts_streamed, streamed, memory_order_relaxed);
    uint64_t t0 = kern.timed ? emu_now_ns() : 0;
    *rc = run_split(d, p, n, true, msg, len);
    if (kern.timed && *rc == HAL_OK)
        emu_copy_pick_record(kern.pick, kern.nt, kern.bytes, emu_now_ns() - t0);
    return m;
}

hal_result emu_dma_memset(emu_dma *d, void *dst, int value, size_t bytes, char *msg, size_t len)
{
    emu_vmm_sync_at(dst);
    if (bytes < emu_cfg()->dma_split_bytes) {
        memset(dst, value, bytes);
        return HAL_OK;
    }
    dma_piece *base = malloc(sizeof *base);
    if (!base)
        return HAL_E_NOMEM;
    *base = (dma_piece){.kind = P_SET, .dst = dst, .n = bytes, .value = value};
    return run_split(d, base, 1, false, msg, len);
}
