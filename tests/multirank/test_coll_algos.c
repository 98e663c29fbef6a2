/* Every algorithm the selector or HCCL_ALGO can pick, executed for every collective it serves, at
 * 2, 3, 4, 8, 9 and 16 ranks (hcclrun sizes the emulated server for 16), each element checked by
 * coll_check against its host reference (built from the HCCL definitions, not from algos/).
 * The automatic choice (eager and mesh up to 16 ranks, p2p for point to point) is test_coll_ranks' job;
 * here HCCL_ALGO forces ring, mesh and pairwise. Breadth shrinks with the rank count to keep the
 * suite near 3 minutes on 2 cores: every dtype x op at small N, a subset at 9 and 16. See
 * docs/testing.md. */
#include "multirank/mr_run.h"

#define REDUCING_AND_MOVING "allreduce,broadcast,allgather,reducescatter,reduce,scatter,alltoall,alltoallv," \
                            "alltoallvc,allgatherv,reducescatterv,barrier"
#define A2A "alltoall,alltoallv,alltoallvc"
#define P2P "sendrecv,batchsendrecv,group"
/* At 9 and 16 ranks: one type per width and float format, every reduce op. */
#define WIDE_DTYPES "int8,uint16,int32,int64,fp16,bf16,fp32,fp64,int128"

static void check_env(const char *env, const char *algo, unsigned n, const char *colls, const char *extra)
{
    char args[512], what[128];
    snprintf(args, sizeof args, "--algo %s --colls %s %s", algo, colls, extra);
    snprintf(what, sizeof what, "%s coll_check --algo %s on %u ranks", env, algo, n);
    mr_expect_ok(mr_run_t(env, n, n >= 8 ? 450 : 240, MR_COLL_CHECK, args), what, " 0 failed");
}

static void check(const char *algo, unsigned n, const char *colls, const char *extra)
{
    check_env("", algo, n, colls, extra);
}

/* ring: every collective but point to point. Counts 1048579 only for the representative subset. */
Test(ring, n2, .timeout = 300) { check("ring", 2, REDUCING_AND_MOVING, ""); }
Test(ring, n3, .timeout = 300) { check("ring", 3, REDUCING_AND_MOVING, ""); }
Test(ring, n4, .timeout = 300) { check("ring", 4, REDUCING_AND_MOVING, ""); }
Test(ring, n8, .timeout = 500) { check("ring", 8, REDUCING_AND_MOVING, "--counts 0,1,7,65539"); }
Test(ring, n9, .timeout = 500) { check("ring", 9, REDUCING_AND_MOVING, "--counts 0,1,7,65539 --dtypes " WIDE_DTYPES); }
Test(ring, n16, .timeout = 500)
{
    check("ring", 16, REDUCING_AND_MOVING, "--counts 0,1,7,65539 --dtypes " WIDE_DTYPES);
}

/* mesh, forced: also for the small counts that the automatic choice sends eager. */
Test(mesh, n9, .timeout = 500) { check("mesh", 9, REDUCING_AND_MOVING, "--counts 0,1,7,65539 --dtypes " WIDE_DTYPES); }
Test(mesh, n16, .timeout = 500)
{
    check("mesh", 16, REDUCING_AND_MOVING, "--counts 0,1,7,65539 --dtypes " WIDE_DTYPES);
}

/* pairwise: the all-to-all family, every dtype. */
Test(pairwise, n2, .timeout = 300) { check("pairwise", 2, A2A, "--counts 0,1,7,65539"); }
Test(pairwise, n3, .timeout = 300) { check("pairwise", 3, A2A, "--counts 0,1,7,65539"); }
Test(pairwise, n4, .timeout = 300) { check("pairwise", 4, A2A, "--counts 0,1,7,65539"); }
Test(pairwise, n8, .timeout = 300) { check("pairwise", 8, A2A, "--counts 0,1,7,65539"); }
Test(pairwise, n9, .timeout = 300) { check("pairwise", 9, A2A, "--counts 0,1,7,65539"); }
Test(pairwise, n16, .timeout = 500) { check("pairwise", 16, A2A, "--counts 0,1,7,65539 --dtypes " WIDE_DTYPES); }

/* p2p (the only algorithm for Send/Recv) beyond 8 ranks; 2-8 ranks are in test_coll_ranks. */
Test(p2p, n9, .timeout = 300) { check("auto", 9, P2P, "--counts 0,1,7,65539 --dtypes " WIDE_DTYPES); }
Test(p2p, n16, .timeout = 500) { check("auto", 16, P2P, "--counts 0,1,7,65539 --dtypes " WIDE_DTYPES); }

/* Deterministic mode's plans (rank-ordered mesh, ring chain) for every reduction, dtype and op:
 * coll_check's exact values make any order right, so this checks contributions and placement;
 * the order itself is test_coll_determinism's. */
#define REDUCTIONS "allreduce,reduce,reducescatter,reducescatterv,barrier"
#define DET "HCCL_DETERMINISTIC=true"
Test(deterministic, ring_n3, .timeout = 300) { check_env(DET, "ring", 3, REDUCTIONS, "--counts 0,1,7,65539"); }
Test(deterministic, mesh_n3, .timeout = 300) { check_env(DET, "mesh", 3, REDUCTIONS, "--counts 0,1,7,65539"); }
Test(deterministic, ring_n9, .timeout = 300) { check_env(DET, "ring", 9, REDUCTIONS, "--counts 0,1,7,65539"); }
Test(deterministic, mesh_n9, .timeout = 300) { check_env(DET, "mesh", 9, REDUCTIONS, "--counts 0,1,7,65539"); }

/* The algorithm that ran: with HCCL_DEBUG=DEBUG every rank logs "compiled <HcclOp> with <algo>"
 * for each plan it compiles. One case of `count` elements per collective, --algo `algo`. */
static void expect_in_log(const mr_result *r, const char *algo, unsigned n, const char *op, const char *want)
{
    char needle[96];
    for (unsigned rank = 0; rank < n; rank++) {
        snprintf(needle, sizeof needle, "rank %u: compiled %s with %s\n", rank, op, want);
        cr_expect(strstr(r->out, needle) != NULL, "%u ranks, --algo %s: no \"%.*s\" in the log", n, algo,
                  (int)strlen(needle) - 1, needle);
    }
}

/* ... and every op of `ops` ran `want`, except the one named `except` (NULL: none), which ran
 * `except_want`. */
static void expect_compiled_but(const char *algo, const char *want, unsigned n, const char *colls, unsigned count,
                                const char *const *ops, int nops, const char *except, const char *except_want)
{
    char args[256];
    snprintf(args, sizeof args, "--algo %s --colls %s --counts %u --dtypes fp32 --ops sum --roots 0 --place out",
             algo, colls, count);
    mr_result r = mr_run_t("HCCL_DEBUG=DEBUG", n, 240, MR_COLL_CHECK, args);
    cr_expect_eq(r.status, 0, "coll_check --algo %s on %u ranks: exit status %d", algo, n, r.status);
    for (int i = 0; i < nops; i++)
        expect_in_log(&r, algo, n, ops[i], except && !strcmp(ops[i], except) ? except_want : want);
    const char *other = !strcmp(want, "ring") ? " with mesh\n" : " with ring\n";
    cr_expect(strstr(r.out, other) == NULL, "%u ranks, --algo %s: a plan compiled%.*s", n, algo,
              (int)strlen(other) - 1, other);
    free(r.out);
}

static void expect_compiled_as(const char *algo, const char *want, unsigned n, const char *colls, unsigned count,
                               const char *const *ops, int nops)
{
    expect_compiled_but(algo, want, n, colls, count, ops, nops, NULL, NULL);
}

/* The algorithm forced is the one that ran, for a small case (7 elements). */
static void expect_compiled(const char *algo, unsigned n, const char *colls, const char *const *ops, int nops)
{
    expect_compiled_as(algo, algo, n, colls, 7, ops, nops);
}

static const char *const all_ops[] = {"HcclAllReduce", "HcclBroadcast", "HcclAllGather", "HcclReduceScatter",
                                      "HcclReduce", "HcclScatter", "HcclAlltoAll", "HcclAlltoAllV",
                                      "HcclAlltoAllVC", "HcclAllGatherV", "HcclReduceScatterV"};
static const char *const a2a_ops[] = {"HcclAlltoAll", "HcclAlltoAllV", "HcclAlltoAllVC"};

Test(selected, ring_n3) { expect_compiled("ring", 3, REDUCING_AND_MOVING, all_ops, 11); }
Test(selected, mesh_n9) { expect_compiled("mesh", 9, REDUCING_AND_MOVING, all_ops, 11); }
Test(selected, pairwise_n3) { expect_compiled("pairwise", 3, A2A, a2a_ops, 3); }
/* Nothing forced, 16 ranks on one server, 256 KiB (past the eager crossover): mesh, not ring;
 * AlltoAllV eager, whose plan sends each block through the inbox or straight by its size. */
Test(selected, auto_mesh_n16)
{
    expect_compiled_but("auto", "mesh", 16, REDUCING_AND_MOVING, 65539, all_ops, 11, "HcclAlltoAllV", "eager");
}
/* Nothing forced, small blocks: the V-ops go eager (algos/select.c). */
static const char *const v_ops[] = {"HcclAllGatherV", "HcclReduceScatterV", "HcclAlltoAllVC", "HcclAlltoAllV"};
Test(selected, auto_eager_v_n4)
{
    expect_compiled_as("auto", "eager", 4, "allgatherv,reducescatterv,alltoallvc,alltoallv", 7, v_ops, 4);
}

/* HCCL_ALGO's per-op form: named ops get their algorithm, the others the automatic choice
 * (mesh at 3 ranks). */
Test(selected, per_op_n3)
{
    static const char *const want[][2] = {
        {"HcclAllReduce", "ring"},      {"HcclReduceScatterV", "ring"}, {"HcclAlltoAll", "pairwise"},
        {"HcclAlltoAllVC", "pairwise"}, {"HcclBroadcast", "mesh"},      {"HcclAllGather", "mesh"},
    };
    mr_result r = mr_run_t("HCCL_DEBUG=DEBUG HCCL_ALGO='allreduce=level0:NA;level1:ring/reducescatter=level0:NA;"
                           "level1:ring/alltoall=level0:NA;level1:pairwise'",
                           3, 240, MR_COLL_CHECK,
                           "--colls " REDUCING_AND_MOVING " --counts 7 --dtypes fp32 --ops sum --roots 0 --place out");
    cr_expect_eq(r.status, 0, "exit status %d", r.status);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        for (unsigned rank = 0; rank < 3; rank++) {
            char needle[96];
            snprintf(needle, sizeof needle, "rank %u: compiled %s with %s\n", rank, want[i][0], want[i][1]);
            cr_expect(strstr(r.out, needle) != NULL, "no \"%.*s\" in the log", (int)strlen(needle) - 1, needle);
        }
    free(r.out);
}

/* HCCL_EMU_NO_PROG=1: the emulator without its program executor, so the runtime submits every
 * instruction of a launch as a task of its own (the path a backend without prog_launch takes):
 * the same results, for every collective and point to point (auto: mesh, p2p) and for ring. */
Test(unrolled, auto_n4, .timeout = 300) { check_env("HCCL_EMU_NO_PROG=1", "auto", 4, "all", "--counts 0,1,7,65539"); }
Test(unrolled, ring_n3, .timeout = 300)
{
    check_env("HCCL_EMU_NO_PROG=1", "ring", 3, REDUCING_AND_MOVING, "--counts 0,1,7,65539 --dtypes int8,fp16,fp32,int64");
}
