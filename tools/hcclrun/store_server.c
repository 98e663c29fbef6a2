/* hcclrun's key-value store: single-threaded, non-blocking, served from hcclrun's poll loop.
 * One request per connection (see runtime/bootstrap/store.h); a GET for a missing key parks until a SET
 * of that key arrives or its client gives up and disconnects. */
#define _GNU_SOURCE /* accept4 */
#include "hcclrun.h"

#include "runtime/bootstrap/bootstrap.h"
#include "runtime/bootstrap/store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct kv {
    char *key;
    char *val;
    uint32_t len;
} kv;

typedef struct sconn {
    int fd;
    char *in;             /* request bytes so far */
    size_t in_len, in_cap;
    int parked;           /* a GET waiting for its key */
    char *out;            /* response being written */
    size_t out_len, out_off;
} sconn;

struct hr_store {
    int lfd;
    kv *kvs;
    size_t nkv;
    sconn **conns;
    size_t nconns;
};

hr_store *hr_store_open(const char *addr, uint32_t *port)
{
    hr_store *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    int err = rt_sock_listen(AF_INET, addr, *port, &s->lfd, port);
    if (err) {
        fprintf(stderr, "[hcclrun] cannot start the store on %s: %s\n", addr, strerror(err));
        free(s);
        return NULL;
    }
    return s;
}

size_t hr_store_npoll(const hr_store *s)
{
    return s ? 1 + s->nconns : 0;
}

void hr_store_fill(const hr_store *s, struct pollfd *p)
{
    if (!s)
        return;
    p[0] = (struct pollfd){.fd = s->lfd, .events = POLLIN};
    for (size_t i = 0; i < s->nconns; i++) {
        const sconn *c = s->conns[i];
        p[i + 1] = (struct pollfd){.fd = c->fd, .events = (short)(c->out ? POLLOUT : POLLIN)};
    }
}

static kv *find(hr_store *s, const char *key, size_t klen)
{
    for (size_t i = 0; i < s->nkv; i++)
        if (strlen(s->kvs[i].key) == klen && !memcmp(s->kvs[i].key, key, klen))
            return &s->kvs[i];
    return NULL;
}

static void respond(sconn *c, int32_t status, const char *val, uint32_t len)
{
    rt_store_resp r = {RT_STORE_MAGIC, status, status ? 0 : len, 0};
    size_t n = sizeof r + (status ? 0 : len);
    c->out = malloc(n);
    if (!c->out) {
        shutdown(c->fd, SHUT_RDWR);
        return;
    }
    memcpy(c->out, &r, sizeof r);
    if (!status && len)
        memcpy(c->out + sizeof r, val, len);
    c->out_len = n;
    c->out_off = 0;
    c->parked = 0;
}

static int set_key(hr_store *s, const char *key, size_t klen, const char *val, uint32_t len)
{
    kv *e = find(s, key, klen);
    char *v = malloc(len ? len : 1);
    if (!v)
        return -1;
    memcpy(v, val, len);
    if (!e) {
        kv *p = realloc(s->kvs, (s->nkv + 1) * sizeof *p);
        char *k = strndup(key, klen);
        if (!p || !k) {
            free(v);
            free(k);
            if (p)
                s->kvs = p;
            return -1;
        }
        s->kvs = p;
        e = &s->kvs[s->nkv++];
        e->key = k;
    } else {
        free(e->val);
    }
    e->val = v;
    e->len = len;
    return 0;
}

/* Answers every parked GET whose key now exists. */
static void wake_parked(hr_store *s)
{
    for (size_t i = 0; i < s->nconns; i++) {
        sconn *c = s->conns[i];
        if (!c->parked)
            continue;
        const rt_store_req *q = (const rt_store_req *)c->in;
        kv *e = find(s, c->in + sizeof *q, q->key_len);
        if (e)
            respond(c, 0, e->val, e->len);
    }
}

/* Acts on a request once all of it is in. 1 = handled, 0 = need more bytes. */
static int try_request(hr_store *s, sconn *c)
{
    if (c->in_len < sizeof(rt_store_req))
        return 0;
    const rt_store_req *q = (const rt_store_req *)c->in;
    if (q->magic != RT_STORE_MAGIC || (q->op != RT_STORE_SET && q->op != RT_STORE_GET) || q->key_len == 0 ||
        q->key_len > RT_STORE_MAX_KEY || q->val_len > RT_STORE_MAX_VALUE) {
        respond(c, HCCL_E_PARA, NULL, 0);
        return 1;
    }
    size_t need = sizeof *q + q->key_len + (q->op == RT_STORE_SET ? q->val_len : 0);
    if (c->in_len < need)
        return 0;
    const char *key = c->in + sizeof *q;
    if (q->op == RT_STORE_SET) {
        int bad = set_key(s, key, q->key_len, key + q->key_len, q->val_len);
        respond(c, bad ? HCCL_E_MEMORY : 0, NULL, 0);
        if (!bad)
            wake_parked(s);
        return 1;
    }
    kv *e = find(s, key, q->key_len);
    if (e)
        respond(c, 0, e->val, e->len);
    else
        c->parked = 1;
    return 1;
}

static void conn_free(sconn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    free(c->in);
    free(c->out);
    free(c);
}

/* Reads request bytes; returns -1 when the connection should go. */
static int conn_read(hr_store *s, sconn *c)
{
    for (;;) {
        if (c->in_len == c->in_cap) {
            size_t cap = c->in_cap ? c->in_cap * 2 : 4096;
            if (cap > 2 * (size_t)RT_STORE_MAX_VALUE)
                return -1; /* larger than any valid request */
            char *p = realloc(c->in, cap);
            if (!p)
                return -1;
            c->in = p;
            c->in_cap = cap;
        }
        ssize_t n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (n <= 0)
            return -1; /* a parked GET whose client timed out, or a client that died */
        if (c->parked)
            continue; /* nothing more is expected; ignore */
        c->in_len += (size_t)n;
        if (!c->out && try_request(s, c) && c->out)
            return 0;
    }
}

/* Writes the response; returns -1 when done (or failed): the connection goes. */
static int conn_write(sconn *c)
{
    while (c->out_off < c->out_len) {
        ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (n < 0)
            return -1;
        c->out_off += (size_t)n;
    }
    return -1;
}

static void accept_all(hr_store *s)
{
    for (;;) {
        int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        sconn **p = realloc(s->conns, (s->nconns + 1) * sizeof *p);
        sconn *c = calloc(1, sizeof *c);
        if (p)
            s->conns = p;
        if (!p || !c) {
            free(c);
            close(fd);
            return;
        }
        c->fd = fd;
        s->conns[s->nconns++] = c;
    }
}

void hr_store_handle(hr_store *s, const struct pollfd *p, size_t n)
{
    if (!s)
        return;
    size_t nc = n > 1 ? n - 1 : 0;
    for (size_t i = 0; i < nc && i < s->nconns; i++) {
        sconn *c = s->conns[i];
        if (!p[i + 1].revents || c->fd < 0)
            continue;
        int gone = (p[i + 1].revents & POLLOUT) ? conn_write(c) : conn_read(s, c);
        if (!gone && c->out)
            gone = conn_write(c); /* a parked GET woken by this round, or a fresh response */
        if (gone) {
            close(c->fd);
            c->fd = -1;
        }
    }
    /* Responses created by wake_parked for connections not polled this round. */
    for (size_t i = 0; i < s->nconns; i++) {
        sconn *c = s->conns[i];
        if (c->fd >= 0 && c->out && c->out_off == 0 && conn_write(c)) {
            close(c->fd);
            c->fd = -1;
        }
    }
    size_t k = 0;
    for (size_t i = 0; i < s->nconns; i++) {
        if (s->conns[i]->fd < 0) {
            conn_free(s->conns[i]);
        } else {
            s->conns[k++] = s->conns[i];
        }
    }
    s->nconns = k;
    if (n > 0 && (p[0].revents & POLLIN))
        accept_all(s);
}

void hr_store_close(hr_store *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nconns; i++)
        conn_free(s->conns[i]);
    for (size_t i = 0; i < s->nkv; i++) {
        free(s->kvs[i].key);
        free(s->kvs[i].val);
    }
    free(s->kvs);
    free(s->conns);
    close(s->lfd);
    free(s);
}
