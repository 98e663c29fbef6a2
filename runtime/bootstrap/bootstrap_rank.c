/* Rank side of the rendezvous: connect to the root, send hello + blob, receive the verdict. */
#include "runtime/bootstrap/bootstrap.h"

#include "common/oh_log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Extra time a connected rank waits for the verdict beyond its own timeout: the root's deadline
 * started earlier than ours, so its timeout report arrives within this margin. */
#define RT_VERDICT_GRACE_MS 10000
#define RT_MAX_ERR_MSG 4096

static HcclResult io_error(uint32_t rank, const rt_root_info *ri, const char *what, int err, int timeout_s)
{
    if (err == ETIMEDOUT) {
        OH_ERR("bootstrap", "rank %u: timed out %s root %s:%u (job %016llx) after HCCL_CONNECT_TIMEOUT=%d s; "
               "raise HCCL_CONNECT_TIMEOUT if ranks start far apart", rank, what, ri->ip, ri->port,
               (unsigned long long)ri->job_id, timeout_s);
        return HCCL_E_TIMEOUT;
    }
    OH_ERR("bootstrap", "rank %u: failed %s root %s:%u (pid %u on %s): %s (did the root process exit or crash?)",
           rank, what, ri->ip, ri->port, ri->pid, ri->host, rt_sock_strerror(err));
    return HCCL_E_TCP_TRANSFER;
}

static HcclResult connect_root(const rt_root_info *ri, uint32_t rank, int timeout_s, int *fd)
{
    int err = rt_sock_connect(ri->ip, ri->port, rt_now_ms() + (int64_t)timeout_s * 1000, fd);
    if (!err)
        return HCCL_SUCCESS;
    OH_ERR("bootstrap", "rank %u: cannot connect to the root at %s:%u within HCCL_CONNECT_TIMEOUT=%d s (last "
           "error: %s); is the root process (pid %u on %s) running, is that address reachable from here (else "
           "set HCCL_IF_IP / HCCL_SOCKET_IFNAME on the root), and did every rank start in time?", rank, ri->ip,
           ri->port, timeout_s, rt_sock_strerror(err), ri->pid, ri->host);
    return HCCL_E_TIMEOUT;
}

/* Reads the root's error message and logs it under this rank. */
static HcclResult read_failure(int fd, const rt_boot_reply *rep, uint32_t rank, const rt_root_info *ri,
                               int64_t deadline, int timeout_s)
{
    size_t len = rep->len > RT_MAX_ERR_MSG ? RT_MAX_ERR_MSG : (size_t)rep->len;
    char *msg = calloc(1, len + 1);
    if (!msg) {
        OH_ERR("bootstrap", "rank %u: rendezvous failed with %d (no memory to read why)", rank, rep->status);
        return (HcclResult)rep->status;
    }
    int err = rt_sock_recv_all(fd, msg, len, deadline);
    if (err) {
        free(msg);
        return io_error(rank, ri, "reading the failure report from", err, timeout_s);
    }
    OH_ERR("bootstrap", "rank %u: %s", rank, msg);
    free(msg);
    return rep->status ? (HcclResult)rep->status : HCCL_E_INTERNAL;
}

static HcclResult exchange(int fd, const rt_root_info *ri, uint32_t nranks, uint32_t rank, const void *blob,
                           size_t blob_size, void *all, int timeout_s)
{
    int64_t deadline = rt_now_ms() + (int64_t)timeout_s * 1000 + RT_VERDICT_GRACE_MS;
    rt_boot_hello h;
    memset(&h, 0, sizeof h);
    h.magic = RT_BOOT_WIRE_MAGIC;
    h.version = RT_BOOT_INFO_VERSION;
    h.job_id = ri->job_id;
    h.rank = rank;
    h.nranks = nranks;
    h.blob_size = blob_size;
    h.pid = (uint32_t)getpid();
    if (gethostname(h.host, sizeof h.host - 1) < 0)
        snprintf(h.host, sizeof h.host, "unknown");
    int err = rt_sock_send_all(fd, &h, sizeof h, deadline);
    if (!err)
        err = rt_sock_send_all(fd, blob, blob_size, deadline);
    if (err)
        return io_error(rank, ri, "sending to", err, timeout_s);
    rt_boot_reply rep;
    err = rt_sock_recv_all(fd, &rep, sizeof rep, deadline);
    if (err)
        return io_error(rank, ri, "waiting for the other ranks at", err, timeout_s);
    if (rep.magic != RT_BOOT_WIRE_MAGIC) {
        OH_ERR("bootstrap", "rank %u: %s:%u is not an OpenHCCL root (bad reply); check the root info / "
               "rank table address and HCCL_IF_BASE_PORT", rank, ri->ip, ri->port);
        return HCCL_E_TCP_TRANSFER;
    }
    if (rep.status != HCCL_SUCCESS)
        return read_failure(fd, &rep, rank, ri, deadline, timeout_s);
    if (rep.len != (uint64_t)nranks * blob_size) {
        OH_ERR("bootstrap", "rank %u: root %s:%u sent %llu bytes, expected %u ranks x %zu", rank, ri->ip, ri->port,
               (unsigned long long)rep.len, nranks, blob_size);
        return HCCL_E_TCP_TRANSFER;
    }
    err = rt_sock_recv_all(fd, all, (size_t)rep.len, deadline);
    return err ? io_error(rank, ri, "receiving all ranks' info from", err, timeout_s) : HCCL_SUCCESS;
}

HcclResult rt_bootstrap_allgather(const HcclRootInfo *info, uint32_t nranks, uint32_t rank, const void *blob,
                                  size_t blob_size, void *all)
{
    if (!info || (!blob && blob_size) || (!all && nranks && blob_size)) {
        OH_ERR("bootstrap", "rank %u: rt_bootstrap_allgather got a NULL %s", rank,
               !info ? "root info" : !blob ? "blob" : "output buffer");
        return HCCL_E_PTR;
    }
    rt_root_info ri;
    HcclResult rc = rt_boot_info_unpack(info, &ri, rank);
    if (rc != HCCL_SUCCESS)
        return rc;
    /* nranks/rank are not checked here on purpose: the root checks them against every other rank and
     * fails all of them together, rather than leaving the others waiting for this one. */
    int timeout_s = rt_bootstrap_timeout_s(), fd = -1;
    rc = connect_root(&ri, rank, timeout_s, &fd);
    if (rc != HCCL_SUCCESS)
        return rc;
    rc = exchange(fd, &ri, nranks, rank, blob, blob_size, all, timeout_s);
    close(fd);
    return rc;
}
