/* Communicator handles. The HcclComm a user holds is never the rt_comm pointer: it names a slot
 * of a process-wide table and the slot's generation (handle = generation << 16 | slot). A slot's
 * generation is odd while its communicator lives and moves on when it is destroyed, so a
 * destroyed or stale handle is refused by comparing two numbers, without reading the freed
 * communicator, and can never reach a newer communicator that reuses the slot (the next
 * communicator usually does: the lowest free slot is taken).
 *
 * Using a handle on one thread while destroying it on another is a race in the caller (as in
 * CANN and NCCL): destroy retires the handle first, so the window is the length of a lookup. */
#include <pthread.h>

#include "runtime/rt_internal.h"

#define RT_HANDLE_SLOT_BITS 16
#define RT_HANDLE_SLOTS (1u << RT_HANDLE_SLOT_BITS)

typedef struct handle_slot {
    _Atomic uint64_t gen;     /* odd: live */
    _Atomic(rt_comm *) comm;
} handle_slot;

static handle_slot g_slots[RT_HANDLE_SLOTS]; /* zero pages until used */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static HcclComm encode(uint32_t slot, uint64_t gen)
{
    return (HcclComm)(uintptr_t)(gen << RT_HANDLE_SLOT_BITS | slot);
}

HcclResult rt_handle_new(rt_comm *c)
{
    pthread_mutex_lock(&g_lock);
    /* Lowest free slot: the table touches only as many pages as communicators live at once; a
     * reused slot's new generation keeps old handles refused. */
    for (uint32_t slot = 0; slot < RT_HANDLE_SLOTS; slot++) {
        handle_slot *s = &g_slots[slot];
        uint64_t gen = atomic_load(&s->gen);
        if (gen & 1)
            continue;
        atomic_store(&s->comm, c);
        atomic_store(&s->gen, gen + 1); /* publishes the pointer (seq_cst) */
        c->handle = encode(slot, gen + 1);
        pthread_mutex_unlock(&g_lock);
        return HCCL_SUCCESS;
    }
    pthread_mutex_unlock(&g_lock);
    OH_ERR("comm", "rank %u: %u communicators are alive in this process: destroy some first", c->rank,
           RT_HANDLE_SLOTS);
    return HCCL_E_MEMORY;
}

bool rt_handle_retire(rt_comm *c)
{
    uintptr_t v = (uintptr_t)c->handle;
    if (!v)
        return false;
    handle_slot *s = &g_slots[v % RT_HANDLE_SLOTS];
    uint64_t gen = v >> RT_HANDLE_SLOT_BITS;
    if (!atomic_compare_exchange_strong(&s->gen, &gen, gen + 1))
        return false; /* retired already (a destroy on another thread) */
    atomic_store(&s->comm, NULL);
    return true;
}

rt_comm *rt_comm_check(HcclComm comm)
{
    uintptr_t v = (uintptr_t)comm;
    uint64_t gen = v >> RT_HANDLE_SLOT_BITS;
    if (!(gen & 1))
        return NULL;
    handle_slot *s = &g_slots[v % RT_HANDLE_SLOTS];
    if (atomic_load(&s->gen) != gen)
        return NULL;
    rt_comm *c = atomic_load(&s->comm);
    return atomic_load(&s->gen) == gen ? c : NULL; /* not retired while we read the pointer */
}

HcclResult rt_comm_get(HcclComm comm, const char *api, rt_comm **out)
{
    CHECK_ARG(comm, HCCL_E_PTR, "comm", "%s: comm is NULL", api);
    rt_comm *c = rt_comm_check(comm);
    CHECK_ARG(c, HCCL_E_PARA, "comm",
              "%s: comm %p is not a live communicator (destroyed already, or not a handle from HcclCommInit*)", api,
              comm);
    *out = c;
    return HCCL_SUCCESS;
}
