/* Registrations of device memory die with the memory (issue #9): the HAL's free listeners
 * (hal_ops.mem_free_listen, the emulator) and runtime/net's use of them, which drops a transport's
 * cached registrations when the memory they cover is freed, unmapped or its device closed; and
 * the extent check that is the only guard where the HAL has no listener. The registrations go
 * through rt_net_mem_reg, the path PUBLISH uses for user buffers. */
#include <pthread.h>
#include <semaphore.h>

#include "common/hal_testutil.h"
#include "common/net_testutil.h"
#include "runtime/net/rt_net_priv.h"

TestSuite(net_memfree, .timeout = 120);

typedef struct fixture {
    const hal_ops *h;
    hal_device *d;
    net_transport *t;
    bool listening;
    uint64_t id;
} fixture;

static void fx_open(fixture *f, bool listen)
{
    f->h = ht_hal();
    if (!f->h->mem_free_listen)
        cr_skip_test("backend %s has no free listener (hal/ascend: the application frees through CANN)", f->h->name);
    f->d = ht_open(f->h, 0);
    net_config cfg = {.kind = NET_KIND_TCP, .name = "memfree", .nsocks = 1, .zerocopy = 0};
    HT_OK(net_create(&cfg, &f->t));
    f->listening = false;
    if (listen) {
        HT_OK(rt_net_mem_listen(f->h, f->t, &f->listening, &f->id));
        cr_assert(f->listening);
    }
}

static void fx_close(fixture *f)
{
    rt_net_mem_unlisten(f->h, &f->listening, f->id);
    net_destroy(f->t);
    if (f->d)
        HT_OK(f->h->device_close(f->d));
}

static uint64_t made(net_transport *t)
{
    uint64_t m = 0;
    net_mem_cached(t, &m, NULL);
    return m;
}

static void reg(fixture *f, void *p)
{
    uint32_t rkey;
    HT_OK(rt_net_mem_reg(f->h, f->t, p, &rkey));
}

Test(net_memfree, free_drops_the_registration)
{
    fixture f;
    fx_open(&f, true);
    void *p;
    HT_OK(f.h->mem_alloc(f.d, 1 << 20, &p));
    reg(&f, p);
    reg(&f, p);
    reg(&f, (char *)p + 4096); /* inside: the cached range serves it */
    cr_assert_eq(net_mem_cached(f.t, NULL, NULL), 1);
    cr_assert_eq(made(f.t), 1, "registered once per range");
    HT_OK(f.h->mem_free(f.d, p));
    uint64_t dropped = 0;
    cr_assert_eq(net_mem_cached(f.t, NULL, &dropped), 0, "the free must drop the registration");
    cr_assert_eq(dropped, 1);
    cr_assert_eq(f.h->mem_free(f.d, p), HAL_E_FOREIGN, "double free");
    cr_assert_eq(net_mem_cached(f.t, NULL, NULL), 0);
    fx_close(&f);
}

/* 100 allocate / register / free cycles, sizes and so places varying (a kept allocation between
 * them moves some): the cache never holds more than the live buffers, and every cycle registers
 * anew, also when the new buffer sits where the old one was. */
Test(net_memfree, cycles_do_not_grow_the_cache)
{
    fixture f;
    fx_open(&f, true);
    void *keep;
    HT_OK(f.h->mem_alloc(f.d, 4096, &keep));
    reg(&f, keep);
    void *first = NULL;
    unsigned same = 0;
    for (unsigned i = 0; i < 100; i++) {
        void *a, *b;
        HT_OK(f.h->mem_alloc(f.d, 65536 + (i % 7) * 4096, &a));
        HT_OK(f.h->mem_alloc(f.d, 1000 + i * 512, &b));
        reg(&f, a);
        reg(&f, b);
        reg(&f, a);
        cr_assert_eq(net_mem_cached(f.t, NULL, NULL), 3, "cycle %u: the kept buffer and two live ones", i);
        cr_assert_eq(made(f.t), 1 + 2 * (i + 1), "cycle %u: freed memory is registered anew", i);
        same += a == first;
        if (!first)
            first = a;
        HT_OK(f.h->mem_free(f.d, b));
        HT_OK(f.h->mem_free(f.d, a));
        cr_assert_eq(net_mem_cached(f.t, NULL, NULL), 1, "cycle %u: only the kept buffer stays", i);
    }
    cr_assert_gt(same, 0, "no allocation landed where an earlier one was: the case is not exercised");
    HT_OK(f.h->mem_free(f.d, keep));
    cr_assert_eq(net_mem_cached(f.t, NULL, NULL), 0);
    fx_close(&f);
}

Test(net_memfree, vmm_unmap_and_device_close_drop_registrations)
{
    fixture f;
    fx_open(&f, true);
    size_t g = f.h->vmm_granularity(f.d);
    void *va;
    hal_phys_mem *pm;
    HT_OK(f.h->vmm_reserve(f.d, 2 * g, &va));
    HT_OK(f.h->vmm_phys_alloc(f.d, g, &pm));
    HT_OK(f.h->vmm_map(va, g, 0, pm));
    reg(&f, va);
    cr_assert_eq(net_mem_cached(f.t, NULL, NULL), 1);
    HT_OK(f.h->vmm_unmap(va));
    cr_assert_eq(net_mem_cached(f.t, NULL, NULL), 0, "unmap must drop the registration of the mapped range");
    HT_OK(f.h->vmm_phys_free(pm));
    HT_OK(f.h->vmm_release(f.d, va));

    void *p;
    HT_OK(f.h->mem_alloc(f.d, 8192, &p));
    reg(&f, p);
    cr_assert_eq(net_mem_cached(f.t, NULL, NULL), 1);
    HT_OK(f.h->device_close(f.d)); /* the allocation goes with the device */
    f.d = NULL;
    cr_assert_eq(net_mem_cached(f.t, NULL, NULL), 0, "closing the device must drop its registrations");
    fx_close(&f);
}

/* No listener (as on hal/ascend): a smaller allocation where a larger, registered one was is
 * caught by the extent check, so its registration is made on the new memory. */
Test(net_memfree, extent_check_without_listener)
{
    fixture f;
    fx_open(&f, false);
    void *p, *q;
    HT_OK(f.h->mem_alloc(f.d, 1 << 20, &p));
    reg(&f, p);
    HT_OK(f.h->mem_free(f.d, p));
    cr_assert_eq(net_mem_cached(f.t, NULL, NULL), 1, "nobody listens: the stale registration stays");
    HT_OK(f.h->mem_alloc(f.d, 65536, &q));
    cr_assert_eq(q, p, "first fit must put the new allocation where the old one was");
    reg(&f, q);
    cr_assert_eq(made(f.t), 2, "the stale range must not serve the new allocation");
    net_mr *mr;
    HT_OK(net_mr_reg(f.t, q, 1, &mr));
    void *s;
    size_t len;
    net_mr_range(mr, &s, &len);
    net_mr_release(mr);
    cr_assert_eq(s, q);
    cr_assert_eq(len, 65536, "the registration must end where the new allocation ends");
    cr_assert_eq(net_mem_cached(f.t, NULL, NULL), 1);
    HT_OK(f.h->mem_free(f.d, q));
    fx_close(&f);
}

/* ---- the HAL's listeners themselves ---- */

typedef struct probe {
    const hal_ops *h;
    void *base;
    size_t size;
    int calls;
    int looked_up;    /* the listener called the HAL (mem_lookup) without deadlocking */
    sem_t entered, go;
    int slow;         /* wait for go, then sleep, before returning */
    _Atomic int done; /* the slow call returned */
} probe;

static void probe_fn(void *arg, void *base, size_t size)
{
    probe *pr = arg;
    pr->base = base;
    pr->size = size;
    pr->calls++;
    uint64_t after = 0;
    pr->looked_up += pr->h->mem_lookup(base, NULL, &after) == HAL_OK && after == size;
    if (pr->slow) {
        sem_post(&pr->entered);
        sem_wait(&pr->go);
        usleep(100 * 1000);
        atomic_store(&pr->done, 1);
    }
}

Test(net_memfree, listener_sees_the_allocation_before_it_goes)
{
    fixture f;
    fx_open(&f, false);
    probe pr = {.h = f.h};
    uint64_t id;
    HT_OK(f.h->mem_free_listen(probe_fn, &pr, &id));
    void *p;
    HT_OK(f.h->mem_alloc(f.d, 3000, &p));
    HT_OK(f.h->mem_free(f.d, p));
    cr_assert_eq(pr.calls, 1);
    cr_assert_eq(pr.base, p);
    cr_assert_eq(pr.size, 3072, "the whole allocation (512 B granules)");
    cr_assert_eq(pr.looked_up, 1, "the memory must still be allocated while the listener runs");
    cr_assert_eq(f.h->mem_free(f.d, (char *)p + 512), HAL_E_FOREIGN);
    cr_assert_eq(pr.calls, 1, "a failing free is no free");
    HT_OK(f.h->mem_free_unlisten(id));
    cr_assert_eq(f.h->mem_free_unlisten(id), HAL_E_PARAM, "removed twice");
    HT_OK(f.h->mem_alloc(f.d, 3000, &p));
    HT_OK(f.h->mem_free(f.d, p));
    cr_assert_eq(pr.calls, 1, "a removed listener is not called");
    fx_close(&f);
}

typedef struct freer {
    const hal_ops *h;
    hal_device *d;
    void *p;
} freer;

static void *free_thread(void *arg)
{
    freer *fr = arg;
    return (void *)(intptr_t)fr->h->mem_free(fr->d, fr->p);
}

/* A listener's owner frees what the listener uses once unlisten returns: unlisten must wait for a
 * call that is running (here one that takes 100 ms). */
Test(net_memfree, unlisten_waits_for_a_running_call)
{
    fixture f;
    fx_open(&f, false);
    probe pr = {.h = f.h, .slow = 1};
    sem_init(&pr.entered, 0, 0);
    sem_init(&pr.go, 0, 0);
    uint64_t id;
    HT_OK(f.h->mem_free_listen(probe_fn, &pr, &id));
    freer fr = {f.h, f.d, NULL};
    HT_OK(f.h->mem_alloc(f.d, 4096, &fr.p));
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, free_thread, &fr), 0);
    sem_wait(&pr.entered);
    sem_post(&pr.go);
    HT_OK(f.h->mem_free_unlisten(id));
    cr_assert_eq(atomic_load(&pr.done), 1, "unlisten returned while the listener was still running");
    void *rc;
    pthread_join(th, &rc);
    cr_assert_eq((hal_result)(intptr_t)rc, HAL_OK);
    sem_destroy(&pr.entered);
    sem_destroy(&pr.go);
    fx_close(&f);
}

/* A transport's registrations die with the memory while a peer writes into it: the writes before
 * the free and after the new allocation (at the same address) both land where they should. */
Test(net_memfree, writes_land_in_the_new_allocation)
{
    fixture f;
    fx_open(&f, false);
    nt_pair pp;
    nt_pair_open(&pp, NET_KIND_TCP, 1, "127.0.0.1");
    bool listening;
    uint64_t id;
    HT_OK(rt_net_mem_listen(f.h, pp.b, &listening, &id));
    enum { SZ = 65536 };
    unsigned char *src = malloc(SZ);
    void *first = NULL;
    /* The sender's drain says the bytes left, not that they landed: the target's notify does. */
    static uint64_t landed;
    uint32_t nid;
    HT_OK(net_notify_add_counter(pp.b, &landed, &nid));
    for (unsigned i = 0; i < 4; i++) {
        void *p;
        HT_OK(f.h->mem_alloc(f.d, SZ, &p));
        if (i == 0)
            first = p;
        cr_assert_eq(p, first, "first fit must reuse the address");
        memset(p, 0, SZ);
        uint32_t rkey;
        HT_OK(rt_net_mem_reg(f.h, pp.b, p, &rkey));
        nt_fill(src, SZ, i + 1);
        HT_OK(net_write(pp.ab, src, SZ, (uint64_t)(uintptr_t)p, rkey, nid, 0));
        HT_OK(net_link_drain(pp.ab, NT_TIMEOUT_MS));
        HT_OK(net_counter_wait(&landed, i + 1, NT_TIMEOUT_MS));
        cr_assert_eq(memcmp(p, src, SZ), 0, "cycle %u: the write did not land", i);
        HT_OK(f.h->mem_free(f.d, p));
        cr_assert_eq(net_mem_cached(pp.b, NULL, NULL), 0, "cycle %u", i);
    }
    cr_assert_eq(made(pp.b), 4);
    rt_net_mem_unlisten(f.h, &listening, id);
    free(src);
    nt_pair_close(&pp);
    fx_close(&f);
}
