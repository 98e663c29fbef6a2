/* Mismatched collectives must fail on every rank, in bounded time, with both calls named.
 * HCCL_EXEC_TIMEOUT=60 bounds a detection bug; hcclrun --timeout bounds a hang. */
#include "multirank/mr_run.h"

static void mismatch_env(const char *env, unsigned n, const char *kind, const char *const *needles)
{
    char args[64];
    snprintf(args, sizeof args, "mismatch-%s", kind);
    mr_result r = mr_run(env, n, MR_COLL_MISC, args);
    cr_expect_eq(r.status, 0, "mismatch-%s on %u ranks: hcclrun exited with %d", kind, n, r.status);
    cr_expect(strstr(r.out, "NOT DETECTED") == NULL, "mismatch-%s: some rank did not see the failure", kind);
    for (const char *const *s = needles; *s; s++)
        cr_expect(strstr(r.out, *s) != NULL, "mismatch-%s: the output does not mention \"%s\"", kind, *s);
    free(r.out);
}

static void mismatch(unsigned n, const char *kind, const char *const *needles)
{
    mismatch_env("HCCL_EXEC_TIMEOUT=60", n, kind, needles);
}

static const char *const skip_w[] = {"called HcclBarrier", "called HcclAllReduce", NULL};
static const char *const destroy_w[] = {"HcclCommDestroy", "called HcclAllReduce", NULL};
static const char *const op_w[] = {"called HcclBroadcast", "called HcclAllReduce", NULL};
static const char *const count_w[] = {"count=256", "count=512", NULL};
static const char *const root_w[] = {"root=0", "called HcclBroadcast", NULL};
static const char *const det_w[] = {"fp32, sum, deterministic)", "called HcclAllReduce(count=256, fp32, sum)", NULL};
static const char *const exit_w[] = {"rank 0 (pid", "exited without HcclCommDestroy", NULL};
static const char *const ow_destroy_w[] = {"HcclCommDestroy", "called HcclBroadcast", NULL};

Test(mismatch, skip_then_barrier_n2, .timeout = 150) { mismatch(2, "skip", skip_w); }
Test(mismatch, skip_then_barrier_n4, .timeout = 150) { mismatch(4, "skip", skip_w); }
Test(mismatch, skip_then_destroy_n2, .timeout = 150) { mismatch(2, "destroy", destroy_w); }
Test(mismatch, skip_then_destroy_n3, .timeout = 150) { mismatch(3, "destroy", destroy_w); }
Test(mismatch, broadcast_vs_allreduce_n2, .timeout = 150) { mismatch(2, "op", op_w); }
Test(mismatch, broadcast_vs_allreduce_n3, .timeout = 150) { mismatch(3, "op", op_w); }
Test(mismatch, counts_n2, .timeout = 150) { mismatch(2, "count", count_w); }
Test(mismatch, roots_n3, .timeout = 150) { mismatch(3, "root", root_w); }
Test(mismatch, determinism_n2, .timeout = 150) { mismatch(2, "determinism", det_w); }
Test(mismatch, determinism_n3, .timeout = 150) { mismatch(3, "determinism", det_w); }
/* One rank's count is eager-sized, the others' are not: an eager plan against mesh plans. */
static const char *const xcount_w[] = {"count=64", "count=65536", NULL};
Test(mismatch, eager_vs_mesh_allreduce_n2, .timeout = 150) { mismatch(2, "xcount-allreduce", xcount_w); }
Test(mismatch, eager_vs_mesh_allreduce_n4, .timeout = 150) { mismatch(4, "xcount-allreduce", xcount_w); }
Test(mismatch, eager_vs_mesh_allgather_n3, .timeout = 150) { mismatch(3, "xcount-allgather", xcount_w); }
Test(mismatch, eager_vs_mesh_broadcast_n4, .timeout = 150) { mismatch(4, "xcount-broadcast", xcount_w); }
Test(mismatch, eager_vs_mesh_reduce_n3, .timeout = 150) { mismatch(3, "xcount-reduce", xcount_w); }
Test(mismatch, eager_vs_mesh_allreduce_n8, .timeout = 150) { mismatch(8, "xcount-allreduce", xcount_w); }
/* Same call, but rank 0 has the eager protocol off (HCCL_EAGER_MAX_BYTES=0). */
static const char *const proto_w[] = {"HcclAllReduce(count=64, fp32, sum) with the eager protocol", NULL};
Test(mismatch, eager_off_on_one_rank_n2, .timeout = 150) { mismatch(2, "protocol", proto_w); }
Test(mismatch, eager_off_on_one_rank_n4, .timeout = 150) { mismatch(4, "protocol", proto_w); }
/* The same for an AlltoAllV of small blocks, whose eager ranks publish no record (header mode). */
static const char *const proto_a2av_w[] = {"HcclAlltoAllV(count=0, fp32) with the eager protocol", NULL};
Test(mismatch, eager_off_on_one_rank_alltoallv_n2, .timeout = 150)
{
    mismatch(2, "protocol-alltoallv", proto_a2av_w);
}
Test(mismatch, eager_off_on_one_rank_alltoallv_n4, .timeout = 150)
{
    mismatch(4, "protocol-alltoallv", proto_a2av_w);
}
/* Rank 0's eager crossover 64 KiB, the others' the default (8 KiB or less): an AlltoAllV of 16 KiB
 * blocks, inbox blocks on rank 0 and direct ones elsewhere. Before the crossover was part of the
 * signature, rank 0 completed the call reading its inbox, which its peers had not written. */
static const char *const crossover_w[] = {"with an eager crossover of 65536 B (HCCL_EAGER_MAX_BYTES)", NULL};
Test(mismatch, eager_crossovers_differ_alltoallv_n2, .timeout = 150)
{
    mismatch(2, "protocol-crossover", crossover_w);
}
Test(mismatch, eager_crossovers_differ_alltoallv_n4, .timeout = 150)
{
    mismatch(4, "protocol-crossover", crossover_w);
}
/* A peer process that dies is noticed by the watchdog within about a second. */
Test(mismatch, peer_exits_n2, .timeout = 150) { mismatch(2, "exit", exit_w); }
Test(mismatch, peer_exits_n8, .timeout = 150) { mismatch(8, "exit", exit_w); }
/* The issue asks for every scenario on 8 ranks too. */
Test(mismatch, skip_then_barrier_n8, .timeout = 150) { mismatch(8, "skip", skip_w); }
Test(mismatch, skip_then_destroy_n8, .timeout = 150) { mismatch(8, "destroy", destroy_w); }
Test(mismatch, broadcast_vs_allreduce_n8, .timeout = 150) { mismatch(8, "op", op_w); }
Test(mismatch, counts_n8, .timeout = 150) { mismatch(8, "count", count_w); }
Test(mismatch, roots_n8, .timeout = 150) { mismatch(8, "root", root_w); }
/* 16 ranks, the most on one server, where eager and mesh run too (ALGO_MESH_MAX_RANKS). */
Test(mismatch, skip_then_barrier_n16, .timeout = 150) { mismatch(16, "skip", skip_w); }
Test(mismatch, broadcast_vs_allreduce_n16, .timeout = 150) { mismatch(16, "op", op_w); }
Test(mismatch, eager_vs_mesh_allreduce_n16, .timeout = 150) { mismatch(16, "xcount-allreduce", xcount_w); }
Test(mismatch, oneway_then_destroy_n16, .timeout = 150) { mismatch(16, "oneway-destroy", ow_destroy_w); }
Test(mismatch, peer_exits_n16, .timeout = 150) { mismatch(16, "exit", exit_w); }
/* One-way Broadcasts (docs/runtime.md, "One-way calls"): the root's call
 * completes without its receivers, so a mismatch only a root can see shows on every rank by the
 * HcclBarrier after it (coll_mismatch.c, observe_or_next). With HCCL_EAGER_ONEWAY=0, at the call
 * itself, as before. */
static const char *const self_w[] = {"called HcclBroadcast(count=256, fp32, root=", "where rank", NULL};
Test(mismatch, roots_all_self_n2, .timeout = 150) { mismatch(2, "root-self", self_w); }
Test(mismatch, roots_all_self_n3, .timeout = 150) { mismatch(3, "root-self", self_w); }
Test(mismatch, roots_all_self_n4, .timeout = 150) { mismatch(4, "root-self", self_w); }
Test(mismatch, roots_swapped_n2, .timeout = 150) { mismatch(2, "root-swap", self_w); }
Test(mismatch, roots_swapped_n3, .timeout = 150) { mismatch(3, "root-swap", self_w); }
Test(mismatch, roots_swapped_n4, .timeout = 150) { mismatch(4, "root-swap", self_w); }
Test(mismatch, roots_self_then_agreed_n2, .timeout = 150) { mismatch(2, "root-self-then-0", self_w); }
Test(mismatch, roots_self_then_agreed_n3, .timeout = 150) { mismatch(3, "root-self-then-0", self_w); }
Test(mismatch, roots_self_then_agreed_n4, .timeout = 150) { mismatch(4, "root-self-then-0", self_w); }
Test(mismatch, roots_then_destroy_n2, .timeout = 150) { mismatch(2, "root-destroy", root_w); }
Test(mismatch, roots_then_destroy_n3, .timeout = 150) { mismatch(3, "root-destroy", root_w); }
Test(mismatch, roots_then_destroy_n8, .timeout = 150) { mismatch(8, "root-destroy", root_w); }
/* Receivers of a one-way run wait in their flag wait for a root that destroys instead. */
Test(mismatch, oneway_then_destroy_n2, .timeout = 150) { mismatch(2, "oneway-destroy", ow_destroy_w); }
Test(mismatch, oneway_then_destroy_n4, .timeout = 150) { mismatch(4, "oneway-destroy", ow_destroy_w); }
/* One-way Reduces (coll_mismatch.c, gather_mismatch): the root or a writer runs another call, a
 * writer another count, or a writer destroys where the root waits for its header. Every rank
 * fails, by its next call that waits at the latest, naming both calls. */
static const char *const g_op_w[] = {"called HcclReduce(count=8, fp32, sum, root=", "called HcclAllReduce(count=8",
                                     NULL};
static const char *const g_count_w[] = {"HcclReduce(count=8,", "HcclReduce(count=16,", NULL};
static const char *const g_destroy_w[] = {"called HcclCommDestroy", "HcclReduce(count=8", NULL};
Test(mismatch, oneway_reduce_root_runs_allreduce_n2, .timeout = 150) { mismatch(2, "gather-op", g_op_w); }
Test(mismatch, oneway_reduce_root_runs_allreduce_n4, .timeout = 150) { mismatch(4, "gather-op", g_op_w); }
Test(mismatch, oneway_reduce_writer_runs_allreduce_n3, .timeout = 150) { mismatch(3, "gather-writer-op", g_op_w); }
Test(mismatch, oneway_reduce_writer_runs_allreduce_n8, .timeout = 150) { mismatch(8, "gather-writer-op", g_op_w); }
Test(mismatch, oneway_reduce_counts_n2, .timeout = 150) { mismatch(2, "gather-count", g_count_w); }
Test(mismatch, oneway_reduce_counts_n4, .timeout = 150) { mismatch(4, "gather-count", g_count_w); }
Test(mismatch, oneway_reduce_writer_destroys_n2, .timeout = 150) { mismatch(2, "gather-destroy", g_destroy_w); }
Test(mismatch, oneway_reduce_writer_destroys_n4, .timeout = 150) { mismatch(4, "gather-destroy", g_destroy_w); }
Test(mismatch, oneway_off_broadcast_vs_allreduce_n3, .timeout = 150)
{
    mismatch_env("HCCL_EXEC_TIMEOUT=60 HCCL_EAGER_ONEWAY=0", 3, "op", op_w);
}
Test(mismatch, oneway_off_roots_n3, .timeout = 150) { mismatch_env("HCCL_EXEC_TIMEOUT=60 HCCL_EAGER_ONEWAY=0", 3, "root", root_w); }
