/* TCP links through io_uring (tcp_*.c).
 *
 * One progress thread per transport owns one io_uring and every socket of every link. Writers
 * (any thread) queue ops and wake it through an eventfd read kept armed in the ring; the thread
 * batches: per socket, queued writes go out as one sendmsg of {header, payload} iovec pairs
 * (sendmsg_zc when the payload is large and the kernel has it), and all sockets' SQEs are
 * submitted with one io_uring_enter. Each socket always has one receive in flight: the 40-byte
 * header, then the payload read straight into the target address (MSG_WAITALL), then the notify.
 * Large writes are split over the link's sockets; the receiver bumps the notify once every
 * fragment landed. */
#ifndef TCP_INTERNAL_H
#define TCP_INTERNAL_H

#include <liburing.h>

#include "hal/net/net_internal.h"

#define TCP_MAGIC 0x4f484e54u  /* "OHNT": handshake and every write header */
#define TCP_VERSION 1u
#define TCP_BATCH_OPS 64       /* writes per sendmsg */
#define TCP_FRAG_MIN (256u << 10)
#define TCP_ZC_MIN (64u << 10) /* payload bytes of a batch from which zero copy pays */

/* On the wire before each write's payload (native byte order: one job, one architecture). */
typedef struct tcp_hdr {
    uint32_t magic;
    uint32_t notify;   /* NET_NOTIFY_NONE or the target's notify id */
    uint64_t addr;     /* target address */
    uint64_t len;
    uint64_t seq;      /* the write's number on its link (fragments share it) */
    uint32_t nfrags;
    uint32_t pad;
} tcp_hdr;

/* Sent once per socket by the connecting side. */
typedef struct tcp_hello {
    uint32_t magic;
    uint32_t version;
    uint64_t link_id;  /* random: groups the sockets of one link at the acceptor */
    uint32_t nsocks;
    uint32_t idx;
} tcp_hello;

typedef struct tcp_write tcp_write;
typedef struct tcp_link tcp_link;
typedef struct tcp_sock tcp_sock;
typedef struct tcp_transport tcp_transport;

/* One fragment of a write: a header and its payload, sent on one socket. */
typedef struct tcp_op {
    struct tcp_op *next;
    tcp_write *w;
    tcp_hdr hdr;
    const char *src;
} tcp_op;

/* Control messages and writes from other threads to the progress thread. */
typedef struct tcp_req {
    struct tcp_req *next;
    int kind;                  /* 0: write (the write's own req, not freed), 1: add link, 2: close link */
    tcp_write *w;
    tcp_link *l;
} tcp_req;

struct tcp_write {
    tcp_link *link;
    uint64_t tag;
    uint32_t nfrags, left;  /* fragments not yet sent (progress thread only) */
    hal_result status;
    tcp_req req;            /* how it reaches the progress thread: one allocation per write */
    tcp_op frags[];
};

/* What the ring's user_data points at. */
enum tcp_ev_kind { TCP_EV_WAKE = 1, TCP_EV_SEND, TCP_EV_RECV };

/* One sendmsg (or sendmsg_zc) of up to TCP_BATCH_OPS ops on a socket. */
typedef struct tcp_batch {
    int kind;                  /* TCP_EV_SEND: must be first (user_data) */
    tcp_sock *s;
    tcp_op *ops[TCP_BATCH_OPS];
    uint32_t nops;
    struct iovec iov[2 * TCP_BATCH_OPS];
    struct msghdr msg;
    size_t total, sent;
    int zc, notifs;            /* zero-copy: notifications still to come */
    int sending;
    hal_result status;
} tcp_batch;

typedef struct tcp_recv_ev {
    int kind;                  /* TCP_EV_RECV */
    tcp_sock *s;
} tcp_recv_ev;

struct tcp_sock {
    int fd;
    uint32_t idx;
    tcp_link *link;
    tcp_op *q_head, *q_tail;   /* ops waiting to be sent (progress thread) */
    tcp_batch *cur;            /* the batch being sent, NULL if idle */
    uint32_t inflight;         /* SQEs of this socket not completed yet (incl. zc notifications) */
    /* receive state */
    tcp_recv_ev rev;
    int rstate;                /* 0: header, 1: payload */
    tcp_hdr rhdr;
    size_t rgot;
    int zc_copied;             /* the kernel reported copying our zero-copy sends */
    int eof;                   /* the peer ended this socket cleanly (between writes) */
};

/* Receive side, by write number: fragments still to land (reassembly), or the notify of a write
 * that landed before an earlier one (order). */
typedef struct tcp_asm {
    uint64_t seq;
    uint32_t left;             /* reassembly: fragments still to land; order: the notify */
    uint32_t used;
} tcp_asm;

typedef struct tcp_seqtab {
    tcp_asm *v;
    uint32_t cap, n;           /* cap: a power of two, or 0 */
} tcp_seqtab;

struct tcp_link {
    net_link base;             /* first */
    tcp_transport *tt;
    struct sockaddr_storage peer_addr;
    uint32_t nsocks;
    tcp_sock socks[NET_MAX_SOCKS];
    _Atomic uint64_t seq;
    _Atomic uint32_t rr;       /* round robin over sockets for unsplit writes */
    int failed, closing;
    uint32_t neof;             /* sockets the peer ended */
    tcp_seqtab asm_tab;        /* split writes being reassembled (progress thread) */
    tcp_seqtab ord;            /* writes that landed before an earlier one (progress thread) */
    uint64_t next_seq;         /* the first write of the peer not landed yet */
    struct tcp_link *next;     /* the transport's links (progress thread) */
    int released;              /* the thread will not touch it again (under tt->qmu) */
    struct tcp_link *unext;    /* the transport's open links, for destroy (under tt->qmu) */
};


struct tcp_transport {
    net_transport base;        /* first */
    struct io_uring ring;
    int zc;                    /* send_zc usable and wanted */
    int zc_report;             /* the kernel takes IORING_SEND_ZC_REPORT_USAGE (cleared on EINVAL) */
    uint32_t nsocks;
    int efd;
    uint64_t efd_val;
    int wake_kind;             /* TCP_EV_WAKE (user_data target) */
    pthread_t thr;
    int stop;
    pthread_mutex_t qmu;
    pthread_cond_t qcv;        /* signalled when a link is released */
    tcp_req *rq_head, *rq_tail;
    _Atomic int wake_pending;
    tcp_link *links;           /* progress thread's list */
    tcp_link *ulinks;          /* links not closed yet (under qmu) */
    int lfd;
    /* sockets accepted whose link is not complete yet: grows, since every remote peer of a
     * communicator may connect its sockets at once, interleaved with the others' */
    struct tcp_pending { uint64_t link_id; uint32_t nsocks, got; int fds[NET_MAX_SOCKS];
                         struct sockaddr_storage peer; } *pend;
    uint32_t npend, pend_cap;
};

hal_result tcp_create(const net_config *cfg, net_transport **out);
/* tcp_conn.c */
hal_result tcp_listen(net_transport *t, const struct sockaddr *addr, socklen_t alen, struct sockaddr_storage *bound);
hal_result tcp_accept(net_transport *t, int timeout_ms, net_link **out);
hal_result tcp_connect(net_transport *t, const struct sockaddr *addr, socklen_t alen, int timeout_ms, net_link **out);
/* Socket options for data sockets: no delay, keepalive and user timeout so a vanished peer is
 * noticed within seconds. */
void tcp_sock_opts(int fd);
/* tcp_ring.c: the progress thread and its pieces */
void *tcp_progress(void *arg);
hal_result tcp_post(tcp_transport *tt, tcp_req *r);
void tcp_link_fail(tcp_link *l, int err, const char *what);
/* tcp_order.c */
/* The entry of seq (created if asked; NULL if absent or out of memory). */
tcp_asm *tcp_seqtab_get(tcp_seqtab *t, uint64_t seq, int create);
void tcp_seqtab_del(tcp_seqtab *t, tcp_asm *e);
void tcp_seqtab_free(tcp_seqtab *t);
/* Write seq of link l landed whole: fires its notify (NET_NOTIFY_NONE: none) once every earlier
 * write landed, with those that waited for it. -1 without memory. */
int tcp_order_landed(tcp_transport *tt, tcp_link *l, uint64_t seq, uint32_t notify);

#endif
