/* HcclCommInitAll when a rank's thread cannot be created: the call fails at once (no rank waits
 * out HCCL_CONNECT_TIMEOUT in the rendezvous), joins only threads that exist, destroys only
 * communicators that were created, and leaves every comms[] entry NULL. The failure is provoked
 * by this executable's own pthread_create, which wraps the C library's (symbol interposition:
 * libhccl's calls reach it) and fails one chosen call while armed. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static atomic_int g_calls;  /* pthread_create calls since arming */
static atomic_int g_fail_at; /* 0 = disarmed; n = fail the n-th call after arming */

int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
    static create_fn real;
    if (!real)
        real = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
    int at = atomic_load(&g_fail_at);
    if (at && atomic_fetch_add(&g_calls, 1) + 1 == at)
        return EAGAIN;
    return real(t, a, fn, arg);
}

static void init_all_with_failure(int fail_at)
{
    enum { N = 4 };
    int32_t devs[N] = {0, 1, 2, 3};
    HcclComm comms[N] = {(HcclComm)0x1, (HcclComm)0x2, (HcclComm)0x3, (HcclComm)0x4}; /* garbage in */
    setenv("HCCL_CONNECT_TIMEOUT", "600", 1); /* a rank left in the rendezvous would hang the test */
    cr_assert_eq(aclInit(NULL), ACL_SUCCESS);
    atomic_store(&g_calls, 0);
    atomic_store(&g_fail_at, fail_at);
    HcclResult rc = HcclCommInitAll(N, devs, comms);
    atomic_store(&g_fail_at, 0);
    cr_expect_eq(rc, HCCL_E_SYSCALL, "HcclCommInitAll with thread #%d failing -> %d", fail_at, (int)rc);
    for (int i = 0; i < N; i++)
        cr_expect_null(comms[i], "comms[%d] = %p after a failed HcclCommInitAll", i, (void *)comms[i]);
    /* Nothing half-made is left behind: the devices serve a normal HcclCommInitAll next. */
    cr_assert_eq(HcclCommInitAll(N, devs, comms), HCCL_SUCCESS);
    for (int i = 0; i < N; i++)
        cr_expect_eq(HcclCommDestroy(comms[i]), HCCL_SUCCESS);
    aclFinalize();
}

/* Call #1 is the rendezvous root's acceptor (rt_bootstrap_root_listen); rank i's thread is #i+2. */
Test(comm_initall, first_rank_thread_fails, .timeout = 60) { init_all_with_failure(2); }
Test(comm_initall, third_rank_thread_fails, .timeout = 60) { init_all_with_failure(4); }
Test(comm_initall, last_rank_thread_fails, .timeout = 60) { init_all_with_failure(5); }
