/* The benchmark programs of tools/bench run to the end with their documented command lines (fewer
 * rounds): they are how docs/perf.md and docs/runtime.md were measured, and nothing else runs
 * them. enqueue_bench once issued more calls behind its held stream than the runtime lets be in
 * flight, and hung. Numbers are not checked (speed is shown by benchmarks, not tests). */
#include <criterion/criterion.h>
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "multirank/mr_run.h"
#include "../../tools/common/coll_bench.h"

#define BENCH OH_BUILD_DIR "/tools/bench/"

Test(bench_tools, enqueue_bench_defaults_and_a_full_window)
{
    static const char *const colls[] = {"allreduce", "allgather", "broadcast"};
    for (size_t i = 0; i < sizeof colls / sizeof colls[0]; i++) {
        char args[128];
        snprintf(args, sizeof args, "-b 8 -r 2 -c %s", colls[i]);
        char line[64];
        snprintf(line, sizeof line, "enqueue %s bytes 8 ns/call median", colls[i]);
        mr_result r = mr_run_t("", 3, 60, BENCH "enqueue_bench", args);
        mr_expect_ok(r, colls[i], line); /* frees r.out */
    }
    mr_result r = mr_run_t("", 2, 60, BENCH "enqueue_bench", "-k 128 -r 1");
    mr_expect_ok(r, "-k 128", "enqueue allreduce bytes 8 ns/call median");
}

Test(bench_tools, enqueue_bench_refuses_a_round_past_the_in_flight_limit)
{
    mr_result r = mr_run_t("", 2, 60, BENCH "enqueue_bench", "-k 129 -r 1");
    cr_expect_neq(r.status, 0, "129 calls behind a held stream cannot complete, yet the run succeeded");
    cr_expect(strstr(r.out, "usage: enqueue_bench") != NULL, "no usage message");
    free(r.out);
}

Test(bench_tools, mixed_bench_defaults)
{
    mr_result r = mr_run_t("", 3, 60, BENCH "mixed_bench", "-n 5 -w 1");
    mr_expect_ok(r, "mixed_bench", "mixed k 1 bytes 8 ranks 3: us/round"); /* frees r.out */
}

/* tools/bench/gloo_run.sh starts compare.sh's Gloo ranks. Gloo is optional (not installed in CI),
 * so these run the launcher with sh as the rank program: what it must do is the same. */
#define GLOO_RUN OH_SOURCE_DIR "/tools/bench/gloo_run.sh"

Test(bench_tools, gloo_run_gives_every_rank_its_place_and_a_store)
{
    mr_result r = mr_run_cmd(GLOO_RUN " -n 3 -t 60 sh -c "
                                      "'test -d \"$GLOO_STORE_DIR\" || exit 9; echo \"rank $GLOO_RANK of $GLOO_SIZE\"; "
                                      "echo \"store $GLOO_STORE_DIR\"' 2>&1");
    cr_expect_eq(r.status, 0, "gloo_run.sh exited with %d", r.status);
    cr_expect(strstr(r.out, "rank 0 of 3") != NULL, "rank 0's output is missing");
    cr_expect(strstr(r.out, "rank 1 of 3") == NULL && strstr(r.out, "rank 2 of 3") == NULL,
              "only rank 0's stdout is shown");
    char dir[512] = "";
    const char *s = strstr(r.out, "store ");
    cr_assert(s != NULL && sscanf(s, "store %511s", dir) == 1, "rank 0 did not print its store");
    cr_expect_neq(access(dir, F_OK), 0, "the store %s is left behind", dir);
    free(r.out);
}

Test(bench_tools, gloo_run_stops_the_others_when_a_rank_fails)
{
    /* exec: the rank is the sleep itself, so stopping it closes its end of the output pipe. A
     * failure the launcher misses ends at its 60 s timeout (exit 124), not at the suite's. */
    mr_result r = mr_run_cmd(GLOO_RUN " -n 3 -t 60 sh -c "
                                      "'test \"$GLOO_RANK\" = 2 && exit 3; exec sleep 120' 2>&1");
    cr_expect_eq(r.status, 3, "the failed rank's status 3 is not the launcher's, %d is", r.status);
    cr_expect(strstr(r.out, "rank 2") && strstr(r.out, "exited with status 3"), "no word of rank 2's failure");
    free(r.out);
}

Test(bench_tools, gloo_run_times_out)
{
    mr_result r = mr_run_cmd(GLOO_RUN " -n 2 -t 1 sleep 600 2>&1");
    cr_expect_eq(r.status, 124, "a run past its timeout exited with %d, not 124", r.status);
    cr_expect(strstr(r.out, "timeout after 1 s") != NULL, "no word of the timeout");
    free(r.out);
}

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

Test(bench_tools, compare_sh_without_peers_prints_its_tables, .timeout = 300)
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

/* A perf tool given a bad value for a flag exits non-zero and names the value and the flag. */
static void expect_bad_flag(const char *tool, char flag, const char *val)
{
    char path[512], args[32], word[64];
    snprintf(path, sizeof path, "%s/tools/perf/%s", OH_BUILD_DIR, tool);
    snprintf(args, sizeof args, "-%c %s", flag, val);
    snprintf(word, sizeof word, "bad value '%s' for -%c", val, flag);
    mr_result r = mr_run_t("", 2, 60, path, args);
    cr_expect_neq(r.status, 0, "%s %s was taken", tool, args);
    cr_expect(strstr(r.out, word) != NULL, "%s: no word of the bad %s:\n%s", tool, args, r.out);
    free(r.out);
}

/* -a 4 (docs/perf.md): the time of a launch is the span from its first rank's start to its last
 * rank's end. The row must carry a positive time of a plausible size (a span computed with a
 * sign wrong is negative or the clock's whole value) and the header must say how it was taken. */
Test(bench_tools, perf_tools_time_a_span_over_ranks)
{
    mr_result r = mr_run_t("", 3, 60, OH_BUILD_DIR "/tools/perf/broadcast_perf", "-b 8 -e 8 -n 50 -w 2 -a 4 -c 1 -m 0");
    cr_expect_eq(r.status, 0, "broadcast_perf -a 4 exited with %d:\n%s", r.status, r.out);
    cr_expect(strstr(r.out, "span (first start to last end) over ranks (-a 4)") != NULL, "no span header:\n%s", r.out);
    const char *row = strstr(r.out, "[rank 0]            8 ");
    cr_assert(row != NULL, "no 8 B row:\n%s", r.out);
    char oop[8];
    double us = -1, algbw, busbw, wrong = -1;
    int got = sscanf(row, "[rank 0] %*s %*s %*s %*s %*s %7s %*s %*s %*s %lf %lf %lf %lf", oop, &us, &algbw, &busbw,
                     &wrong);
    cr_assert_eq(got, 5, "the row does not parse (%d fields): %.200s", got, row);
    cr_expect(us > 0 && us < 1e6, "a span of %g us a call", us);
    cr_expect_eq(wrong, 0, "%g wrong elements", wrong);
    free(r.out);
    expect_bad_flag("broadcast_perf", 'a', "5");
}

/* -R 1: an event recorded on the stream after every timed call (as a framework's handle of each
 * call does); -R 2: also a compute stream's record waited for before every call, and the record
 * after waited for by the compute stream (a process group's pattern). At sizes that run at once
 * and that do not; the header says so, every element checked. A bad -R is refused. */
static void expect_events_run(const char *perf, const char *flag, const char *header)
{
    char args[128];
    snprintf(args, sizeof args, "-b 8 -e 1M -f 64 -n 50 -w 2 %s -c 1 -m 0", flag);
    char prog[256];
    snprintf(prog, sizeof prog, OH_BUILD_DIR "/tools/perf/%s", perf);
    mr_result r = mr_run_t("", 3, 60, prog, args);
    cr_expect_eq(r.status, 0, "%s %s exited with %d:\n%s", perf, flag, r.status, r.out);
    cr_expect(strstr(r.out, header) != NULL, "no %s header:\n%s", flag, r.out);
    cr_expect(strstr(r.out, "# Out of bounds values : 0 OK") != NULL, "wrong elements:\n%s", r.out);
    free(r.out);
}

Test(bench_tools, perf_tools_record_an_event_after_every_call)
{
    expect_events_run("all_reduce_perf", "-R 1", "an event recorded after each (-R 1; sync events, as torch_npu's)");
    expect_events_run("broadcast_perf", "-R 2", "a process group's events around each (-R 2");
    expect_bad_flag("all_reduce_perf", 'R', "3");
}

/* -P 1's line under a row: both halves' percentiles of every call's host time, in order, and none
 * longer than the slowest rank's whole loop (the row's time with -a 3, times -n). */
static void expect_pcts(const char *line, const char *half, double row_us, int iters)
{
    const char *at = strstr(line, half);
    cr_assert(at != NULL, "no %s percentiles in: %.300s", half, line);
    double v[4];
    char fmt[96];
    snprintf(fmt, sizeof fmt, "%s p50 %%lf p90 %%lf p99 %%lf max %%lf", half);
    cr_assert_eq(sscanf(at, fmt, &v[0], &v[1], &v[2], &v[3]), 4, "%s percentiles do not parse: %.200s", half, at);
    cr_expect(v[0] > 0 && v[0] <= v[1] && v[1] <= v[2] && v[2] <= v[3], "%s: p50 %g p90 %g p99 %g max %g", half, v[0],
              v[1], v[2], v[3]);
    cr_expect(v[3] <= (row_us + 0.01) * iters, "%s: a call of %g us in a loop of %d calls of %g us", half, v[3], iters,
              row_us);
}

Test(bench_tools, perf_tools_give_every_calls_time_as_percentiles)
{
    mr_result r = mr_run_t("", 3, 60, OH_BUILD_DIR "/tools/perf/all_reduce_perf",
                           "-b 8 -e 1M -f 1024 -n 40 -w 2 -c 1 -m 0 -P 1");
    cr_expect_eq(r.status, 0, "all_reduce_perf -P 1 exited with %d:\n%s", r.status, r.out);
    cr_expect(strstr(r.out, "# per call (-P 1)") != NULL, "no -P header:\n%s", r.out);
    cr_expect(strstr(r.out, "# Out of bounds values : 0 OK") != NULL, "wrong elements:\n%s", r.out);
    int rows = 0;
    for (const char *row = strstr(r.out, "[rank 0]  "); row; row = strstr(row + 1, "[rank 0]  ")) {
        double oop = -1, ip = -1;
        if (sscanf(row, "[rank 0] %*s %*s %*s %*s %*s %lf %*s %*s %*s %lf", &oop, &ip) != 2)
            continue; /* a header line */
        const char *next = strchr(row, '\n');
        cr_assert(next != NULL && !strncmp(next + 1, "[rank 0] #  per call (us, the largest over ranks):", 50),
                  "no percentiles under the row: %.300s", row);
        expect_pcts(next + 1, "out-of-place", oop, 40);
        expect_pcts(next + 1, "in-place", ip, 40);
        rows++;
    }
    cr_expect_eq(rows, 2, "%d rows (8 B and 1 MiB wanted):\n%s", rows, r.out);
    free(r.out);
    r = mr_run_t("", 2, 60, OH_BUILD_DIR "/tools/perf/broadcast_perf", "-b 8 -e 8 -n 20 -w 2 -c 0 -m 0");
    cr_expect_eq(r.status, 0, "broadcast_perf exited with %d:\n%s", r.status, r.out);
    cr_expect(strstr(r.out, "per call") == NULL, "percentiles without -P:\n%s", r.out);
    free(r.out);
    expect_bad_flag("broadcast_perf", 'P', "2");
}

/* sendrecv_perf -s 1: HcclSend and HcclRecv as two calls, around an odd ring (rank 2 and rank 0
 * both send first), every received element checked; the header says which calls. */
Test(bench_tools, sendrecv_perf_separate_calls)
{
    mr_result r = mr_run_t("", 3, 60, OH_BUILD_DIR "/tools/perf/sendrecv_perf",
                           "-b 8 -e 64K -f 8 -n 20 -w 2 -c 1 -m 0 -s 1");
    cr_expect_eq(r.status, 0, "sendrecv_perf -s 1 exited with %d:\n%s", r.status, r.out);
    cr_expect(strstr(r.out, "# calls: HcclSend and HcclRecv, even ranks send first (-s 1)") != NULL,
              "no calls header:\n%s", r.out);
    cr_expect(strstr(r.out, "# Out of bounds values : 0 OK") != NULL, "wrong elements:\n%s", r.out);
    free(r.out);
}

/* -v 1: the V forms' timed calls take other tables every call, in and out of place, around an odd
 * number of ranks (uneven totals); the checked calls after them take equal blocks, every element
 * checked; the header says which tables. A bad -v is refused. */
Test(bench_tools, v_perf_tools_change_tables_every_call, .timeout = 240)
{
    static const char *const tools[] = {"alltoallv_perf", "all_gatherv_perf", "reduce_scatterv_perf",
                                        "alltoallvc_perf"};
    for (size_t i = 0; i < sizeof tools / sizeof *tools; i++) {
        char path[512];
        snprintf(path, sizeof path, OH_BUILD_DIR "/tools/perf/%s", tools[i]);
        mr_result r = mr_run_t("", 3, 60, path, "-b 8 -e 64K -f 16 -n 20 -w 2 -c 1 -m 0 -v 1");
        cr_expect_eq(r.status, 0, "%s -v 1 exited with %d:\n%s", tools[i], r.status, r.out);
        cr_expect(strstr(r.out, "# tables: other ones every timed call") != NULL, "%s: no tables header:\n%s",
                  tools[i], r.out);
        cr_expect(strstr(r.out, "# Out of bounds values : 0 OK") != NULL, "%s: wrong elements:\n%s", tools[i],
                  r.out);
        free(r.out);
    }
    expect_bad_flag("alltoallv_perf", 'v', "2");
}

/* The peers' benchmarks (built by compare.sh only, so their shared parser is checked here) take
 * the same -a 3|4 and nothing else. */
static jmp_buf g_bad_arg;

static void bad_arg(const char *what, const char *val)
{
    (void)what, (void)val;
    longjmp(g_bad_arg, 1);
}

static bool parse_peer_args(const char *a_value, coll_bench_args *a)
{
    char *argv[] = {"bench", "-c", "broadcast", "-a", (char *)a_value, NULL};
    optind = 0; /* glibc: a full restart of getopt, also after a parse left by longjmp */
    if (setjmp(g_bad_arg))
        return false;
    coll_bench_parse(a_value ? 5 : 3, argv, 0, bad_arg, a);
    return true;
}

/* -I (the MPI benchmark's in-place calls) only where the benchmark offers it. */
static bool parse_in_place(unsigned offers, coll_bench_args *a)
{
    char *argv[] = {"bench", "-c", "allreduce", "-I", NULL};
    optind = 0;
    if (setjmp(g_bad_arg))
        return false;
    coll_bench_parse(4, argv, offers, bad_arg, a);
    return true;
}

Test(bench_tools, in_place_only_where_offered)
{
    coll_bench_args a;
    cr_assert(parse_in_place(COLL_BENCH_IN_PLACE, &a), "-I refused where offered");
    cr_expect(a.in_place, "-I is in place");
    cr_expect(!parse_in_place(COLL_BENCH_VERIFY, &a), "-I taken where not offered");
    cr_assert(parse_peer_args("4", &a));
    cr_expect(!a.in_place, "out of place is the default");
}

Test(bench_tools, peer_benchmarks_take_the_slowest_rank_or_the_span)
{
    coll_bench_args a;
    cr_assert(parse_peer_args(NULL, &a), "no -a refused");
    cr_expect(!a.span, "the default is the slowest rank (-a 3)");
    cr_assert(parse_peer_args("4", &a), "-a 4 refused");
    cr_expect(a.span, "-a 4 is the span");
    cr_assert(parse_peer_args("3", &a), "-a 3 refused");
    cr_expect(!a.span, "-a 3 is the slowest rank");
    cr_expect(!parse_peer_args("5", &a), "-a 5 taken");
    cr_expect(!parse_peer_args("44", &a), "-a 44 taken");
}

Test(bench_tools, compare_sh_refuses_a_bad_time_mode)
{
    mr_result r = mr_run_cmd(COMPARE " -a 2 -p '' 2>&1");
    cr_expect_eq(r.status, 2, "compare.sh -a 2 exited with %d, not 2", r.status);
    cr_expect(strstr(r.out, "-a must be 3 (slowest rank) or 4 (span)") != NULL, "no word of the bad -a:\n%s", r.out);
    free(r.out);
}

Test(bench_tools, compare_sh_refuses_bad_iteration_counts)
{
    mr_result r = mr_run_cmd(COMPARE " -I 0 -p '' 2>&1");
    cr_expect_eq(r.status, 2, "compare.sh -I 0 exited with %d, not 2", r.status);
    cr_expect(strstr(r.out, "-I must be a number >= 1") != NULL, "no word of the bad -I:\n%s", r.out);
    free(r.out);
    r = mr_run_cmd(COMPARE " -i x -p '' 2>&1");
    cr_expect_eq(r.status, 2, "compare.sh -i x exited with %d, not 2", r.status);
    free(r.out);
}

Test(bench_tools, compare_sh_refuses_a_bad_large_size)
{
    mr_result r = mr_run_cmd(COMPARE " -L 2X -p '' 2>&1");
    cr_expect_eq(r.status, 2, "compare.sh -L 2X exited with %d, not 2", r.status);
    cr_expect(strstr(r.out, "-L must be a size like 256M") != NULL, "no word of the bad size:\n%s", r.out);
    free(r.out);
}

/* tools/bench/drift.sh (docs/perf.md, twenty-seventh pass): OpenHCCL's series alone (no peer in
 * CI), two rounds of a positive time each and the summary row; then the summary of a saved series
 * (-S), whose rank correlations must be +1 for a peer that slows down with OpenHCCL, -1 for one that
 * speeds up as it slows down, computed over the rounds where both ran only. */
#define DRIFT OH_SOURCE_DIR "/tools/bench/drift.sh -B " OH_BUILD_DIR

Test(bench_tools, drift_sh_times_openhccl_round_by_round, .timeout = 120)
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

Test(bench_tools, drift_sh_summarizes_a_saved_series)
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

Test(bench_tools, drift_sh_refuses_bad_arguments)
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

static bool parse_coll(const char *name, coll_bench_args *a)
{
    char *argv[] = {"bench", "-c", (char *)name, NULL};
    optind = 0;
    if (setjmp(g_bad_arg))
        return false;
    coll_bench_parse(3, argv, 0, bad_arg, a);
    return true;
}

/* Resident pages of this process (/proc/self/statm's second field), -1 unread. */
static long resident_pages(void)
{
    long size = -1, resident = -1;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &size, &resident) != 2)
            resident = -1;
        fclose(f);
    }
    return resident;
}

/* The peers' buffers are real memory, as OpenHCCL's: 32 MiB of ones make 32 MiB resident (a
 * calloc'd buffer nobody writes makes none: its pages map the kernel's zero page, which an MPI
 * send then reads from the cache; docs/perf.md, thirty-fourth pass). */
Test(bench_tools, peer_benchmark_buffers_are_written)
{
    size_t elems = (32u << 20) / sizeof(float);
    long page = sysconf(_SC_PAGESIZE), before = resident_pages();
    float *b = coll_bench_ones(elems);
    long after = resident_pages();
    cr_assert(b && before >= 0 && after >= 0, "coll_bench_ones or /proc/self/statm failed");
    cr_expect_geq((after - before) * page, 30l << 20, "32 MiB of ones made %ld KiB resident",
                  (after - before) * page / 1024);
    size_t wrong = 0;
    for (size_t i = 0; i < elems; i++)
        wrong += b[i] != 1.0f;
    cr_expect_eq(wrong, 0, "%zu of %zu elements are not 1", wrong, elems);
    free(b);
    float *one = coll_bench_ones(0); /* an empty buffer still has an address to pass */
    cr_expect(one && *one == 1.0f, "coll_bench_ones(0): no element of 1");
    free(one);
}

/* compare.sh -c reduce/scatter/sendrecv: the peers' benchmarks take the names and size them as
 * the perf tools do (reduce_perf, scatter_perf, sendrecv_perf print, at 3 ranks: 8 B is 2
 * elements; 256 B of scatter is 16 B blocks, 240 B, count 20), with nccl-tests' factors. */
Test(bench_tools, peer_benchmarks_size_reduce_scatter_sendrecv)
{
    static const struct {
        const char *name;
        coll_kind k;
        size_t bytes, count, send, recv;
        double alg_bytes, bus;
    } want[] = {
        {"reduce", REDUCE, 8, 2, 2, 2, 8, 1.0},
        {"scatter", SCATTER, 256, 20, 60, 20, 240, 2.0 / 3},
        {"sendrecv", SENDRECV, 8, 2, 2, 2, 8, 1.0},
        {"sendrecv", SENDRECV, 1u << 20, 1u << 18, 1u << 18, 1u << 18, 1u << 20, 1.0},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        coll_bench_args a;
        cr_assert(parse_coll(want[i].name, &a), "-c %s refused", want[i].name);
        cr_expect_eq(a.coll, want[i].k, "-c %s", want[i].name);
        size_t count, send, recv;
        coll_bench_shape(want[i].k, want[i].bytes, 3, &count, &send, &recv);
        cr_expect(count == want[i].count && send == want[i].send && recv == want[i].recv,
                  "%s of %zu B at 3 ranks: count %zu send %zu recv %zu", want[i].name, want[i].bytes, count, send,
                  recv);
        cr_expect_eq(coll_bench_alg_bytes(want[i].k, 3, count), want[i].alg_bytes, "%s: algbw bytes",
                     want[i].name);
        cr_expect(fabs(coll_bench_bus_factor(want[i].k, 3) - want[i].bus) < 1e-12, "%s: bus factor",
                  want[i].name);
    }
}

/* tools/bench/callcount.sh without a peer (Open MPI is optional): OpenHCCL's row of instructions a
 * call per rank under callgrind, the calls counted from callgrind's own count of HcclBroadcast,
 * and the top functions. valgrind is a tool of the machine, not a dependency of the project: the
 * test says so and skips where it is missing. */
#define CALLCOUNT OH_SOURCE_DIR "/tools/bench/callcount.sh -B " OH_BUILD_DIR

Test(bench_tools, callcount_sh_counts_a_calls_instructions, .timeout = 300)
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

Test(bench_tools, callcount_sh_refuses_bad_arguments)
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
