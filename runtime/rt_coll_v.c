/* Collectives with per-rank counts: AlltoAllV, AlltoAllVC, AllGatherV, ReduceScatterV.
 * Count and displacement arrays are uint64 element counts in host memory (as CANN's docs). The
 * launch copies what it needs (rt_launch.c bind_self), so the arrays are the caller's again when
 * the call returns; ranks' tables are compared on the device before data moves (rt_vcheck.c). */
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_internal.h"

/* In place as HCCL's plain forms, with the rank's own block where the displacements put it
 * (docs/algorithms.md): AllGatherV sendBuf = recvBuf + recvDispls[rank], ReduceScatterV recvBuf =
 * sendBuf + sendDispls[rank]. (AlltoAll(V/VC) in place is one buffer for both, which no algorithm
 * does: HCCL_E_NOT_SUPPORTED.) */
static bool v_in_place(algo_coll coll, const void *in, const void *out, const uint64_t *displs, uint32_t rank,
                       HcclDataType dt)
{
    size_t esz = hal_dtype_size((hal_dtype)dt);
    if (!in || !out)
        return false;
    if (coll == ALGO_COLL_ALLGATHERV)
        return (const char *)in == (const char *)out + displs[rank] * esz;
    return (const char *)out == (const char *)in + displs[rank] * esz;
}

static HcclResult v_call(HcclComm comm, algo_coll coll, uint32_t cmd, void *in, void *out, HcclDataType dt,
                         HcclReduceOp op, const uint64_t *counts, uint32_t ncounts, bool in_place,
                         aclrtStream stream, const char *api)
{
    rt_call call;
    rt_call_init(&call, coll, cmd, in, out, 0, dt, op, 0);
    call.op.counts = counts;
    call.op.ncounts = ncounts;
    call.op.in_place = in_place;
    return rt_collective(comm, &call, stream, api);
}

HcclResult HcclAlltoAllV(const void *sendBuf, const void *sendCounts, const void *sdispls, HcclDataType sendType,
                         const void *recvBuf, const void *recvCounts, const void *rdispls, HcclDataType recvType,
                         HcclComm comm, aclrtStream stream)
{
    rt_comm *c = NULL;
    CHECK(rt_comm_get(comm, "HcclAlltoAllV", &c)); /* NULL: HCCL_E_PTR, destroyed or stale: HCCL_E_PARA */
    uint32_t n = c->nranks;
    CHECK_ARG(sendCounts && sdispls && recvCounts && rdispls, HCCL_E_PTR, "check",
              "HcclAlltoAllV: sendCounts, sdispls, recvCounts and rdispls must not be NULL");
    CHECK_ARG(sendType == recvType, HCCL_E_PARA, "check", "HcclAlltoAllV: sendType=%d differs from recvType=%d",
              (int)sendType, (int)recvType);
    uint64_t *v = malloc(4 * (size_t)n * sizeof *v);
    if (!v)
        return HCCL_E_MEMORY;
    memcpy(v, sendCounts, n * sizeof *v);
    memcpy(v + n, sdispls, n * sizeof *v);
    memcpy(v + 2 * n, recvCounts, n * sizeof *v);
    memcpy(v + 3 * n, rdispls, n * sizeof *v);
    HcclResult rc = v_call(comm, ALGO_COLL_ALLTOALLV, HCCL_CMD_ALLTOALLV, (void *)sendBuf, (void *)recvBuf, sendType,
                           0, v, 4 * n, sendBuf == recvBuf, stream, "HcclAlltoAllV");
    free(v);
    return rc;
}

HcclResult HcclAlltoAllVC(const void *sendBuf, const void *sendCountMatrix, HcclDataType sendType,
                          const void *recvBuf, HcclDataType recvType, HcclComm comm, aclrtStream stream)
{
    rt_comm *c = NULL;
    CHECK(rt_comm_get(comm, "HcclAlltoAllVC", &c)); /* NULL: HCCL_E_PTR, destroyed or stale: HCCL_E_PARA */
    uint32_t n = c->nranks;
    CHECK_ARG(sendCountMatrix, HCCL_E_PTR, "check", "HcclAlltoAllVC: sendCountMatrix is NULL");
    CHECK_ARG(sendType == recvType, HCCL_E_PARA, "check", "HcclAlltoAllVC: sendType=%d differs from recvType=%d",
              (int)sendType, (int)recvType);
    return v_call(comm, ALGO_COLL_ALLTOALLVC, HCCL_CMD_ALLTOALLVC, (void *)sendBuf, (void *)recvBuf, sendType, 0,
                  sendCountMatrix, n * n, sendBuf == recvBuf, stream, "HcclAlltoAllVC");
}

HcclResult HcclAllGatherV(void *sendBuf, uint64_t sendCount, void *recvBuf, const void *recvCounts,
                          const void *recvDispls, HcclDataType dataType, HcclComm comm, aclrtStream stream)
{
    rt_comm *c = NULL;
    CHECK(rt_comm_get(comm, "HcclAllGatherV", &c)); /* NULL: HCCL_E_PTR, destroyed or stale: HCCL_E_PARA */
    uint32_t n = c->nranks;
    CHECK_ARG(recvCounts && recvDispls, HCCL_E_PTR, "check", "HcclAllGatherV: recvCounts/recvDispls is NULL");
    CHECK_ARG(((const uint64_t *)recvCounts)[c->rank] == sendCount, HCCL_E_PARA, "check",
              "HcclAllGatherV: rank %u: sendCount=%llu differs from recvCounts[%u]=%llu", c->rank,
              (unsigned long long)sendCount, c->rank, (unsigned long long)((const uint64_t *)recvCounts)[c->rank]);
    uint64_t *v = malloc(2 * (size_t)n * sizeof *v);
    if (!v)
        return HCCL_E_MEMORY;
    memcpy(v, recvCounts, n * sizeof *v);
    memcpy(v + n, recvDispls, n * sizeof *v);
    bool in_place = v_in_place(ALGO_COLL_ALLGATHERV, sendBuf, recvBuf, v + n, c->rank, dataType);
    HcclResult rc = v_call(comm, ALGO_COLL_ALLGATHERV, HCCL_CMD_ALLGATHER_V, sendBuf, recvBuf, dataType, 0, v, 2 * n,
                           in_place, stream, "HcclAllGatherV");
    free(v);
    return rc;
}

HcclResult HcclReduceScatterV(void *sendBuf, const void *sendCounts, const void *sendDispls, void *recvBuf,
                              uint64_t recvCount, HcclDataType dataType, HcclReduceOp op, HcclComm comm,
                              aclrtStream stream)
{
    rt_comm *c = NULL;
    CHECK(rt_comm_get(comm, "HcclReduceScatterV", &c)); /* NULL: HCCL_E_PTR, destroyed or stale: HCCL_E_PARA */
    uint32_t n = c->nranks;
    CHECK_ARG(sendCounts && sendDispls, HCCL_E_PTR, "check", "HcclReduceScatterV: sendCounts/sendDispls is NULL");
    CHECK_ARG(((const uint64_t *)sendCounts)[c->rank] == recvCount, HCCL_E_PARA, "check",
              "HcclReduceScatterV: rank %u: recvCount=%llu differs from sendCounts[%u]=%llu", c->rank,
              (unsigned long long)recvCount, c->rank, (unsigned long long)((const uint64_t *)sendCounts)[c->rank]);
    uint64_t *v = malloc(2 * (size_t)n * sizeof *v);
    if (!v)
        return HCCL_E_MEMORY;
    memcpy(v, sendCounts, n * sizeof *v);
    memcpy(v + n, sendDispls, n * sizeof *v);
    bool in_place = v_in_place(ALGO_COLL_REDUCE_SCATTERV, sendBuf, recvBuf, v + n, c->rank, dataType);
    HcclResult rc = v_call(comm, ALGO_COLL_REDUCE_SCATTERV, HCCL_CMD_REDUCE_SCATTER_V, sendBuf, recvBuf, dataType, op,
                           v, 2 * n, in_place, stream, "HcclReduceScatterV");
    free(v);
    return rc;
}
