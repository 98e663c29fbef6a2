/* The eager protocol on the emulator: every collective it serves at 2, 3, 4, 8 and 16 ranks, every
 * dtype and op, odd counts on both sides of the crossover, in and out of place, each element
 * checked by coll_check; 42 collectives back to back across the crossover (coll_misc eagerseq:
 * inbox slots reused while peers are calls apart); one-way Broadcasts and Scatters back to back
 * (coll_misc onewayseq); chains of calls that run ahead and calls that must not (coll_misc
 * eagerchain); 1000 of them without a synchronize (more
 * than the runtime queues, coll_misc deepqueue); and the crossover's setting
 * (HCCL_EAGER_MAX_BYTES: the largest, one box; 16 KiB; off; unset: by collective and n). Mismatches between an eager and a
 * mesh plan are in test_coll_mismatch. */
#include "multirank/mr_run.h"

#define EAGER_COLLS "allreduce,broadcast,allgather,reducescatter,reduce,scatter,alltoall,barrier"

static void check(const char *env, unsigned n, const char *counts)
{
    char args[256], what[160];
    snprintf(args, sizeof args, "--colls " EAGER_COLLS " --counts %s --quiet", counts);
    snprintf(what, sizeof what, "%s coll_check on %u ranks", env, n);
    mr_expect_ok(mr_run(env, n, MR_COLL_CHECK, args), what, " 0 failed");
}

/* coll_misc SCENARIO on n ranks under env, which must pass on every rank. */
static void misc(const char *env, unsigned n, const char *scenario)
{
    char what[128], pass[64];
    snprintf(what, sizeof what, "%s coll_misc %s on %u ranks", env, scenario, n);
    snprintf(pass, sizeof pass, "coll_misc %s: PASS", scenario);
    mr_expect_ok(mr_run(env, n, MR_COLL_MISC, scenario), what, pass);
}

static void seq(const char *env, unsigned n)
{
    misc(env, n, "eagerseq");
}

/* The largest crossover (64 KiB, also the default): int8 16385 is eager, fp32 16385 is not. */
#define MAXED "HCCL_EAGER_MAX_BYTES=65536"
Test(eager, collectives_n2, .timeout = 300) { check(MAXED, 2, "0,1,7,4097,16385"); }
Test(eager, collectives_n3, .timeout = 300) { check(MAXED, 3, "0,1,7,4097,16385"); }
Test(eager, collectives_n4, .timeout = 300) { check(MAXED, 4, "0,1,7,4097,16385"); }
Test(eager, collectives_n8, .timeout = 300) { check(MAXED, 8, "0,1,7,4097"); }
Test(eager, collectives_n16, .timeout = 300) { check(MAXED, 16, "0,1,7,4097"); }

Test(eager, back_to_back_n2, .timeout = 300) { seq("", 2); }
Test(eager, back_to_back_n3, .timeout = 300) { seq("", 3); }
Test(eager, back_to_back_n4, .timeout = 300) { seq("", 4); }
Test(eager, back_to_back_n8, .timeout = 300) { seq("", 8); }
Test(eager, back_to_back_n16, .timeout = 300) { seq("", 16); }
Test(eager, back_to_back_16k_crossover_n4, .timeout = 300) { seq("HCCL_EAGER_MAX_BYTES=16384", 4); }
Test(eager, back_to_back_off_n3, .timeout = 300) { seq("HCCL_EAGER_MAX_BYTES=0", 3); }

/* One-way Broadcasts and Scatters (coll_misc onewayseq): runs of one root around the one-way slots'
 * depth, changing roots, drains before AllReduces and at the destroy; and the same calls with the
 * one-way protocol off (HCCL_EAGER_ONEWAY=0: the full exchange). */
static void oneway(const char *env, unsigned n)
{
    misc(env, n, "onewayseq");
}
Test(eager, oneway_runs_n2, .timeout = 300) { oneway("", 2); }
Test(eager, oneway_runs_n3, .timeout = 300) { oneway("", 3); }
Test(eager, oneway_runs_n4, .timeout = 300) { oneway("", 4); }
Test(eager, oneway_runs_n5, .timeout = 300) { oneway("", 5); }
Test(eager, oneway_runs_n8, .timeout = 300) { oneway("", 8); }
Test(eager, oneway_off_runs_n4, .timeout = 300) { oneway("HCCL_EAGER_ONEWAY=0", 4); }

/* One-way Reduces (coll_misc onewayreduce): runs of one root around the gather slots, a root that
 * stalls while its writers run up to their credits, a change of direction with the same root,
 * changing roots, a run the destroy drains; and the same with the protocol off. */
Test(eager, oneway_reduce_n2, .timeout = 300) { misc("", 2, "onewayreduce"); }
Test(eager, oneway_reduce_n3, .timeout = 300) { misc("", 3, "onewayreduce"); }
Test(eager, oneway_reduce_n4, .timeout = 300) { misc("", 4, "onewayreduce"); }
Test(eager, oneway_reduce_n8, .timeout = 300) { misc("", 8, "onewayreduce"); }
Test(eager, oneway_reduce_off_n4, .timeout = 300) { misc("HCCL_EAGER_ONEWAY=0", 4, "onewayreduce"); }

/* Running ahead (docs/runtime.md): an eager call's sends while the call before it waits, never past
 * a call or a copy that writes its IN (coll_misc eagerchain). */
static void chain(unsigned n)
{
    misc("", n, "eagerchain");
}
Test(eager, run_ahead_chain_n2, .timeout = 300) { chain(2); }
Test(eager, run_ahead_chain_n4, .timeout = 300) { chain(4); }
Test(eager, run_ahead_chain_n8, .timeout = 300) { chain(8); }
Test(eager, run_ahead_chain_n16, .timeout = 300) { chain(16); }

/* More launches in flight than the runtime queues: the host runs half the queue, then goes on. */
static void deep(unsigned n)
{
    misc("", n, "deepqueue");
}
Test(eager, deep_queue_n2, .timeout = 300) { deep(2); }
Test(eager, deep_queue_n3, .timeout = 300) { deep(3); }
