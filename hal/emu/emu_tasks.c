/* Data tasks (DMA batches, memset, task functions, host functions): enqueue and execution. */
#include <stdlib.h>
#include <string.h>

#include "common/oh_log.h"
#include "hal/emu/emu_internal.h"
#include "hal/emu/emu_sys.h"

static void run_fn(hal_stream *s, emu_task *t)
{
    char msg[EMU_MSG_LEN];
    msg[0] = 0; /* not = "": that zeroes all of it, per instruction or task */
    int rc = t->u.fn.fn(t->u.fn.arg, msg, sizeof msg);
    if (rc != 0) {
        msg[sizeof msg - 1] = 0;
        hal_result code = rc > 0 && rc <= HAL_E_INTERNAL ? (hal_result)rc : HAL_E_INTERNAL;
        emu_stream_fail(s, code, "%s", msg[0] ? msg : "task function failed");
    }
}

/* Runs a program task; false: suspended (help only), t stays queued. */
static bool prog_run(hal_stream *s, emu_task *t, hal_result sticky, bool help)
{
    emu_prog_end end = sticky == HAL_OK ? emu_prog_run(s, t, help ? EMU_HELP_POLL_NS : 0) : EMU_PROG_FAILED;
    if (end == EMU_PROG_SUSPENDED)
        return false;
    hal_result rc = end == EMU_PROG_DONE ? HAL_OK : emu_stream_err(s);
    for (uint32_t i = 0; i < EMU_PROG_RECORDS && t->u.prog.rec[i].e; i++) /* as record tasks: they carry the error */
        emu_event_complete(s, t->u.prog.rec[i].e, t->u.prog.rec[i].seq, rc);
    return true;
}

static bool task_run(hal_stream *s, emu_task *t, hal_result sticky, bool help)
{
    if (t->kind == EMU_T_EVENT_RECORD) { /* runs even on a failed stream: carries the error */
        emu_event_run_record(s, t, sticky);
        return true;
    }
    if (t->kind == EMU_T_PROG)
        return prog_run(s, t, sticky, help);
    if (t->kind == EMU_T_EVENT_WAIT) { /* a record that rides on it completes on a failed stream too */
        emu_event_run_wait(s, t, sticky);
        return true;
    }
    if (sticky != HAL_OK && t->kind != EMU_T_HOST) /* host functions run anyway (hal.h) */
        return true;
    char msg[EMU_MSG_LEN];
    msg[0] = 0; /* not = "": that zeroes all of it, per instruction or task */
    hal_result rc = HAL_OK;
    switch (t->kind) {
    case EMU_T_DMA:
        rc = emu_dma_run(&s->dev->dma, t->u.dma.descs, t->u.dma.n, msg, sizeof msg);
        break;
    case EMU_T_MEMSET:
        rc = emu_dma_memset(&s->dev->dma, t->u.set.dst, t->u.set.value, t->u.set.bytes, msg, sizeof msg);
        break;
    case EMU_T_FN:
        run_fn(s, t);
        break;
    case EMU_T_HOST:
        t->u.host.fn(t->u.host.arg);
        break;
    case EMU_T_NOTIFY_RECORD:
    case EMU_T_NOTIFY_WAIT:
    case EMU_T_FLAG_WAIT:
    case EMU_T_NOTIFY_WAKE:
        emu_notify_run(s, t);
        break;
    default:
        break;
    }
    if (rc != HAL_OK)
        emu_stream_fail(s, rc, "%s", msg);
    return true;
}

bool emu_task_run(hal_stream *s, emu_task *t, hal_result sticky, bool help)
{
    if (emu_trace_on()) { /* docs/tracing.md */
        uint64_t t0 = emu_now_ns();
        bool ran = task_run(s, t, sticky, help);
        emu_trace_task(s, t, t0, sticky);
        return ran;
    }
    return task_run(s, t, sticky, help);
}

/* Checks descriptors that can be checked before their addresses are known. */
hal_result emu_dma_check(const hal_dma_desc *d, uint32_t i)
{
    if (d->kind == HAL_DMA_COPY)
        return HAL_OK;
    if (d->kind != HAL_DMA_REDUCE) {
        OH_ERR("emu", "dma_batch: descriptor %u has unknown kind %d", i, (int)d->kind);
        return HAL_E_PARAM;
    }
    if ((unsigned)d->dtype >= HAL_DT_COUNT || hal_dtype_size(d->dtype) == 0 || (unsigned)d->op >= HAL_OP_COUNT) {
        OH_ERR("emu", "dma_batch: descriptor %u has bad dtype %d or op %d", i, (int)d->dtype, (int)d->op);
        return HAL_E_PARAM;
    }
    if (!hal_reduce_supported(d->dtype, d->op)) {
        OH_ERR("emu", "dma_batch: descriptor %u: %s %s is not supported", i, hal_dtype_name(d->dtype),
               hal_redop_name(d->op));
        return HAL_E_NOT_SUPPORTED;
    }
    return HAL_OK;
}

hal_result emu_dma_batch(hal_stream *s, const hal_dma_desc *descs, uint32_t n)
{
    if (!s || (n && !descs))
        return HAL_E_PARAM;
    for (uint32_t i = 0; i < n; i++) {
        hal_result rc = emu_dma_check(&descs[i], i);
        if (rc != HAL_OK)
            return rc;
    }
    emu_task *t = emu_task_new(EMU_T_DMA);
    if (!t)
        return HAL_E_NOMEM;
    t->u.dma.n = n;
    if (n > 2 && t->heap_cap < n) { /* a pooled task keeps its array for the next batch */
        hal_dma_desc *a = malloc(n * sizeof *a);
        if (!a) {
            emu_task_free(t);
            return HAL_E_NOMEM;
        }
        free(t->heap_descs);
        t->heap_descs = a;
        t->heap_cap = n;
    }
    t->u.dma.descs = n <= 2 ? t->inline_desc : t->heap_descs;
    if (n)
        memcpy(t->u.dma.descs, descs, n * sizeof *descs);
    return emu_stream_push(s, t);
}

hal_result emu_memset_async(hal_stream *s, void *dst, int value, size_t bytes)
{
    if (!s || (!dst && bytes))
        return HAL_E_PARAM;
    emu_task *t = emu_task_new(EMU_T_MEMSET);
    if (!t)
        return HAL_E_NOMEM;
    t->u.set.dst = dst;
    t->u.set.value = value;
    t->u.set.bytes = bytes;
    return emu_stream_push(s, t);
}

hal_result emu_task_async(hal_stream *s, hal_task_fn fn, void *arg)
{
    if (!s || !fn)
        return HAL_E_PARAM;
    emu_task *t = emu_task_new(EMU_T_FN);
    if (!t)
        return HAL_E_NOMEM;
    t->u.fn.fn = fn;
    t->u.fn.arg = arg;
    return emu_stream_push(s, t);
}

hal_result emu_host_func_async(hal_stream *s, hal_host_fn fn, void *arg)
{
    if (!s || !fn)
        return HAL_E_PARAM;
    emu_task *t = emu_task_new(EMU_T_HOST);
    if (!t)
        return HAL_E_NOMEM;
    t->u.host.fn = fn;
    t->u.host.arg = arg;
    return emu_stream_push(s, t);
}
