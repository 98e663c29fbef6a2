/* HcclCommRegister / HcclCommDeregister / HcclCommExchangeMem: CANN's hccl_ex.h calls that torch_npu
 * resolves with dlsym (docs/runtime.md, "Registered memory and symmetric windows").
 *
 * On CANN a registration makes user memory addressable by the communicator's peers (one-sided
 * access), and ExchangeMem hands it to the listed peers. Within an emulated server every device
 * address is valid in every process already, so registration is bookkeeping and validation here:
 * the memory must be this rank's device memory, the handle must be a live registration of the
 * communicator, the peers must be ranks of it. Handles are entries of a process-wide list (a
 * stale handle is an error code); a communicator's registrations go with HcclCommDestroy. */
#include <stdlib.h>

#include "runtime/rt_internal.h"

#define MOD "register"

typedef struct rt_reg {
    HcclComm comm;
    void *addr;
    uint64_t size;
    struct rt_reg *next;
} rt_reg;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static rt_reg *g_regs;

HcclResult HcclCommRegister(HcclComm comm, void *addr, uint64_t size, void **handle, uint32_t flag)
{
    rt_comm *c = NULL;
    CHECK(rt_comm_get(comm, __func__, &c));
    CHECK_ARG(addr && handle, HCCL_E_PTR, MOD, "%s: rank %u: null pointer (addr %p handle %p)", __func__, c->rank,
              addr, (void *)handle);
    (void)flag; /* CANN: reserved */
    CHECK_ARG(size > 0, HCCL_E_PARA, MOD, "%s: rank %u: size is 0", __func__, c->rank);
    CHECK(rt_check_buffer(c, __func__, "addr", addr, size));
    rt_reg *r = calloc(1, sizeof *r);
    if (!r)
        return HCCL_E_MEMORY;
    *r = (rt_reg){comm, addr, size, NULL};
    pthread_mutex_lock(&g_mu);
    r->next = g_regs;
    g_regs = r;
    pthread_mutex_unlock(&g_mu);
    *handle = r;
    return HCCL_SUCCESS;
}

/* The live registration `handle` of comm, or NULL. Lock held. */
static rt_reg **find_locked(HcclComm comm, const void *handle)
{
    for (rt_reg **pp = &g_regs; *pp; pp = &(*pp)->next)
        if (*pp == handle && (*pp)->comm == comm)
            return pp;
    return NULL;
}

HcclResult HcclCommDeregister(HcclComm comm, void *handle)
{
    rt_comm *c = NULL;
    CHECK(rt_comm_get(comm, __func__, &c));
    CHECK_ARG(handle, HCCL_E_PTR, MOD, "%s: rank %u: handle is NULL", __func__, c->rank);
    pthread_mutex_lock(&g_mu);
    rt_reg **pp = find_locked(comm, handle);
    rt_reg *r = pp ? *pp : NULL;
    if (r)
        *pp = r->next;
    pthread_mutex_unlock(&g_mu);
    CHECK_ARG(r, HCCL_E_PARA, MOD, "%s: rank %u: %p is not a registration of this communicator", __func__, c->rank,
              handle);
    free(r);
    return HCCL_SUCCESS;
}

HcclResult HcclCommExchangeMem(HcclComm comm, void *windowHandle, uint32_t *peerRanks, uint32_t peerRankNum)
{
    rt_comm *c = NULL;
    CHECK(rt_comm_get(comm, __func__, &c));
    CHECK_ARG(windowHandle, HCCL_E_PTR, MOD, "%s: rank %u: windowHandle is NULL", __func__, c->rank);
    CHECK_ARG(peerRanks || peerRankNum == 0, HCCL_E_PTR, MOD, "%s: rank %u: peerRanks is NULL (peerRankNum %u)",
              __func__, c->rank, peerRankNum);
    pthread_mutex_lock(&g_mu);
    bool live = find_locked(comm, windowHandle) != NULL;
    pthread_mutex_unlock(&g_mu);
    CHECK_ARG(live, HCCL_E_PARA, MOD, "%s: rank %u: %p is not a registration of this communicator", __func__, c->rank,
              windowHandle);
    for (uint32_t i = 0; i < peerRankNum; i++)
        CHECK_ARG(peerRanks[i] < c->nranks, HCCL_E_PARA, MOD, "%s: rank %u: peerRanks[%u]=%u is not a rank (rank size %u)",
                  __func__, c->rank, i, peerRanks[i], c->nranks);
    return HCCL_SUCCESS; /* the peers can address it already (same server) */
}

void rt_comm_register_destroyed(HcclComm comm)
{
    pthread_mutex_lock(&g_mu);
    for (rt_reg **pp = &g_regs; *pp;) {
        rt_reg *r = *pp;
        if (r->comm == comm) {
            *pp = r->next;
            free(r);
        } else {
            pp = &r->next;
        }
    }
    pthread_mutex_unlock(&g_mu);
}
