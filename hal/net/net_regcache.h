/* Registration cache: memory ranges registered once and reused until the memory is freed.
 *
 * Live entries never overlap and are kept sorted by start address (binary search). A request
 * covered by a live entry reuses it; one that overlaps live entries without being covered
 * registers the union and retires them (a verbs MR cannot grow). net_rc_invalidate (memory about
 * to be freed) retires every overlapping entry. A retired entry is deregistered when its last
 * user releases it, so a write in flight keeps its registration. Thread-safe (one mutex). */
#ifndef NET_REGCACHE_H
#define NET_REGCACHE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "hal/hal_types.h"

typedef struct net_rc_entry {
    uintptr_t start, end;  /* [start, end) */
    void *handle;          /* the registrar's (verbs: struct ibv_mr *) */
    uint32_t lkey, rkey;
    int refs;              /* users holding it (net_rc_get without net_rc_put) */
    int live;              /* in the index; 0 once retired */
} net_rc_entry;

typedef struct net_rc_ops {
    hal_result (*reg)(void *ctx, void *addr, size_t len, void **handle, uint32_t *lkey, uint32_t *rkey);
    void (*dereg)(void *ctx, void *handle);
} net_rc_ops;

typedef struct net_regcache {
    pthread_mutex_t mu;
    net_rc_ops ops;
    void *ctx;
    net_rc_entry **v;      /* live entries sorted by start */
    size_t n, cap;
    uint64_t nreg, ndereg; /* registrar calls, for tests and stats */
} net_regcache;

void net_rc_init(net_regcache *rc, const net_rc_ops *ops, void *ctx);
/* Deregisters everything (entries still held are freed too: call when no write is in flight). */
void net_rc_fini(net_regcache *rc);
/* A live entry covering [addr, addr+len), registering on a miss; holds a reference. */
hal_result net_rc_get(net_regcache *rc, void *addr, size_t len, net_rc_entry **out);
void net_rc_put(net_regcache *rc, net_rc_entry *e);
/* Like net_rc_get but never registers: HAL_E_FOREIGN when no live entry covers the range. */
hal_result net_rc_find(net_regcache *rc, const void *addr, size_t len, net_rc_entry **out);
/* Retires every live entry overlapping [addr, addr+len); returns how many. */
size_t net_rc_invalidate(net_regcache *rc, const void *addr, size_t len);
/* Live entries (tests). */
size_t net_rc_count(net_regcache *rc);
/* Live entries, and registrar calls so far (*nreg, *ndereg; either may be NULL). */
size_t net_rc_stats(net_regcache *rc, uint64_t *nreg, uint64_t *ndereg);

#endif
