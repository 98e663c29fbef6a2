/* The link interface (net.h): transport choice, dispatch to the implementation, and what every
 * implementation shares: completions, link counters, notifies, counter words. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/oh_log.h"
#include "hal/hal.h"
#include "hal/net/net_internal.h"
#include "hal/net/tcp_internal.h"
#include "hal/net/verbs_internal.h"

const char *net_kind_name(net_kind kind)
{
    return kind == NET_KIND_TCP ? "tcp" : kind == NET_KIND_ROCE ? "roce" : "none";
}

hal_result net_choose_from(const char *env, int have_device, net_kind *kind)
{
    if (!env || !*env || !strcmp(env, "auto")) {
        *kind = have_device ? NET_KIND_ROCE : NET_KIND_TCP;
        return HAL_OK;
    }
    if (!strcmp(env, "tcp")) {
        *kind = NET_KIND_TCP;
        return HAL_OK;
    }
    if (!strcmp(env, "roce")) {
        *kind = NET_KIND_ROCE;
        return have_device ? HAL_OK : HAL_E_NOT_SUPPORTED;
    }
    return HAL_E_PARAM;
}

static pthread_once_t choose_once_flag = PTHREAD_ONCE_INIT;
static net_kind choose_kind;
static hal_result choose_result;
static char choose_reason[400]; /* the longest line below with a 160-byte why */

static void choose_once(void)
{
    const char *env = getenv("HCCL_NET");
    char why[160] = "";
    int ndev = verbs_device_count(why, sizeof why);
    choose_result = net_choose_from(env, ndev > 0, &choose_kind);
    const char *shown = env && *env ? env : "auto";
    if (choose_result == HAL_E_PARAM)
        snprintf(choose_reason, sizeof choose_reason, "HCCL_NET=%s is invalid: use auto, roce or tcp", shown);
    else if (choose_result != HAL_OK)
        snprintf(choose_reason, sizeof choose_reason, "HCCL_NET=roce but no RDMA device is usable (%s); install "
                 "one (or Soft-RoCE: rdma link add rxe0 type rxe netdev eth0), or use HCCL_NET=tcp or auto", why);
    else if (ndev > 0)
        snprintf(choose_reason, sizeof choose_reason, "HCCL_NET=%s; %d RDMA device(s)", shown, ndev);
    else
        snprintf(choose_reason, sizeof choose_reason, "HCCL_NET=%s; %s", shown, why);
    if (choose_result != HAL_OK)
        OH_ERR("net", "%s", choose_reason);
    else
        OH_DBG("net", "links between servers use %s (%s)", net_kind_name(choose_kind), choose_reason);
}

const char *net_choose_reason(void)
{
    return choose_reason;
}

/* Decided and logged once per process: every communicator of a process uses the same kind. */
hal_result net_choose(net_kind *kind)
{
    pthread_once(&choose_once_flag, choose_once);
    *kind = choose_kind;
    return choose_result;
}

hal_result net_create(const net_config *cfg, net_transport **out)
{
    net_config c = cfg ? *cfg : (net_config){0};
    if (!out)
        return HAL_E_PARAM;
    if (c.kind == NET_KIND_NONE) {
        hal_result rc = net_choose(&c.kind);
        if (rc != HAL_OK)
            return rc;
    }
    if (c.kind == NET_KIND_TCP)
        return tcp_create(&c, out);
    if (c.kind == NET_KIND_ROCE)
        return verbs_create(&c, out);
    return HAL_E_PARAM;
}

void net_destroy(net_transport *t)
{
    if (t)
        t->ops->destroy(t);
}

net_kind net_transport_kind(const net_transport *t)
{
    return t ? t->kind : NET_KIND_NONE;
}

const char *net_transport_where(const net_transport *t)
{
    return t ? t->where : "";
}

hal_result net_listen(net_transport *t, const struct sockaddr *addr, socklen_t alen, struct sockaddr_storage *bound)
{
    return t ? t->ops->listen(t, addr, alen, bound) : HAL_E_PARAM;
}

hal_result net_accept(net_transport *t, int timeout_ms, net_link **out)
{
    return t && out ? t->ops->accept(t, timeout_ms, out) : HAL_E_PARAM;
}

hal_result net_connect(net_transport *t, const struct sockaddr *addr, socklen_t alen, int timeout_ms, net_link **out)
{
    return t && addr && out ? t->ops->connect(t, addr, alen, timeout_ms, out) : HAL_E_PARAM;
}

void net_link_close(net_link *l)
{
    if (l)
        l->t->ops->link_close(l);
}

const char *net_link_peer(const net_link *l)
{
    return l ? l->peer : "?";
}

hal_result net_link_error(const net_link *l)
{
    return l ? (hal_result)atomic_load(&l->err) : HAL_E_PARAM;
}

hal_result net_write(net_link *l, const void *src, size_t len, uint64_t raddr, uint32_t rkey, uint32_t notify,
                     uint64_t tag)
{
    if (!l || (len && !src))
        return HAL_E_PARAM;
    return l->t->ops->write(l, src, len, raddr, rkey, notify, tag);
}

/* ---- base structs ---- */

hal_result net_base_init(net_transport *t, const net_ops *ops, net_kind kind, const net_config *cfg,
                         const net_rc_ops *rcops, void *rcctx)
{
    t->ops = ops;
    t->kind = kind;
    snprintf(t->name, sizeof t->name, "%s", cfg->name ? cfg->name : "net");
    t->notifies = calloc(NET_MAX_NOTIFY, sizeof *t->notifies);
    if (!t->notifies)
        return HAL_E_NOMEM;
    net_rc_init(&t->rc, rcops, rcctx);
    pthread_mutex_init(&t->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&t->cv, &ca);
    pthread_condattr_destroy(&ca);
    return HAL_OK;
}

void net_base_fini(net_transport *t)
{
    net_cq_item *it = t->cq_head;
    while (it) {
        net_cq_item *n = it->next;
        free(it);
        it = n;
    }
    net_rc_fini(&t->rc);
    free(t->notifies);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
}

void net_link_init(net_link *l, net_transport *t, const struct sockaddr *peer)
{
    l->t = t;
    net_addr_str(peer, l->peer, sizeof l->peer);
    l->posted = l->done = l->nfailed = 0;
    atomic_store(&l->err, HAL_OK);
    atomic_store(&l->quiet, 0);
}

void net_posted(net_link *l, uint64_t n)
{
    pthread_mutex_lock(&l->t->mu);
    l->posted += n;
    pthread_mutex_unlock(&l->t->mu);
}

void net_complete(net_link *l, uint64_t tag, hal_result status)
{
    net_transport *t = l->t;
    net_cq_item *it = NULL;
    if (tag) {
        it = malloc(sizeof *it);
        if (!it)
            OH_ERR("net", "%s: no memory for the completion of write tag %llu to %s (status %s)", t->name,
                   (unsigned long long)tag, l->peer, hal_result_name(status));
    }
    if (status != HAL_OK)
        net_link_fail(l, status);
    pthread_mutex_lock(&t->mu);
    l->done++;
    l->nfailed += status != HAL_OK;
    if (it) {
        it->next = NULL;
        it->c = (net_completion){.tag = tag, .status = status, .link = l};
        if (t->cq_tail)
            t->cq_tail->next = it;
        else
            t->cq_head = it;
        t->cq_tail = it;
    }
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

int net_link_fail(net_link *l, hal_result rc)
{
    int expect = HAL_OK;
    return atomic_compare_exchange_strong(&l->err, &expect, (int)rc);
}

static void deadline_ts(struct timespec *ts, int timeout_ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += timeout_ms / 1000;
    ts->tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

int net_poll(net_transport *t, net_completion *out, int max)
{
    int n = 0;
    pthread_mutex_lock(&t->mu);
    while (n < max && t->cq_head) {
        net_cq_item *it = t->cq_head;
        t->cq_head = it->next;
        if (!t->cq_head)
            t->cq_tail = NULL;
        out[n++] = it->c;
        free(it);
    }
    pthread_mutex_unlock(&t->mu);
    return n;
}

hal_result net_wait(net_transport *t, net_completion *out, int timeout_ms)
{
    struct timespec ts;
    deadline_ts(&ts, timeout_ms < 0 ? 0 : timeout_ms);
    pthread_mutex_lock(&t->mu);
    while (!t->cq_head) {
        int r = timeout_ms < 0 ? pthread_cond_wait(&t->cv, &t->mu) : pthread_cond_timedwait(&t->cv, &t->mu, &ts);
        if (r == ETIMEDOUT && !t->cq_head) {
            pthread_mutex_unlock(&t->mu);
            return HAL_E_TIMEOUT;
        }
    }
    pthread_mutex_unlock(&t->mu);
    return net_poll(t, out, 1) == 1 ? HAL_OK : HAL_E_INTERNAL;
}

void net_link_quiet(net_link *l)
{
    if (l)
        atomic_store(&l->quiet, 1);
}

hal_result net_link_drain(net_link *l, int timeout_ms)
{
    net_transport *t = l->t;
    struct timespec ts;
    deadline_ts(&ts, timeout_ms < 0 ? 0 : timeout_ms);
    pthread_mutex_lock(&t->mu);
    while (l->done < l->posted) {
        int r = timeout_ms < 0 ? pthread_cond_wait(&t->cv, &t->mu) : pthread_cond_timedwait(&t->cv, &t->mu, &ts);
        if (r == ETIMEDOUT && l->done < l->posted) {
            pthread_mutex_unlock(&t->mu);
            OH_ERR("net", "%s: %llu write(s) to %s still pending after %d ms", t->name,
                   (unsigned long long)(l->posted - l->done), l->peer, timeout_ms);
            return HAL_E_TIMEOUT;
        }
    }
    uint64_t failed = l->nfailed;
    pthread_mutex_unlock(&t->mu);
    /* A peer that closed the link after its last write landed failed nothing of ours. */
    hal_result rc = net_link_error(l);
    return failed ? (rc != HAL_OK ? rc : HAL_E_PEER) : HAL_OK;
}

/* ---- memory ---- */

hal_result net_mr_reg(net_transport *t, void *addr, size_t len, net_mr **out)
{
    if (!t || !addr || !out)
        return HAL_E_PARAM;
    net_mr *mr = malloc(sizeof *mr);
    if (!mr)
        return HAL_E_NOMEM;
    hal_result rc = net_rc_get(&t->rc, addr, len, &mr->e);
    if (rc != HAL_OK) {
        OH_ERR("net", "%s: registering %zu bytes at %p failed: %s", t->name, len, addr, hal_result_name(rc));
        free(mr);
        return rc;
    }
    mr->t = t;
    *out = mr;
    return HAL_OK;
}

void net_mr_release(net_mr *mr)
{
    if (!mr)
        return;
    net_rc_put(&mr->t->rc, mr->e);
    free(mr);
}

uint32_t net_mr_rkey(const net_mr *mr)
{
    return mr ? mr->e->rkey : 0;
}

void net_mr_range(const net_mr *mr, void **addr, size_t *len)
{
    *addr = mr ? (void *)mr->e->start : NULL;
    *len = mr ? (size_t)(mr->e->end - mr->e->start) : 0;
}

void net_mem_invalidate(net_transport *t, void *addr, size_t len)
{
    if (t)
        net_rc_invalidate(&t->rc, addr, len);
}

size_t net_mem_cached(net_transport *t, uint64_t *made, uint64_t *dropped)
{
    return t ? net_rc_stats(&t->rc, made, dropped) : 0;
}

/* ---- notifies and counters ---- */

hal_result net_notify_add(net_transport *t, net_notify_fn fn, void *arg, uint32_t *id)
{
    if (!t || !fn || !id)
        return HAL_E_PARAM;
    pthread_mutex_lock(&t->mu);
    uint32_t n = atomic_load(&t->nnotify);
    if (n >= NET_MAX_NOTIFY) {
        pthread_mutex_unlock(&t->mu);
        OH_ERR("net", "%s: more than %u notifies", t->name, NET_MAX_NOTIFY);
        return HAL_E_NOMEM;
    }
    t->notifies[n] = (net_notify_ent){fn, arg};
    atomic_store_explicit(&t->nnotify, n + 1, memory_order_release);
    pthread_mutex_unlock(&t->mu);
    *id = n;
    return HAL_OK;
}

static void counter_fn(void *arg)
{
    net_counter_bump(arg);
}

hal_result net_notify_add_counter(net_transport *t, uint64_t *word, uint32_t *id)
{
    return word ? net_notify_add(t, counter_fn, word, id) : HAL_E_PARAM;
}

hal_result net_notify_fire(net_transport *t, uint32_t id)
{
    if (id >= atomic_load_explicit(&t->nnotify, memory_order_acquire))
        return HAL_E_PARAM;
    t->notifies[id].fn(t->notifies[id].arg);
    return HAL_OK;
}

/* The futex is the low 32 bits of the counter (little endian), as the emulator's notify word. */
static uint32_t *futex_word(const uint64_t *word)
{
    return (uint32_t *)(uintptr_t)word;
}

void net_counter_bump(uint64_t *word)
{
    __atomic_add_fetch(word, 1, __ATOMIC_RELEASE);
    syscall(SYS_futex, futex_word(word), FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

hal_result net_counter_wait(const uint64_t *word, uint64_t target, int timeout_ms)
{
    int64_t deadline = timeout_ms < 0 ? INT64_MAX : net_now_ms() + timeout_ms;
    for (;;) {
        uint64_t v = __atomic_load_n(word, __ATOMIC_ACQUIRE);
        if (v >= target)
            return HAL_OK;
        int64_t left = deadline - net_now_ms();
        if (left <= 0)
            return HAL_E_TIMEOUT;
        /* Slices of at most 200 ms: the low word may wrap to the value we sleep on. */
        if (left > 200)
            left = 200;
        struct timespec ts = {left / 1000, (left % 1000) * 1000000L};
        syscall(SYS_futex, futex_word(word), FUTEX_WAIT, (uint32_t)v, &ts, NULL, 0);
    }
}
