/* HCCL_TRACE on 2 ranks running three collectives (tests/progs/trace_run): each rank's trace file
 * parses, holds exactly one op event per collective with the op's name, bytes, dtype and the
 * algorithm the plan used (HCCL_ALGO forces ring for AllReduce; the others take the selector's
 * mesh), and the op's step events lie under it on the same track. */
#include <stdlib.h>
#include <unistd.h>

#include "common/trace_json.h"
#include "multirank/mr_run.h"

typedef struct expected_op {
    const char *name, *algorithm, *dtype;
    int64_t bytes;
} expected_op;

static const expected_op k_ops[] = {
    {"HcclAllReduce", "ring", "fp32", 1024 * 4},
    {"HcclAllGather", "mesh", "fp32", 256 * 4},
    {"HcclBroadcast", "mesh", "int32", 512 * 4},
};

/* Steps of op `id`: on op's track and inside its span; returns how many, counts those with a peer. */
static int steps_under(json_object *events, json_object *op, int64_t id, int *with_peer)
{
    double t0 = trace_num(op, "ts"), t1 = t0 + trace_num(op, "dur");
    int n = 0;
    for (size_t i = 0; i < json_object_array_length(events); i++) {
        json_object *e = json_object_array_get_idx(events, i);
        json_object *a = trace_args(e);
        if (strcmp(trace_str(e, "cat"), "hccl_step") || !a || trace_int(a, "op", -1) != id)
            continue;
        if (trace_int(e, "tid", -1) != trace_int(op, "tid", -2))
            continue; /* a slave stream's step: under that stream's op part */
        cr_expect(trace_int(e, "pid", -1) == trace_int(op, "pid", -2), "step of op %lld on another device",
                  (long long)id);
        double s0 = trace_num(e, "ts"), s1 = s0 + trace_num(e, "dur");
        cr_expect(s0 >= t0 - 1e-3 && s1 <= t1 + 1e-3, "step [%f, %f] of op %lld outside the op [%f, %f]", s0, s1,
                  (long long)id, t0, t1);
        *with_peer += trace_int(a, "peer", -1) >= 0;
        n++;
    }
    return n;
}

static void check_rank_file(const char *path, int *rank_seen)
{
    json_object *root;
    json_object *events = trace_events(path, &root);
    cr_expect_eq(trace_count_cat(events, "hccl_op"), 3, "%s: %d op events, expected 3", path,
                 trace_count_cat(events, "hccl_op"));
    for (size_t k = 0; k < sizeof k_ops / sizeof k_ops[0]; k++) {
        int found = 0;
        for (size_t i = 0; i < json_object_array_length(events); i++) {
            json_object *e = json_object_array_get_idx(events, i);
            json_object *a = trace_args(e);
            if (strcmp(trace_str(e, "cat"), "hccl_op") || strcmp(trace_str(e, "name"), k_ops[k].name) || !a)
                continue;
            found++;
            cr_expect_str_eq(trace_str(e, "ph"), "X");
            cr_expect_eq(trace_int(a, "bytes", -1), k_ops[k].bytes, "%s bytes", k_ops[k].name);
            cr_expect_str_eq(trace_str(a, "algorithm"), k_ops[k].algorithm, "%s algorithm", k_ops[k].name);
            cr_expect_str_eq(trace_str(a, "dtype"), k_ops[k].dtype, "%s dtype", k_ops[k].name);
            cr_expect_eq(trace_int(a, "nranks", -1), 2);
            int64_t rank = trace_int(a, "rank", -1);
            if (rank >= 0 && rank < 2)
                rank_seen[rank]++;
            int with_peer = 0;
            int steps = steps_under(events, e, trace_int(a, "op", -1), &with_peer);
            cr_expect(steps > 0, "%s: %s has no step events under it", path, k_ops[k].name);
            cr_expect(with_peer > 0, "%s: no step of %s names a peer", path, k_ops[k].name);
        }
        cr_expect_eq(found, 1, "%s: %d %s op events, expected 1", path, found, k_ops[k].name);
    }
    json_object_put(root);
}

Test(trace, hccl_trace_two_ranks)
{
    char dir[] = "/tmp/oh_trace_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char env[256];
    snprintf(env, sizeof env, "HCCL_TRACE=%s HCCL_ALGO='allreduce=level0:NA;level1:ring'", dir);
    mr_expect_ok(mr_run(env, 2, OH_BUILD_DIR "/tests/progs/trace_run", ""), "trace_run on 2 ranks",
                 "trace_run: PASS");
    char paths[8][512];
    int n = trace_files(dir, paths, 8);
    cr_expect_eq(n, 2, "%d trace files in %s, expected one per rank", n, dir);
    int rank_seen[2] = {0, 0};
    for (int i = 0; i < n; i++)
        check_rank_file(paths[i], rank_seen);
    cr_expect(rank_seen[0] == 3 && rank_seen[1] == 3, "op events per rank: %d and %d, expected 3 each",
              rank_seen[0], rank_seen[1]);
    for (int i = 0; i < n; i++)
        unlink(paths[i]);
    rmdir(dir);
}
