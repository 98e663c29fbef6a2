/* The hal/ascend table, assembled from its parts (devices and memory, streams and events, tasks,
 * notifies and IPC) once the ACL calls are bound. */
#include "hal/ascend/asc_internal.h"
#include "hal/ascend/hal_ascend.h"

extern const hal_ops asc_task_ops;

static hal_ops g_ops;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void assemble(void)
{
    const hal_ops *d = &asc_dev_ops, *s = &asc_stream_ops, *t = &asc_task_ops, *n = &asc_notify_ops;
    hal_ops o = *d; /* devices, memory, vmm */
    o.name = "ascend";
    o.stream_create = s->stream_create;
    o.stream_destroy = s->stream_destroy;
    o.stream_sync = s->stream_sync;
    o.stream_query = s->stream_query;
    o.stream_error_msg = s->stream_error_msg;
    o.stream_clear_error = s->stream_clear_error;
    o.stream_device = s->stream_device;
    o.stream_from_native = s->stream_from_native;
    o.event_create = s->event_create;
    o.event_destroy = s->event_destroy;
    o.event_record = s->event_record;
    o.event_reset = s->event_reset;
    o.stream_wait_event = s->stream_wait_event;
    o.event_sync = s->event_sync;
    o.event_query = s->event_query;
    o.event_recorded = s->event_recorded;
    o.event_elapsed_ms = s->event_elapsed_ms;
    o.dma_batch = t->dma_batch;
    o.memset_async = t->memset_async;
    o.task_async = t->task_async;
    o.host_func_async = t->host_func_async;
    o.prog_launch = NULL; /* no program executor: the runtime enqueues one task per instruction */
    o.notify_create = n->notify_create;
    o.notify_destroy = n->notify_destroy;
    o.notify_export = n->notify_export;
    o.notify_import = n->notify_import;
    o.notify_id = n->notify_id;
    o.notify_record = n->notify_record;
    o.notify_wait = n->notify_wait;
    o.notify_wait_reset = n->notify_wait_reset;
    o.notify_host_record = n->notify_host_record;
    o.ipc_mem_export = n->ipc_mem_export;
    o.ipc_notify_export = n->ipc_notify_export;
    o.ipc_set_pids = n->ipc_set_pids;
    o.ipc_mem_import = n->ipc_mem_import;
    o.ipc_notify_import = n->ipc_notify_import;
    o.ipc_close = n->ipc_close;
    g_ops = o;
}

const hal_ops *hal_ascend_get(void)
{
    if (asc_bind() != HAL_OK)
        return NULL;
    pthread_once(&g_once, assemble);
    return &g_ops;
}

const char *hal_ascend_error(void)
{
    const char *e = asc_bind_error();
    return e && *e ? e : NULL;
}

const char *hal_ascend_ipc_missing(void)
{
    return asc_ipc_missing();
}
