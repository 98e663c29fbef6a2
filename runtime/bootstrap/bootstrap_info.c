/* Root info: what HcclRootInfo carries, and the two ways a root comes to exist (HcclGetRootInfo,
 * or rank 0 of a rank table). */
#include "runtime/bootstrap/bootstrap.h"

#include "common/oh_hash.h"
#include "common/oh_log.h"
#include "runtime/ranktable.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

_Static_assert(sizeof(rt_root_info) <= HCCL_ROOT_INFO_BYTES, "root info must fit HcclRootInfo.internal");

#define RT_BASE_PORT_SPAN 32     /* CANN's HCCL_IF_BASE_PORT uses 32 ports */
#define RT_RANKTABLE_PORT 60000  /* CANN's default host listen port */

void rt_boot_info_pack(const rt_root_info *ri, HcclRootInfo *info)
{
    memset(info, 0, sizeof *info);
    memcpy(info->internal, ri, sizeof *ri);
}

static bool printable_cstr(const char *s, size_t cap, bool may_be_empty)
{
    size_t n = strnlen(s, cap);
    if ((n == 0 && !may_be_empty) || n == cap)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
            return false;
    return true;
}

/* A root info with our magic can still be damaged (a truncated broadcast, a buffer reused): say
 * which field is wrong instead of logging binary as a host name or connecting to nonsense. */
static const char *info_body_fault(const rt_root_info *ri)
{
    unsigned char addr[sizeof(struct in6_addr)];
    if (ri->family != AF_INET && ri->family != AF_INET6)
        return "address family";
    if (ri->port == 0 || ri->port > 65535)
        return "port";
    if (!printable_cstr(ri->ip, RT_IP_LEN, false) || inet_pton(ri->family, ri->ip, addr) != 1)
        return "root address";
    if (!printable_cstr(ri->host, RT_HOST_LEN, true))
        return "root host name";
    return NULL;
}

HcclResult rt_boot_info_unpack(const HcclRootInfo *info, rt_root_info *out, uint32_t rank)
{
    memcpy(out, info->internal, sizeof *out);
    if (out->magic != RT_BOOT_INFO_MAGIC || out->version != RT_BOOT_INFO_VERSION) {
        OH_ERR("bootstrap", "rank %u: the HcclRootInfo passed in is not valid (magic %08x, version %u): pass the "
               "whole %d bytes filled by HcclGetRootInfo on the root, unchanged", rank, out->magic, out->version,
               HCCL_ROOT_INFO_BYTES);
        return HCCL_E_PARA;
    }
    const char *fault = info_body_fault(out);
    if (fault) {
        OH_ERR("bootstrap", "rank %u: the HcclRootInfo passed in is damaged (its %s is invalid): pass the whole %d "
               "bytes filled by HcclGetRootInfo on the root, unchanged", rank, fault, HCCL_ROOT_INFO_BYTES);
        return HCCL_E_PARA;
    }
    return HCCL_SUCCESS;
}

const char *rt_bootstrap_describe(const HcclRootInfo *info, char *buf, size_t len)
{
    rt_root_info ri;
    memcpy(&ri, info->internal, sizeof ri);
    if (ri.magic != RT_BOOT_INFO_MAGIC || info_body_fault(&ri)) {
        snprintf(buf, len, "<invalid root info>");
        return buf;
    }
    snprintf(buf, len, "%s:%u (root pid %u on %s, job %016llx)", ri.ip, ri.port, ri.pid, ri.host,
             (unsigned long long)ri.job_id);
    return buf;
}

static void fill_identity(rt_root_info *ri)
{
    ri->magic = RT_BOOT_INFO_MAGIC;
    ri->version = RT_BOOT_INFO_VERSION;
    ri->pid = (uint32_t)getpid();
    if (gethostname(ri->host, sizeof ri->host - 1) < 0)
        snprintf(ri->host, sizeof ri->host, "unknown");
}

static uint64_t random_job_id(void)
{
    uint64_t id = 0;
    if (getrandom(&id, sizeof id, 0) != (ssize_t)sizeof id)
        id = ((uint64_t)getpid() << 32) ^ (uint64_t)rt_now_ms(); /* entropy pool not ready: good enough */
    return id ? id : 1;
}

/* Binds ip:[port, port+span) (port 0 = ephemeral) and starts the acceptor thread. */
static HcclResult listen_and_serve(rt_root_info *ri, uint32_t port, uint32_t span, const char *port_src)
{
    int lfd = -1, err = 0;
    uint32_t bound = 0;
    for (uint32_t p = port; p < port + span; p++) {
        err = rt_sock_listen(ri->family, ri->ip, p, &lfd, &bound);
        if (!err || (err != EADDRINUSE && err != EACCES))
            break;
    }
    if (err == EADDRNOTAVAIL) {
        OH_ERR("bootstrap", "cannot listen on %s: it is not an address of this host; fix HCCL_IF_IP / "
               "HCCL_SOCKET_IFNAME (or the rank table's host_ip for rank 0's server)", ri->ip);
        return HCCL_E_PARA;
    }
    if (err) {
        if (port == 0)
            OH_ERR("bootstrap", "cannot listen on %s (ephemeral port): %s; set HCCL_IF_IP or HCCL_SOCKET_IFNAME to "
                   "an address of this host", ri->ip, strerror(err));
        else
            OH_ERR("bootstrap", "cannot listen on %s port %u%s%u (from %s): %s; another job may hold it: change "
                   "%s, or unset HCCL_IF_BASE_PORT for an ephemeral port", ri->ip, port, span > 1 ? "-" : "",
                   span > 1 ? port + span - 1 : port, port_src, strerror(err), port_src);
        return err == EADDRINUSE || err == EACCES ? HCCL_E_UNAVAIL : HCCL_E_PARA;
    }
    ri->port = bound;
    return rt_boot_root_start(lfd, ri);
}

HcclResult rt_bootstrap_root_listen(HcclRootInfo *info)
{
    rt_root_info ri;
    memset(&ri, 0, sizeof ri);
    fill_identity(&ri);
    ri.job_id = random_job_id();
    uint32_t base;
    HcclResult rc = rt_boot_pick_address(&ri.family, ri.ip);
    if (rc == HCCL_SUCCESS)
        rc = rt_boot_env_base_port(&base);
    if (rc != HCCL_SUCCESS)
        return rc;
    rc = listen_and_serve(&ri, base, base ? RT_BASE_PORT_SPAN : 1, "HCCL_IF_BASE_PORT");
    if (rc != HCCL_SUCCESS)
        return rc;
    rt_boot_info_pack(&ri, info);
    OH_INFO("bootstrap", "root listening at %s:%u, job %016llx", ri.ip, ri.port, (unsigned long long)ri.job_id);
    return HCCL_SUCCESS;
}

/* Every rank hashes the same table to the same job id without talking to anyone. */
static uint64_t ranktable_job_id(const rt_ranktable *t, const rt_root_info *ri)
{
    uint64_t h = oh_fnv1a(OH_FNV1A_BASIS, ri->ip, strlen(ri->ip));
    h = oh_fnv1a(h, &ri->port, sizeof ri->port);
    h = oh_fnv1a(h, &t->nranks, sizeof t->nranks);
    for (uint32_t i = 0; i < t->nranks; i++) {
        const rt_rank_entry *e = &t->ranks[i];
        h = oh_fnv1a(h, e->server_id, strlen(e->server_id));
        h = oh_fnv1a(h, &e->device_id, sizeof e->device_id);
    }
    return h ? h : 1;
}

/* Port of the rank-table root, and where that number came from (for messages). */
static HcclResult ranktable_port(const rt_ranktable *t, uint32_t *port, const char **src)
{
    if (t->ranks[0].host_port) {
        *port = t->ranks[0].host_port;
        *src = "rank 0's host_port in the rank table";
        return HCCL_SUCCESS;
    }
    HcclResult rc = rt_boot_env_base_port(port);
    *src = "HCCL_IF_BASE_PORT";
    if (rc == HCCL_SUCCESS && *port == 0) {
        *port = RT_RANKTABLE_PORT;
        *src = "the default 60000; set HCCL_IF_BASE_PORT or rank 0's host_port";
    }
    return rc;
}

HcclResult rt_bootstrap_info_from_ranktable(const rt_ranktable *t, uint32_t rank, HcclRootInfo *info)
{
    if (!t || !info || rank >= t->nranks) {
        OH_ERR("bootstrap", "rank %u: rank table init needs a table with rank < nRanks (nRanks=%u)", rank,
               t ? t->nranks : 0);
        return HCCL_E_PARA;
    }
    rt_root_info ri;
    memset(&ri, 0, sizeof ri);
    fill_identity(&ri);
    const char *ip = t->ranks[0].host_ip[0] ? t->ranks[0].host_ip : "127.0.0.1";
    unsigned char tmp[sizeof(struct in6_addr)];
    ri.family = inet_pton(AF_INET6, ip, tmp) == 1 ? AF_INET6 : AF_INET;
    if (ri.family == AF_INET && inet_pton(AF_INET, ip, tmp) != 1) {
        OH_ERR("bootstrap", "rank %u: host_ip '%s' of server '%s' (rank 0's) is not a numeric IP address", rank, ip,
               t->ranks[0].server_id);
        return HCCL_E_PARA;
    }
    snprintf(ri.ip, sizeof ri.ip, "%s", ip);
    const char *src;
    HcclResult rc = ranktable_port(t, &ri.port, &src);
    if (rc != HCCL_SUCCESS)
        return rc;
    ri.job_id = ranktable_job_id(t, &ri);
    if (rank == 0) {
        rc = listen_and_serve(&ri, ri.port, 1, src);
        if (rc != HCCL_SUCCESS)
            return rc;
    }
    /* The root's identity is unknown to the other ranks: every rank names its server instead, so all
     * pack the same bytes (the communicator's default name is a hash of them). */
    ri.pid = 0;
    snprintf(ri.host, sizeof ri.host, "%.*s", RT_HOST_LEN - 1, t->ranks[0].server_id);
    rt_boot_info_pack(&ri, info);
    return HCCL_SUCCESS;
}
