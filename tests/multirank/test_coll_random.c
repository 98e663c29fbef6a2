/* Random sequences of calls (coll_misc random-SEED, tests/progs/coll_random.c): 160 calls drawn
 * from a seed, every collective and V form, Send/Recv rings (batched or grouped), a lone Send/Recv
 * pair, Barriers, every dtype and op, zero and odd sizes across every crossover, runs that go
 * one-way, two streams, sub-communicators (from 4 ranks), stalled receivers and communicators made
 * again between rounds, issued back to back and checked element by element. The fixed sequences
 * of test_coll_eager test each mechanism alone; these test them mixed, under every protocol and
 * algorithm setting a user can choose, on one server and across emulated servers, on hal/emu and
 * hal/ascend, with ranks as processes and as threads of one process; and with a rank whose call
 * differs or that leaves the job. Each case runs RAND_SEEDS fixed seeds (a failure names its seed;
 * `hcclrun -n N tests/progs/coll_misc random-SEED` with the case's environment replays it). */
#include "multirank/mr_run.h"

#define RAND_SEEDS 3

/* How a case runs its seeds: the environment, hcclrun's server split (NULL: one server), ranks as
 * threads of one process (threads-N-random-SEED), and a fault: one rank's call differing
 * (random-SEED-mismatch) or one rank leaving the job (random-SEED-exit), which every rank left must
 * report. */
typedef struct rand_case {
    const char *env;
    unsigned n;
    const char *servers;
    bool threads;
    const char *fault; /* "", "-mismatch" or "-exit" */
} rand_case;

/* The survivors' error names the rank that left: on its server, that it exited without
 * HcclCommDestroy; across servers, the link to it (whichever a rank learned first). */
static void expect_exit_named(const char *out, unsigned n, const char *what)
{
    for (unsigned r = 0; r < n; r++) {
        char left[48], exited[48], link[48];
        snprintf(left, sizeof left, "rank %u: exiting after", r);
        if (!strstr(out, left))
            continue;
        snprintf(exited, sizeof exited, "rank %u (pid", r);
        snprintf(link, sizeof link, "the link to rank %u ", r);
        cr_expect(strstr(out, exited) || strstr(out, link), "%s: no survivor's error names rank %u", what, r);
        return;
    }
    cr_expect(0, "%s: no rank said it was leaving", what);
}

/* coll_misc's random calls for seeds first .. first + RAND_SEEDS - 1, as the case says. */
static void run_seeds(rand_case k, unsigned first)
{
    char prog[512];
    if (k.servers)
        snprintf(prog, sizeof prog, "--servers %s %s", k.servers, MR_COLL_MISC);
    else
        snprintf(prog, sizeof prog, "%s", MR_COLL_MISC);
    for (unsigned seed = first; seed < first + RAND_SEEDS; seed++) {
        char args[64], env[256], what[512], pass[96];
        snprintf(args, sizeof args, "%s%.0u%srandom-%u%s", k.threads ? "threads-" : "", k.threads ? k.n : 0,
                 k.threads ? "-" : "", seed, k.fault);
        /* A fault nothing detects would end in the timeout: a minute, not half an hour. */
        snprintf(env, sizeof env, "%s%s", *k.fault ? "HCCL_EXEC_TIMEOUT=60 " : "", k.env);
        snprintf(what, sizeof what, "%s coll_misc %s on %u ranks%s%s", env, args, k.n, k.servers ? ", servers " : "",
                 k.servers ? k.servers : "");
        snprintf(pass, sizeof pass, "coll_misc %s: PASS", args);
        mr_result r = mr_run_t(env, k.threads ? 1 : k.n, 240, prog, args);
        if (!strcmp(k.fault, "-exit"))
            expect_exit_named(r.out, k.n, what);
        mr_expect_ok(r, what, pass);
    }
}

static void random_calls(const char *env, unsigned n, const char *servers, unsigned first)
{
    run_seeds((rand_case){env, n, servers, false, ""}, first);
}

/* The defaults: eager, one-way and mesh by size; every rank count from 2 to 8, and 16. */
Test(random, n2, .timeout = 300) { random_calls("", 2, NULL, 100); }
Test(random, n3, .timeout = 300) { random_calls("", 3, NULL, 200); }
Test(random, n4, .timeout = 300) { random_calls("", 4, NULL, 300); }
Test(random, n5, .timeout = 300) { random_calls("", 5, NULL, 400); }
Test(random, n6, .timeout = 300) { random_calls("", 6, NULL, 500); }
Test(random, n7, .timeout = 300) { random_calls("", 7, NULL, 600); }
Test(random, n8, .timeout = 300) { random_calls("", 8, NULL, 700); }
Test(random, n16, .timeout = 300) { random_calls("", 16, NULL, 800); }

/* The protocol settings: the largest crossover, one-way off, eager off. */
Test(random, eager_64k_n4, .timeout = 300) { random_calls("HCCL_EAGER_MAX_BYTES=65536", 4, NULL, 900); }
Test(random, oneway_off_n3, .timeout = 300) { random_calls("HCCL_EAGER_ONEWAY=0", 3, NULL, 1000); }
Test(random, eager_off_n5, .timeout = 300) { random_calls("HCCL_EAGER_MAX_BYTES=0", 5, NULL, 1100); }

/* Forced algorithms (eager stays off when one is forced), deterministic reductions, a 1 MiB scratch
 * (large calls in chunks), and the executor without programs (a HAL task per step). */
Test(random, ring_n5, .timeout = 300) { random_calls("HCCL_ALGO='level0:NA;level1:ring'", 5, NULL, 1200); }
Test(random, ring_push_n4, .timeout = 300) { random_calls("HCCL_ALGO='level0:NA;level1:ring_push'", 4, NULL, 1300); }
Test(random, pairwise_n6, .timeout = 300) { random_calls("HCCL_ALGO='level0:NA;level1:pairwise'", 6, NULL, 1400); }
Test(random, deterministic_n4, .timeout = 300) { random_calls("HCCL_DETERMINISTIC=1", 4, NULL, 1500); }
Test(random, buffsize_1m_n3, .timeout = 300) { random_calls("HCCL_BUFFSIZE=1", 3, NULL, 1600); }
Test(random, no_programs_n4, .timeout = 300) { random_calls("HCCL_EMU_NO_PROG=1", 4, NULL, 1700); }

/* Across emulated servers: every byte between servers crosses a TCP link (hal/net). */
Test(random, servers_2x2, .timeout = 300) { random_calls("", 4, "2", 1800); }
Test(random, servers_3_2_3, .timeout = 300) { random_calls("", 8, "3+2+3", 1900); }

/* hal/ascend: libhccl's Ascend backend over CANN's public ACL API (here our libascendcl.so,
 * docs/ascend.md), on one server and across two. */
Test(random, ascend_n3, .timeout = 300) { random_calls("HCCL_HAL=ascend", 3, NULL, 2000); }
Test(random, ascend_servers_2x2, .timeout = 300) { random_calls("HCCL_HAL=ascend", 4, "2", 2100); }

/* Ranks that are threads of one process (HcclCommInitAll), as a program that drives every device
 * of a server from one process has them. */
Test(random, threads_n4, .timeout = 300) { run_seeds((rand_case){"", 4, NULL, true, ""}, 2200); }
Test(random, threads_n8, .timeout = 300) { run_seeds((rand_case){"", 8, NULL, true, ""}, 2300); }

/* One rank's call differs from the others' (its count, root, reduce op or dtype) at a call the seed
 * draws, after whole rounds that pass: every rank reports the failure, at the call, its synchronize
 * or the HcclBarrier after it, and none hangs. */
static void mismatched(const char *env, unsigned n, const char *servers, unsigned first)
{
    run_seeds((rand_case){env, n, servers, false, "-mismatch"}, first);
}
Test(random, mismatch_n2, .timeout = 300) { mismatched("", 2, NULL, 2400); }
Test(random, mismatch_n3, .timeout = 300) { mismatched("", 3, NULL, 2500); }
Test(random, mismatch_n8, .timeout = 300) { mismatched("", 8, NULL, 2600); }
Test(random, mismatch_oneway_off_n4, .timeout = 300) { mismatched("HCCL_EAGER_ONEWAY=0", 4, NULL, 2700); }
Test(random, mismatch_ring_n5, .timeout = 300) { mismatched("HCCL_ALGO='level0:NA;level1:ring'", 5, NULL, 2800); }
Test(random, mismatch_servers_2x2, .timeout = 300) { mismatched("", 4, "2", 2900); }
Test(random, mismatch_threads_n4, .timeout = 300) { run_seeds((rand_case){"", 4, NULL, true, "-mismatch"}, 3000); }

/* One rank leaves the job at a call the seed draws, without HcclCommDestroy, after synchronizing
 * the calls it made or at once with some of them not done: every other rank reports the failure
 * (naming the rank that left), and none hangs. hcclrun's -n counts the rank that leaves, which
 * prints no PASS line. */
static void peer_exits(const char *env, unsigned n, const char *servers, unsigned first)
{
    run_seeds((rand_case){env, n, servers, false, "-exit"}, first);
}
Test(random, exit_n3, .timeout = 300) { peer_exits("", 3, NULL, 3100); }
Test(random, exit_n8, .timeout = 300) { peer_exits("", 8, NULL, 3200); }
Test(random, exit_servers_2x2, .timeout = 300) { peer_exits("", 4, "2", 3300); }
Test(random, exit_ascend_n4, .timeout = 300) { peer_exits("HCCL_HAL=ascend", 4, NULL, 3400); }
