/* Argument checks shared by every collective: one clear line per bad argument, never a crash. */
#include <stdio.h>
#include <time.h>

#include "common/oh_tls.h"
#include "runtime/rt_internal.h"

static bool dtype_valid(uint32_t dt)
{
    return dt < HAL_DT_COUNT && dt != 13 && hal_dtype_size((hal_dtype)dt) != 0;
}

static bool coll_reduces(algo_coll coll)
{
    return coll == ALGO_COLL_ALLREDUCE || coll == ALGO_COLL_REDUCE || coll == ALGO_COLL_REDUCE_SCATTER ||
           coll == ALGO_COLL_REDUCE_SCATTERV;
}

static bool coll_rooted(algo_coll coll)
{
    return coll == ALGO_COLL_BROADCAST || coll == ALGO_COLL_REDUCE || coll == ALGO_COLL_SCATTER;
}

/* A buffer this rank's plan touches must be memory of this rank's device, large enough. */
HcclResult rt_check_buffer(rt_comm *c, const char *api, const char *what, const void *p, uint64_t bytes)
{
    if (bytes == 0)
        return HCCL_SUCCESS;
    CHECK_ARG(p, HCCL_E_PTR, "check", "%s: rank %u: %s is NULL (%llu bytes needed)", api, c->rank, what,
              (unsigned long long)bytes);
    HcclResult verdict;
    if (rt_mem_range_check(c, api, what, p, bytes, &verdict)) /* VMM memory set for zero copy */
        return verdict;
    uint64_t epoch;
    if (rt_buf_cache_hit(c, p, bytes, &epoch)) /* checked before, not freed since */
        return HCCL_SUCCESS;
    hal_device_handle owner;
    uint64_t after = 0;
    CHECK_ARG(c->hal->mem_lookup(p, &owner, &after) == HAL_OK, HCCL_E_PARA, "check",
              "%s: rank %u: %s=%p is not device memory (allocate it with aclrtMalloc)", api, c->rank, what, p);
    CHECK_ARG(owner.device_id == c->dev_handle.device_id && owner.server_key == c->dev_handle.server_key,
              HCCL_E_PARA, "check", "%s: rank %u: %s=%p belongs to device %u, not this communicator's device %u", api,
              c->rank, what, p, owner.device_id, c->dev_handle.device_id);
    CHECK_ARG(after >= bytes, HCCL_E_PARA, "check",
              "%s: rank %u: %s=%p has %llu bytes left in its allocation but the call needs %llu", api, c->rank, what,
              p, (unsigned long long)after, (unsigned long long)bytes);
    rt_buf_cache_note(c, p, after, epoch);
    return HCCL_SUCCESS;
}

static HcclResult check_op(rt_comm *c, const rt_call *call, const char *api)
{
    const algo_op *op = &call->op;
    CHECK_ARG(dtype_valid(op->dtype), HCCL_E_PARA, "check", "%s: rank %u: dataType=%d is not an HcclDataType", api,
              c->rank, (int)op->dtype);
    if (coll_reduces(op->coll)) {
        CHECK_ARG(op->redop < HAL_OP_COUNT, HCCL_E_PARA, "check", "%s: rank %u: op=%d is not an HcclReduceOp", api,
                  c->rank, (int)op->redop);
        CHECK_ARG(hal_reduce_supported(op->dtype, op->redop), HCCL_E_NOT_SUPPORT, "check",
                  "%s: rank %u: reduce op %s is not supported for %s", api, c->rank, hal_redop_name(op->redop),
                  hal_dtype_name(op->dtype));
    }
    if (coll_rooted(op->coll))
        CHECK_ARG(op->root < c->nranks, HCCL_E_PARA, "check", "%s: rank %u: root=%u is out of range (rank size %u)",
                  api, c->rank, op->root, c->nranks);
    /* Byte counts must fit comfortably in 63 bits for every buffer the plan derives: count x
     * element size x ranks <= 2^62, multiplied (two 64-bit divisions were 1% of a small call). */
    uint64_t bytes = 0, all = 0;
    bool over = __builtin_mul_overflow(op->count, (uint64_t)hal_dtype_size(op->dtype), &bytes) ||
                __builtin_mul_overflow(bytes, (uint64_t)c->nranks, &all);
    CHECK_ARG(!over && all <= UINT64_C(1) << 62, HCCL_E_PARA, "check",
              "%s: rank %u: count=%llu overflows the addressable size", api, c->rank, (unsigned long long)op->count);
    return HCCL_SUCCESS;
}

/* State 1: a rank claimed this block's abort word and is writing the reason (rt_ctrl.c). The
 * failure is certain: wait for the reason (bounded, the writer is a few instructions away),
 * rather than report success for a communicator whose ops already fail. */
static uint32_t abort_state(rt_comm *c)
{
    struct timespec nap = {0, 100000};
    uint32_t st = atomic_load(&c->ctrl->abort);
    for (int i = 0; st == 1 && i < 10000; i++) { /* up to ~1 s */
        nanosleep(&nap, NULL);
        st = atomic_load(&c->ctrl->abort);
    }
    return st;
}

HcclResult rt_comm_failed(rt_comm *c, const char *api)
{
    if (atomic_load(&c->ctrl->abort) == 0 || abort_state(c) != 2)
        return HCCL_SUCCESS;
    /* The reason was logged when it happened; repeat it in full once, then only at debug level so
     * a training loop that keeps calling does not flood the log. */
    if (!atomic_exchange(&c->failure_reported, true))
        OH_ERR("check", "%s: rank %u: communicator %s has failed earlier: %s", api, c->rank, c->name,
               c->ctrl->abort_msg);
    else
        OH_DBG("check", "%s: rank %u: communicator %s has failed earlier", api, c->rank, c->name);
    return (HcclResult)c->ctrl->abort_code;
}

/* The last call this thread found good: a loop that repeats a call skips its checks (with the
 * buffers' and the HAL's lookups they were a tenth of a small call's host work). The handle
 * carries its communicator's generation; the epoch moves at every free of device memory, so a
 * buffer freed since is checked again. V-ops (their tables) and memory in ranges set by
 * HcclCommSetMemoryRange (activations change without a free) are checked every call. */
typedef struct checked_call {
    HcclComm comm;
    uint64_t epoch; /* rt_repeat_epoch before the checks; 0: nothing remembered */
    algo_coll coll;
    hal_dtype dtype;
    hal_redop redop;
    uint32_t root;
    uint64_t count;
    const void *in, *out;
} checked_call;

/* Initial-exec (oh_tls.h): two reads of it a call went through __tls_get_addr; 64 bytes. */
static _Thread_local OH_TLS_HOT checked_call t_checked;

static bool checked_before(HcclComm comm, const rt_call *call, uint64_t epoch)
{
    const checked_call *k = &t_checked;
    const algo_op *op = &call->op;
    return epoch && k->epoch == epoch && k->comm == comm && k->in == call->in && k->out == call->out &&
           k->count == op->count && k->coll == op->coll && k->dtype == op->dtype && k->redop == op->redop &&
           k->root == op->root;
}

static uint64_t checks_epoch(const rt_comm *c, const rt_call *call)
{
    return call->op.counts ? 0 : rt_repeat_epoch(c);
}

static HcclResult check_call(rt_comm *c, const rt_call *call, const char *api)
{
    CHECK(check_op(c, call, api));
    uint64_t in_elems = 0, out_elems = 0;
    algo_buffer_elems(&call->op, &in_elems, &out_elems);
    size_t es = hal_dtype_size(call->op.dtype);
    CHECK(rt_check_buffer(c, api, "sendBuf", call->in, in_elems * es));
    return rt_check_buffer(c, api, "recvBuf", call->out, out_elems * es);
}

HcclResult rt_collective(HcclComm comm, rt_call *call, aclrtStream stream, const char *api)
{
    rt_comm *c = NULL;
    CHECK(rt_comm_get(comm, api, &c));
    CHECK(rt_comm_failed(c, api));
    call->op.nranks = c->nranks;
    call->op.rank = c->rank;
    call->op.deterministic = c->deterministic != 0; /* part of the plan cache key */
    uint64_t epoch = checks_epoch(c, call); /* before the checks: a free during them makes it stale */
    if (!checked_before(comm, call, epoch)) {
        CHECK(check_call(c, call, api));
        const algo_op *op = &call->op;
        t_checked = (checked_call){comm, epoch, op->coll, op->dtype, op->redop, op->root, op->count, call->in,
                                   call->out};
    }
    CHECK_ARG(c->hal->stream_from_native(stream, &call->stream) == HAL_OK, HCCL_E_PARA, "check",
              "%s: rank %u: stream %p is not a live stream of this process", api, c->rank, stream);
    if (c->entry_log)
        fprintf(stderr, "[OpenHCCL] Entry-%s: comm[%s] sendBuf[%p] recvBuf[%p] count[%llu] dataType[%s] op[%s] "
                "root[%u] localRank[%u] seq[%llu]\n", api, c->name, call->in, call->out,
                (unsigned long long)call->op.count, hal_dtype_name(call->op.dtype), hal_redop_name(call->op.redop),
                call->op.root, c->rank, (unsigned long long)c->seq + 1);
    return c->staging ? rt_staging_launch(c, call) : rt_launch(c, call);
}
