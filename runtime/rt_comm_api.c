/* Public communicator API: the init variants, sub-communicators, destroy and the getters. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/bootstrap.h"
#include "runtime/ranktable.h"
#include "runtime/rt_internal.h"
#include "runtime/rt_launch.h"
#include "hccl/hccl_ext.h"

HcclResult HcclCommInitRootInfoConfig(uint32_t nRanks, const HcclRootInfo *rootInfo, uint32_t rank,
                                      const HcclCommConfig *config, HcclComm *comm)
{
    CHECK_ARG(rootInfo && comm, HCCL_E_PTR, "comm", "HcclCommInitRootInfo: rootInfo=%p comm=%p must not be NULL",
              (const void *)rootInfo, (void *)comm);
    rt_comm *c = NULL;
    CHECK(rt_comm_create(nRanks, rank, config, NULL, rootInfo, &c));
    *comm = c;
    return HCCL_SUCCESS;
}

HcclResult HcclCommInitRootInfo(uint32_t nRanks, const HcclRootInfo *rootInfo, uint32_t rank, HcclComm *comm)
{
    return HcclCommInitRootInfoConfig(nRanks, rootInfo, rank, NULL, comm);
}

/* The rank table names each rank's device: the thread must have selected that one. */
static HcclResult check_table_device(const rt_ranktable *t, uint32_t rank, const char *path)
{
    const hal_ops *hal = hal_get();
    hal_device *dev = NULL;
    hal_device_info info;
    CHECK_ARG(hal && hal->current_device(&dev) == HAL_OK && hal->device_info(dev, &info) == HAL_OK, HCCL_E_PARA,
              "comm", "HcclCommInitClusterInfo: rank %u: no device is set: call aclrtSetDevice(%d) first", rank,
              t->ranks[rank].device_id);
    CHECK_ARG((int32_t)info.handle.device_id == t->ranks[rank].device_id, HCCL_E_PARA, "comm",
              "HcclCommInitClusterInfo: rank %u: this thread uses device %u but %s gives rank %u device_id %d", rank,
              info.handle.device_id, path, rank, t->ranks[rank].device_id);
    return HCCL_SUCCESS;
}

HcclResult HcclCommInitClusterInfoConfig(const char *clusterInfo, uint32_t rank, HcclCommConfig *config,
                                         HcclComm *comm)
{
    CHECK_ARG(clusterInfo && comm, HCCL_E_PTR, "comm", "HcclCommInitClusterInfo: clusterInfo and comm must not be NULL");
    rt_ranktable *t = NULL;
    CHECK(rt_ranktable_load(clusterInfo, &t));
    HcclResult rc = HCCL_SUCCESS;
    if (rank >= t->nranks) {
        OH_ERR("comm", "HcclCommInitClusterInfo: rank %u is not in rank table %s (%u ranks)", rank, clusterInfo,
               t->nranks);
        rc = HCCL_E_PARA;
    }
    if (rc == HCCL_SUCCESS)
        rc = check_table_device(t, rank, clusterInfo);
    HcclRootInfo info;
    if (rc == HCCL_SUCCESS)
        rc = rt_bootstrap_info_from_ranktable(t, rank, &info);
    rt_comm *c = NULL;
    if (rc == HCCL_SUCCESS)
        rc = rt_comm_create(t->nranks, rank, config, NULL, &info, &c);
    rt_ranktable_free(t);
    CHECK(rc);
    *comm = c;
    return HCCL_SUCCESS;
}

HcclResult HcclCommInitClusterInfo(const char *clusterInfo, uint32_t rank, HcclComm *comm)
{
    return HcclCommInitClusterInfoConfig(clusterInfo, rank, NULL, comm);
}

typedef struct init_all_arg {
    uint32_t ndev, rank;
    int32_t device;
    const HcclRootInfo *root;
    HcclComm *out;
    HcclResult rc;
} init_all_arg;

static void *init_all_thread(void *p)
{
    init_all_arg *a = p;
    const hal_ops *hal = hal_get();
    hal_device *dev = NULL;
    a->rc = rt_from_hal(hal->device_open(a->device, &dev));
    if (a->rc == HCCL_SUCCESS)
        a->rc = rt_from_hal(hal->set_current_device(dev));
    rt_comm *c = NULL;
    if (a->rc == HCCL_SUCCESS)
        a->rc = rt_comm_create(a->ndev, a->rank, NULL, NULL, a->root, &c);
    if (dev)
        hal->device_close(dev); /* the communicator holds its own reference */
    *a->out = a->rc == HCCL_SUCCESS ? c : NULL;
    return NULL;
}

HcclResult HcclCommInitAll(uint32_t ndev, int32_t *devices, HcclComm *comms)
{
    CHECK_ARG(devices && comms, HCCL_E_PTR, "comm", "HcclCommInitAll: devices and comms must not be NULL");
    CHECK_ARG(ndev >= 1, HCCL_E_PARA, "comm", "HcclCommInitAll: ndev=%u is invalid", ndev);
    for (uint32_t i = 0; i < ndev; i++)
        for (uint32_t j = i + 1; j < ndev; j++)
            CHECK_ARG(devices[i] != devices[j], HCCL_E_PARA, "comm",
                      "HcclCommInitAll: device %d is listed twice (positions %u and %u)", devices[i], i, j);
    HcclRootInfo root;
    CHECK(rt_bootstrap_root_listen(&root));
    init_all_arg *args = calloc(ndev, sizeof *args);
    pthread_t *th = calloc(ndev, sizeof *th);
    HcclResult rc = (args && th) ? HCCL_SUCCESS : HCCL_E_MEMORY;
    uint32_t started = 0;
    for (uint32_t i = 0; rc == HCCL_SUCCESS && i < ndev; i++, started++) {
        args[i] = (init_all_arg){ndev, i, devices[i], &root, &comms[i], HCCL_SUCCESS};
        if (pthread_create(&th[i], NULL, init_all_thread, &args[i]) != 0)
            rc = HCCL_E_SYSCALL;
    }
    for (uint32_t i = 0; i < started; i++) {
        pthread_join(th[i], NULL);
        if (args[i].rc != HCCL_SUCCESS && rc == HCCL_SUCCESS)
            rc = args[i].rc;
    }
    if (rc != HCCL_SUCCESS)
        for (uint32_t i = 0; i < started; i++)
            if (comms[i]) {
                HcclCommDestroy(comms[i]);
                comms[i] = NULL;
            }
    free(args);
    free(th);
    return rc;
}

/* Publishes a FINALIZE record as this rank's next op and tells every peer, so a peer still
 * waiting for this rank in a collective learns that it destroyed the communicator instead. */
static void publish_finalize(rt_comm *c)
{
    if (c->nranks < 2 || atomic_load(&c->ctrl->abort))
        return;
    rt_pub_record *rec = rt_ctrl_pub(c->ctrl, c->seq + 1);
    memset(&rec->sig, 0, sizeof rec->sig);
    rec->sig.cmd = HCCL_CMD_FINALIZE;
    rec->sig.seq = c->seq + 1;
    rec->sig.nranks = c->nranks;
    atomic_store_explicit(&rec->ready, c->seq + 1, memory_order_release);
    hal_stream *s = NULL;
    if (c->hal->stream_create(c->dev, &s) != HAL_OK)
        return;
    for (uint32_t p = 0; p < c->nranks; p++)
        if (p != c->rank)
            c->hal->notify_record(c->peers[p].to_peer[ALGO_SLOT_PUB], s);
    c->hal->stream_sync(s, -1);
    c->hal->stream_destroy(s);
}

HcclResult HcclCommDestroy(HcclComm comm)
{
    rt_comm *c = rt_comm_check(comm);
    CHECK_ARG(c, HCCL_E_PARA, "comm", "HcclCommDestroy: comm is NULL or already destroyed");
    pthread_mutex_lock(&c->lock);
    rt_launch_reclaim(c, true);
    publish_finalize(c);
    rt_p2p_finalize(c);
    pthread_mutex_unlock(&c->lock);
    return rt_comm_destroy(c);
}

HcclResult HcclGetRankSize(HcclComm comm, uint32_t *rankSize)
{
    rt_comm *c = rt_comm_check(comm);
    CHECK_ARG(c && rankSize, HCCL_E_PTR, "comm", "HcclGetRankSize: comm or rankSize is invalid");
    *rankSize = c->nranks;
    return HCCL_SUCCESS;
}

HcclResult HcclGetRankId(HcclComm comm, uint32_t *rank)
{
    rt_comm *c = rt_comm_check(comm);
    CHECK_ARG(c && rank, HCCL_E_PTR, "comm", "HcclGetRankId: comm or rank is invalid");
    *rank = c->rank;
    return HCCL_SUCCESS;
}

HcclResult HcclGetCommName(HcclComm comm, char *commName)
{
    rt_comm *c = rt_comm_check(comm);
    CHECK_ARG(c && commName, HCCL_E_PTR, "comm", "HcclGetCommName: comm or commName is invalid");
    snprintf(commName, COMM_NAME_MAX_LENGTH, "%s", c->name);
    return HCCL_SUCCESS;
}

HcclResult HcclCommGetHandleWithName(const char *commName, HcclComm *comm)
{
    CHECK_ARG(commName && comm, HCCL_E_PTR, "comm", "HcclCommGetHandleWithName: commName and comm must not be NULL");
    rt_comm *c = rt_registry_find(commName);
    CHECK_ARG(c, HCCL_E_NOT_FOUND, "comm", "HcclCommGetHandleWithName: no communicator named \"%s\"", commName);
    *comm = c;
    return HCCL_SUCCESS;
}

HcclResult HcclGetCommAsyncError(HcclComm comm, HcclResult *asyncError)
{
    rt_comm *c = rt_comm_check(comm);
    CHECK_ARG(c && asyncError, HCCL_E_PTR, "comm", "HcclGetCommAsyncError: comm or asyncError is invalid");
    *asyncError = HCCL_SUCCESS;
    pthread_mutex_lock(&c->lock);
    rt_launch_reclaim(c, false); /* picks up launches that failed on the device */
    pthread_mutex_unlock(&c->lock);
    if (atomic_load(&c->ctrl->abort) == 2) {
        *asyncError = (HcclResult)c->ctrl->abort_code;
        OH_ERR("comm", "rank %u: communicator %s failed: %s", c->rank, c->name, c->ctrl->abort_msg);
    }
    return HCCL_SUCCESS;
}

HcclResult HcclCommGetStatus(const char *commId, HcclCommStatus *status)
{
    CHECK_ARG(commId && status, HCCL_E_PTR, "comm", "HcclCommGetStatus: commId and status must not be NULL");
    rt_comm *c = rt_registry_find(commId);
    CHECK_ARG(c, HCCL_E_NOT_FOUND, "comm", "HcclCommGetStatus: no communicator named \"%s\"", commId);
    *status = atomic_load(&c->ctrl->abort) ? HCCL_COMM_STATUS_INVALID : HCCL_COMM_STATUS_READY;
    return HCCL_SUCCESS;
}

HcclResult HcclCommSuspend(HcclComm comm)
{
    CHECK_ARG(rt_comm_check(comm), HCCL_E_PTR, "comm", "HcclCommSuspend: invalid comm");
    OH_ERR("comm", "HcclCommSuspend is reserved in CANN and not supported");
    return HCCL_E_NOT_SUPPORT;
}

HcclResult HcclCommResume(HcclComm comm)
{
    CHECK_ARG(rt_comm_check(comm), HCCL_E_PTR, "comm", "HcclCommResume: invalid comm");
    OH_ERR("comm", "HcclCommResume is reserved in CANN and not supported");
    return HCCL_E_NOT_SUPPORT;
}

uint64_t HcclExtPlanCompileCount(void)
{
    return rt_plan_compile_count();
}

HcclResult HcclExtGetCommErrorMessage(HcclComm comm, char *buf, size_t len)
{
    rt_comm *c = rt_comm_check(comm);
    CHECK_ARG(c && buf && len, HCCL_E_PTR, "comm", "HcclExtGetCommErrorMessage: comm, buf or len is invalid");
    pthread_mutex_lock(&c->lock);
    rt_launch_reclaim(c, false);
    pthread_mutex_unlock(&c->lock);
    snprintf(buf, len, "%s", atomic_load(&c->ctrl->abort) == 2 ? c->ctrl->abort_msg : "");
    return HCCL_SUCCESS;
}
