/* Result codes and the names used in log lines. */
#include <stdio.h>

#include "runtime/rt_internal.h"

HcclResult rt_from_hal(int rc)
{
    switch (rc) {
    case HAL_OK: return HCCL_SUCCESS;
    case HAL_E_PARAM:
    case HAL_E_FOREIGN:
    case HAL_E_INVALID_DEVICE: return HCCL_E_PARA;
    case HAL_E_NOMEM: return HCCL_E_MEMORY;
    case HAL_E_TIMEOUT: return HCCL_E_TIMEOUT;
    case HAL_E_NOT_SUPPORTED: return HCCL_E_NOT_SUPPORT;
    case HAL_E_SYSCALL: return HCCL_E_SYSCALL;
    case HAL_E_NOT_READY: return HCCL_E_AGAIN;
    case HAL_E_ABORTED: return HCCL_E_INTERNAL;
    case HAL_E_PEER: return HCCL_E_REMOTE;
    default: return HCCL_E_INTERNAL;
    }
}

const char *HcclGetErrorString(HcclResult code)
{
    switch (code) {
    case HCCL_SUCCESS: return "success";
    case HCCL_E_PARA: return "parameter error";
    case HCCL_E_PTR: return "empty pointer";
    case HCCL_E_MEMORY: return "memory error";
    case HCCL_E_INTERNAL: return "internal error";
    case HCCL_E_NOT_SUPPORT: return "not support feature";
    case HCCL_E_NOT_FOUND: return "not found specific resource";
    case HCCL_E_UNAVAIL: return "resource unavailable";
    case HCCL_E_SYSCALL: return "call system interface error";
    case HCCL_E_TIMEOUT: return "timeout";
    case HCCL_E_OPEN_FILE_FAILURE: return "open file fail";
    case HCCL_E_TCP_CONNECT: return "tcp connect fail";
    case HCCL_E_ROCE_CONNECT: return "roce connect fail";
    case HCCL_E_TCP_TRANSFER: return "tcp transfer fail";
    case HCCL_E_ROCE_TRANSFER: return "roce transfer fail";
    case HCCL_E_RUNTIME: return "call runtime api fail";
    case HCCL_E_DRV: return "call driver api fail";
    case HCCL_E_PROFILING: return "call profiling api fail";
    case HCCL_E_CCE: return "call cce api fail";
    case HCCL_E_NETWORK: return "call network api fail";
    case HCCL_E_AGAIN: return "try again";
    case HCCL_E_REMOTE: return "error cqe";
    case HCCL_E_SUSPENDING: return "error communicator suspending";
    case HCCL_E_OPRETRY_FAIL: return "retry constraint";
    case HCCL_E_OOM: return "out of memory";
    case HCCL_E_IN_STATUS: return "the error information is in the status";
    default: return "unknown error";
    }
}

const char *rt_cmd_name(uint32_t cmd)
{
    switch (cmd) {
    case HCCL_CMD_BROADCAST: return "HcclBroadcast";
    case HCCL_CMD_ALLREDUCE: return "HcclAllReduce";
    case HCCL_CMD_REDUCE: return "HcclReduce";
    case HCCL_CMD_SEND: return "HcclSend";
    case HCCL_CMD_RECEIVE: return "HcclRecv";
    case HCCL_CMD_ALLGATHER: return "HcclAllGather";
    case HCCL_CMD_REDUCE_SCATTER: return "HcclReduceScatter";
    case HCCL_CMD_ALLTOALLV: return "HcclAlltoAllV";
    case HCCL_CMD_ALLTOALLVC: return "HcclAlltoAllVC";
    case HCCL_CMD_ALLTOALL: return "HcclAlltoAll";
    case HCCL_CMD_SCATTER: return "HcclScatter";
    case HCCL_CMD_BATCH_SEND_RECV: return "HcclBatchSendRecv";
    case HCCL_CMD_ALLGATHER_V: return "HcclAllGatherV";
    case HCCL_CMD_REDUCE_SCATTER_V: return "HcclReduceScatterV";
    case HCCL_CMD_BARRIER: return "HcclBarrier";
    case HCCL_CMD_FINALIZE: return "HcclCommDestroy";
    default: return "unknown op";
    }
}

static bool cmd_has_redop(uint32_t cmd)
{
    return cmd == HCCL_CMD_ALLREDUCE || cmd == HCCL_CMD_REDUCE || cmd == HCCL_CMD_REDUCE_SCATTER ||
           cmd == HCCL_CMD_REDUCE_SCATTER_V;
}

static bool cmd_has_root(uint32_t cmd)
{
    return cmd == HCCL_CMD_BROADCAST || cmd == HCCL_CMD_REDUCE || cmd == HCCL_CMD_SCATTER;
}

void rt_sig_format(const rt_sig *s, char *buf, size_t len)
{
    if (s->cmd == HCCL_CMD_FINALIZE) {
        snprintf(buf, len, "HcclCommDestroy()");
        return;
    }
    if (s->cmd == HCCL_CMD_BARRIER) {
        snprintf(buf, len, "HcclBarrier()");
        return;
    }
    int n = snprintf(buf, len, "%s(count=%llu, %s", rt_cmd_name(s->cmd), (unsigned long long)s->count,
                     hal_dtype_name((hal_dtype)s->dtype));
    if (n < 0 || (size_t)n >= len)
        return;
    if (cmd_has_redop(s->cmd))
        n += snprintf(buf + n, len - (size_t)n, ", %s", hal_redop_name((hal_redop)s->redop));
    if ((size_t)n < len && cmd_has_root(s->cmd))
        n += snprintf(buf + n, len - (size_t)n, ", root=%u", s->root);
    if ((size_t)n < len && s->deterministic)
        n += snprintf(buf + n, len - (size_t)n, ", deterministic");
    if ((size_t)n < len)
        snprintf(buf + n, len - (size_t)n, ")");
}
