/* The public collective entry points: each fills an op descriptor and hands it to
 * rt_collective (checks, plan cache, launch). */

#include "runtime/rt_internal.h"

/* In place: returning the struct by value cost a copy of it in every call. Field by field, every
 * field: zeroing all of it first compiled to `rep stos`, whose start-up was 1.5% of a small call's
 * samples (the op alone is short enough for plain stores). */
void rt_call_init(rt_call *call, algo_coll coll, uint32_t cmd, void *in, void *out, uint64_t count,
                  HcclDataType dt, HcclReduceOp op, uint32_t root)
{
    call->op = (algo_op){.coll = coll, .count = count, .dtype = (hal_dtype)dt, .redop = (hal_redop)op, .root = root};
    call->cmd = cmd;
    call->in = in;
    call->out = out;
    call->stream = NULL;
    call->staged = false;
    call->sig_count = 0;
    call->pre = call->post = NULL;
    call->npre = call->npost = 0;
}

static size_t esize(HcclDataType dt)
{
    size_t s = hal_dtype_size((hal_dtype)dt);
    return s ? s : 1;
}

static uint32_t comm_rank(HcclComm comm)
{
    rt_comm *c = rt_comm_check(comm); /* an invalid comm is reported by rt_collective */
    return c ? c->rank : 0;
}

HcclResult HcclAllReduce(void *sendBuf, void *recvBuf, uint64_t count, HcclDataType dataType, HcclReduceOp op,
                         HcclComm comm, aclrtStream stream)
{
    rt_call call;
    rt_call_init(&call, ALGO_COLL_ALLREDUCE, HCCL_CMD_ALLREDUCE, sendBuf, recvBuf, count, dataType, op, 0);
    call.op.in_place = sendBuf == recvBuf;
    return rt_collective(comm, &call, stream, "HcclAllReduce");
}

HcclResult HcclReduce(void *sendBuf, void *recvBuf, uint64_t count, HcclDataType dataType, HcclReduceOp op,
                      uint32_t root, HcclComm comm, aclrtStream stream)
{
    rt_call call;
    rt_call_init(&call, ALGO_COLL_REDUCE, HCCL_CMD_REDUCE, sendBuf, recvBuf, count, dataType, op, root);
    call.op.in_place = sendBuf == recvBuf;
    return rt_collective(comm, &call, stream, "HcclReduce");
}

HcclResult HcclBroadcast(void *buf, uint64_t count, HcclDataType dataType, uint32_t root, HcclComm comm,
                         aclrtStream stream)
{
    rt_call call;
    rt_call_init(&call, ALGO_COLL_BROADCAST, HCCL_CMD_BROADCAST, buf, buf, count, dataType, 0, root);
    call.op.in_place = true;
    return rt_collective(comm, &call, stream, "HcclBroadcast");
}

HcclResult HcclAllGather(void *sendBuf, void *recvBuf, uint64_t sendCount, HcclDataType dataType, HcclComm comm,
                         aclrtStream stream)
{
    rt_call call;
    rt_call_init(&call, ALGO_COLL_ALLGATHER, HCCL_CMD_ALLGATHER, sendBuf, recvBuf, sendCount, dataType, 0, 0);
    call.op.in_place = recvBuf && (char *)sendBuf == (char *)recvBuf + comm_rank(comm) * sendCount * esize(dataType);
    return rt_collective(comm, &call, stream, "HcclAllGather");
}

HcclResult HcclReduceScatter(void *sendBuf, void *recvBuf, uint64_t recvCount, HcclDataType dataType,
                             HcclReduceOp op, HcclComm comm, aclrtStream stream)
{
    rt_call call;
    rt_call_init(&call, ALGO_COLL_REDUCE_SCATTER, HCCL_CMD_REDUCE_SCATTER, sendBuf, recvBuf, recvCount, dataType, op,
                 0);
    call.op.in_place = sendBuf && (char *)recvBuf == (char *)sendBuf + comm_rank(comm) * recvCount * esize(dataType);
    return rt_collective(comm, &call, stream, "HcclReduceScatter");
}

HcclResult HcclScatter(void *sendBuf, void *recvBuf, uint64_t recvCount, HcclDataType dataType, uint32_t root,
                       HcclComm comm, aclrtStream stream)
{
    rt_call call;
    rt_call_init(&call, ALGO_COLL_SCATTER, HCCL_CMD_SCATTER, sendBuf, recvBuf, recvCount, dataType, 0, root);
    call.op.in_place = comm_rank(comm) == root && sendBuf &&
                       (char *)recvBuf == (char *)sendBuf + root * recvCount * esize(dataType);
    return rt_collective(comm, &call, stream, "HcclScatter");
}

HcclResult HcclAlltoAll(const void *sendBuf, uint64_t sendCount, HcclDataType sendType, const void *recvBuf,
                        uint64_t recvCount, HcclDataType recvType, HcclComm comm, aclrtStream stream)
{
    CHECK_ARG(sendCount == recvCount && sendType == recvType, HCCL_E_PARA, "check",
              "HcclAlltoAll: sendCount=%llu/sendType=%d must equal recvCount=%llu/recvType=%d",
              (unsigned long long)sendCount, (int)sendType, (unsigned long long)recvCount, (int)recvType);
    rt_call call;
    rt_call_init(&call, ALGO_COLL_ALLTOALL, HCCL_CMD_ALLTOALL, (void *)sendBuf, (void *)recvBuf, sendCount, sendType,
                 0, 0);
    call.op.in_place = sendBuf == recvBuf;
    return rt_collective(comm, &call, stream, "HcclAlltoAll");
}

HcclResult HcclBarrier(HcclComm comm, aclrtStream stream)
{
    rt_comm *c = NULL;
    CHECK(rt_comm_get(comm, "HcclBarrier", &c));
    /* As CANN: a one-element fp32 sum AllReduce, here in place on the communicator's scratch. */
    rt_call call;
    rt_call_init(&call, ALGO_COLL_ALLREDUCE, HCCL_CMD_BARRIER, c->scratch, c->scratch, 1, HCCL_DATA_TYPE_FP32,
                 HCCL_REDUCE_SUM, 0);
    call.op.in_place = true;
    return rt_collective(comm, &call, stream, "HcclBarrier");
}
