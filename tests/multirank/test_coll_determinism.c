/* Deterministic mode: det_check runs AllReduce, Reduce, ReduceScatter(V) on fp32/fp16/bf16 data
 * of mixed magnitude, checks every result against the host's rank-ordered sum bit for bit and
 * prints a digest per rank. Here: the digests agree across separate runs, across HCCL_ALGO ring
 * and mesh, and across the three ways to switch the mode on (HCCL_DETERMINISTIC, the config field,
 * HcclSetConfig); without the mode, ring and mesh give different bits for the same data (N >= 3),
 * which shows the comparison can fail. See docs/testing.md. */
#include "multirank/mr_run.h"

#define MR_DET_CHECK OH_BUILD_DIR "/tests/progs/det_check"
#define MAXR 16

typedef struct digests {
    unsigned long long d[MAXR];
} digests;

/* Runs det_check and reads every rank's digest line. */
static digests run(unsigned n, const char *mode, const char *algo)
{
    char args[96], what[160];
    snprintf(args, sizeof args, "--mode %s --algo %s", mode, algo);
    snprintf(what, sizeof what, "det_check %s on %u ranks", args, n);
    mr_result r = mr_run_t("", n, 120, MR_DET_CHECK, args);
    cr_expect_eq(r.status, 0, "%s: exit status %d (a result differs from the rank-ordered sum?)", what, r.status);
    digests g;
    for (unsigned k = 0; k < n; k++) {
        char needle[64];
        snprintf(needle, sizeof needle, "det_check: rank %u digest ", k);
        const char *p = strstr(r.out, needle);
        cr_assert_not_null(p, "%s: no digest from rank %u", what, k);
        g.d[k] = strtoull(p + strlen(needle), NULL, 16);
    }
    free(r.out);
    return g;
}

static void expect_same(unsigned n, digests a, digests b, const char *what)
{
    for (unsigned k = 0; k < n; k++)
        cr_expect_eq(a.d[k], b.d[k], "%u ranks, rank %u: %s: digest %016llx vs %016llx", n, k, what, a.d[k], b.d[k]);
}

static void deterministic(unsigned n)
{
    digests mesh1 = run(n, "env", "mesh");
    expect_same(n, mesh1, run(n, "env", "mesh"), "mesh run to run");
    expect_same(n, mesh1, run(n, "env", "ring"), "mesh vs ring");
    expect_same(n, mesh1, run(n, "config", "ring"), "HCCL_DETERMINISTIC vs hcclDeterministic");
    expect_same(n, mesh1, run(n, "setconfig", "mesh"), "HCCL_DETERMINISTIC vs HcclSetConfig");
    expect_same(n, mesh1, run(n, "env", "auto"), "mesh vs the automatic choice");
}

Test(deterministic, n2, .timeout = 300) { deterministic(2); }
Test(deterministic, n3, .timeout = 300) { deterministic(3); }
Test(deterministic, n4, .timeout = 300) { deterministic(4); }
Test(deterministic, n9, .timeout = 300) { deterministic(9); }

/* A quarter million elements: the chain's units and the mesh slices are large, the digests still agree. */
Test(deterministic, n3_large, .timeout = 300)
{
    digests mesh = run(3, "env", "mesh --count 262147");
    expect_same(3, mesh, run(3, "env", "ring --count 262147"), "mesh vs ring, 262147 elements");
}

/* Without the mode, ring and mesh reduce in different orders. With two ranks x0 + x1 == x1 + x0,
 * so only N >= 3 must differ (on some rank: the data are fixed, so this is reliable). */
static void differs_without(unsigned n)
{
    digests ring = run(n, "off", "ring"), mesh = run(n, "off", "mesh");
    unsigned differ = 0;
    for (unsigned k = 0; k < n; k++)
        differ += ring.d[k] != mesh.d[k];
    cr_expect_gt(differ, 0, "%u ranks: ring and mesh gave the same bits without deterministic mode", n);
}

Test(nondeterministic, n3, .timeout = 300) { differs_without(3); }
Test(nondeterministic, n4, .timeout = 300) { differs_without(4); }
