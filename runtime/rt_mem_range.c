/* Registered VMM ranges (HcclCommSetMemoryRange / UnsetMemoryRange / ActivateCommMemory /
 * DeactivateCommMemory), CANN's zero-copy memory: docs/runtime.md, "Registered memory and
 * symmetric windows".
 *
 * As in CANN, a range set through one communicator is visible to every communicator of the
 * process on that device, so the registry is process-wide, keyed by device; like CANN's address
 * manager (reference-counted by communicators) it is dropped, activations and all, when the last
 * communicator of the process on that device is destroyed. A collective whose
 * buffer lies in a set range is accepted only if the buffer lies in activated memory (one
 * activation or several adjacent ones); a buffer in a reserved part nobody activated is refused.
 * Every misuse is HCCL_E_PARA with one log line, as CANN's ZeroCopyMemoryAgent returns. The
 * emulator's VMM mappings are visible to the peers' processes (hal/emu/emu_vmm_share.c), so
 * activated buffers are bound and addressed by peers directly, like any device memory. */
#include <stdlib.h>

#include "runtime/stream/rt_launch.h"

#define MOD "memrange"

typedef struct rt_active {
    char *va;
    size_t size;
    HcclComm user;      /* the last communicator whose collective used it */
    uint64_t user_seq;  /* ... and that collective's op number (upper bound) */
    struct rt_active *next;
} rt_active;

typedef struct rt_mem_range {
    hal_device_handle dev;
    char *base;
    size_t size;
    rt_active *active;
    struct rt_mem_range *next;
} rt_mem_range;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static rt_mem_range *g_ranges;
static _Atomic uint32_t g_nranges; /* collectives skip the registry while it is 0 */

typedef struct rt_dev_comms {
    hal_device_handle dev;
    uint32_t live; /* communicators of this process on dev */
    struct rt_dev_comms *next;
} rt_dev_comms;
static rt_dev_comms *g_devs;

static bool same_dev(const hal_device_handle *a, const hal_device_handle *b)
{
    return a->server_key == b->server_key && a->device_id == b->device_id;
}

static bool overlaps(const char *a, size_t an, const char *b, size_t bn)
{
    return a < b + bn && b < a + an;
}

/* Counts c among its device's communicators (once c is fully created). */
void rt_mem_range_comm_created(const rt_comm *c)
{
    pthread_mutex_lock(&g_mu);
    rt_dev_comms *d = g_devs;
    while (d && !same_dev(&d->dev, &c->dev_handle))
        d = d->next;
    if (!d && (d = calloc(1, sizeof *d)) != NULL) {
        d->dev = c->dev_handle;
        d->next = g_devs;
        g_devs = d;
    }
    if (d)
        d->live++;
    pthread_mutex_unlock(&g_mu);
}

static void free_range(rt_mem_range *r)
{
    while (r->active) {
        rt_active *a = r->active;
        r->active = a->next;
        free(a);
    }
    free(r);
}

/* The last communicator of the device is gone: so are the device's ranges. */
void rt_mem_range_comm_destroyed(const rt_comm *c)
{
    pthread_mutex_lock(&g_mu);
    rt_dev_comms **dp = &g_devs;
    while (*dp && !same_dev(&(*dp)->dev, &c->dev_handle))
        dp = &(*dp)->next;
    rt_dev_comms *d = *dp;
    if (d && --d->live == 0) {
        *dp = d->next;
        free(d);
        for (rt_mem_range **pp = &g_ranges; *pp;) {
            rt_mem_range *r = *pp;
            if (same_dev(&r->dev, &c->dev_handle)) {
                *pp = r->next;
                atomic_fetch_sub(&g_nranges, 1);
                free_range(r);
            } else {
                pp = &r->next;
            }
        }
    }
    pthread_mutex_unlock(&g_mu);
}

/* The set range of c's device that contains [p, p + n) (n >= 1), or NULL. Lock held. */
static rt_mem_range *range_containing(const rt_comm *c, const char *p, size_t n)
{
    for (rt_mem_range *r = g_ranges; r; r = r->next)
        if (same_dev(&r->dev, &c->dev_handle) && p >= r->base && p < r->base + r->size &&
            n <= (size_t)(r->base + r->size - p))
            return r;
    return NULL;
}

static rt_active *active_at(const rt_mem_range *r, const char *p)
{
    for (rt_active *a = r->active; a; a = a->next)
        if (p >= a->va && p < a->va + a->size)
            return a;
    return NULL;
}

HcclResult HcclCommSetMemoryRange(HcclComm comm, void *baseVirPtr, size_t size, size_t alignment, uint64_t flags)
{
    rt_comm *c = NULL;
    CHECK(rt_comm_get(comm, __func__, &c));
    CHECK_ARG(baseVirPtr, HCCL_E_PTR, MOD, "%s: rank %u: baseVirPtr is NULL", __func__, c->rank);
    CHECK_ARG(size > 0, HCCL_E_PARA, MOD, "%s: rank %u: size is 0", __func__, c->rank);
    CHECK_ARG(alignment == 0 && flags == 0, HCCL_E_PARA, MOD,
              "%s: rank %u: alignment=%zu and flags=%llu are reserved and must be 0", __func__, c->rank, alignment,
              (unsigned long long)flags);
    hal_device_handle owner;
    uint64_t after = 0;
    CHECK_ARG(c->hal->mem_lookup(baseVirPtr, &owner, &after) == HAL_OK && same_dev(&owner, &c->dev_handle) &&
                  after >= size,
              HCCL_E_PARA, MOD,
              "%s: rank %u: [%p, +%zu) is not address space of device %u (reserve it with aclrtReserveMemAddress)",
              __func__, c->rank, baseVirPtr, size, c->dev_handle.device_id);
    rt_mem_range *r = calloc(1, sizeof *r);
    if (!r)
        return HCCL_E_MEMORY;
    *r = (rt_mem_range){c->dev_handle, baseVirPtr, size, NULL, NULL};
    pthread_mutex_lock(&g_mu);
    for (rt_mem_range *o = g_ranges; o; o = o->next) {
        if (same_dev(&o->dev, &r->dev) && overlaps(o->base, o->size, r->base, size)) {
            pthread_mutex_unlock(&g_mu);
            free(r);
            OH_ERR(MOD, "%s: rank %u: [%p, +%zu) overlaps the range [%p, +%zu) set before", __func__, c->rank,
                   baseVirPtr, size, (void *)o->base, o->size);
            return HCCL_E_PARA;
        }
    }
    r->next = g_ranges;
    g_ranges = r;
    atomic_fetch_add(&g_nranges, 1);
    pthread_mutex_unlock(&g_mu);
    OH_INFO(MOD, "rank %u: memory range [%p, +%zu) set on device %u", c->rank, baseVirPtr, size,
            c->dev_handle.device_id);
    return HCCL_SUCCESS;
}

HcclResult HcclCommUnsetMemoryRange(HcclComm comm, void *baseVirPtr)
{
    rt_comm *c = NULL;
    CHECK(rt_comm_get(comm, __func__, &c));
    CHECK_ARG(baseVirPtr, HCCL_E_PTR, MOD, "%s: rank %u: baseVirPtr is NULL", __func__, c->rank);
    pthread_mutex_lock(&g_mu);
    rt_mem_range **pp = &g_ranges;
    while (*pp && !((*pp)->base == baseVirPtr && same_dev(&(*pp)->dev, &c->dev_handle)))
        pp = &(*pp)->next;
    rt_mem_range *r = *pp;
    HcclResult rc = HCCL_SUCCESS;
    if (!r) {
        OH_ERR(MOD, "%s: rank %u: %p is not the base of a range set by HcclCommSetMemoryRange", __func__, c->rank,
               baseVirPtr);
        rc = HCCL_E_PARA;
    } else if (r->active) {
        OH_ERR(MOD, "%s: rank %u: range %p still has memory activated at %p (HcclCommDeactivateCommMemory first)",
               __func__, c->rank, baseVirPtr, (void *)r->active->va);
        rc = HCCL_E_PARA;
    } else {
        *pp = r->next;
        atomic_fetch_sub(&g_nranges, 1);
        free(r);
    }
    pthread_mutex_unlock(&g_mu);
    return rc;
}

HcclResult HcclCommActivateCommMemory(HcclComm comm, void *virPtr, size_t size, size_t offset,
                                      aclrtDrvMemHandle handle, uint64_t flags)
{
    rt_comm *c = NULL;
    CHECK(rt_comm_get(comm, __func__, &c));
    CHECK_ARG(virPtr && handle, HCCL_E_PTR, MOD, "%s: rank %u: null pointer (virPtr %p handle %p)", __func__,
              c->rank, virPtr, handle);
    CHECK_ARG(size > 0, HCCL_E_PARA, MOD, "%s: rank %u: size is 0", __func__, c->rank);
    CHECK_ARG(offset == 0 && flags == 0, HCCL_E_PARA, MOD,
              "%s: rank %u: offset=%zu and flags=%llu are reserved and must be 0", __func__, c->rank, offset,
              (unsigned long long)flags);
    rt_active *a = calloc(1, sizeof *a);
    if (!a)
        return HCCL_E_MEMORY;
    a->va = virPtr;
    a->size = size;
    pthread_mutex_lock(&g_mu);
    rt_mem_range *r = range_containing(c, virPtr, size);
    rt_active *o = NULL;
    for (rt_active *x = r ? r->active : NULL; x && !o; x = x->next)
        if (overlaps(x->va, x->size, a->va, size))
            o = x;
    if (r && !o) {
        a->next = r->active;
        r->active = a;
    }
    pthread_mutex_unlock(&g_mu);
    if (!r || o) {
        free(a);
        if (!r)
            OH_ERR(MOD, "%s: rank %u: [%p, +%zu) is not inside a range set by HcclCommSetMemoryRange on device %u",
                   __func__, c->rank, virPtr, size, c->dev_handle.device_id);
        else
            OH_ERR(MOD, "%s: rank %u: [%p, +%zu) overlaps memory activated at [%p, +%zu)", __func__, c->rank, virPtr,
                   size, (void *)o->va, o->size);
        return HCCL_E_PARA;
    }
    return HCCL_SUCCESS;
}

/* True while the last communicator that used the activation has a launch at or before that use
 * not yet complete (p2p launches count as users: they carry no op number). */
static bool still_used(HcclComm user, uint64_t seq)
{
    rt_comm *u = user ? rt_comm_check(user) : NULL;
    if (!u)
        return false;
    pthread_mutex_lock(&u->lock);
    rt_launch_reclaim(u, false);
    bool busy = false;
    for (uint32_t i = 0; i < u->npending && !busy; i++) {
        const rt_launch_ctx *x = rt_pending_at(u, i);
        busy = x->seq == 0 || x->seq <= seq;
    }
    pthread_mutex_unlock(&u->lock);
    return busy;
}

HcclResult HcclCommDeactivateCommMemory(HcclComm comm, void *virPtr)
{
    rt_comm *c = NULL;
    CHECK(rt_comm_get(comm, __func__, &c));
    CHECK_ARG(virPtr, HCCL_E_PTR, MOD, "%s: rank %u: virPtr is NULL", __func__, c->rank);
    pthread_mutex_lock(&g_mu);
    rt_mem_range *r = range_containing(c, virPtr, 1);
    rt_active *a = r ? active_at(r, virPtr) : NULL;
    HcclComm user = a ? a->user : NULL;
    uint64_t seq = a ? a->user_seq : 0;
    pthread_mutex_unlock(&g_mu);
    CHECK_ARG(a && a->va == (char *)virPtr, HCCL_E_PARA, MOD,
              "%s: rank %u: %p is not the start of memory activated by HcclCommActivateCommMemory", __func__, c->rank,
              virPtr);
    /* The registry lock is not held here: still_used takes the user's communicator lock. */
    CHECK_ARG(!still_used(user, seq), HCCL_E_PARA, MOD,
              "%s: rank %u: memory at %p is still used by a collective in flight (op #%llu; synchronize its stream "
              "first)", __func__, c->rank, virPtr, (unsigned long long)seq);
    pthread_mutex_lock(&g_mu);
    HcclResult rc = HCCL_E_PARA; /* raced with another deactivate */
    r = range_containing(c, virPtr, 1);
    for (rt_active **pp = r ? &r->active : NULL; pp && *pp; pp = &(*pp)->next) {
        if ((*pp)->va == (char *)virPtr) {
            rt_active *gone = *pp;
            *pp = gone->next;
            free(gone);
            rc = HCCL_SUCCESS;
            break;
        }
    }
    pthread_mutex_unlock(&g_mu);
    return rc;
}

/* Activated bytes from p on, across adjacent activations of r. Lock held. */
static uint64_t activated_after(const rt_mem_range *r, const char *p, uint64_t need)
{
    uint64_t got = 0;
    const rt_active *a;
    while (got < need && (a = active_at(r, p + got)) != NULL)
        got += (uint64_t)(a->va + a->size - (p + got));
    return got;
}

static void note_use(const rt_mem_range *r, const rt_comm *c, const char *p, uint64_t bytes)
{
    for (rt_active *a = r->active; a; a = a->next)
        if (overlaps(a->va, a->size, p, bytes)) {
            a->user = c->handle;
            a->user_seq = c->seq + 1;
        }
}

bool rt_mem_ranges_set(void)
{
    return atomic_load_explicit(&g_nranges, memory_order_relaxed) != 0;
}

bool rt_mem_range_check(rt_comm *c, const char *api, const char *what, const void *p, uint64_t bytes,
                        HcclResult *verdict)
{
    if (atomic_load_explicit(&g_nranges, memory_order_relaxed) == 0)
        return false;
    pthread_mutex_lock(&g_mu);
    rt_mem_range *r = range_containing(c, p, 1);
    if (!r) {
        pthread_mutex_unlock(&g_mu);
        return false;
    }
    uint64_t got = activated_after(r, p, bytes);
    if (got >= bytes)
        note_use(r, c, p, bytes);
    pthread_mutex_unlock(&g_mu);
    *verdict = HCCL_SUCCESS;
    if (got < bytes) {
        OH_ERR("check", "%s: rank %u: %s=%p lies in the memory range [%p, +%zu) set by HcclCommSetMemoryRange, but "
               "only %llu of its %llu bytes are activated (aclrtMapMem + HcclCommActivateCommMemory)",
               api, c->rank, what, p, (void *)r->base, r->size, (unsigned long long)got, (unsigned long long)bytes);
        *verdict = HCCL_E_PARA;
    }
    return true;
}
