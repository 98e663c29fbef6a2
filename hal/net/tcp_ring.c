/* The TCP progress thread (tcp_internal.h): one io_uring for every socket of the transport.
 * Sends go out in batches (one sendmsg per socket carrying many writes), receives land straight
 * in the target memory, and a failing socket fails its whole link once, with one log line. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/oh_log.h"
#include "hal/net/tcp_internal.h"

#define TCP_MAX_RECV (1u << 30) /* one recv's length must fit the CQE's int result */

/* Kernel ABI (6.2+) that liburing 2.3's headers lack: ask the zero-copy notification to say
 * whether the kernel copied after all (loopback, veth: the pages are copied on delivery). */
#ifndef IORING_SEND_ZC_REPORT_USAGE
#define IORING_SEND_ZC_REPORT_USAGE (1U << 3)
#endif
#ifndef IORING_NOTIF_USAGE_ZC_COPIED
#define IORING_NOTIF_USAGE_ZC_COPIED (1U << 31)
#endif

static struct io_uring_sqe *get_sqe(tcp_transport *tt)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&tt->ring);
    while (!sqe) { /* the SQ is full: hand what we have to the kernel */
        io_uring_submit(&tt->ring);
        sqe = io_uring_get_sqe(&tt->ring);
    }
    return sqe;
}

static void arm_wake(tcp_transport *tt)
{
    struct io_uring_sqe *sqe = get_sqe(tt);
    io_uring_prep_read(sqe, tt->efd, &tt->efd_val, sizeof tt->efd_val, 0);
    io_uring_sqe_set_data(sqe, &tt->wake_kind);
}

/* ---- writes ---- */

static void frag_done(tcp_op *op, hal_result st)
{
    tcp_write *w = op->w;
    if (st != HAL_OK && w->status == HAL_OK)
        w->status = st;
    if (--w->left == 0) {
        net_complete(&w->link->base, w->tag, w->status);
        free(w);
    }
}

static hal_result link_status(tcp_link *l)
{
    hal_result e = net_link_error(&l->base);
    return e != HAL_OK ? e : HAL_E_PEER;
}

static void batch_maybe_finish(tcp_batch *b)
{
    if (b->sending || b->notifs)
        return;
    for (uint32_t i = 0; i < b->nops; i++)
        frag_done(b->ops[i], b->status);
    free(b);
}

static void submit_batch(tcp_transport *tt, tcp_batch *b)
{
    struct io_uring_sqe *sqe = get_sqe(tt);
    if (b->zc) {
        io_uring_prep_sendmsg_zc(sqe, b->s->fd, &b->msg, MSG_NOSIGNAL);
        sqe->ioprio |= tt->zc_report ? IORING_SEND_ZC_REPORT_USAGE : 0;
    } else
        io_uring_prep_sendmsg(sqe, b->s->fd, &b->msg, MSG_NOSIGNAL | MSG_WAITALL);
    io_uring_sqe_set_data(sqe, b);
    b->s->inflight++;
}

static void start_batch(tcp_transport *tt, tcp_sock *s)
{
    tcp_batch *b = calloc(1, sizeof *b);
    if (!b)
        return; /* retried on the next turn of the loop */
    b->kind = TCP_EV_SEND;
    b->s = s;
    size_t payload = 0;
    while (s->q_head && b->nops < TCP_BATCH_OPS) {
        tcp_op *op = s->q_head;
        s->q_head = op->next;
        b->iov[2 * b->nops] = (struct iovec){&op->hdr, sizeof op->hdr};
        b->iov[2 * b->nops + 1] = (struct iovec){(void *)op->src, op->hdr.len};
        b->ops[b->nops++] = op;
        payload += op->hdr.len;
        b->total += sizeof op->hdr + op->hdr.len;
        if (payload >= TCP_MAX_RECV)
            break;
    }
    if (!s->q_head)
        s->q_tail = NULL;
    b->msg.msg_iov = b->iov;
    b->msg.msg_iovlen = 2 * b->nops;
    b->zc = tt->zc && !s->zc_copied && payload >= TCP_ZC_MIN;
    b->sending = 1;
    s->cur = b;
    submit_batch(tt, b);
}

/* Skips the first k bytes of the batch's remaining iovecs (a short send). */
static void batch_advance(tcp_batch *b, size_t k)
{
    while (k) {
        struct iovec *v = b->msg.msg_iov;
        if (v->iov_len <= k) {
            k -= v->iov_len;
            b->msg.msg_iov++;
            b->msg.msg_iovlen--;
        } else {
            v->iov_base = (char *)v->iov_base + k;
            v->iov_len -= k;
            k = 0;
        }
    }
}

static void on_send(tcp_transport *tt, tcp_batch *b, struct io_uring_cqe *cqe)
{
    tcp_sock *s = b->s;
    if (cqe->flags & IORING_CQE_F_NOTIF) { /* zero copy: the kernel let go of the pages */
        if (tt->zc_report && ((uint32_t)cqe->res & IORING_NOTIF_USAGE_ZC_COPIED) && !s->zc_copied) {
            /* The path copies anyway (a local peer): zero copy only adds notifications here. */
            s->zc_copied = 1;
            OH_DBG("net", "%s: tcp link to %s copies on delivery; zero copy off for its socket %u", tt->base.name,
                   s->link->base.peer, s->idx);
        }
        s->inflight--;
        b->notifs--;
        batch_maybe_finish(b);
        return;
    }
    if (cqe->flags & IORING_CQE_F_MORE)
        b->notifs++;
    else
        s->inflight--;
    int res = cqe->res;
    if (res > 0) {
        b->sent += (size_t)res;
        if (b->sent < b->total && !s->link->failed) {
            batch_advance(b, (size_t)res);
            submit_batch(tt, b);
            return;
        }
    } else if ((res == -EINTR || res == -EAGAIN) && !s->link->failed) {
        submit_batch(tt, b);
        return;
    } else if (res == -EINVAL && b->zc && tt->zc_report && b->sent == 0) {
        /* A kernel before 6.2 refuses the usage report: zero copy without it. */
        tt->zc_report = 0;
        submit_batch(tt, b);
        return;
    }
    if (b->sent < b->total) {
        tcp_link_fail(s->link, res < 0 ? -res : EPIPE, "send");
        b->status = link_status(s->link);
    }
    b->sending = 0;
    s->cur = NULL;
    batch_maybe_finish(b);
}

/* ---- receives ---- */

static void arm_recv(tcp_transport *tt, tcp_sock *s)
{
    struct io_uring_sqe *sqe = get_sqe(tt);
    if (s->rstate == 0) {
        io_uring_prep_recv(sqe, s->fd, (char *)&s->rhdr + s->rgot, sizeof s->rhdr - s->rgot, MSG_WAITALL);
    } else {
        size_t left = s->rhdr.len - s->rgot;
        io_uring_prep_recv(sqe, s->fd, (char *)(uintptr_t)s->rhdr.addr + s->rgot,
                           left > TCP_MAX_RECV ? TCP_MAX_RECV : left, MSG_WAITALL);
    }
    io_uring_sqe_set_data(sqe, &s->rev);
    s->inflight++;
}

/* Fragments of split writes: returns 1 when the last one landed (-1 without memory). */
static int asm_landed(tcp_link *l, uint64_t seq, uint32_t nfrags)
{
    tcp_asm *e = tcp_seqtab_get(&l->asm_tab, seq, 1);
    if (!e)
        return -1;
    if (!e->left)
        e->left = nfrags;
    if (--e->left)
        return 0;
    tcp_seqtab_del(&l->asm_tab, e);
    return 1;
}

/* A header arrived: is it a write into memory we registered, with a notify we know? */
static int header_ok(tcp_transport *tt, tcp_sock *s)
{
    const tcp_hdr *h = &s->rhdr;
    char why[160] = "";
    if (h->magic != TCP_MAGIC || h->nfrags == 0)
        snprintf(why, sizeof why, "bad header (magic 0x%x)", h->magic);
    else if (h->notify != NET_NOTIFY_NONE && h->notify >= atomic_load(&tt->base.nnotify))
        snprintf(why, sizeof why, "write names notify %u, which was never added", h->notify);
    else if (h->len) {
        net_rc_entry *e;
        if (net_rc_find(&tt->base.rc, (void *)(uintptr_t)h->addr, h->len, &e) != HAL_OK)
            snprintf(why, sizeof why, "write of %llu bytes to 0x%llx is outside registered memory",
                     (unsigned long long)h->len, (unsigned long long)h->addr);
        else
            net_rc_put(&tt->base.rc, e); /* the owner must not free memory it exposes to writes */
    }
    if (!why[0])
        return 1;
    OH_ERR("net", "%s: tcp link from %s: %s; closing the link", tt->base.name, s->link->base.peer, why);
    tcp_link_fail(s->link, EPROTO, "receive");
    return 0;
}

static void landed(tcp_transport *tt, tcp_sock *s)
{
    const tcp_hdr *h = &s->rhdr;
    s->rstate = 0;
    s->rgot = 0;
    int whole = h->nfrags == 1 ? 1 : asm_landed(s->link, h->seq, h->nfrags);
    if (whole > 0)
        whole = tcp_order_landed(tt, s->link, h->seq, h->notify) < 0 ? -1 : 1;
    if (whole < 0)
        tcp_link_fail(s->link, ENOMEM, "reassembly");
}

static uint64_t link_pending(tcp_link *l)
{
    net_transport *t = &l->tt->base;
    pthread_mutex_lock(&t->mu);
    uint64_t n = l->base.posted - l->base.done;
    pthread_mutex_unlock(&t->mu);
    return n;
}

static void on_recv(tcp_transport *tt, tcp_sock *s, int res)
{
    s->inflight--;
    if (s->link->failed)
        return;
    if (res == -EINTR || res == -EAGAIN || res == -ENOBUFS) {
        arm_recv(tt, s);
        return;
    }
    if (res == 0 && s->rstate == 0 && s->rgot == 0) {
        /* A clean end between writes: the peer's other sockets may still carry data. The link
         * fails once every socket ended, or at once if we have writes the peer will never take. */
        s->eof = 1;
        if (++s->link->neof == s->link->nsocks || link_pending(s->link))
            tcp_link_fail(s->link, ECONNRESET, "receive (the peer closed the link)");
        return;
    }
    if (res <= 0) {
        tcp_link_fail(s->link, res == 0 ? EPIPE : -res, res == 0 ? "receive (closed by peer within a write)" : "receive");
        return;
    }
    s->rgot += (size_t)res;
    if (s->rstate == 0) {
        if (s->rgot < sizeof s->rhdr) {
            arm_recv(tt, s);
            return;
        }
        if (!header_ok(tt, s))
            return;
        s->rstate = 1;
        s->rgot = 0;
        if (s->rhdr.len == 0)
            landed(tt, s);
    } else if (s->rgot == s->rhdr.len) {
        landed(tt, s);
    }
    if (!s->link->failed)
        arm_recv(tt, s);
}

/* ---- links ---- */

void tcp_link_fail(tcp_link *l, int err, const char *what)
{
    if (l->failed)
        return;
    l->failed = 1;
    net_transport *t = &l->tt->base;
    net_link_fail(&l->base, l->closing ? HAL_E_ABORTED : HAL_E_PEER);
    uint64_t pending = link_pending(l);
    if (!l->closing)
        oh_log(pending && !atomic_load(&l->base.quiet) ? OH_LOG_ERROR : OH_LOG_INFO, "net",
               "%s: tcp link to %s failed in %s: %s (errno %d); failing %llu pending write(s)", t->name,
               l->base.peer, what, strerror(err), err, (unsigned long long)pending);
    for (uint32_t i = 0; i < l->nsocks; i++) {
        tcp_sock *s = &l->socks[i];
        shutdown(s->fd, SHUT_RDWR); /* completes the socket's SQEs in flight */
        while (s->q_head) {
            tcp_op *op = s->q_head;
            s->q_head = op->next;
            frag_done(op, link_status(l));
        }
        s->q_tail = NULL;
    }
}

static void queue_write(tcp_transport *tt, tcp_write *w)
{
    tcp_link *l = w->link;
    if (l->neof && !l->failed) /* the peer closed some sockets: it takes no more writes */
        tcp_link_fail(l, ECONNRESET, "write (the peer closed the link)");
    if (l->failed) {
        w->left = 1; /* fragments never queued: complete the write once */
        frag_done(&w->frags[0], link_status(l));
        return;
    }
    uint32_t base = atomic_fetch_add(&l->rr, 1);
    for (uint32_t i = 0; i < w->nfrags; i++) {
        tcp_op *op = &w->frags[i];
        tcp_sock *s = &l->socks[(base + i) % l->nsocks];
        op->next = NULL;
        if (s->q_tail)
            s->q_tail->next = op;
        else
            s->q_head = op;
        s->q_tail = op;
    }
    (void)tt;
}

static void take_requests(tcp_transport *tt)
{
    atomic_store(&tt->wake_pending, 0);
    pthread_mutex_lock(&tt->qmu);
    tcp_req *r = tt->rq_head;
    tt->rq_head = tt->rq_tail = NULL;
    pthread_mutex_unlock(&tt->qmu);
    while (r) {
        tcp_req *next = r->next;
        int kind = r->kind; /* a write's req is inside the write, which queue_write may free */
        if (kind == 0) {
            queue_write(tt, r->w);
        } else if (r->kind == 1) {
            r->l->next = tt->links;
            tt->links = r->l;
            for (uint32_t i = 0; i < r->l->nsocks; i++)
                arm_recv(tt, &r->l->socks[i]);
        } else {
            r->l->closing = 1;
            tcp_link_fail(r->l, ECANCELED, "close");
        }
        if (kind != 0)
            free(r);
        r = next;
    }
}

/* Closed links whose sockets have nothing in flight are handed back to net_link_close. */
static void release_links(tcp_transport *tt)
{
    for (tcp_link **pp = &tt->links; *pp;) {
        tcp_link *l = *pp;
        uint32_t busy = 0;
        for (uint32_t i = 0; i < l->nsocks; i++)
            busy += l->socks[i].inflight;
        if (!l->closing || busy) {
            pp = &l->next;
            continue;
        }
        *pp = l->next;
        for (uint32_t i = 0; i < l->nsocks; i++)
            close(l->socks[i].fd);
        pthread_mutex_lock(&tt->qmu);
        l->released = 1;
        pthread_cond_broadcast(&tt->qcv);
        pthread_mutex_unlock(&tt->qmu);
    }
}

static void start_sends(tcp_transport *tt)
{
    for (tcp_link *l = tt->links; l; l = l->next)
        for (uint32_t i = 0; i < l->nsocks && !l->failed; i++)
            if (!l->socks[i].cur && l->socks[i].q_head)
                start_batch(tt, &l->socks[i]);
}

static void dispatch(tcp_transport *tt, struct io_uring_cqe *cqe)
{
    int *kind = io_uring_cqe_get_data(cqe);
    if (*kind == TCP_EV_WAKE) {
        if (!__atomic_load_n(&tt->stop, __ATOMIC_ACQUIRE))
            arm_wake(tt);
    } else if (*kind == TCP_EV_SEND) {
        on_send(tt, (tcp_batch *)kind, cqe);
    } else {
        on_recv(tt, ((tcp_recv_ev *)kind)->s, cqe->res);
    }
}

void *tcp_progress(void *arg)
{
    tcp_transport *tt = arg;
    arm_wake(tt);
    for (;;) {
        take_requests(tt);
        start_sends(tt);
        release_links(tt);
        if (__atomic_load_n(&tt->stop, __ATOMIC_ACQUIRE) && !tt->links)
            break;
        int r = io_uring_submit_and_wait(&tt->ring, 1);
        if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY) {
            OH_ERR("net", "%s: io_uring_enter failed: %s; the tcp links stop", tt->base.name, strerror(-r));
            break;
        }
        struct io_uring_cqe *cqe;
        unsigned head, n = 0;
        io_uring_for_each_cqe(&tt->ring, head, cqe)
        {
            dispatch(tt, cqe);
            n++;
        }
        io_uring_cq_advance(&tt->ring, n);
    }
    return NULL;
}

hal_result tcp_post(tcp_transport *tt, tcp_req *r)
{
    r->next = NULL;
    pthread_mutex_lock(&tt->qmu);
    if (tt->rq_tail)
        tt->rq_tail->next = r;
    else
        tt->rq_head = r;
    tt->rq_tail = r;
    pthread_mutex_unlock(&tt->qmu);
    if (!atomic_exchange(&tt->wake_pending, 1)) {
        uint64_t one = 1;
        if (write(tt->efd, &one, sizeof one) != sizeof one) {
            OH_ERR("net", "%s: waking the tcp progress thread failed: %s", tt->base.name, strerror(errno));
            return HAL_E_SYSCALL;
        }
    }
    return HAL_OK;
}
