/* What the transports share (net.c, net_env.c, tcp_*.c, verbs_*.c): the base structs every
 * implementation embeds first, its ops table, the completion queue and the notify table. */
#ifndef NET_INTERNAL_H
#define NET_INTERNAL_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>

#include "hal/net/net.h"
#include "hal/net/net_regcache.h"

#define NET_ADDR_LEN 64     /* "[ipv6]:port" */
#define NET_MAX_NOTIFY 65536u
#define NET_MAX_SOCKS 16u

typedef struct net_ops {
    hal_result (*listen)(net_transport *t, const struct sockaddr *addr, socklen_t alen,
                         struct sockaddr_storage *bound);
    hal_result (*accept)(net_transport *t, int timeout_ms, net_link **out);
    hal_result (*connect)(net_transport *t, const struct sockaddr *addr, socklen_t alen, int timeout_ms,
                          net_link **out);
    hal_result (*write)(net_link *l, const void *src, size_t len, uint64_t raddr, uint32_t rkey,
                        uint32_t notify, uint64_t tag);
    void (*link_close)(net_link *l);
    void (*destroy)(net_transport *t);
} net_ops;

typedef struct net_notify_ent {
    net_notify_fn fn;
    void *arg;
} net_notify_ent;

typedef struct net_cq_item {
    struct net_cq_item *next;
    net_completion c;
} net_cq_item;

struct net_transport {
    const net_ops *ops;
    net_kind kind;
    char name[48];
    char where[192];         /* net_transport_where */
    net_regcache rc;
    /* completions and the links' counters: one lock, one condition (CLOCK_MONOTONIC) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    net_cq_item *cq_head, *cq_tail;
    /* notifies: appended under mu, read by the progress thread without it (never shrinks) */
    net_notify_ent *notifies;
    _Atomic uint32_t nnotify;
};

struct net_link {
    net_transport *t;
    char peer[NET_ADDR_LEN];
    uint64_t posted, done;       /* writes, under t->mu */
    uint64_t nfailed;            /* writes that completed with an error, under t->mu */
    _Atomic int err;             /* hal_result, sticky */
    _Atomic int quiet;           /* net_link_quiet: the peer may close any time, its end is no error */
};

struct net_mr {
    net_transport *t;
    net_rc_entry *e;
};

/* Common init/fini of the base structs (net.c). */
hal_result net_base_init(net_transport *t, const net_ops *ops, net_kind kind, const net_config *cfg,
                         const net_rc_ops *rcops, void *rcctx);
void net_base_fini(net_transport *t);
void net_link_init(net_link *l, net_transport *t, const struct sockaddr *peer);
/* A write finished: counts it on its link and queues a completion when tag != 0. */
void net_complete(net_link *l, uint64_t tag, hal_result status);
/* n writes were posted on l (before the first can complete). */
void net_posted(net_link *l, uint64_t n);
/* Marks the link failed with rc (first error wins); returns 1 if this call set it. */
int net_link_fail(net_link *l, hal_result rc);
/* Runs notify id (progress threads): HAL_E_PARAM for an id that was never added. */
hal_result net_notify_fire(net_transport *t, uint32_t id);

/* Helpers (net_env.c). */
/* "1.2.3.4:5" / "[::1]:5" into buf. */
const char *net_addr_str(const struct sockaddr *sa, char *buf, size_t len);
int64_t net_now_ms(void);
/* HCCL_HOST_SOCKET_PORT_RANGE: NULL/"" /"auto" -> *n = 0 (ephemeral); "60000,60050-60100" -> the
 * ports in order (at most max). HAL_E_PARAM (logged) on syntax, range [1, 65535] or overlap. */
hal_result net_port_list(const char *spec, uint16_t *ports, size_t max, size_t *n);
/* HCCL_NSOCKS_PERTHREAD: sockets per peer, default 2, in [1, NET_MAX_SOCKS]. */
uint32_t net_env_nsocks(void);
/* HCCL_SOCKET_FAMILY: AF_INET6 when it says so, else AF_INET. */
int net_env_family(void);
/* Binds a listening socket to addr (port 0: the port range's ports, else ephemeral). Returns the
 * fd or -errno, *bound gets the bound address. */
int net_bind_listen(const struct sockaddr *addr, socklen_t alen, struct sockaddr_storage *bound,
                    const char *who);
/* Connects a blocking TCP socket, retrying refusals until deadline: fd or -errno. */
int net_tcp_connect(const struct sockaddr *addr, socklen_t alen, int64_t deadline);
/* Sends / receives exactly len bytes before deadline (poll): 0 or -errno (-ECONNRESET on EOF). */
int net_send_all(int fd, const void *buf, size_t len, int64_t deadline);
int net_recv_all(int fd, void *buf, size_t len, int64_t deadline);

#endif
