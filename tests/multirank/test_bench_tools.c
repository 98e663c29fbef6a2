/* The benchmark programs of tools/bench run to the end with their documented command lines (fewer
 * rounds): they are how docs/perf.md, docs/perf-history.md and docs/runtime.md were measured, and
 * nothing else runs them. enqueue_bench once issued more calls behind its held stream than the
 * runtime lets be in flight, and hung. Numbers are not checked (speed is shown by benchmarks, not tests). */
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
 * send then reads from the cache; docs/perf-history.md, thirty-fourth pass). */
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
