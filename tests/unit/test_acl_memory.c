/* ACL front: device/host memory, copies of every kind, memsets, and the asynchrony of
 * aclrtMemcpyAsync (a copy queued behind a held stream returns at once and lands only after
 * the hold is released). Written only against <acl/acl.h>. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <acl/acl.h>
#include "common/acl_fixture.h"


TestSuite(acl_memory, .init = acl_fixture_setup, .fini = acl_fixture_teardown);

/* A gate a host function blocks on until the test opens it: holds a stream without sleeping. */
typedef struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int open;
    int entered;
} gate;

#define GATE_INIT {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0}

static void gate_hold(void *arg)
{
    gate *g = arg;
    pthread_mutex_lock(&g->mu);
    g->entered = 1;
    pthread_cond_broadcast(&g->cv);
    while (!g->open)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

static void gate_open(gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->open = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

Test(acl_memory, malloc_free)
{
    void *p = NULL;
    cr_assert_eq(aclrtMalloc(&p, 1 << 20, ACL_MEM_MALLOC_HUGE_ONLY), ACL_SUCCESS);
    cr_assert_not_null(p);
    memset(p, 0xAB, 1 << 20); /* device memory is host-addressable on the emulator */
    cr_assert_eq(aclrtFree(p), ACL_SUCCESS);
    cr_assert_neq(aclrtFree(p), ACL_SUCCESS); /* double free */
    cr_assert_eq(aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
    cr_assert_eq(aclrtMalloc(NULL, 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
    cr_assert_eq(aclrtMalloc(&p, 16, (aclrtMemMallocPolicy)0x77), ACL_ERROR_INVALID_PARAM);
    cr_assert_eq(aclrtFree(NULL), ACL_ERROR_INVALID_PARAM);
}

Test(acl_memory, free_of_foreign_pointers_is_an_error)
{
    int local = 0;
    void *heap = malloc(64);
    void *d = NULL;
    cr_assert_eq(aclrtMalloc(&d, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    cr_assert_neq(aclrtFree(&local), ACL_SUCCESS);
    cr_assert_neq(aclrtFree(heap), ACL_SUCCESS);
    cr_assert_neq(aclrtFree((char *)d + 8), ACL_SUCCESS); /* inside, not the start */
    cr_assert_neq(aclrtFreeHost(heap), ACL_SUCCESS);
    cr_assert_neq(aclrtFreeHost(d), ACL_SUCCESS);
    cr_assert_eq(aclrtFree(d), ACL_SUCCESS);
    free(heap);
}

Test(acl_memory, malloc_without_device_fails)
{
    cr_assert_eq(aclrtResetDevice(0), ACL_SUCCESS);
    void *p = NULL;
    cr_assert_eq(aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_CONTEXT_NULL);
    cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
}

Test(acl_memory, host_memory)
{
    void *h = NULL;
    cr_assert_eq(aclrtMallocHost(&h, 8192), ACL_SUCCESS);
    memset(h, 1, 8192);
    cr_assert_eq(aclrtFreeHost(h), ACL_SUCCESS);
    cr_assert_neq(aclrtFreeHost(h), ACL_SUCCESS);
    cr_assert_eq(aclrtMallocHost(NULL, 8), ACL_ERROR_INVALID_PARAM);
    cr_assert_eq(aclrtFreeHost(NULL), ACL_ERROR_INVALID_PARAM);
}

Test(acl_memory, memcpy_every_kind)
{
    enum { N = 1000 };
    unsigned char src[N], dst[N];
    for (int i = 0; i < N; i++)
        src[i] = (unsigned char)(i * 13 + 1);
    void *d1, *d2;
    cr_assert_eq(aclrtMalloc(&d1, N, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    cr_assert_eq(aclrtMalloc(&d2, N, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpy(d1, N, src, N, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpy(d2, N, d1, N, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS);
    memset(dst, 0, N);
    cr_assert_eq(aclrtMemcpy(dst, N, d2, N, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    cr_assert_arr_eq(dst, src, N);
    memset(dst, 0, N);
    cr_assert_eq(aclrtMemcpy(dst, N, src, N, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);
    cr_assert_arr_eq(dst, src, N);
    memset(dst, 0, N);
    cr_assert_eq(aclrtMemcpy(dst, N, d1, N, ACL_MEMCPY_DEFAULT), ACL_SUCCESS);
    cr_assert_arr_eq(dst, src, N);
    cr_assert_eq(aclrtMemcpy(d1, N, src, 0, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_RT_PARAM_INVALID); /* CANN */
    cr_assert_eq(aclrtMemcpy(d1, N, d1, N, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS); /* dst == src */
    cr_assert_eq(aclrtMemcpyAsync(dst, N, src, N, ACL_MEMCPY_HOST_TO_HOST, NULL), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    aclrtFree(d1);
    aclrtFree(d2);
}

Test(acl_memory, memcpy_bad_arguments)
{
    unsigned char h[64];
    void *d;
    /* A multiple of any allocation rounding, so a copy past its end is past the allocation. */
    cr_assert_eq(aclrtMalloc(&d, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpy(d, 32, h, 64, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_RT_PARAM_INVALID); /* destMax */
    cr_assert_eq(aclrtMemcpy(NULL, 64, h, 64, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
    cr_assert_eq(aclrtMemcpy(d, 64, NULL, 64, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
    cr_assert_eq(aclrtMemcpy(d, 64, h, 64, (aclrtMemcpyKind)42), ACL_ERROR_RT_PARAM_INVALID);
    /* The kind says device, the pointer is not; or the range runs past the allocation. */
    cr_assert_neq(aclrtMemcpy(h, 64, h, 64, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    cr_assert_neq(aclrtMemcpy(h, 64, h, 64, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    cr_assert_neq(aclrtMemcpy((char *)d + 4096 - 32, 64, h, 64, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    aclrtStream bogus = (aclrtStream)h;
    cr_assert_neq(aclrtMemcpyAsync(d, 64, h, 64, ACL_MEMCPY_HOST_TO_DEVICE, bogus), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpyAsync(d, 16, h, 64, ACL_MEMCPY_HOST_TO_DEVICE, NULL), ACL_ERROR_RT_PARAM_INVALID);
    aclrtFree(d);
}

Test(acl_memory, memset_sync_and_async)
{
    enum { N = 512 };
    unsigned char back[N], want[N];
    void *d;
    aclrtStream s;
    cr_assert_eq(aclrtMalloc(&d, N, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    cr_assert_eq(aclrtCreateStream(&s), ACL_SUCCESS);
    cr_assert_eq(aclrtMemset(d, N, 0x5A, N), ACL_SUCCESS);
    cr_assert_eq(aclrtMemsetAsync(d, N, 0x11, N / 2, s), ACL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpy(back, N, d, N, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    memset(want, 0x11, N / 2);
    memset(want + N / 2, 0x5A, N / 2);
    cr_assert_arr_eq(back, want, N);
    cr_assert_eq(aclrtMemset(d, N / 2, 0, N), ACL_ERROR_RT_PARAM_INVALID); /* count > maxCount */
    cr_assert_eq(aclrtMemset(NULL, N, 0, N), ACL_ERROR_INVALID_PARAM);
    cr_assert_neq(aclrtMemset(back, N, 0, N), ACL_SUCCESS); /* not device memory */
    aclrtDestroyStream(s);
    aclrtFree(d);
}

Test(acl_memory, mem_info)
{
    size_t free_b = 0, total = 0;
    cr_assert_eq(aclrtGetMemInfo(ACL_HBM_MEM, &free_b, &total), ACL_SUCCESS);
    cr_assert_gt(total, 0);
    cr_assert_leq(free_b, total);
    cr_assert_eq(aclrtGetMemInfo(ACL_HBM_MEM, NULL, &total), ACL_ERROR_INVALID_PARAM);
}

/* The copy is queued behind a host function that blocks until the test opens the gate. */
Test(acl_memory, memcpy_async_waits_behind_held_stream)
{
    enum { N = 256 };
    unsigned char src[N], back[N], zero[N];
    memset(src, 0x3C, N);
    memset(zero, 0, N);
    void *d;
    aclrtStream s;
    cr_assert_eq(aclrtMalloc(&d, N, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    cr_assert_eq(aclrtMemset(d, N, 0, N), ACL_SUCCESS);
    cr_assert_eq(aclrtCreateStream(&s), ACL_SUCCESS);
    gate g = GATE_INIT;
    cr_assert_eq(aclrtLaunchHostFunc(s, gate_hold, &g), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpyAsync(d, N, src, N, ACL_MEMCPY_HOST_TO_DEVICE, s), ACL_SUCCESS);
    aclrtStreamStatus st;
    cr_assert_eq(aclrtStreamQuery(s, &st), ACL_SUCCESS);
    cr_assert_eq(st, ACL_STREAM_STATUS_NOT_READY);
    cr_assert_arr_eq((unsigned char *)d, zero, N); /* not copied while held */
    gate_open(&g);
    cr_assert_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpy(back, N, d, N, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    cr_assert_arr_eq(back, src, N);
    cr_assert_eq(aclrtStreamQuery(s, &st), ACL_SUCCESS);
    cr_assert_eq(st, ACL_STREAM_STATUS_COMPLETE);
    aclrtDestroyStream(s);
    aclrtFree(d);
}

/* Same, on the default stream (NULL). */
Test(acl_memory, memcpy_async_on_default_stream)
{
    enum { N = 128 };
    unsigned char src[N], back[N];
    memset(src, 0x77, N);
    void *d;
    cr_assert_eq(aclrtMalloc(&d, N, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpyAsync(d, N, src, N, ACL_MEMCPY_HOST_TO_DEVICE, NULL), ACL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeStream(NULL), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpy(back, N, d, N, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    cr_assert_arr_eq(back, src, N);
    aclrtFree(d);
}
