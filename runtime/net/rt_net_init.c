/* Communicator init and teardown of the links between servers (rt_net.h).
 *
 * The bootstrap serves one exchange, so what peers need beyond it goes over the links: before the
 * exchange every rank of a multi-rank communicator opens a transport, listens, and registers a
 * host "hello table" (one entry per rank); its address travels in the init blob. Afterwards, if
 * some peer is on another server, each rank makes a mirror of every remote peer's control block
 * and the net notifies that remote peers' signals will fire, connects to every remote peer, and
 * writes its entry (mirror, notify ids, rkeys) into the peer's hello table with notify 0, which
 * bumps the peer's hello counter. Init ends once every remote peer's hello landed. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>


#include "runtime/bootstrap/bootstrap.h"
#include "runtime/net/rt_net_priv.h"

static void notify_fire(void *arg)
{
    const hal_ops *hal = hal_get();
    if (hal && hal->notify_host_record)
        hal->notify_host_record(arg);
}

/* Links listen on the interface the bootstrap would use (HCCL_IF_IP, HCCL_SOCKET_IFNAME,
 * HCCL_SOCKET_FAMILY), in HCCL_HOST_SOCKET_PORT_RANGE: the address peers connect to must be one
 * they can reach, not a wildcard. */
static HcclResult listen_on_iface(rt_comm *c, net_transport *t, rt_net_blob *mine)
{
    int family = AF_INET;
    char ip[RT_IP_LEN];
    CHECK(rt_boot_pick_iface(&family, ip, c->net->ifname, sizeof c->net->ifname));
    struct sockaddr_storage a;
    memset(&a, 0, sizeof a);
    socklen_t alen = family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    void *where = family == AF_INET6 ? (void *)&((struct sockaddr_in6 *)&a)->sin6_addr
                                     : (void *)&((struct sockaddr_in *)&a)->sin_addr;
    a.ss_family = (sa_family_t)family;
    CHECK_ARG(inet_pton(family, ip, where) == 1, HCCL_E_PARA, "net", "rank %u: cannot listen on '%s'", c->rank, ip);
    hal_result rc = net_listen(t, (struct sockaddr *)&a, alen, &mine->addr);
    CHECK_ARG(rc == HAL_OK, rt_from_hal(rc), "net", "rank %u: links cannot listen on %s: %s", c->rank, ip,
              hal_result_name(rc));
    mine->alen = alen;
    return HCCL_SUCCESS;
}

static HcclResult prepare(rt_comm *c, rt_net_blob *mine)
{
    rt_net *n = calloc(1, sizeof *n);
    if (!n)
        return HCCL_E_MEMORY;
    c->net = n;
    n->hello = calloc(c->nranks, sizeof *n->hello);
    n->mine = calloc(c->nranks, sizeof *n->mine);
    n->peer = calloc(c->nranks, sizeof *n->peer);
    if (!n->hello || !n->mine || !n->peer)
        return HCCL_E_MEMORY;
    char name[48];
    snprintf(name, sizeof name, "rank %u", c->rank);
    /* A signal after a copy must be the copy's completion at the target: TCP fires a write's
     * notify only after every earlier write of the link landed, whatever its sockets
     * (HCCL_NSOCKS_PERTHREAD, default 2); verbs keeps that order within one QP only. */
    net_config cfg = {.kind = NET_KIND_NONE, .name = name, .nsocks = 0, .zerocopy = -1, .nqps = 1};
    CHECK_MAP(net_choose(&cfg.kind), rt_from_hal);
    mine->kind = cfg.kind;
    CHECK_MAP(net_create(&cfg, &n->t), rt_from_hal);
    /* before anything is registered: a buffer freed later must leave the cache (rt_net_mem.c) */
    CHECK_MAP(rt_net_mem_listen(c->hal, n->t, &n->listening, &n->free_listener), rt_from_hal);
    CHECK(listen_on_iface(c, n->t, mine));
    CHECK_MAP(net_mr_reg(n->t, n->hello, c->nranks * sizeof *n->hello, &n->hello_mr), rt_from_hal);
    uint32_t id;
    CHECK_MAP(net_notify_add_counter(n->t, &n->hello_count, &id), rt_from_hal);
    CHECK_ARG(id == RT_NET_NOTIFY_HELLO, HCCL_E_INTERNAL, "net", "rank %u: hello notify got id %u", c->rank, id);
    /* The control block is a write source (records, abort reasons) and, for p2p taken marks, a
     * target: one registration for all of it. */
    CHECK_MAP(net_mr_reg(n->t, c->ctrl, rt_ctrl_size(c->nranks), &n->ctrl_mr), rt_from_hal);
    n->one = 1;
    mine->hello = (uint64_t)(uintptr_t)n->hello;
    mine->hello_rkey = net_mr_rkey(n->hello_mr);
    return HCCL_SUCCESS;
}

/* Not fatal: a communicator on one server never uses the links. Without them (alen 0 in the
 * blob) a communicator that spans servers fails in rt_net_connect, on every rank that sees it. */
HcclResult rt_net_prepare(rt_comm *c, rt_net_blob *mine)
{
    memset(mine, 0, sizeof *mine);
    if (c->nranks < 2)
        return HCCL_SUCCESS;
    HcclResult rc = prepare(c, mine);
    if (rc != HCCL_SUCCESS) {
        c->prep_rc = rc;
        rt_net_teardown(c);
        memset(mine, 0, sizeof *mine);
    }
    return HCCL_SUCCESS;
}

/* A local mirror of remote peer p's control block: its header says live in p's epoch. */
static HcclResult make_mirror(rt_comm *c, uint32_t p, uint32_t epoch)
{
    rt_net *n = c->net;
    size_t bytes = rt_ctrl_size(c->nranks);
    void *m = NULL;
    CHECK_MAP(c->hal->mem_alloc(c->dev, bytes, &m), rt_from_hal);
    memset(m, 0, bytes);
    rt_ctrl *ctrl = m;
    atomic_store(&ctrl->abort_word, (uint64_t)epoch << 32);
    ctrl->magic = RT_CTRL_MAGIC;
    ctrl->nranks = c->nranks;
    n->peer[p].mirror = ctrl;
    c->peers[p].ctrl = ctrl;
    c->peers[p].ctrl_epoch = epoch;
    CHECK_MAP(net_mr_reg(n->t, m, bytes, &n->peer[p].mirror_mr), rt_from_hal);
    return HCCL_SUCCESS;
}

/* Remote peer p failed the communicator: its reason is in its mirror; fail this server too. */
static void abort_fire(void *arg)
{
    rt_net_peer *np = arg;
    rt_comm *c = np->c;
    const rt_ctrl *m = np->mirror;
    char msg[RT_MSG_LEN];
    snprintf(msg, sizeof msg, "%s", m->abort_msg[0] ? m->abort_msg : "a rank on another server failed");
    rt_abort_local(c, m->abort_code ? (HcclResult)m->abort_code : HCCL_E_REMOTE, msg);
}

/* Net notifies for every remote sender's slots, ids consecutive from the sender's base, then its
 * abort notify. */
static HcclResult add_notifies(rt_comm *c, uint32_t p, rt_net_hello *h)
{
    for (uint32_t k = 0; k < RT_SLOTS; k++) {
        uint32_t id;
        CHECK_MAP(net_notify_add(c->net->t, notify_fire, c->peers[p].from_peer[k], &id), rt_from_hal);
        if (k == 0)
            h->notify_base = id;
        CHECK_ARG(id == h->notify_base + k, HCCL_E_INTERNAL, "net", "rank %u: notify ids of peer %u not consecutive",
                  c->rank, p);
    }
    rt_net_peer *np = &c->net->peer[p];
    np->c = c;
    np->p = p;
    uint32_t id;
    CHECK_MAP(net_notify_add(c->net->t, abort_fire, np, &id), rt_from_hal);
    CHECK_ARG(id == h->notify_base + RT_SLOTS, HCCL_E_INTERNAL, "net", "rank %u: abort notify of peer %u", c->rank, p);
    return HCCL_SUCCESS;
}

static HcclResult local_side(rt_comm *c, const rt_net_blob *const *all)
{
    rt_net *n = c->net;
    if (c->scratch)
        CHECK_MAP(net_mr_reg(n->t, c->scratch, c->scratch_bytes, &n->scratch_mr), rt_from_hal);
    if (c->inbox)
        CHECK_MAP(net_mr_reg(n->t, c->inbox, rt_inbox_bytes(c), &n->inbox_mr), rt_from_hal);
    for (uint32_t p = 0; p < c->nranks; p++) {
        if (!c->peers[p].remote)
            continue;
        rt_net_hello *h = &n->mine[p];
        CHECK(make_mirror(c, p, c->peers[p].ctrl_epoch));
        CHECK(add_notifies(c, p, h));
        h->mirror = (uint64_t)(uintptr_t)n->peer[p].mirror;
        h->mirror_rkey = net_mr_rkey(n->peer[p].mirror_mr);
        h->scratch_rkey = net_mr_rkey(n->scratch_mr);
        h->inbox_rkey = net_mr_rkey(n->inbox_mr);
        h->ctrl = (uint64_t)(uintptr_t)c->ctrl;
        h->ctrl_rkey = net_mr_rkey(n->ctrl_mr);
        h->valid = 1;
        n->peer[p].hello_raddr = all[p]->hello + (uint64_t)c->rank * sizeof(rt_net_hello);
        n->peer[p].hello_rkey = all[p]->hello_rkey;
        n->nremote++;
    }
    return HCCL_SUCCESS;
}

static HcclResult open_links(rt_comm *c, const rt_net_blob *const *all)
{
    rt_net *n = c->net;
    int timeout_ms = rt_bootstrap_timeout_s() * 1000;
    for (uint32_t p = 0; p < c->nranks; p++) {
        if (!c->peers[p].remote)
            continue;
        hal_result rc = net_connect(n->t, (const struct sockaddr *)&all[p]->addr, all[p]->alen, timeout_ms,
                                    &n->peer[p].link);
        CHECK_ARG(rc == HAL_OK, rt_from_hal(rc), "net", "rank %u: connecting to peer %u (server %u) failed: %s",
                  c->rank, p, c->server_of[p], hal_result_name(rc));
    }
    n->in = calloc(n->nremote ? n->nremote : 1, sizeof *n->in);
    if (!n->in)
        return HCCL_E_MEMORY;
    for (; n->nin < n->nremote; n->nin++) {
        hal_result rc = net_accept(n->t, timeout_ms, &n->in[n->nin]);
        CHECK_ARG(rc == HAL_OK, rt_from_hal(rc), "net",
                  "rank %u: only %u of %u peers on other servers connected within HCCL_CONNECT_TIMEOUT: %s", c->rank,
                  n->nin, n->nremote, hal_result_name(rc));
    }
    return HCCL_SUCCESS;
}

static HcclResult say_hello(rt_comm *c)
{
    rt_net *n = c->net;
    int timeout_ms = rt_bootstrap_timeout_s() * 1000;
    for (uint32_t p = 0; p < c->nranks; p++) {
        if (!c->peers[p].remote)
            continue;
        rt_net_peer *np = &n->peer[p];
        CHECK_MAP(net_write(np->link, &n->mine[p], sizeof n->mine[p], np->hello_raddr, np->hello_rkey,
                            RT_NET_NOTIFY_HELLO, 0), rt_from_hal);
    }
    hal_result rc = net_counter_wait(&n->hello_count, n->nremote, timeout_ms);
    CHECK_ARG(rc == HAL_OK, rt_from_hal(rc), "net", "rank %u: %llu of %u peers on other servers said hello: %s",
              c->rank, (unsigned long long)n->hello_count, n->nremote, hal_result_name(rc));
    for (uint32_t p = 0; p < c->nranks; p++) {
        if (!c->peers[p].remote)
            continue;
        CHECK_ARG(n->hello[p].valid, HCCL_E_INTERNAL, "net", "rank %u: peer %u's hello is missing", c->rank, p);
        CHECK_MAP(net_link_drain(n->peer[p].link, timeout_ms), rt_from_hal);
    }
    return HCCL_SUCCESS;
}

/* Every rank must use the same transport: a tcp rank cannot talk to a roce one. */
static HcclResult check_peers(rt_comm *c, const rt_net_blob *const *all)
{
    net_kind mine = net_transport_kind(c->net->t);
    for (uint32_t p = 0; p < c->nranks; p++) {
        if (!c->peers[p].remote)
            continue;
        CHECK_ARG(all[p]->alen, HCCL_E_NOT_SUPPORT, "net",
                  "comm %s: rank %u: rank %u (server %u) could not open its links to other servers (see its log)",
                  c->name, c->rank, p, c->server_of[p]);
        CHECK_ARG(all[p]->kind == (uint32_t)mine, HCCL_E_PARA, "net",
                  "comm %s: rank %u uses %s links but rank %u (server %u) uses %s: set the same HCCL_NET on every "
                  "rank", c->name, c->rank, net_kind_name(mine), p, c->server_of[p],
                  net_kind_name((net_kind)all[p]->kind));
    }
    return HCCL_SUCCESS;
}

/* Once per communicator (and rank): which transport, why, and where its links go out. */
static void log_choice(const rt_comm *c, uint32_t remote, const rt_net_blob *mine)
{
    const rt_net *n = c->net;
    char addr[96] = "?";
    const struct sockaddr_storage *a = &mine->addr;
    char ip[RT_IP_LEN] = "";
    if (a->ss_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)a)->sin6_addr, ip, sizeof ip);
    else
        inet_ntop(AF_INET, &((const struct sockaddr_in *)a)->sin_addr, ip, sizeof ip);
    snprintf(addr, sizeof addr, "%s", ip);
    const char *where = net_transport_where(n->t);
    OH_INFO("net", "comm %s: rank %u: links to %u peer(s) on other servers use %s (%s), interface %s (%s)%s%s",
            c->name, c->rank, remote, net_kind_name(net_transport_kind(n->t)), net_choose_reason(), n->ifname, addr,
            where[0] ? ", " : "", where);
}

HcclResult rt_net_connect(rt_comm *c, const rt_net_blob *const *all)
{
    uint32_t remote = 0;
    for (uint32_t p = 0; p < c->nranks; p++)
        remote += c->peers[p].remote;
    if (!remote) {
        rt_net_teardown(c); /* one server: no links */
        return HCCL_SUCCESS;
    }
    if (!c->net) { /* this rank's own failure first: it is the cause, the peers' are its echo */
        net_kind k;
        CHECK_ARG(net_choose(&k) == HAL_OK, c->prep_rc ? c->prep_rc : HCCL_E_NOT_SUPPORT, "net",
                  "comm %s: rank %u: %u peer(s) are on other servers but links cannot be made: %s", c->name, c->rank,
                  remote, net_choose_reason());
        CHECK_ARG(0, c->prep_rc ? c->prep_rc : HCCL_E_INTERNAL, "net",
                  "comm %s: rank %u: opening links to other servers failed earlier (see above): %s", c->name, c->rank,
                  HcclGetErrorString(c->prep_rc));
    }
    CHECK(check_peers(c, all));
    log_choice(c, remote, all[c->rank]);
    CHECK(local_side(c, all));
    CHECK(open_links(c, all));
    return say_hello(c);
}

hal_result rt_net_peer_error(const rt_comm *c, uint32_t p)
{
    if (!c->net || !c->peers[p].remote || !c->net->peer[p].link)
        return HAL_OK;
    return net_link_error(c->net->peer[p].link);
}

/* A clean leave, told to every remote peer before the links close (in order on each link): the
 * FINALIZE record HcclCommDestroy published as the next op, its PUB signal (a peer waiting in a
 * collective learns the destroy, as on one server), then the destroyed word of the peer's mirror
 * (its watchdog then takes the link's end for a leave, not a death). */
static void say_bye(rt_comm *c)
{
    rt_net *n = c->net;
    if (!c->ctrl || !n->nin)
        return;
    const rt_pub_record *rec = rt_ctrl_pub(c->ctrl, c->seq + 1);
    bool fin = atomic_load(&((rt_pub_record *)rec)->ready) == c->seq + 1 && rec->sig.cmd == HCCL_CMD_FINALIZE;
    uint64_t roff = (uint64_t)((const char *)rec - (const char *)c->ctrl);
    for (uint32_t p = 0; p < c->nranks; p++) {
        if (!c->peers[p].remote || !n->peer[p].link || !n->hello[p].valid)
            continue;
        const rt_net_hello *h = &n->hello[p];
        net_link *l = n->peer[p].link;
        net_link_quiet(l); /* the peer may be leaving too: a bye it never reads is no error */
        if (fin && net_write(l, rec, sizeof *rec, h->mirror + roff, h->mirror_rkey, NET_NOTIFY_NONE, 0) == HAL_OK)
            net_write(l, NULL, 0, 0, 0, h->notify_base + ALGO_SLOT_PUB, 0);
        /* rt_p2p_finalize's FINALIZE as my next receive from p: a peer blocked sending to me reads it */
        const rt_pub_record *pr = rt_ctrl_p2p(c->ctrl, p, c->peers[p].p2p_recvd + 1);
        uint64_t poff = (uint64_t)((const char *)pr - (const char *)c->ctrl);
        if (atomic_load(&((rt_pub_record *)pr)->ready) == c->peers[p].p2p_recvd + 1 &&
            pr->sig.cmd == HCCL_CMD_FINALIZE &&
            net_write(l, pr, sizeof *pr, h->mirror + poff, h->mirror_rkey, NET_NOTIFY_NONE, 0) == HAL_OK) {
            /* a peer blocked sending to me reads the FINALIZE; one blocked receiving from me wakes
             * on its data slot and finds its record not taken (rt_p2p_recv_task) */
            net_write(l, NULL, 0, 0, 0, h->notify_base + RT_SLOT_P2P_PUB, 0);
            net_write(l, NULL, 0, 0, 0, h->notify_base + ALGO_SLOT_P2P_DATA, 0);
        }
        net_write(l, &n->one, sizeof n->one, h->mirror + offsetof(rt_ctrl, destroyed), h->mirror_rkey, NET_NOTIFY_NONE, 0);
    }
    for (uint32_t p = 0; p < c->nranks; p++)
        if (c->peers[p].remote && n->peer[p].link)
            net_link_drain(n->peer[p].link, 1000); /* best effort: a dead peer fails it at once */
}

void rt_net_abort_push(rt_comm *c)
{
    rt_net *n = c->net;
    if (!n || !n->nin || !c->ctrl || atomic_load(&c->ctrl->abort) != 2)
        return; /* not connected yet (init failures reach remote peers through their timeouts) */
    uint64_t off = offsetof(rt_ctrl, abort_code);
    size_t len = sizeof c->ctrl->abort_code + sizeof c->ctrl->abort_msg;
    for (uint32_t p = 0; p < c->nranks; p++) {
        if (!c->peers[p].remote || !n->peer[p].link || !n->hello[p].valid)
            continue;
        const rt_net_hello *h = &n->hello[p];
        if (net_write(n->peer[p].link, &c->ctrl->abort_code, len, h->mirror + off, h->mirror_rkey, NET_NOTIFY_NONE,
                      0) == HAL_OK)
            net_write(n->peer[p].link, NULL, 0, 0, 0, h->notify_base + RT_SLOTS, 0);
    }
}

HcclResult rt_net_push_mailbox(rt_comm *c, bool with_info)
{
    rt_net *n = c->net;
    int timeout_ms = rt_bootstrap_timeout_s() * 1000;
    for (uint32_t p = 0; p < c->nranks; p++) {
        if (!c->peers[p].remote)
            continue;
        const rt_net_hello *h = &n->hello[p];
        net_link *l = n->peer[p].link;
        hal_result rc = HAL_OK;
        /* The link's sockets may land the tag before the info: the reader checks the info's own tag
         * and checksum (rt_mailbox). */
        if (with_info)
            rc = net_write(l, &c->ctrl->mailbox, sizeof c->ctrl->mailbox, h->mirror + offsetof(rt_ctrl, mailbox),
                           h->mirror_rkey, NET_NOTIFY_NONE, 0);
        if (rc == HAL_OK)
            rc = net_write(l, (const void *)&c->ctrl->mailbox_tag, sizeof c->ctrl->mailbox_tag,
                           h->mirror + offsetof(rt_ctrl, mailbox_tag), h->mirror_rkey, NET_NOTIFY_NONE, 0);
        if (rc == HAL_OK)
            rc = net_link_drain(l, timeout_ms);
        CHECK_ARG(rc == HAL_OK, rt_from_hal(rc), "net", "rank %u: telling rank %u (server %u) about a sub-communicator "
                  "failed: %s", c->rank, p, c->server_of[p], hal_result_name(rc));
    }
    return HCCL_SUCCESS;
}

/* The communicator's own registrations, before the transport goes (net_destroy frees only what
 * its cache still lists; one a free retired is freed by its last release). */
static void release_mrs(rt_net *n, uint32_t nranks)
{
    net_mr_release(n->hello_mr);
    net_mr_release(n->ctrl_mr);
    net_mr_release(n->scratch_mr);
    net_mr_release(n->inbox_mr);
    n->hello_mr = n->ctrl_mr = n->scratch_mr = n->inbox_mr = NULL;
    for (uint32_t p = 0; n->peer && p < nranks; p++) {
        net_mr_release(n->peer[p].mirror_mr);
        n->peer[p].mirror_mr = NULL;
    }
}

void rt_net_teardown(rt_comm *c)
{
    rt_net *n = c->net;
    if (!n)
        return;
    if (n->t && n->peer)
        say_bye(c);
    if (n->nin) {
        uint64_t made = 0;
        size_t cached = net_mem_cached(n->t, &made, NULL);
        OH_INFO("net", "comm %s: rank %u: links sent %llu payload bytes in %llu writes to peers on other servers; "
                "%zu memory registrations cached (%llu made)", c->name, c->rank,
                (unsigned long long)atomic_load(&n->sent_bytes), (unsigned long long)atomic_load(&n->sent_writes),
                cached, (unsigned long long)made);
    }
    c->net = NULL;
    rt_net_mem_unlisten(c->hal, &n->listening, n->free_listener); /* no listener call reaches n->t after it */
    release_mrs(n, c->nranks);
    if (n->t)
        net_destroy(n->t); /* closes every link; no callback runs after this */
    for (uint32_t p = 0; n->peer && p < c->nranks; p++) {
        if (n->peer[p].mirror) {
            c->peers[p].ctrl = NULL;
            c->hal->mem_free(c->dev, n->peer[p].mirror);
        }
    }
    free(n->in);
    free(n->peer);
    free(n->hello);
    free(n->mine);
    free(n);
}
