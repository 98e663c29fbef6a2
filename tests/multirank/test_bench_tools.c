/* The benchmark programs of tools/bench run to the end with their documented command lines (fewer
 * rounds): they are how docs/perf.md and docs/runtime.md were measured, and nothing else runs
 * them. enqueue_bench once issued more calls behind its held stream than the runtime lets be in
 * flight, and hung. Numbers are not checked (speed is shown by benchmarks, not tests). */
#include <criterion/criterion.h>

#include "multirank/mr_run.h"

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
