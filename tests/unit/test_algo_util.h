/* Shared by the test_algo_* suites: sweeps an algorithm over rank counts, counts, roots and
 * in-place variants through the verifier. Header-only so every suite stays one executable. */
#ifndef TEST_ALGO_UTIL_H
#define TEST_ALGO_UTIL_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algos/verify.h"

#define TA_MAX_N 64

static bool ta_rooted(algo_coll c)
{
    return c == ALGO_COLL_BROADCAST || c == ALGO_COLL_REDUCE || c == ALGO_COLL_SCATTER;
}

/* Rank counts that also get the larger element counts (97, 1031): all small ones, powers of two
 * and their neighbours, and the maximum. */
static bool ta_big_n(uint32_t n)
{
    return n <= 9 || n == 15 || n == 16 || n == 17 || n == 31 || n == 32 || n == 33 || n == 63 || n == 64;
}

/* The rank counts a sweep visits: every n in 1..64, or with OH_TEST_SWEEP=sparse (set for the
 * sanitizer build, tests/CMakeLists.txt, where the full sweeps take minutes) every n up to 17 and
 * then only the ta_big_n ones and a few between (20, 24, 47, 48). Above 17 the counts other than
 * 97 and 1031 relate to n alone (n - 1, n + 1), so the rank counts left out repeat the shapes kept;
 * the plain build sweeps them all. */
static bool ta_visits(uint32_t n)
{
    static int sparse = -1;
    if (sparse < 0) {
        const char *e = getenv("OH_TEST_SWEEP");
        sparse = e && !strcmp(e, "sparse");
        if (sparse)
            printf("OH_TEST_SWEEP=sparse: rank counts 1..17, 20, 24, 31-33, 47, 48, 63, 64\n");
    }
    return !sparse || n <= 17 || ta_big_n(n) || n == 20 || n == 24 || n == 47 || n == 48;
}

/* Fills V-op counts in m for n ranks from a "size" c: irregular, some zero, with gaps. */
static void ta_fill_counts(algo_op *op, uint64_t *m, uint64_t c)
{
    uint32_t n = op->nranks;
    if (op->coll == ALGO_COLL_ALLTOALLV || op->coll == ALGO_COLL_ALLTOALLVC) {
        for (uint64_t i = 0; i < (uint64_t)n * n; i++)
            m[i] = (i * 7 + 3) % (c + 1);
        op->counts = m;
        op->ncounts = n * n;
    } else if (op->coll == ALGO_COLL_ALLGATHERV || op->coll == ALGO_COLL_REDUCE_SCATTERV) {
        uint64_t cur = 0;
        for (uint32_t i = 0; i < n; i++) {
            m[i] = (i * 5 + 1) % (c + 1);
            m[n + i] = cur;
            cur += m[i] + (i % 3); /* gaps of 0..2 elements */
        }
        op->counts = m;
        op->ncounts = 2 * n;
    }
}

/* Verifies one configuration; prints the report on failure. Returns 1 if it failed. */
static int ta_check(algo_kind kind, algo_coll coll, uint32_t n, uint64_t count, uint32_t root, bool in_place,
                    const algo_topo *topo)
{
    static uint64_t m[TA_MAX_N * TA_MAX_N];
    algo_op op = {.coll = coll, .nranks = n, .count = count, .dtype = HAL_DT_FP32, .redop = HAL_OP_SUM,
                  .root = root, .in_place = in_place};
    ta_fill_counts(&op, m, count);
    algo_verify_report rep;
    int rc = algo_verify(&op, topo, kind, &rep);
    if (rc == 0)
        return 0;
    printf("FAIL %s %s n=%u count=%llu root=%u %s: rc %d\n%s", algo_kind_name(kind), algo_coll_name(coll), n,
           (unsigned long long)count, root, in_place ? "in-place" : "out-of-place", rc, rep.msg);
    return 1;
}

/* Every n in 1..64 (ta_visits) x counts {0, 1, n-1, n+1} (+ {97, 1031} for ta_big_n) x roots
 * {0, n-1, n/2} x in/out of place (in-place only where the algorithm supports it). Returns the
 * failure count. */
static int ta_sweep(algo_kind kind, algo_coll coll)
{
    int fails = 0;
    for (uint32_t n = 1; n <= TA_MAX_N; n++) {
        if (!ta_visits(n))
            continue;
        uint64_t counts[6] = {0, 1, n - 1, n + 1, 97, 1031};
        uint32_t roots[3] = {0, n - 1, n / 2};
        uint32_t nc = ta_big_n(n) ? 6 : 4, nr = ta_rooted(coll) ? 3 : 1;
        for (uint32_t ci = 0; ci < nc; ci++)
            for (uint32_t ri = 0; ri < nr; ri++)
                for (int inp = 0; inp < 2; inp++) {
                    algo_op probe = {.coll = coll, .nranks = n, .in_place = inp};
                    if (!algo_supports(kind, &probe))
                        continue;
                    fails += ta_check(kind, coll, n, counts[ci], roots[ri], inp, NULL);
                    if (fails > 5)
                        return fails;
                }
    }
    return fails;
}

#endif
