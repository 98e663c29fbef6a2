/* Public communicator API: the init variants, sub-communicators, destroy and the getters. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/bootstrap/bootstrap.h"
#include "runtime/ranktable.h"
#include "runtime/rt_internal.h"
#include "runtime/stream/rt_launch.h"
#include "hccl/hccl_ext.h"

HcclResult HcclCommInitRootInfoConfig(uint32_t nRanks, const HcclRootInfo *rootInfo, uint32_t rank,
                                      const HcclCommConfig *config, HcclComm *comm)
{
    CHECK_ARG(rootInfo && comm, HCCL_E_PTR, "comm", "HcclCommInitRootInfo: rootInfo=%p comm=%p must not be NULL",
              (const void *)rootInfo, (void *)comm);
    rt_comm *c = NULL;
    CHECK(rt_comm_create(nRanks, rank, config, NULL, rootInfo, &c));
    *comm = c->handle;
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
    *comm = c->handle;
    return HCCL_SUCCESS;
}

HcclResult HcclCommInitClusterInfo(const char *clusterInfo, uint32_t rank, HcclComm *comm)
{
    return HcclCommInitClusterInfoConfig(clusterInfo, rank, NULL, comm);
}

/* HcclCommInitAll's ranks are threads that start the rendezvous together: each waits at a gate
 * until every thread exists, so a thread that cannot be created fails the call at once instead of
 * leaving the others in the bootstrap until HCCL_CONNECT_TIMEOUT. */
typedef struct init_all_gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int state; /* 0 wait, 1 go, -1 give up */
} init_all_gate;

typedef struct init_all_arg {
    uint32_t ndev, rank;
    int32_t device;
    const HcclRootInfo *root;
    init_all_gate *gate;
    HcclComm out;
    HcclResult rc;
} init_all_arg;

static void *init_all_thread(void *p)
{
    init_all_arg *a = p;
    pthread_mutex_lock(&a->gate->mu);
    while (a->gate->state == 0)
        pthread_cond_wait(&a->gate->cv, &a->gate->mu);
    bool go = a->gate->state > 0;
    pthread_mutex_unlock(&a->gate->mu);
    if (!go) {
        a->rc = HCCL_E_SYSCALL;
        return NULL;
    }
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
    a->out = a->rc == HCCL_SUCCESS ? c->handle : NULL;
    return NULL;
}

static void open_gate(init_all_gate *g, int state)
{
    pthread_mutex_lock(&g->mu);
    g->state = state;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* Starts one thread per device behind the gate; *started = threads created. */
static HcclResult init_all_start(uint32_t ndev, int32_t *devices, const HcclRootInfo *root, init_all_gate *gate,
                                 init_all_arg *args, pthread_t *th, uint32_t *started)
{
    for (*started = 0; *started < ndev; (*started)++) {
        uint32_t i = *started;
        args[i] = (init_all_arg){ndev, i, devices[i], root, gate, NULL, HCCL_SUCCESS};
        int e = pthread_create(&th[i], NULL, init_all_thread, &args[i]);
        if (e != 0) {
            OH_ERR("comm", "HcclCommInitAll: creating the thread of rank %u (device %d) failed: %s", i, devices[i],
                   strerror(e));
            return HCCL_E_SYSCALL;
        }
    }
    return HCCL_SUCCESS;
}

HcclResult HcclCommInitAll(uint32_t ndev, int32_t *devices, HcclComm *comms)
{
    CHECK_ARG(devices && comms, HCCL_E_PTR, "comm", "HcclCommInitAll: devices and comms must not be NULL");
    CHECK_ARG(ndev >= 1, HCCL_E_PARA, "comm", "HcclCommInitAll: ndev=%u is invalid", ndev);
    for (uint32_t i = 0; i < ndev; i++)
        for (uint32_t j = i + 1; j < ndev; j++)
            CHECK_ARG(devices[i] != devices[j], HCCL_E_PARA, "comm",
                      "HcclCommInitAll: device %d is listed twice (positions %u and %u)", devices[i], i, j);
    for (uint32_t i = 0; i < ndev; i++)
        comms[i] = NULL;
    HcclRootInfo root;
    CHECK(rt_bootstrap_root_listen(&root));
    init_all_arg *args = calloc(ndev, sizeof *args);
    pthread_t *th = calloc(ndev, sizeof *th);
    init_all_gate gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    uint32_t started = 0;
    HcclResult rc = (args && th) ? init_all_start(ndev, devices, &root, &gate, args, th, &started) : HCCL_E_MEMORY;
    open_gate(&gate, rc == HCCL_SUCCESS ? 1 : -1);
    for (uint32_t i = 0; i < started; i++) {
        pthread_join(th[i], NULL);
        if (args[i].rc != HCCL_SUCCESS && rc == HCCL_SUCCESS)
            rc = args[i].rc;
    }
    for (uint32_t i = 0; i < started; i++) {
        if (rc != HCCL_SUCCESS && args[i].out)
            HcclCommDestroy(args[i].out);
        else
            comms[i] = args[i].out;
    }
    free(args);
    free(th);
    return rc;
}

/* Publishes a FINALIZE record as this rank's next op and tells every peer, so a peer still
 * waiting for this rank in a collective learns that it destroyed the communicator instead
 * (rt_p2p_finalize does the same for a peer blocked in Send/Recv). */
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
    /* Generation-tagged notifies: a peer that destroyed its side already (and may have a new
     * communicator on the recycled slots) gets nothing; the record is dropped. */
    for (uint32_t p = 0; p < c->nranks; p++) {
        if (p == c->rank || !c->peers[p].to_peer[ALGO_SLOT_PUB]) /* remote peers: their links close */
            continue;
        c->hal->notify_record(c->peers[p].to_peer[ALGO_SLOT_PUB], s);
        if (c->oneway || c->flag_waits) /* asleep in a flag wait for a header: its check reads the record */
            c->hal->notify_record(c->peers[p].to_peer[RT_SLOT_HDR_WAKE], s);
    }
    c->hal->stream_sync(s, -1);
    c->hal->stream_destroy(s);
}

HcclResult HcclCommDestroy(HcclComm comm)
{
    rt_comm *c = NULL;
    CHECK(rt_comm_get(comm, "HcclCommDestroy", &c));
    /* DESTROY_PRE sees a live handle (callbacks may still query it), DESTROY_POST a retired one. */
    rt_comm_state_notify(comm, HCCL_COMM_STATE_PHASE_DESTROY_PRE);
    /* Retiring the handle first refuses every later use, and a second destroy racing this one. */
    CHECK_ARG(rt_handle_retire(c), HCCL_E_PARA, "comm", "HcclCommDestroy: comm %p is being destroyed already", comm);
    pthread_mutex_lock(&c->lock);
    rt_launch_reclaim(c, true);
    publish_finalize(c);
    rt_p2p_finalize(c);
    pthread_mutex_unlock(&c->lock);
    HcclResult rc = rt_comm_destroy(c);
    rt_comm_state_notify(comm, HCCL_COMM_STATE_PHASE_DESTROY_POST);
    return rc;
}

HcclResult HcclGetRankSize(HcclComm comm, uint32_t *rankSize)
{
    rt_comm *c = NULL;
    CHECK(rt_comm_get(comm, "HcclGetRankSize", &c));
    CHECK_ARG(rankSize, HCCL_E_PTR, "comm", "HcclGetRankSize: rankSize is NULL");
    *rankSize = c->nranks;
    return HCCL_SUCCESS;
}

HcclResult HcclGetRankId(HcclComm comm, uint32_t *rank)
{
    rt_comm *c = NULL;
    CHECK(rt_comm_get(comm, "HcclGetRankId", &c));
    CHECK_ARG(rank, HCCL_E_PTR, "comm", "HcclGetRankId: rank is NULL");
    *rank = c->rank;
    return HCCL_SUCCESS;
}

HcclResult HcclGetCommName(HcclComm comm, char *commName)
{
    rt_comm *c = NULL;
    CHECK(rt_comm_get(comm, "HcclGetCommName", &c));
    CHECK_ARG(commName, HCCL_E_PTR, "comm", "HcclGetCommName: commName is NULL");
    snprintf(commName, COMM_NAME_MAX_LENGTH, "%s", c->name);
    return HCCL_SUCCESS;
}

HcclResult HcclCommGetHandleWithName(const char *commName, HcclComm *comm)
{
    CHECK_ARG(commName && comm, HCCL_E_PTR, "comm", "HcclCommGetHandleWithName: commName and comm must not be NULL");
    HcclComm h = rt_registry_find(commName);
    CHECK_ARG(h, HCCL_E_NOT_FOUND, "comm", "HcclCommGetHandleWithName: no communicator named \"%s\"", commName);
    *comm = h;
    return HCCL_SUCCESS;
}

HcclResult HcclGetCommAsyncError(HcclComm comm, HcclResult *asyncError)
{
    rt_comm *c = NULL;
    CHECK(rt_comm_get(comm, "HcclGetCommAsyncError", &c));
    CHECK_ARG(asyncError, HCCL_E_PTR, "comm", "HcclGetCommAsyncError: asyncError is NULL");
    *asyncError = HCCL_SUCCESS;
    pthread_mutex_lock(&c->lock);
    rt_launch_reclaim(c, false); /* picks up launches that failed on the device */
    pthread_mutex_unlock(&c->lock);
    *asyncError = rt_comm_failed(c, "HcclGetCommAsyncError"); /* logs the reason once per communicator */
    return HCCL_SUCCESS;
}

HcclResult HcclCommGetStatus(const char *commId, HcclCommStatus *status)
{
    CHECK_ARG(commId && status, HCCL_E_PTR, "comm", "HcclCommGetStatus: commId and status must not be NULL");
    rt_comm *c = rt_comm_check(rt_registry_find(commId));
    CHECK_ARG(c, HCCL_E_NOT_FOUND, "comm", "HcclCommGetStatus: no communicator named \"%s\"", commId);
    *status = atomic_load(&c->ctrl->abort) ? HCCL_COMM_STATUS_INVALID : HCCL_COMM_STATUS_READY;
    return HCCL_SUCCESS;
}

HcclResult HcclCommSuspend(HcclComm comm)
{
    rt_comm *c = NULL;
    CHECK(rt_comm_get(comm, "HcclCommSuspend", &c));
    OH_ERR("comm", "HcclCommSuspend is reserved in CANN and not supported");
    return HCCL_E_NOT_SUPPORT;
}

HcclResult HcclCommResume(HcclComm comm)
{
    rt_comm *c = NULL;
    CHECK(rt_comm_get(comm, "HcclCommResume", &c));
    OH_ERR("comm", "HcclCommResume is reserved in CANN and not supported");
    return HCCL_E_NOT_SUPPORT;
}

uint64_t HcclExtPlanCompileCount(void)
{
    return rt_plan_compile_count();
}

HcclResult HcclExtGetCommErrorMessage(HcclComm comm, char *buf, size_t len)
{
    rt_comm *c = NULL;
    CHECK(rt_comm_get(comm, "HcclExtGetCommErrorMessage", &c));
    CHECK_ARG(buf && len, HCCL_E_PTR, "comm", "HcclExtGetCommErrorMessage: buf or len is invalid");
    pthread_mutex_lock(&c->lock);
    rt_launch_reclaim(c, false);
    pthread_mutex_unlock(&c->lock);
    snprintf(buf, len, "%s", atomic_load(&c->ctrl->abort) == 2 ? c->ctrl->abort_msg : "");
    return HCCL_SUCCESS;
}
