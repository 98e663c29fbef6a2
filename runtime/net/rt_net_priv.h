/* runtime/net's own state (rt_net.h is what the rest of the runtime uses). */
#ifndef RT_NET_PRIV_H
#define RT_NET_PRIV_H

#include "hal/net/net.h"
#include "runtime/net/rt_net.h"

#define RT_NET_NOTIFY_HELLO 0u /* the first notify of every transport: the hello counter */

/* What a rank tells a remote peer over the link at init (written into the peer's hello table). */
typedef struct rt_net_hello {
    uint64_t mirror;       /* address of the mirror of the peer's control block here */
    uint64_t ctrl;         /* address of my own control block (p2p taken marks land there) */
    uint32_t mirror_rkey, scratch_rkey, inbox_rkey, ctrl_rkey;
    uint32_t notify_base;  /* net notify of (the peer, slot k) here: notify_base + k; + RT_SLOTS: abort */
    uint32_t valid;
} rt_net_hello;

typedef struct rt_net_peer {
    net_link *link;       /* outgoing: this rank's writes to the peer */
    rt_ctrl *mirror;      /* local mirror of the peer's control block */
    net_mr *mirror_mr;
    uint64_t hello_raddr; /* my entry in the peer's hello table */
    uint32_t hello_rkey;
    rt_comm *c;           /* the abort notify's argument: (c, p) */
    uint32_t p;
} rt_net_peer;

struct rt_net {
    net_transport *t;
    rt_net_hello *hello;   /* [nranks] received: hello[p] is what remote peer p told me */
    net_mr *hello_mr;
    uint64_t hello_count;  /* hellos landed */
    rt_net_hello *mine;    /* [nranks] sent: what I told remote peer p */
    rt_net_peer *peer;     /* [nranks] */
    net_link **in;         /* accepted links (the peers' writes to me) */
    uint32_t nin, nremote;
    net_mr *scratch_mr, *inbox_mr, *ctrl_mr;
    uint32_t one;          /* the destroyed word a leave writes: a source verbs can register */
    bool listening;        /* free_listener is registered with the HAL (rt_net_mem_listen) */
    uint64_t free_listener;
    char ifname[64];       /* the interface the links listen on, for log lines */
    _Atomic uint64_t sent_bytes, sent_writes; /* plan copies to other servers, logged at destroy */
};
typedef struct rt_net rt_net;

/* Device memory registrations (rt_net_mem.c); hal and t given, so tests can drive them alone. */
/* Makes t drop its registrations of device memory the HAL frees (hal_ops.mem_free_listen); without
 * such a HAL op *listening stays false and HAL_OK is returned. */
hal_result rt_net_mem_listen(const hal_ops *hal, net_transport *t, bool *listening, uint64_t *id);
/* Before t goes: no listener call runs after it. */
void rt_net_mem_unlisten(const hal_ops *hal, bool *listening, uint64_t id);
/* Registers device memory from p to the end of its allocation with t (cached; a cached range that
 * reaches past that end was made on freed memory and is replaced): the rkey. HAL_E_FOREIGN if p
 * is not device memory. */
hal_result rt_net_mem_reg(const hal_ops *hal, net_transport *t, void *p, uint32_t *rkey);

#endif
