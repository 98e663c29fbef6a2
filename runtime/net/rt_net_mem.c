/* Device memory the links register (rt_net.h): user buffers, registered when a call publishes them
 * and cached by hal/net per range, and how the cache learns that such memory was freed.
 *
 * A cached registration outliving its memory is wrong, not only wasteful: a verbs MR pins the pages
 * it was made on, so after the application frees a buffer and a new allocation lands at the same
 * address, remote writes would land in the old pages. Two guards:
 * - the HAL's free listener (hal_ops.mem_free_listen, the emulator): every transport drops the
 *   registrations a free covers, before the memory goes; the next use registers again;
 * - an extent check at every registration (the only guard where the HAL has no listener): a user
 *   buffer is registered from its pointer to the end of its allocation (mem_lookup), and cached
 *   ranges never span two allocations, so a cached range that reaches past the allocation's end
 *   was made on memory since freed: it is dropped and the buffer registered anew. */
#include "runtime/net/rt_net_priv.h"

static void on_free(void *arg, void *base, size_t size)
{
    net_mem_invalidate(arg, base, size);
}

hal_result rt_net_mem_listen(const hal_ops *hal, net_transport *t, bool *listening, uint64_t *id)
{
    *listening = false;
    if (!hal->mem_free_listen || !hal->mem_free_unlisten)
        return HAL_OK; /* hal/ascend: the extent check below is all there is (docs/runtime.md) */
    CHECK(hal->mem_free_listen(on_free, t, id));
    *listening = true;
    return HAL_OK;
}

void rt_net_mem_unlisten(const hal_ops *hal, bool *listening, uint64_t id)
{
    if (*listening && hal->mem_free_unlisten(id) != HAL_OK)
        OH_ERR("net", "removing free listener %llu failed", (unsigned long long)id);
    *listening = false;
}

hal_result rt_net_mem_reg(const hal_ops *hal, net_transport *t, void *p, uint32_t *rkey)
{
    hal_device_handle owner;
    uint64_t bytes = 0;
    if (!p || hal->mem_lookup(p, &owner, &bytes) != HAL_OK || !bytes)
        return HAL_E_FOREIGN;
    net_mr *mr = NULL;
    CHECK(net_mr_reg(t, p, bytes, &mr)); /* cached: the same buffer next call is a lookup */
    void *s;
    size_t len;
    net_mr_range(mr, &s, &len);
    if ((uintptr_t)s + len - (uintptr_t)p > bytes) { /* made on memory freed since */
        OH_DBG("net", "registration [%p, +%zu) outlived its memory: %p has %llu bytes to its allocation's end", s, len,
               p, (unsigned long long)bytes);
        net_mr_release(mr);
        net_mem_invalidate(t, p, bytes);
        CHECK(net_mr_reg(t, p, bytes, &mr));
    }
    *rkey = net_mr_rkey(mr);
    net_mr_release(mr);
    return HAL_OK;
}

uint32_t rt_net_user_rkey(rt_comm *c, void *p)
{
    uint32_t k = 0;
    return rt_net_mem_reg(c->hal, c->net->t, p, &k) == HAL_OK ? k : 0;
}
