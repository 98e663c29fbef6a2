/* Registration cache (net_regcache.h): a sorted array of non-overlapping live ranges. Lookups
 * are a binary search; inserts and retirements shift the array, which is fine for the few
 * hundred buffers a communicator registers. */
#include <stdlib.h>
#include <string.h>

#include "common/oh_log.h"
#include "hal/net/net_regcache.h"

void net_rc_init(net_regcache *rc, const net_rc_ops *ops, void *ctx)
{
    memset(rc, 0, sizeof *rc);
    pthread_mutex_init(&rc->mu, NULL);
    rc->ops = *ops;
    rc->ctx = ctx;
}

static void entry_free(net_regcache *rc, net_rc_entry *e)
{
    rc->ops.dereg(rc->ctx, e->handle);
    rc->ndereg++;
    free(e);
}

void net_rc_fini(net_regcache *rc)
{
    for (size_t i = 0; i < rc->n; i++)
        entry_free(rc, rc->v[i]);
    free(rc->v);
    rc->v = NULL;
    rc->n = rc->cap = 0;
    pthread_mutex_destroy(&rc->mu);
}

/* Index of the first live entry whose end is above addr (it may or may not contain addr). */
static size_t first_after(const net_regcache *rc, uintptr_t addr)
{
    size_t lo = 0, hi = rc->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (rc->v[mid]->end <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Removes entries [i, j) from the index; each is freed now if unused, else when released. */
static void retire_range(net_regcache *rc, size_t i, size_t j)
{
    if (j == i)
        return;
    for (size_t k = i; k < j; k++) {
        net_rc_entry *e = rc->v[k];
        e->live = 0;
        if (e->refs == 0)
            entry_free(rc, e);
    }
    memmove(&rc->v[i], &rc->v[j], (rc->n - j) * sizeof rc->v[0]);
    rc->n -= j - i;
}

static net_rc_entry *covering(const net_regcache *rc, uintptr_t s, uintptr_t e)
{
    size_t i = first_after(rc, s);
    if (i < rc->n && rc->v[i]->start <= s && rc->v[i]->end >= e)
        return rc->v[i];
    return NULL;
}

static hal_result insert_at(net_regcache *rc, size_t i, net_rc_entry *e)
{
    if (rc->n == rc->cap) {
        size_t cap = rc->cap ? rc->cap * 2 : 16;
        net_rc_entry **v = realloc(rc->v, cap * sizeof *v);
        if (!v)
            return HAL_E_NOMEM;
        rc->v = v;
        rc->cap = cap;
    }
    memmove(&rc->v[i + 1], &rc->v[i], (rc->n - i) * sizeof rc->v[0]);
    rc->v[i] = e;
    rc->n++;
    return HAL_OK;
}

/* Registers the union of [s, e) and the live entries it overlaps, retiring those. */
static hal_result register_union(net_regcache *rc, uintptr_t s, uintptr_t e, net_rc_entry **out)
{
    size_t i = first_after(rc, s), j = i;
    while (j < rc->n && rc->v[j]->start < e)
        j++;
    if (j > i) {
        s = rc->v[i]->start < s ? rc->v[i]->start : s;
        e = rc->v[j - 1]->end > e ? rc->v[j - 1]->end : e;
    }
    net_rc_entry *ne = calloc(1, sizeof *ne);
    if (!ne)
        return HAL_E_NOMEM;
    ne->start = s;
    ne->end = e;
    hal_result rc2 = rc->ops.reg(rc->ctx, (void *)s, e - s, &ne->handle, &ne->lkey, &ne->rkey);
    if (rc2 != HAL_OK) {
        free(ne);
        return rc2;
    }
    rc->nreg++;
    retire_range(rc, i, j);
    rc2 = insert_at(rc, i, ne);
    if (rc2 != HAL_OK) {
        entry_free(rc, ne);
        return rc2;
    }
    ne->live = 1;
    *out = ne;
    return HAL_OK;
}

hal_result net_rc_get(net_regcache *rc, void *addr, size_t len, net_rc_entry **out)
{
    uintptr_t s = (uintptr_t)addr, e = s + (len ? len : 1);
    if (!addr || e < s)
        return HAL_E_PARAM;
    pthread_mutex_lock(&rc->mu);
    net_rc_entry *ent = covering(rc, s, e);
    hal_result r = HAL_OK;
    if (!ent)
        r = register_union(rc, s, e, &ent);
    if (r == HAL_OK) {
        ent->refs++;
        *out = ent;
    }
    pthread_mutex_unlock(&rc->mu);
    return r;
}

void net_rc_put(net_regcache *rc, net_rc_entry *e)
{
    pthread_mutex_lock(&rc->mu);
    if (--e->refs == 0 && !e->live)
        entry_free(rc, e);
    pthread_mutex_unlock(&rc->mu);
}

hal_result net_rc_find(net_regcache *rc, const void *addr, size_t len, net_rc_entry **out)
{
    uintptr_t s = (uintptr_t)addr, e = s + (len ? len : 1);
    if (e < s)
        return HAL_E_FOREIGN;
    pthread_mutex_lock(&rc->mu);
    net_rc_entry *ent = covering(rc, s, e);
    if (ent) {
        ent->refs++;
        *out = ent;
    }
    pthread_mutex_unlock(&rc->mu);
    return ent ? HAL_OK : HAL_E_FOREIGN;
}

size_t net_rc_invalidate(net_regcache *rc, const void *addr, size_t len)
{
    uintptr_t s = (uintptr_t)addr, e = s + len;
    if (!len || e < s)
        return 0;
    pthread_mutex_lock(&rc->mu);
    size_t i = first_after(rc, s), j = i;
    while (j < rc->n && rc->v[j]->start < e)
        j++;
    retire_range(rc, i, j);
    pthread_mutex_unlock(&rc->mu);
    return j - i;
}

size_t net_rc_count(net_regcache *rc)
{
    pthread_mutex_lock(&rc->mu);
    size_t n = rc->n;
    pthread_mutex_unlock(&rc->mu);
    return n;
}

size_t net_rc_stats(net_regcache *rc, uint64_t *nreg, uint64_t *ndereg)
{
    pthread_mutex_lock(&rc->mu);
    size_t n = rc->n;
    if (nreg)
        *nreg = rc->nreg;
    if (ndereg)
        *ndereg = rc->ndereg;
    pthread_mutex_unlock(&rc->mu);
    return n;
}
