/* Helpers for the HAL conformance suites (tests/unit/test_hal_*.c). The suites use only hal.h
 * through hal_get(), so they can run against any backend. */
#ifndef HAL_TESTUTIL_H
#define HAL_TESTUTIL_H

#include <criterion/criterion.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hal/hal.h"

/* Gives this test process its own emulated-server namespace (Criterion runs each test in its
 * own process; parallel ctest runs of the same suite must not meet), then returns the HAL. */
static inline const hal_ops *ht_hal(void)
{
    static char ns[160];
    if (!ns[0]) {
        const char *base = getenv("HCCL_EMU_NAMESPACE");
        snprintf(ns, sizeof ns, "%s-%d", base && *base ? base : "halt", (int)getpid());
        setenv("HCCL_EMU_NAMESPACE", ns, 1);
    }
    const hal_ops *h = hal_get();
    cr_assert_not_null(h, "hal_get() returned NULL");
    return h;
}

/* Whether the backend under test reduces dt with op: the same on every backend (hal/ascend reduces
 * what SDMA cannot, the 8-bit floats included, on the host: hal/ascend/asc_reduce.c). */
static inline int ht_reduce_supported(const hal_ops *h, hal_dtype dt, hal_redop op)
{
    (void)h;
    return hal_reduce_supported(dt, op);
}

/* Writes (wr) or reads exactly n bytes over a pipe between a test and its forked child: 0 or -1. */
static inline int ht_xfer(int fd, void *p, size_t n, int wr)
{
    char *c = p;
    while (n) {
        ssize_t k = wr ? write(fd, c, n) : read(fd, c, n);
        if (k <= 0)
            return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

#define HT_OK(expr)                                                                         \
    do {                                                                                    \
        hal_result ht_rc_ = (expr);                                                         \
        cr_assert_eq(ht_rc_, HAL_OK, "%s -> %s", #expr, hal_result_name(ht_rc_));           \
    } while (0)

static inline hal_device *ht_open(const hal_ops *h, int32_t id)
{
    hal_device *d = NULL;
    HT_OK(h->device_open(id, &d));
    cr_assert_not_null(d);
    return d;
}

/* A host function that blocks its stream until ht_gate_open: holds a stream back without sleeps. */
typedef struct ht_gate {
    sem_t entered, release;
} ht_gate;

static inline void ht_gate_init(ht_gate *g)
{
    sem_init(&g->entered, 0, 0);
    sem_init(&g->release, 0, 0);
}

static inline void ht_gate_fn(void *arg)
{
    ht_gate *g = arg;
    sem_post(&g->entered);
    while (sem_wait(&g->release) != 0)
        ;
}

static inline void ht_gate_open(ht_gate *g)
{
    sem_post(&g->release);
}

static inline void ht_gate_fini(ht_gate *g)
{
    sem_destroy(&g->entered);
    sem_destroy(&g->release);
}

/* Deterministic test bytes. */
static inline void ht_fill(void *p, size_t n, uint32_t seed)
{
    uint8_t *b = p;
    uint32_t x = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        b[i] = (uint8_t)x;
    }
}

#endif
