/* Tasks over ACL. Copies are aclrtMemcpyAsync device to device and reductions aclrtReduceAsync
 * (SDMA inline reduce: SUM/MAX/MIN of int8/int16/int32/fp16/fp32/bf16) when every address is
 * known at enqueue. What the device cannot do from enqueue-time arguments runs in a host callback
 * (aclrtLaunchCallback, ACL_CALLBACK_BLOCK: the stream waits for it), on the stream's reporter:
 *   - a DMA whose address is resolved on the device (hal_ref.indirect, published per call by an
 *     earlier task of the plan): the callback resolves it and issues the transfer on a private
 *     helper stream, waiting for it (a real NPU would use staging buffers instead: docs/ascend.md);
 *   - a reduction SDMA cannot do (PROD, 64-bit and unsigned types, fp64): copied to the host,
 *     reduced there and copied back (logged once per process);
 *   - task_async / host_func_async.
 * A task fn that fails sets the stream's sticky error (asc_stream_fail): later callbacks of that
 * stream are skipped and the HAL's stream_sync/query/event_sync report it with its message. ACL has
 * no public call that fails a stream, so task_async makes the failure reach ACL's stream (and the
 * user's aclrtSynchronizeStream) through a gate: after the callback the stream waits on a per-stream
 * notify (aclrtWaitAndResetNotify, 1 s) that the callback records (on the helper stream) only when
 * fn succeeded; after a failure the wait times out and ACL fails the stream (507048) about a second
 * later, skipping its later tasks. A failed resolved DMA or host reduce fails the HAL stream only. */
#include <stdlib.h>
#include <string.h>

#include "hal/ascend/asc_internal.h"

typedef struct asc_cb {
    hal_stream *s;
    hal_stream *from; /* set: inherit this stream's sticky error (asc_inherit_error) */
    hal_task_fn fn;
    hal_host_fn hfn;
    void *arg;
    hal_dma_desc d; /* fn == NULL && hfn == NULL: a DMA to resolve and run */
} asc_cb;

/* Whether ACL failed the stream before this callback (a wait of its own timed out, or a gate):
 * callbacks run after a failure too (hal.h), and a device task's work is then skipped as the
 * wrapper's own failure skips it. A query, no wait; the failure it finds becomes the wrapper's,
 * so later callbacks stop at the wrapper's error without asking. */
static bool acl_failed(hal_stream *s)
{
    aclrtStreamStatus st;
    aclError e = ACL(aclrtStreamQuery)(s->acl, &st);
    if (e == ACL_SUCCESS)
        return false;
    asc_stream_fail(s, asc_from_acl(e), "%s", asc_errmsg());
    return true;
}

static void run_cb(void *p)
{
    asc_cb *c = p;
    hal_stream *s = c->s;
    if (c->from) {
        int err = atomic_load(&c->from->err);
        if (err)
            asc_stream_fail(s, (hal_result)err, "%s", c->from->msg);
    } else if (c->hfn) {
        c->hfn(c->arg); /* also on a failed stream (hal.h) */
    } else if (atomic_load(&s->err) || acl_failed(s)) {
        /* a failed stream skips its later device tasks */
    } else {
        if (c->fn) {
            char msg[256] = "";
            int rc = c->fn(c->arg, msg, sizeof msg);
            if (rc)
                asc_stream_fail(s, (hal_result)rc, "%s", msg[0] ? msg : "a task failed");
            else
                ACL(aclrtRecordNotify)(s->gate, s->helper); /* opens the gate behind this task */
        } else {
            asc_dma_run_now(s, &c->d);
        }
    }
    free(c);
}

static hal_result launch(hal_stream *s, const asc_cb *tmpl)
{
    asc_cb *c = malloc(sizeof *c);
    if (!c)
        return HAL_E_NOMEM;
    *c = *tmpl;
    c->s = s;
    aclError e = ACL(aclrtLaunchCallback)(run_cb, c, ACL_CALLBACK_BLOCK, s->acl);
    if (e != ACL_SUCCESS) {
        free(c);
        OH_ERR("hal", "ascend: aclrtLaunchCallback on device %d failed: %d %s", s->dev->id, e, asc_errmsg());
    }
    return asc_from_acl(e);
}

static hal_result need_helper(hal_stream *s, int gate);

hal_result asc_inherit_error(hal_stream *s, hal_stream *from)
{
    asc_cb c = {.from = from};
    return launch(s, &c);
}

static int is_direct(const hal_dma_desc *d)
{
    return !d->dst.indirect && !d->src.indirect && !d->src2.indirect;
}

static hal_result copy_on(aclrtStream st, void *dst, const void *src, uint64_t bytes)
{
    if (!bytes || dst == src)
        return HAL_OK;
    return asc_from_acl(ACL(aclrtMemcpyAsync)(dst, bytes, src, bytes, ACL_MEMCPY_DEVICE_TO_DEVICE, st));
}

static int on_device(const void *p, int32_t dev)
{
    aclrtPtrAttributes a;
    if (!ACL(aclrtPointerGetAttributes))
        return 0; /* unknown: stage (always correct) */
    return ACL(aclrtPointerGetAttributes)(p, &a) == ACL_SUCCESS && a.location.type == ACL_MEM_LOCATION_TYPE_DEVICE &&
           a.location.id == (uint32_t)dev;
}

/* A device buffer of at least `bytes` on the stream's device. Outgrown buffers are kept until the
 * stream is destroyed: tasks already queued may still use them. */
static void *stage_locked(hal_stream *s, uint64_t bytes)
{
    if (s->stage_bytes >= bytes)
        return s->stage;
    void **r = realloc(s->retired, (s->nretired + 1) * sizeof *r);
    if (!r)
        return NULL;
    s->retired = r;
    void *p = NULL;
    if (asc_select(s->dev) != HAL_OK || ACL(aclrtMalloc)(&p, bytes, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS)
        return NULL;
    if (s->stage)
        s->retired[s->nretired++] = s->stage;
    s->stage = p;
    s->stage_bytes = bytes;
    return p;
}

/* The enqueuing thread and the stream's reporter (resolved DMAs) may both ask. */
static void *stage(hal_stream *s, uint64_t bytes)
{
    pthread_mutex_lock(&asc_lock);
    void *p = stage_locked(s, bytes);
    pthread_mutex_unlock(&asc_lock);
    return p;
}

/* dst = a op b with a = dst, b = src (two operands) or a = src, b = src2 (three). aclrtReduceAsync
 * takes operands of the stream's device only: a remote operand or destination goes through the
 * stream's stage buffer (copy in, reduce there, copy out), as SDMA reduce-inline to a peer would
 * do in one step on hardware through HCCL's own task interface. */
static hal_result reduce_on(hal_stream *s, aclrtStream st, const hal_dma_desc *d, int kind, int type)
{
    char *dst = hal_ref_resolve(d->dst), *a = hal_ref_resolve(d->src), *b = hal_ref_resolve(d->src2);
    uint64_t bytes = d->count * hal_dtype_size(d->dtype);
    if (!b)
        b = a, a = dst;
    int dev = s->dev->id;
    aclrtReduceKind k = (aclrtReduceKind)kind;
    aclDataType t = (aclDataType)type;
    hal_result rc = HAL_OK;
    if (on_device(dst, dev) && on_device(b, dev) && (a == dst || on_device(a, dev))) {
        if (b == dst) /* dst = a op dst: every op SDMA does commutes */
            b = a, a = dst;
        if (a != dst)
            rc = copy_on(st, dst, a, bytes);
        return rc != HAL_OK ? rc : asc_from_acl(ACL(aclrtReduceAsync)(dst, b, bytes, k, t, st, NULL));
    }
    uint64_t half = (bytes + 511) & ~(uint64_t)511;
    char *ta = stage(s, 2 * half), *tb = ta + half;
    if (!ta)
        return HAL_E_NOMEM;
    if (!on_device(b, dev) && (rc = copy_on(st, tb, b, bytes)) == HAL_OK)
        b = tb;
    if (rc == HAL_OK)
        rc = copy_on(st, ta, a, bytes);
    if (rc == HAL_OK)
        rc = asc_from_acl(ACL(aclrtReduceAsync)(ta, b, bytes, k, t, st, NULL));
    return rc != HAL_OK ? rc : copy_on(st, dst, ta, bytes);
}

static hal_result host_reduce(hal_stream *s, const hal_dma_desc *d)
{
    void *dst = hal_ref_resolve(d->dst), *src = hal_ref_resolve(d->src), *src2 = hal_ref_resolve(d->src2);
    size_t bytes = d->count * hal_dtype_size(d->dtype);
    char *a = malloc(bytes ? bytes : 1), *b = malloc(bytes ? bytes : 1);
    hal_result rc = a && b ? HAL_OK : HAL_E_NOMEM;
    if (rc == HAL_OK)
        rc = asc_from_acl(ACL(aclrtMemcpy)(a, bytes, src2 ? src : dst, bytes, ACL_MEMCPY_DEVICE_TO_HOST));
    if (rc == HAL_OK)
        rc = asc_from_acl(ACL(aclrtMemcpy)(b, bytes, src2 ? src2 : src, bytes, ACL_MEMCPY_DEVICE_TO_HOST));
    if (rc == HAL_OK)
        rc = asc_host_reduce(a, a, b, d->count, d->dtype, d->op);
    if (rc == HAL_OK)
        rc = asc_from_acl(ACL(aclrtMemcpy)(dst, bytes, a, bytes, ACL_MEMCPY_HOST_TO_DEVICE));
    free(a);
    free(b);
    if (rc != HAL_OK)
        asc_stream_fail(s, rc, "host reduce fallback (%s %s, %llu elements) failed", hal_redop_name(d->op),
                        hal_dtype_name(d->dtype), (unsigned long long)d->count);
    return rc;
}

/* In a callback, on the reporter thread: all addresses are now known. */
hal_result asc_dma_run_now(hal_stream *s, const hal_dma_desc *d)
{
    int kind, type;
    if (!hal_ref_resolve(d->dst) || !hal_ref_resolve(d->src))
        return asc_stream_fail(s, HAL_E_PARAM, "%s on device %d: an address resolved to NULL (dst %p, src %p)",
                               d->kind == HAL_DMA_COPY ? "copy" : "reduce", s->dev->id, hal_ref_resolve(d->dst),
                               hal_ref_resolve(d->src));
    if (d->kind == HAL_DMA_REDUCE && !asc_reduce_kind(d->op, d->dtype, &kind, &type))
        return host_reduce(s, d);
    hal_result rc = need_helper(s, 0);
    if (rc == HAL_OK)
        rc = d->kind == HAL_DMA_COPY ? copy_on(s->helper, hal_ref_resolve(d->dst), hal_ref_resolve(d->src), d->bytes)
                                     : reduce_on(s, s->helper, d, kind, type);
    if (rc == HAL_OK)
        rc = asc_from_acl(ACL(aclrtSynchronizeStreamWithTimeout)(s->helper, -1));
    if (rc != HAL_OK)
        asc_stream_fail(s, rc, "resolved %s on device %d failed: %s", d->kind == HAL_DMA_COPY ? "copy" : "reduce",
                        s->dev->id, asc_errmsg());
    return rc;
}

static int ref_given(hal_ref r)
{
    return r.base || r.indirect;
}

hal_result asc_dma_enqueue(hal_stream *s, const hal_dma_desc *d)
{
    int kind, type;
    if (d->kind != HAL_DMA_COPY && d->kind != HAL_DMA_REDUCE)
        return HAL_E_PARAM;
    if (d->kind == HAL_DMA_REDUCE && (hal_dtype_size(d->dtype) == 0 || (unsigned)d->op >= HAL_OP_COUNT))
        return HAL_E_PARAM;
    if (d->kind == HAL_DMA_REDUCE && (!hal_reduce_supported(d->dtype, d->op) || !asc_host_reduce_supported(d->dtype)))
        return HAL_E_NOT_SUPPORTED; /* refused at enqueue: hif8, e8m0 sum (hal_reduce_supported) */
    if ((d->kind == HAL_DMA_COPY ? d->bytes : d->count) == 0)
        return HAL_OK;
    if (!ref_given(d->dst) || !ref_given(d->src))
        return HAL_E_PARAM;
    int sdma = d->kind == HAL_DMA_COPY || asc_reduce_kind(d->op, d->dtype, &kind, &type);
    if (!is_direct(d) || !sdma) {
        asc_cb c = {.d = *d};
        return launch(s, &c);
    }
    if (d->kind == HAL_DMA_COPY)
        return copy_on(s->acl, hal_ref_resolve(d->dst), hal_ref_resolve(d->src), d->bytes);
    return reduce_on(s, s->acl, d, kind, type);
}

static hal_result dma_batch(hal_stream *s, const hal_dma_desc *descs, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        hal_result rc = asc_dma_enqueue(s, &descs[i]);
        if (rc != HAL_OK) {
            OH_ERR("hal", "ascend: DMA %u/%u (%s, %llu bytes) on device %d could not be enqueued: %s", i, n,
                   descs[i].kind == HAL_DMA_COPY ? "copy" : "reduce",
                   (unsigned long long)(descs[i].kind == HAL_DMA_COPY ? descs[i].bytes : descs[i].count),
                   s->dev->id, asc_errmsg());
            return rc;
        }
    }
    return HAL_OK;
}

static hal_result memset_async(hal_stream *s, void *dst, int value, size_t bytes)
{
    return bytes ? asc_from_acl(ACL(aclrtMemsetAsync)(dst, bytes, value, bytes, s->acl)) : HAL_OK;
}

/* The helper stream and the gate notify, created on first need by the enqueuing thread. */
static hal_result need_helper_locked(hal_stream *s, int gate)
{
    hal_result rc = HAL_OK;
    if ((!s->helper || (gate && !s->gate)) && (rc = asc_select(s->dev)) != HAL_OK)
        return rc;
    if (!s->helper)
        rc = asc_from_acl(ACL(aclrtCreateStreamWithConfig)(&s->helper, 0, ACL_STREAM_FAST_LAUNCH));
    if (rc == HAL_OK && gate && !s->gate)
        rc = asc_from_acl(ACL(aclrtCreateNotify)(&s->gate, ACL_NOTIFY_DEFAULT));
    return rc;
}

/* The enqueuing thread and the stream's reporter may both ask. */
static hal_result need_helper(hal_stream *s, int gate)
{
    if (s->helper && (!gate || s->gate))
        return HAL_OK;
    pthread_mutex_lock(&asc_lock);
    hal_result rc = need_helper_locked(s, gate);
    pthread_mutex_unlock(&asc_lock);
    return rc;
}

static hal_result task_async(hal_stream *s, hal_task_fn fn, void *arg)
{
    asc_cb c = {.fn = fn, .arg = arg};
    hal_result rc = fn ? need_helper(s, 1) : HAL_E_PARAM;
    if (rc == HAL_OK)
        rc = launch(s, &c);
    return rc != HAL_OK ? rc : asc_from_acl(ACL(aclrtWaitAndResetNotify)(s->gate, s->acl, 1));
}

static hal_result host_func_async(hal_stream *s, hal_host_fn fn, void *arg)
{
    asc_cb c = {.hfn = fn, .arg = arg};
    return fn ? launch(s, &c) : HAL_E_PARAM;
}

const hal_ops asc_task_ops = {
    .dma_batch = dma_batch, .memset_async = memset_async, .task_async = task_async,
    .host_func_async = host_func_async, .prog_launch = NULL,
};
