/* HAL conformance: virtual memory (reserve, physical chunks, map, unmap, release). */
#include "common/hal_testutil.h"

Test(hal_vmm, map_remap_keeps_contents)
{
    const hal_ops *h = ht_hal();
    if (!strcmp(h->name, "ascend"))
        cr_skip_test("hal/ascend does not map the HAL's VMM calls (aclrtReserveMemAddress & co): the runtime's "
                     "plans do not use them; they return HAL_E_NOT_SUPPORTED");
    hal_device *d = ht_open(h, 0);
    size_t g = h->vmm_granularity(d);
    cr_assert_gt(g, 0);
    void *va;
    hal_phys_mem *pm;
    HT_OK(h->vmm_reserve(d, 4 * g, &va));
    cr_assert_eq((uintptr_t)va % g, 0);
    HT_OK(h->vmm_phys_alloc(d, g, &pm));
    char *second = (char *)va + 2 * g;
    HT_OK(h->vmm_map(va, g, 0, pm));
    cr_assert_neq(h->vmm_map(va, g, 0, pm), HAL_OK, "range already mapped");
    HT_OK(h->mem_lookup(va, NULL, NULL));
    ht_fill(va, g, 5);
    /* A DMA through the mapping works like any device memory. */
    hal_stream *s;
    void *copy;
    HT_OK(h->stream_create(d, &s));
    HT_OK(h->mem_alloc(d, g, &copy));
    hal_dma_desc desc = {.kind = HAL_DMA_COPY, .dst = hal_ref_ptr(copy), .src = hal_ref_ptr(va), .bytes = g};
    HT_OK(h->dma_batch(s, &desc, 1));
    HT_OK(h->stream_sync(s, -1));
    cr_assert(memcmp(copy, va, g) == 0);
    cr_assert_neq(h->vmm_phys_free(pm), HAL_OK, "chunk still mapped");
    cr_assert_neq(h->vmm_release(d, va), HAL_OK, "range still mapped");
    HT_OK(h->vmm_unmap(va));
    /* The chunk keeps its contents when mapped elsewhere. */
    HT_OK(h->vmm_map(second, g, 0, pm));
    cr_assert(memcmp(second, copy, g) == 0);
    HT_OK(h->vmm_unmap(second));
    HT_OK(h->vmm_phys_free(pm));
    HT_OK(h->vmm_release(d, va));
    cr_assert_neq(h->vmm_release(d, va), HAL_OK, "double release");
    HT_OK(h->stream_destroy(s));
    HT_OK(h->device_close(d));
}
