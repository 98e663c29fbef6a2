/* HAL conformance: device memory allocation, free, lookup. */
#include "common/hal_testutil.h"

Test(hal_mem, alloc_free_lookup)
{
    const hal_ops *h = ht_hal();
    hal_device *d = ht_open(h, 0);
    hal_device_info info;
    HT_OK(h->device_info(d, &info));
    cr_assert_gt(info.mem_total, 0);
    uint64_t free0 = info.mem_free;

    void *a = NULL, *b = NULL;
    HT_OK(h->mem_alloc(d, 1000, &a));
    HT_OK(h->mem_alloc(d, 1 << 20, &b));
    cr_assert_neq(a, b);
    cr_assert_eq((uintptr_t)a % 512, 0, "allocations are 512 B aligned");
    memset(a, 0x5a, 1000);
    memset(b, 0xa5, 1 << 20);
    HT_OK(h->device_info(d, &info));
    cr_assert_lt(info.mem_free, free0);

    hal_device_handle owner;
    uint64_t after = 0;
    HT_OK(h->mem_lookup((char *)b + 100, &owner, &after));
    cr_assert_eq(owner.device_id, info.handle.device_id);
    cr_assert_eq(owner.server_key, info.handle.server_key);
    cr_assert_geq(after, (1 << 20) - 100);
    HT_OK(h->mem_lookup(a, NULL, &after));
    cr_assert_geq(after, 1000);

    int host_var = 0;
    cr_assert_eq(h->mem_lookup(&host_var, NULL, NULL), HAL_E_FOREIGN);
    cr_assert_eq(h->mem_free(d, (char *)b + 512), HAL_E_FOREIGN, "interior pointer");
    cr_assert_eq(h->mem_free(d, &host_var), HAL_E_FOREIGN, "host pointer");
    HT_OK(h->mem_free(d, b));
    cr_assert_eq(h->mem_free(d, b), HAL_E_FOREIGN, "double free");
    cr_assert_eq(h->mem_lookup(b, NULL, NULL), HAL_E_FOREIGN, "freed memory");
    HT_OK(h->mem_free(d, a));
    HT_OK(h->device_info(d, &info));
    cr_assert_eq(info.mem_free, free0, "everything coalesced back");
    HT_OK(h->device_close(d));
}

Test(hal_mem, foreign_device_free)
{
    const hal_ops *h = ht_hal();
    hal_device *d0 = ht_open(h, 0), *d1 = ht_open(h, 1);
    void *p;
    HT_OK(h->mem_alloc(d0, 4096, &p));
    cr_assert_eq(h->mem_free(d1, p), HAL_E_FOREIGN, "freed through the wrong device");
    hal_device_handle owner;
    HT_OK(h->mem_lookup(p, &owner, NULL));
    hal_device_info i0;
    HT_OK(h->device_info(d0, &i0));
    cr_assert_eq(owner.device_id, i0.handle.device_id);
    HT_OK(h->mem_free(d0, p));
    HT_OK(h->device_close(d1));
    HT_OK(h->device_close(d0));
}

Test(hal_mem, many_allocations_reuse)
{
    const hal_ops *h = ht_hal();
    hal_device *d = ht_open(h, 0);
    enum { N = 200 };
    void *p[N];
    for (int i = 0; i < N; i++)
        HT_OK(h->mem_alloc(d, (size_t)(i + 1) * 777, &p[i]));
    for (int i = 0; i < N; i += 2)
        HT_OK(h->mem_free(d, p[i]));
    for (int i = 0; i < N; i += 2)
        HT_OK(h->mem_alloc(d, (size_t)(i + 1) * 777, &p[i]));
    for (int i = 0; i < N; i++)
        for (int j = i + 1; j < N; j++) {
            uint64_t ai, aj;
            HT_OK(h->mem_lookup(p[i], NULL, &ai));
            HT_OK(h->mem_lookup(p[j], NULL, &aj));
            char *a = p[i], *b = p[j];
            cr_assert(a + ai <= b || b + aj <= a, "allocations %d and %d overlap", i, j);
        }
    for (int i = 0; i < N; i++)
        HT_OK(h->mem_free(d, p[i]));
    HT_OK(h->device_close(d));
}

Test(hal_mem, zero_and_huge)
{
    const hal_ops *h = ht_hal();
    hal_device *d = ht_open(h, 0);
    hal_device_info info;
    HT_OK(h->device_info(d, &info));
    void *p = NULL;
    cr_assert_neq(h->mem_alloc(d, 0, &p), HAL_OK);
    cr_assert_eq(h->mem_alloc(d, info.mem_total + 1, &p), HAL_E_NOMEM);
    HT_OK(h->device_close(d));
}

/* mem_prefault maps device memory for writing without changing it, and refuses host memory. */
Test(hal_mem, prefault_keeps_contents)
{
    const hal_ops *h = ht_hal();
    if (!h->mem_prefault)
        cr_skip_test("%s has no mem_prefault (optional: pages then fault on first use)", h->name);
    hal_device *d = ht_open(h, 0);
    enum { N = 256 << 10 };
    char *p, *want = malloc(N);
    cr_assert_not_null(want);
    HT_OK(h->mem_alloc(d, N, (void **)&p));
    ht_fill(want, N, 11);
    memcpy(p, want, N / 2); /* half written, half as the heap handed it over */
    memcpy(want + N / 2, p + N / 2, N / 2);
    HT_OK(h->mem_prefault(p + 100, N - 200)); /* not page aligned: the pages around are mapped */
    cr_assert_eq(memcmp(p, want, N), 0, "prefault changed the memory");
    ht_fill(want, N, 12);
    memcpy(p, want, N);
    cr_assert_eq(memcmp(p, want, N), 0);
    cr_assert_eq(h->mem_prefault(want, 64), HAL_E_PARAM, "host memory is not the HAL's to map");
    cr_assert_eq(h->mem_prefault(p, 0), HAL_E_PARAM, "an empty range");
    HT_OK(h->mem_free(d, p));
    free(want);
    HT_OK(h->device_close(d));
}
