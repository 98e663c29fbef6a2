/* Structures shared by verbs_dev.c and verbs_qp.c only. */
#ifndef VERBS_PRIV_H
#define VERBS_PRIV_H

#include <infiniband/verbs.h>

#include "hal/net/verbs_internal.h"

#define VERBS_MAX_QPS 32
#define VERBS_RECV_DEPTH 256   /* receives posted per QP (write-with-imm consumes one) */
#define VERBS_SEND_DEPTH 1024
#define VERBS_POLL_LINKS 1024  /* setup sockets the progress thread watches (links beyond: by their QPs) */

typedef struct verbs_transport verbs_transport;

typedef struct verbs_link {
    net_link base;             /* first */
    verbs_transport *vt;
    uint32_t nqps;
    struct ibv_qp *qp[VERBS_MAX_QPS];
    _Atomic uint32_t rr;
    uint32_t remote_qpn[VERBS_MAX_QPS];
    uint8_t remote_gid[16];
    int fd;                    /* the setup socket, kept open: its end is the peer's (progress thread);
                                  -1 once its end was reported (then in hup_fd), under vt->lmu */
    int hup_fd;
    struct verbs_link *next;   /* the transport's links (under vt->lmu) */
} verbs_link;

/* One posted write (wr_id). */
typedef struct verbs_op {
    verbs_link *l;
    uint64_t tag;
    net_rc_entry *src;
    uint32_t qp;
} verbs_op;

/* What each side sends over the exchange socket. */
typedef struct verbs_wire {
    uint32_t magic, nqps;
    uint8_t gid[16];
    uint32_t mtu;
    uint32_t psn;
    uint32_t qpn[VERBS_MAX_QPS];
} verbs_wire;

struct verbs_transport {
    net_transport base;        /* first */
    verbs_env env;
    struct ibv_context *ctx;
    char dev_name[64];
    uint8_t port;
    int gid_index;
    uint8_t gid[16];
    enum ibv_mtu mtu;
    struct ibv_pd *pd;
    struct ibv_comp_channel *ch;
    struct ibv_cq *cq;
    pthread_t thr;
    int stop;
    int lfd;
    pthread_mutex_t lmu;
    verbs_link *links;
};

/* verbs_qp.c */
hal_result verbs_listen(net_transport *t, const struct sockaddr *addr, socklen_t alen, struct sockaddr_storage *bound);
hal_result verbs_accept(net_transport *t, int timeout_ms, net_link **out);
hal_result verbs_connect(net_transport *t, const struct sockaddr *addr, socklen_t alen, int timeout_ms,
                         net_link **out);
hal_result verbs_write(net_link *l, const void *src, size_t len, uint64_t raddr, uint32_t rkey, uint32_t notify,
                       uint64_t tag);
void verbs_link_close(net_link *l);
/* verbs_dev.c: "device mlx5_0 port 1 GID ::ffff:10.0.0.1 QP 0x1234" for log lines */
const char *verbs_where(const verbs_link *l, uint32_t qpn, char *buf, size_t len);
void verbs_post_recvs(struct ibv_qp *qp, int n);

#endif
