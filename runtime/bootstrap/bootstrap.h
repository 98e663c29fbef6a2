/* Bootstrap: the one-shot TCP rendezvous that lets the ranks of a new communicator find each other
 * and all-gather a fixed-size blob of per-rank info (the communicator code decides what is in it).
 *
 * The root (HcclGetRootInfo, or rank 0 of a rank table) listens; a detached acceptor thread serves
 * exactly one rendezvous and exits. Every rank, the root included, connects, sends
 * {rank, nranks, blob} and receives all blobs in rank order. The root checks the ranks agree and
 * tells every rank the same verdict, so a mistake fails every rank with one clear message instead
 * of hanging. HCCL_CONNECT_TIMEOUT bounds everything.
 *
 * Every failure logs one line via OH_ERR("bootstrap", ...) naming the rank, the address and the
 * env var to change. */
#ifndef RT_BOOTSTRAP_H
#define RT_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>
#include <hccl/hccl_types.h>

struct rt_ranktable;

/* Root side of HcclGetRootInfo. Interface: HCCL_IF_IP > HCCL_SOCKET_IFNAME > first up
 * non-loopback interface of HCCL_SOCKET_FAMILY (non-docker first, by name) > loopback. Port:
 * the first free of HCCL_IF_BASE_PORT's 32 ports if set, else an ephemeral port (so concurrent
 * jobs never collide on CANN's fixed 60000). Returns HCCL_E_PARA on bad env values,
 * HCCL_E_UNAVAIL when no port can be bound, HCCL_E_SYSCALL/HCCL_E_MEMORY otherwise. */
HcclResult rt_bootstrap_root_listen(HcclRootInfo *info);

/* Every rank (the root too): all-gathers blob_size bytes per rank into all (nranks*blob_size bytes,
 * rank order). Disagreements (nranks, blob_size, duplicate or out-of-range rank) fail every rank
 * with HCCL_E_PARA; ranks that never arrive give HCCL_E_TIMEOUT naming them; a dead root or peer
 * gives HCCL_E_TCP_TRANSFER; an unreachable root HCCL_E_TIMEOUT (after retrying connect). */
HcclResult rt_bootstrap_allgather(const HcclRootInfo *info, uint32_t nranks, uint32_t rank,
                                  const void *blob, size_t blob_size, void *all);

/* Rank table init: the root is the table's rank 0, at its server's host_ip (127.0.0.1 if absent),
 * port = rank 0's host_port, else HCCL_IF_BASE_PORT, else 60000. Rank 0 starts the listener there.
 * Every rank derives the same job id from the table, so no root info needs to be passed around. */
HcclResult rt_bootstrap_info_from_ranktable(const struct rt_ranktable *t, uint32_t rank, HcclRootInfo *info);

/* HCCL_CONNECT_TIMEOUT in seconds (default 120; any value >= 1 accepted, invalid -> default). */
int rt_bootstrap_timeout_s(void);

/* "host:port (root pid P on H, job J)" for messages; returns buf. Invalid info -> "<invalid root info>". */
const char *rt_bootstrap_describe(const HcclRootInfo *info, char *buf, size_t len);

/* ---- Below: shared between runtime/bootstrap*.c and runtime/store_client.c only. ---- */

#define RT_BOOT_INFO_MAGIC 0x4f48524fu /* "OHRO" */
#define RT_BOOT_INFO_VERSION 1u
#define RT_IP_LEN 64
#define RT_HOST_LEN 64

/* What HcclRootInfo.internal holds (zero padded to 4108 bytes). Native byte order: every host of
 * one job runs the same architecture. */
typedef struct rt_root_info {
    uint32_t magic;
    uint32_t version;
    uint64_t job_id;     /* random per HcclGetRootInfo: a stale root info never joins a new job */
    int32_t family;      /* AF_INET or AF_INET6 */
    uint32_t port;
    char ip[RT_IP_LEN];  /* numeric address the root listens on */
    uint32_t pid;
    char host[RT_HOST_LEN];
} rt_root_info;

/* Decodes and checks magic/version; logs and returns HCCL_E_PARA if info is not ours. */
HcclResult rt_boot_info_unpack(const HcclRootInfo *info, rt_root_info *out, uint32_t rank);
void rt_boot_info_pack(const rt_root_info *ri, HcclRootInfo *info);

/* Wire protocol of one rendezvous: rank -> root: hello + blob; root -> rank: reply + payload, where
 * payload = all blobs (status 0) or an error message of len bytes (status = HcclResult). */
#define RT_BOOT_WIRE_MAGIC 0x4f48424fu /* "OHBO" */
typedef struct rt_boot_hello {
    uint32_t magic;
    uint32_t version;
    uint64_t job_id;
    uint32_t rank;
    uint32_t nranks;
    uint64_t blob_size;
    uint32_t pid;
    uint32_t pad;
    char host[RT_HOST_LEN];
} rt_boot_hello;
typedef struct rt_boot_reply {
    uint32_t magic;
    int32_t status;
    uint64_t len;
} rt_boot_reply;
/* Bounds that keep a garbage hello from making the root allocate absurd amounts. */
#define RT_BOOT_MAX_RANKS (1u << 16)
#define RT_BOOT_MAX_TOTAL ((uint64_t)1 << 32)

/* Starts the acceptor thread for one rendezvous on an already listening socket (takes lfd). */
HcclResult rt_boot_root_start(int lfd, const rt_root_info *ri);
/* Connections to this process's roots that have not had their verdict: what the process's exit
 * waits for (at most 2 s), so that their ranks read it. */
unsigned rt_boot_verdicts_owed(void);

/* Interface choice (bootstrap_iface.c). */
typedef struct rt_iface {
    char name[32];
    int family;
    char ip[RT_IP_LEN];
    int loopback;
} rt_iface;
/* Does the CANN/NCCL-style spec (prefix list, "^" exclude, "=" exact, "^=" exclude exact) accept name? */
int rt_iface_match(const char *spec, const char *name);
/* Picks from list (pure, for tests): spec may be NULL. Returns 0 and *out, or -1 if none fits. */
int rt_iface_pick(const rt_iface *list, size_t n, const char *spec, int family, rt_iface *out);
/* Applies HCCL_IF_IP / HCCL_SOCKET_IFNAME / HCCL_SOCKET_FAMILY to this host's interfaces. */
HcclResult rt_boot_pick_address(int *family, char ip[RT_IP_LEN]);
/* The same, also naming the interface (ifname: "eth0", "HCCL_IF_IP" or "none"), for log lines. */
HcclResult rt_boot_pick_iface(int *family, char ip[RT_IP_LEN], char *ifname, size_t len);

/* Environment (bootstrap_env.c). */
/* HCCL_SOCKET_FAMILY: AF_INET (default) or AF_INET6; HCCL_E_PARA on anything else. */
HcclResult rt_boot_env_family(int *family);
/* HCCL_IF_BASE_PORT: *port = 0 when unset; HCCL_E_PARA if outside [1024, 65520]. */
HcclResult rt_boot_env_base_port(uint32_t *port);

/* Sockets (bootstrap_sock.c): non-blocking fds driven by poll() against absolute deadlines
 * (rt_now_ms clock), so nothing waits past its deadline and nothing spins. Return 0 or an errno;
 * a peer closing early is RT_SOCK_EOF. SIGPIPE is never raised. */
#define RT_SOCK_EOF (-1)
int64_t rt_now_ms(void);
/* Binds and listens on ip:port (port 0 = ephemeral); *bound gets the actual port. */
int rt_sock_listen(int family, const char *ip, uint32_t port, int *lfd, uint32_t *bound);
/* Connects to host:port (numeric or a name), retrying refused/unreachable until deadline. */
int rt_sock_connect(const char *host, uint32_t port, int64_t deadline, int *fd);
int rt_sock_send_all(int fd, const void *buf, size_t len, int64_t deadline);
int rt_sock_recv_all(int fd, void *buf, size_t len, int64_t deadline);
/* Human text for the codes above (strerror, "connection closed by peer", "timed out"). */
const char *rt_sock_strerror(int err);

#endif
