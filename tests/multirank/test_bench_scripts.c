/* The scripts of tools/bench (compare.sh, drift.sh, callcount.sh, eager_crossover.sh) run to the
 * end with their documented command lines, shortened, and refuse bad arguments: they are how
 * docs/perf.md, docs/perf-history.md and docs/runtime.md were measured, and nothing else runs them.
 * The peers (Open MPI, MPICH, Gloo) are optional and not installed in CI: every script runs here
 * with OpenHCCL alone. Numbers are not checked beyond their form and their arithmetic (speed is
 * shown by benchmarks, not tests). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "multirank/mr_run.h"

/* tools/bench/compare.sh with no peer (they are optional and not installed in CI): OpenHCCL's
 * rows, the -L size in the headers, at 2 ranks the table against memcpy with each collective's
 * traffic per busbw byte, and the verdict on issue #8's criteria. */
#define COMPARE OH_SOURCE_DIR "/tools/bench/compare.sh -B " OH_BUILD_DIR

/* The verdict line of a criterion: what follows "<text>: ", NULL if there is none. */
static const char *verdict_of(const char *out, const char *text)
{
    const char *v = strstr(out, "# issue #8's criteria");
    v = v ? strstr(v, text) : NULL;
    return v ? v + strlen(text) + 2 : NULL;
}

/* The memcpy criterion's verdict must be that of the table's rows: pass only if every busbw /
 * memcpy (Broadcast, AllGather out of place, AlltoAll) is >= 0.7, worst the lowest, and a FAIL
 * counts the rows below. */
static void expect_copy_verdict(const char *out, const double frac[3])
{
    double worst = fmin(frac[0], fmin(frac[1], frac[2]));
    int bad = (frac[0] < 0.7) + (frac[1] < 0.7) + (frac[2] < 0.7);
    const char *v = verdict_of(out, "2M at 2 ranks, Broadcast, AllGather, AlltoAll: busbw / 2-thread memcpy >= 0.7");
    cr_assert(v != NULL, "no memcpy verdict in:\n%s", out);
    char word[8];
    double got_worst = -1;
    int n = sscanf(v, "%7[^,], worst %lf", word, &got_worst);
    cr_assert_eq(n, 2, "the memcpy verdict does not parse: %.200s", v);
    cr_expect_str_eq(word, bad ? "FAIL" : "pass", "%d rows below 0.7 yet '%s': %.200s", bad, word, v);
    cr_expect(fabs(got_worst - worst) < 0.001, "worst %g, not the table's %g: %.200s", got_worst, worst, v);
    if (bad) {
        char rows[32];
        snprintf(rows, sizeof rows, "%d of 3 rows", bad);
        cr_expect(strstr(v, rows) != NULL && strstr(v, rows) < strchr(v, '\n'), "no '%s' in: %.200s", rows, v);
    }
}

Test(bench_scripts, compare_sh_without_peers_prints_its_tables, .timeout = 300)
{
    mr_result r = mr_run_cmd(COMPARE " -n 2 -c 'broadcast allgather alltoall' -t 1 -p '' -i 20 -I 20 -L 2M 2>&1");
    cr_expect_eq(r.status, 0, "compare.sh exited with %d:\n%s", r.status, r.out);
    static const char *const want[] = {
        "| 2M busbw OpenHCCL | best peer | ratio |", /* -L names the large column */
        "| broadcast | 2 | 8 |",
        "| alltoall | 2 | 32 |",
        "| coll at 2 ranks, 2M | busbw |",
        "# host memcpy 64 MiB at start: memcpy threads 1",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_expect(strstr(r.out, want[i]) != NULL, "no '%s' in:\n%s", want[i], r.out);
    /* Per busbw byte Broadcast moves 1 memcpy byte of traffic, AllGather 3 (2 in place) and
     * AlltoAll 4: the rows say so, and their last two columns are busbw times that over memcpy and
     * over the nt-copy kernel (the header names its mean reading). */
    const char *nt_head = strstr(r.out, "| traffic / nt-copy's (");
    double nt = 0;
    cr_assert(nt_head && sscanf(nt_head, "| traffic / nt-copy's (%lf)", &nt) == 1 && nt > 0,
              "no nt-copy reading in the memcpy table's header:\n%s", r.out);
    double frac_of[3] = {0};
    static const struct {
        const char *coll;
        double per;
    } rows[] = {{"broadcast", 1}, {"allgather", 3}, {"allgather in place", 2}, {"alltoall", 4}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char head[64];
        snprintf(head, sizeof head, "| %s | ", rows[i].coll);
        const char *t = strstr(r.out, "| coll at 2 ranks");
        const char *row = t ? strstr(t, head) : NULL;
        cr_assert(row != NULL, "no %s row in the memcpy table:\n%s", rows[i].coll, r.out);
        double bw, m1, m2, mean, frac, per, traffic, traffic_nt;
        int got = sscanf(row + strlen(head), "%lf | %lf, %lf: %lf | %lf | %lf | %lf | %lf", &bw, &m1, &m2, &mean,
                         &frac, &per, &traffic, &traffic_nt);
        cr_assert_eq(got, 8, "the %s row does not parse (%d fields): %.200s", rows[i].coll, got, row);
        cr_expect(bw > 0 && mean > 0, "%s: busbw %g, memcpy %g", rows[i].coll, bw, mean);
        cr_expect_eq(per, rows[i].per, "%s moves %g memcpy bytes per busbw byte, not %g", rows[i].coll,
                     per, rows[i].per);
        cr_expect(fabs(mean - (m1 + m2) / 2) < 0.011, "%s: mean %g of %g and %g", rows[i].coll, mean, m1, m2);
        cr_expect(fabs(frac - bw / mean) < 0.011 && fabs(traffic - bw * per / mean) < 0.011,
                  "%s: %g / %g gives %g and %g, not %g and %g", rows[i].coll, bw, mean, bw / mean,
                  bw * per / mean, frac, traffic);
        cr_expect(fabs(traffic_nt - bw * per / nt) < 0.011, "%s: %g x %g / %g is not %g", rows[i].coll, bw, per, nt,
                  traffic_nt);
        if (rows[i].per != 2) /* the criterion leaves out AllGather in place */
            frac_of[i == 3 ? 2 : i] = frac;
    }
    /* No peer: the criteria against one find no row; one launch spreads 1.0. */
    const char *lat = verdict_of(r.out, "small and 64 KiB at 2 ranks: time / best peer's <= 3");
    cr_expect(lat && !strncmp(lat, "no row (no peer ran there)", 26), "latency verdict: %.200s", lat ? lat : r.out);
    const char *spread = verdict_of(r.out, "small and 64 KiB: slowest / fastest trial <= 2");
    cr_expect(spread && !strncmp(spread, "pass, worst 1.0 (", 17), "spread verdict: %.200s", spread ? spread : r.out);
    expect_copy_verdict(r.out, frac_of);
    free(r.out);
}


/* tools/bench/drift.sh (docs/perf-history.md, twenty-seventh pass): OpenHCCL's series alone (no peer in
 * CI), two rounds of a positive time each and the summary row; then the summary of a saved series
 * (-S), whose rank correlations must be +1 for a peer that slows down with OpenHCCL, -1 for one that
 * speeds up as it slows down, computed over the rounds where both ran only. */
#define DRIFT OH_SOURCE_DIR "/tools/bench/drift.sh -B " OH_BUILD_DIR

Test(bench_scripts, drift_sh_times_openhccl_round_by_round, .timeout = 120)
{
    mr_result r = mr_run_cmd(DRIFT " -p '' -r 2 -s 0 -i 20 2>&1");
    cr_expect_eq(r.status, 0, "drift.sh exited with %d:\n%s", r.status, r.out);
    const char *head = strstr(r.out, "# time openhccl\n");
    cr_assert(head != NULL, "no series header:\n%s", r.out);
    const char *line = head + strlen("# time openhccl\n");
    for (int round = 0; round < 2; round++) {
        int hh, mm, ss;
        double us = -1;
        cr_assert_eq(sscanf(line, "%d:%d:%d %lf", &hh, &mm, &ss, &us), 4, "round %d does not parse: %.80s", round,
                     line);
        cr_expect(us > 0 && us < 1e6, "round %d: %g us a call", round, us);
        line = strchr(line, '\n') + 1;
    }
    cr_expect(strstr(r.out, "| openhccl | ") != NULL, "no summary row:\n%s", r.out);
    free(r.out);
}

Test(bench_scripts, drift_sh_summarizes_a_saved_series)
{
    char path[] = "/tmp/oh_drift_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0, "mkstemp failed");
    FILE *f = fdopen(fd, "w");
    fputs("# time openhccl with against\n", f);
    for (int i = 1; i <= 6; i++) /* "with" rises with OpenHCCL's time, "against" falls */
        fprintf(f, "12:00:0%d %d.0 %d.5 %d.1\n", i, i, 2 * i, 10 - i);
    fputs("12:00:07 - 0.5 50\n", f); /* OpenHCCL did not run: no pair, yet each peer's own row counts it */
    fclose(f);
    char cmd[256];
    snprintf(cmd, sizeof cmd, DRIFT " -S %s 2>&1", path);
    mr_result r = mr_run_cmd(cmd);
    unlink(path);
    cr_expect_eq(r.status, 0, "drift.sh -S exited with %d:\n%s", r.status, r.out);
    static const char *const want[] = {
        "| openhccl | 1.0 | 3.0 | 6.0 | 6.0 | - |",
        "| with | 0.5 | 6.5 | 12.5 | 25.0 | 1.00 |",
        "| against | 4.1 | 7.1 | 50 | 12.2 | -1.00 |",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_expect(strstr(r.out, want[i]) != NULL, "no '%s' in:\n%s", want[i], r.out);
    free(r.out);
}

/* Each of a script's bad argument lists (bad[i][0]) is refused with exit 2 and a message holding
 * bad[i][1]. cmd_prefix: the script's command line before the arguments; name: how logs call it. */
static void expect_refusals(const char *cmd_prefix, const char *name, const char *const (*bad)[2], size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "%s%s 2>&1", cmd_prefix, bad[i][0]);
        mr_result r = mr_run_cmd(cmd);
        cr_expect_eq(r.status, 2, "%s%s exited with %d, not 2", name, bad[i][0], r.status);
        cr_expect(strstr(r.out, bad[i][1]) != NULL, "%s%s: no '%s' in:\n%s", name, bad[i][0], bad[i][1], r.out);
        free(r.out);
    }
}

Test(bench_scripts, drift_sh_refuses_bad_arguments)
{
    static const char *const bad[][2] = {
        {" -r 0", "-r must be a number >= 1"},
        {" -b 3X", "-b must be a size like 32 or 64K"},
        {" -a 5", "-a must be 3 (slowest rank) or 4 (span)"},
        {" -c foo -p ''", "unknown collective 'foo'"},
        {" -S /nonexistent/series", "cannot read the series"},
    };
    expect_refusals(DRIFT, "drift.sh", bad, sizeof bad / sizeof bad[0]);
}


Test(bench_scripts, compare_sh_refuses_bad_arguments)
{
    static const char *const bad[][2] = {
        {" -a 2 -p ''", "-a must be 3 (slowest rank) or 4 (span)"},
        {" -I 0 -p ''", "-I must be a number >= 1"},
        {" -i x -p ''", "-i must be a number >= 1"},
        {" -L 2X -p ''", "-L must be a size like 256M"},
        {" -n 1 -p ''", "-n must be rank counts >= 2"},
    };
    expect_refusals(COMPARE, "compare.sh", bad, sizeof bad / sizeof bad[0]);
}

/* tools/bench/callcount.sh without a peer (Open MPI is optional): OpenHCCL's row of instructions a
 * call per rank under callgrind, the calls counted from callgrind's own count of HcclBroadcast,
 * and the top functions. valgrind is a tool of the machine, not a dependency of the project: the
 * test says so and skips where it is missing. */
#define CALLCOUNT OH_SOURCE_DIR "/tools/bench/callcount.sh -B " OH_BUILD_DIR

Test(bench_scripts, callcount_sh_counts_a_calls_instructions, .timeout = 300)
{
    if (system("command -v valgrind >/dev/null 2>&1 && command -v callgrind_annotate >/dev/null 2>&1") != 0)
        cr_skip_test("valgrind is not installed (apt-get install -y valgrind): callcount.sh runs the ranks under it");
    mr_result r = mr_run_cmd(CALLCOUNT " -p '' -c broadcast -n 2 -i '20 220' -t 3 2>&1");
    cr_expect_eq(r.status, 0, "callcount.sh exited with %d:\n%s", r.status, r.out);
    cr_expect(strstr(r.out, "# openhccl: 200 more calls of HcclBroadcast at 220 than at 20 timed calls") != NULL,
              "the calls callgrind counted are not the 200 more timed calls:\n%s", r.out);
    const char *row = strstr(r.out, "\nopenhccl 2 8 ");
    cr_assert(row != NULL, "no row of OpenHCCL at 2 ranks, 8 B:\n%s", r.out);
    long r0 = 0, r1 = 0, total = 0;
    cr_assert_eq(sscanf(row + 1, "openhccl 2 8 %ld %ld %ld", &r0, &r1, &total), 3, "the row does not parse: %.80s",
                 row + 1);
    /* A call is hundreds of instructions on each rank at least (a count of the calls alone reads 1). */
    cr_expect(r0 > 100 && r1 > 100, "ranks 0 and 1: %ld and %ld instructions a call", r0, r1);
    cr_expect_eq(total, r0 + r1, "the total %ld is not the ranks' sum %ld", total, r0 + r1);
    cr_expect(strstr(r.out, "# openhccl rank 0: the 3 functions with the most self instructions a call") != NULL &&
                  strstr(r.out, "# openhccl rank 1: the 3 functions") != NULL,
              "no top functions for ranks 0 and 1:\n%s", r.out);
    free(r.out);
}

Test(bench_scripts, callcount_sh_refuses_bad_arguments)
{
    static const char *const bad[][2] = {
        {" -i 5", "-i must be two call counts"},
        {" -i '900 300'", "-i must be two call counts"},
        {" -n 1", "-n must be rank counts >= 2"},
        {" -p mpich", "Open MPI is the only peer here"},
        {" -t x", "-t must be a number >= 0"},
    };
    expect_refusals(CALLCOUNT, "callcount.sh", bad, sizeof bad / sizeof bad[0]);
}

/* tools/bench/eager_crossover.sh, shortened: at 2 ranks, AllReduce from 8 B to 1 KiB, one launch
 * of each way: a row for every size of the sweep (8 doubling to 1024), each with three positive
 * times and the two ratios of those times (mesh / eager, default / the faster of the two). The
 * times themselves are not judged: speed is the benchmarks' to show. */
#define CROSSOVER OH_SOURCE_DIR "/tools/bench/eager_crossover.sh -B " OH_BUILD_DIR

Test(bench_scripts, eager_crossover_sh_times_eager_mesh_and_the_default, .timeout = 300)
{
    mr_result r = mr_run_cmd(CROSSOVER " -n 2 -c allreduce -t 1 -i 20 -b 8 -e 1K 2>&1");
    cr_expect_eq(r.status, 0, "eager_crossover.sh exited with %d:\n%s", r.status, r.out);
    const char *head = strstr(r.out, "mesh/eager   default/best\n");
    cr_assert(head != NULL, "no table header:\n%s", r.out);
    const char *line = strchr(head, '\n') + 1;
    for (unsigned size = 8; size <= 1024; size *= 2) {
        unsigned got = 0;
        double eager, mesh, def, mesh_over_eager, def_over_best;
        int n = sscanf(line, "%u %lf %lf %lf %lf %lf", &got, &eager, &mesh, &def, &mesh_over_eager, &def_over_best);
        cr_assert_eq(n, 6, "the row of %u B does not parse: %.80s", size, line);
        cr_expect_eq(got, size, "a row of %u B where %u B was due", got, size);
        cr_expect(eager > 0 && mesh > 0 && def > 0, "%u B: %g, %g, %g us", size, eager, mesh, def);
        /* The printed ratios have two decimals, so compare with a rounding's slack of their own. */
        double best = fmin(eager, mesh);
        cr_expect(fabs(mesh_over_eager - mesh / eager) <= 0.005 + 0.01 * mesh / eager,
                  "%u B: mesh/eager %g, not %g / %g", size, mesh_over_eager, mesh, eager);
        cr_expect(fabs(def_over_best - def / best) <= 0.005 + 0.01 * def / best,
                  "%u B: default/best %g, not %g / %g", size, def_over_best, def, best);
        line = strchr(line, '\n') + 1;
    }
    free(r.out);
}

Test(bench_scripts, eager_crossover_sh_refuses_bad_arguments)
{
    static const char *const bad[][2] = {
        {" -i 0", "-i must be a number >= 1"},
        {" -t x", "-t must be a number >= 1"},
        {" -b 8X", "-b must be a size like 8 or 64K"},
        {" -e ''", "-e must be a size like 8 or 64K"},
        {" -n 'two'", "-n must be rank counts >= 2, got 'two'"},
        {" -c foo", "unknown collective 'foo'"},
    };
    expect_refusals(CROSSOVER, "eager_crossover.sh", bad, sizeof bad / sizeof bad[0]);
}
