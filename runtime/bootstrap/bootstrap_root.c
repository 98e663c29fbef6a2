/* The root's acceptor thread: serves one rendezvous on a listening socket, then exits.
 *
 * One poll() loop over the listener and every connection (all non-blocking, so a slow or dead rank
 * never stalls the others). Each connection sends hello + blob; the root checks it against the
 * first hello it accepted (preferring rank 0's), and once every rank is in, sends everyone all
 * blobs. On the first inconsistency, a vanished rank, or the deadline, it sends every rank the same
 * error message instead, so all ranks fail together, each with the full story. */
#define _GNU_SOURCE /* accept4 */
#include "runtime/bootstrap/bootstrap.h"

#include "common/oh_log.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* After the verdict, replies get this long to drain to slow readers. */
#define RT_ROOT_WRITE_GRACE_MS 30000

enum conn_state { C_HELLO, C_BLOB, C_READY, C_WRITE, C_DONE };

typedef struct conn {
    int fd;
    int state;
    int valid;           /* hello accepted: blob goes to all[rank] */
    rt_boot_hello hello;
    size_t got;          /* hello bytes read */
    uint64_t blob_left;
    rt_boot_reply reply; /* verdict being written */
    const char *payload;
    size_t sent;         /* bytes of reply + payload sent */
    char *own_err;       /* this connection's private rejection (wrong job) */
} conn;

typedef struct root {
    int lfd;
    rt_root_info ri;
    int64_t deadline;
    int timeout_s;
    int success, failed;
    HcclResult code;
    char msg[1024];
    int have_ref;
    rt_boot_hello ref;       /* the hello others are compared with */
    uint32_t arrived;        /* valid ranks with their blob in */
    uint32_t seen;           /* connections that sent a whole hello */
    uint32_t max_declared;   /* largest nranks anyone claimed: when to stop listening after a failure */
    rt_boot_hello *who;      /* per rank: who claimed it (pid 0 = nobody yet) */
    char *all;
    conn **conns;
    size_t nconns, cap;
} root;

static void verdicts_owed_add(int delta);

static void root_fail(root *r, HcclResult code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void root_fail(root *r, HcclResult code, const char *fmt, ...)
{
    if (r->failed || r->success)
        return;
    int off = snprintf(r->msg, sizeof r->msg, "rendezvous at root %s:%u (pid %u on %s) failed: ", r->ri.ip,
                       r->ri.port, r->ri.pid, r->ri.host);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->msg + off, sizeof r->msg - (size_t)off, fmt, ap);
    va_end(ap);
    r->failed = 1;
    r->code = code;
}

static void close_listener(root *r)
{
    if (r->lfd >= 0)
        close(r->lfd);
    r->lfd = -1;
}

/* Lists the ranks nobody claimed, as ranges, into buf. */
static void missing_ranks(const root *r, char *buf, size_t len)
{
    size_t off = 0;
    uint32_t n = r->ref.nranks;
    buf[0] = '\0';
    for (uint32_t i = 0; i < n && off + 24 < len; i++) {
        if (r->who[i].pid)
            continue;
        uint32_t j = i;
        while (j + 1 < n && !r->who[j + 1].pid)
            j++;
        off += (size_t)snprintf(buf + off, len - off, j > i ? "%s%u-%u" : "%s%u", off ? "," : "", i, j);
        i = j;
    }
}

/* Establishes the reference hello; allocates the gather buffer. 0 or -1 (failed). */
static int set_reference(root *r, const rt_boot_hello *h)
{
    if (h->nranks == 0 || h->nranks > RT_BOOT_MAX_RANKS ||
        (uint64_t)h->nranks * h->blob_size > RT_BOOT_MAX_TOTAL) {
        root_fail(r, HCCL_E_PARA, "rank %u (pid %u on %s) says nRanks=%u with %llu bytes per rank: out of range",
                  h->rank, h->pid, h->host, h->nranks, (unsigned long long)h->blob_size);
        return -1;
    }
    r->who = calloc(h->nranks, sizeof *r->who);
    r->all = malloc(h->nranks * h->blob_size + 1);
    if (!r->who || !r->all) {
        root_fail(r, HCCL_E_MEMORY, "out of memory for %u ranks", h->nranks);
        return -1;
    }
    r->ref = *h;
    r->have_ref = 1;
    return 0;
}

/* Checks one whole hello against the reference; 1 if it is a valid rank of this rendezvous. */
static int check_hello(root *r, const rt_boot_hello *h)
{
    if (h->nranks > r->max_declared)
        r->max_declared = h->nranks;
    if (r->failed)
        return 0;
    if (!r->have_ref && set_reference(r, h) < 0)
        return 0;
    const rt_boot_hello *f = &r->ref;
    if (h->nranks != f->nranks) {
        /* Name rank 0's view as the reference when rank 0 is the odd one out: it is the root's. */
        root_fail(r, HCCL_E_PARA, "rank %u says nRanks=%u but rank %u says nRanks=%u (every rank must pass the "
                  "same nRanks)", h->rank, h->nranks, f->rank, f->nranks);
    } else if (h->rank >= f->nranks) {
        root_fail(r, HCCL_E_PARA, "rank %u (pid %u on %s) is out of range: nRanks=%u, so ranks are 0..%u",
                  h->rank, h->pid, h->host, f->nranks, f->nranks - 1);
    } else if (h->blob_size != f->blob_size) {
        root_fail(r, HCCL_E_PARA, "rank %u exchanges %llu bytes but rank %u exchanges %llu (mixed OpenHCCL "
                  "versions?)", h->rank, (unsigned long long)h->blob_size, f->rank,
                  (unsigned long long)f->blob_size);
    } else if (r->who[h->rank].pid) {
        const rt_boot_hello *o = &r->who[h->rank];
        root_fail(r, HCCL_E_PARA, "rank %u joined twice (pid %u on %s and pid %u on %s): every rank id must be "
                  "unique", h->rank, o->pid, o->host, h->pid, h->host);
    } else {
        r->who[h->rank] = *h;
        return 1;
    }
    return 0;
}

static void start_reply(root *r, conn *c)
{
    c->state = C_WRITE;
    c->sent = 0;
    c->reply.magic = RT_BOOT_WIRE_MAGIC;
    if (c->own_err || r->failed) {
        c->payload = c->own_err ? c->own_err : r->msg;
        c->reply.status = c->own_err ? HCCL_E_PARA : (int32_t)r->code;
        c->reply.len = strlen(c->payload) + 1;
    } else {
        c->payload = r->all;
        c->reply.status = HCCL_SUCCESS;
        c->reply.len = (uint64_t)r->ref.nranks * r->ref.blob_size;
    }
}

static void conn_close(conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    if (c->state != C_DONE)
        verdicts_owed_add(-1);
    c->state = C_DONE;
}

/* A connection closed before the verdict: fatal if it had claimed a rank. */
static void conn_lost(root *r, conn *c)
{
    if (c->valid)
        root_fail(r, HCCL_E_TCP_TRANSFER, "rank %u (pid %u on %s) disconnected before every rank had joined "
                  "(did that process crash or exit?)", c->hello.rank, c->hello.pid, c->hello.host);
    conn_close(c);
}

static void hello_done(root *r, conn *c)
{
    const rt_boot_hello *h = &c->hello;
    if (h->magic != RT_BOOT_WIRE_MAGIC || h->version != RT_BOOT_INFO_VERSION) {
        conn_close(c); /* not one of ours */
        return;
    }
    r->seen++;
    if (h->job_id != r->ri.job_id) {
        char buf[256];
        snprintf(buf, sizeof buf, "rank %u used a stale root info: root %s:%u serves job %016llx, not %016llx "
                 "(pass the root info of this job's HcclGetRootInfo)", h->rank, r->ri.ip, r->ri.port,
                 (unsigned long long)r->ri.job_id, (unsigned long long)h->job_id);
        c->own_err = strdup(buf);
    } else {
        c->valid = check_hello(r, h);
    }
    c->blob_left = h->blob_size;
    c->state = C_BLOB;
}

/* Reads what is available on c. */
static void conn_read(root *r, conn *c)
{
    char scratch[65536];
    for (;;) {
        char *dst;
        size_t want;
        if (c->state == C_HELLO) {
            dst = (char *)&c->hello + c->got;
            want = sizeof c->hello - c->got;
        } else if (c->state == C_BLOB && c->blob_left > 0) {
            uint64_t off = (uint64_t)c->hello.rank * c->hello.blob_size + (c->hello.blob_size - c->blob_left);
            dst = (c->valid && !r->failed) ? r->all + off : scratch;
            want = c->blob_left < sizeof scratch || dst != scratch ? (size_t)c->blob_left : sizeof scratch;
        } else {
            /* Waiting for the verdict: the peer must stay silent; EOF means it died. */
            dst = scratch;
            want = 1;
        }
        ssize_t n = recv(c->fd, dst, want, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) {
            conn_lost(r, c);
            return;
        }
        if (c->state == C_HELLO) {
            c->got += (size_t)n;
            if (c->got == sizeof c->hello)
                hello_done(r, c);
        } else if (c->state == C_BLOB) {
            c->blob_left -= (uint64_t)n;
        }
        if (c->state == C_BLOB && c->blob_left == 0) {
            c->state = C_READY;
            if (c->valid && !r->failed)
                r->arrived++;
        }
        if (c->state == C_DONE)
            return;
    }
}

static void conn_write(conn *c)
{
    while (c->state == C_WRITE) {
        size_t hdr = sizeof c->reply, total = hdr + c->reply.len;
        const char *src = c->sent < hdr ? (const char *)&c->reply + c->sent : c->payload + (c->sent - hdr);
        size_t want = c->sent < hdr ? hdr - c->sent : total - c->sent;
        ssize_t n = send(c->fd, src, want, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n < 0) {
            conn_close(c); /* that rank is gone; it fails on its own side */
            return;
        }
        c->sent += (size_t)n;
        if (c->sent == total)
            conn_close(c); /* everything it sent was read, so this is a clean FIN */
    }
}

static void accept_all(root *r)
{
    while (r->lfd >= 0) {
        int fd = accept4(r->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return; /* EAGAIN, or a transient error (EMFILE...) retried on the next wakeup */
        if (r->nconns == r->cap) {
            size_t cap = r->cap ? r->cap * 2 : 16;
            conn **p = realloc(r->conns, cap * sizeof *p);
            if (!p) {
                close(fd);
                return;
            }
            r->conns = p;
            r->cap = cap;
        }
        conn *c = calloc(1, sizeof *c);
        if (!c) {
            close(fd);
            return;
        }
        c->fd = fd;
        r->conns[r->nconns++] = c;
        verdicts_owed_add(1);
    }
}

/* Deadline, completion and failure bookkeeping after each round of I/O. */
static void advance(root *r, int64_t now)
{
    if (!r->success && !r->failed && now >= r->deadline) {
        char miss[512];
        if (r->have_ref) {
            missing_ranks(r, miss, sizeof miss);
            root_fail(r, HCCL_E_TIMEOUT, "only %u of %u ranks joined within HCCL_CONNECT_TIMEOUT=%d s; ranks "
                      "never seen: %s (did they start, and can they reach this address? raise "
                      "HCCL_CONNECT_TIMEOUT if they start later)", r->arrived, r->ref.nranks, r->timeout_s, miss);
        } else {
            root_fail(r, HCCL_E_TIMEOUT, "no rank joined within HCCL_CONNECT_TIMEOUT=%d s", r->timeout_s);
        }
    }
    if (!r->failed && r->have_ref && r->arrived == r->ref.nranks) {
        r->success = 1;
        close_listener(r); /* nobody else belongs here: the port is free for the next job at once */
    }
    if (r->failed && (now >= r->deadline || r->seen >= r->max_declared))
        close_listener(r);
    for (size_t i = 0; i < r->nconns; i++) {
        conn *c = r->conns[i];
        if (c->state == C_READY && (r->success || r->failed || c->own_err))
            start_reply(r, c);
        else if ((c->state == C_HELLO || c->state == C_BLOB) && now >= r->deadline)
            conn_close(c);
    }
}

static int root_finished(root *r)
{
    if (r->lfd >= 0)
        return 0;
    for (size_t i = 0; i < r->nconns; i++)
        if (r->conns[i]->state != C_DONE)
            return 0;
    return 1;
}

static short conn_events(const conn *c)
{
    if (c->state == C_WRITE)
        return POLLOUT;
    return c->state == C_DONE ? 0 : POLLIN;
}

static void root_loop(root *r)
{
    struct pollfd *pfd = NULL;
    size_t pcap = 0;
    int64_t hard_stop = r->deadline + RT_ROOT_WRITE_GRACE_MS;
    while (!root_finished(r) && rt_now_ms() < hard_stop) {
        if (pcap < r->nconns + 1) {
            pcap = (r->nconns + 1) * 2;
            struct pollfd *p = realloc(pfd, pcap * sizeof *p);
            if (!p)
                break;
            pfd = p;
        }
        pfd[0] = (struct pollfd){.fd = r->lfd, .events = POLLIN};
        for (size_t i = 0; i < r->nconns; i++)
            pfd[i + 1] = (struct pollfd){.fd = r->conns[i]->fd, .events = conn_events(r->conns[i])};
        int64_t now = rt_now_ms();
        int64_t until = (r->success || r->failed) && r->lfd < 0 ? hard_stop : r->deadline;
        int wait = until > now ? (int)(until - now) : 0;
        int n = poll(pfd, r->nconns + 1, wait);
        if (n < 0 && errno != EINTR)
            break;
        size_t nc = r->nconns; /* accept_all may grow the array */
        for (size_t i = 0; n > 0 && i < nc; i++) {
            conn *c = r->conns[i];
            if (pfd[i + 1].revents & POLLOUT)
                conn_write(c);
            else if (pfd[i + 1].revents)
                conn_read(r, c);
        }
        if (n > 0 && (pfd[0].revents & POLLIN))
            accept_all(r);
        advance(r, rt_now_ms());
        for (size_t i = 0; i < r->nconns; i++)
            if (r->conns[i]->state == C_WRITE)
                conn_write(r->conns[i]);
    }
    free(pfd);
}

static void root_free(root *r)
{
    close_listener(r);
    for (size_t i = 0; i < r->nconns; i++) {
        conn_close(r->conns[i]);
        free(r->conns[i]->own_err);
        free(r->conns[i]);
    }
    free(r->conns);
    free(r->who);
    free(r->all);
    free(r);
}

/* Connections still owed their verdict, over every root of this process. The process that hosts
 * a root is often rank 0, which learns the verdict first and may exit at once: without waiting
 * at exit, the other ranks would read "connection closed" instead of the root's message (e.g.
 * which ranks never came). A root nobody is connected to owes nothing and does not hold the exit:
 * a root info fetched and never used, or a failed root that listens on only for late ranks. */
#define RT_ROOT_EXIT_WAIT_MS 2000
static pthread_mutex_t g_owed_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_owed_cv = PTHREAD_COND_INITIALIZER;
static unsigned g_verdicts_owed;
static pthread_once_t g_owed_once = PTHREAD_ONCE_INIT;

static void verdicts_drain_at_exit(void)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += RT_ROOT_EXIT_WAIT_MS / 1000;
    pthread_mutex_lock(&g_owed_mu);
    while (g_verdicts_owed && pthread_cond_timedwait(&g_owed_cv, &g_owed_mu, &until) == 0) {
    }
    pthread_mutex_unlock(&g_owed_mu);
}

static void verdicts_register_exit_hook(void)
{
    atexit(verdicts_drain_at_exit);
}

static void verdicts_owed_add(int delta)
{
    pthread_mutex_lock(&g_owed_mu);
    g_verdicts_owed += (unsigned)delta;
    pthread_cond_broadcast(&g_owed_cv);
    pthread_mutex_unlock(&g_owed_mu);
}

unsigned rt_boot_verdicts_owed(void)
{
    pthread_mutex_lock(&g_owed_mu);
    unsigned n = g_verdicts_owed;
    pthread_mutex_unlock(&g_owed_mu);
    return n;
}

static void *root_main(void *arg)
{
    root *r = arg;
    root_loop(r);
    if (r->failed)
        OH_INFO("bootstrap", "%s", r->msg);
    root_free(r);
    return NULL;
}

HcclResult rt_boot_root_start(int lfd, const rt_root_info *ri)
{
    root *r = calloc(1, sizeof *r);
    if (!r) {
        close(lfd);
        OH_ERR("bootstrap", "out of memory starting the root listener at %s:%u", ri->ip, ri->port);
        return HCCL_E_MEMORY;
    }
    r->lfd = lfd;
    r->ri = *ri;
    r->timeout_s = rt_bootstrap_timeout_s();
    r->deadline = rt_now_ms() + (int64_t)r->timeout_s * 1000;
    pthread_attr_t attr;
    pthread_t tid;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_once(&g_owed_once, verdicts_register_exit_hook);
    int err = pthread_create(&tid, &attr, root_main, r);
    pthread_attr_destroy(&attr);
    if (err) {
        OH_ERR("bootstrap", "cannot start the root listener thread for %s:%u: %s", ri->ip, ri->port, strerror(err));
        root_free(r);
        return HCCL_E_SYSCALL;
    }
    return HCCL_SUCCESS;
}
