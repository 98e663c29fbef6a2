/* The mesh algorithm: every collective it supports, verified for 1..64 ranks, several counts,
 * roots and in/out of place (see test_algo_util.h for the sweep). */
#include "algos/algo_build.h"
#include "test_algo_util.h"

#define SWEEP(name, coll) \
    Test(algo_mesh, name) { cr_assert_eq(ta_sweep(ALGO_MESH, coll), 0, "see the failures above"); }

SWEEP(allreduce, ALGO_COLL_ALLREDUCE)
SWEEP(broadcast, ALGO_COLL_BROADCAST)
SWEEP(allgather, ALGO_COLL_ALLGATHER)
SWEEP(reduce_scatter, ALGO_COLL_REDUCE_SCATTER)
SWEEP(reduce, ALGO_COLL_REDUCE)
SWEEP(scatter, ALGO_COLL_SCATTER)
SWEEP(alltoall, ALGO_COLL_ALLTOALL)
SWEEP(alltoallv, ALGO_COLL_ALLTOALLV)
SWEEP(alltoallvc, ALGO_COLL_ALLTOALLVC)
SWEEP(allgatherv, ALGO_COLL_ALLGATHERV)
SWEEP(reduce_scatterv, ALGO_COLL_REDUCE_SCATTERV)

/* Bytes rank r's plan copies, split by where they come from: out of root's memory into another
 * rank's (pulled = the copy's source is root's buffer and r is not root) or anything else. */
static void copy_bytes(algo_coll coll, uint32_t n, uint32_t r, uint32_t root, uint64_t count, bool in_place,
                       uint64_t *pulled, uint64_t *pushed)
{
    algo_op op = {.coll = coll, .nranks = n, .rank = r, .count = count, .dtype = HAL_DT_FP32,
                  .redop = HAL_OP_SUM, .root = root, .in_place = in_place};
    algo_plan *p = NULL;
    cr_assert_eq(algo_compile(&op, NULL, ALGO_MESH, &p), 0);
    *pulled = *pushed = 0;
    for (uint32_t s = 0; s < p->nstreams; s++)
        for (uint32_t i = 0; i < p->streams[s].nsteps; i++) {
            const algo_step *st = &p->streams[s].steps[i];
            if (st->kind != ALGO_STEP_COPY)
                continue;
            if (st->u.copy.src.owner == (int32_t)root)
                *pulled += st->u.copy.bytes;
            else
                *pushed += st->u.copy.bytes;
        }
    algo_plan_free(p);
}

/* Broadcast shares the copying. At 2 ranks, and past ALGO_MAX_STREAMS ranks, the root writes the
 * last 1/n into every peer while each peer reads the rest from the root. From 3 ranks to
 * ALGO_MAX_STREAMS (1 MiB and more) each rank reads its 1/n slice of the root's buffer once and
 * writes it into every receiver (n - 1 copies of one source, a fan-out): every copy a rank makes
 * reads that slice and nothing else. The plans still end full (eager plans may follow them,
 * plan.h INBOX). */
static void expect_bcast_slices(uint32_t n, uint32_t r, uint32_t root, uint64_t count)
{
    algo_op op = {.coll = ALGO_COLL_BROADCAST, .nranks = n, .rank = r, .count = count, .dtype = HAL_DT_FP32,
                  .redop = HAL_OP_SUM, .root = root, .in_place = true};
    algo_plan *p = NULL;
    cr_assert_eq(algo_compile(&op, NULL, ALGO_MESH, &p), 0);
    uint32_t copies = 0;
    for (uint32_t s = 0; s < p->nstreams; s++)
        for (uint32_t i = 0; i < p->streams[s].nsteps; i++) {
            const algo_step *st = &p->streams[s].steps[i];
            if (st->kind != ALGO_STEP_COPY)
                continue;
            copies++;
            int32_t src_owner = r == root ? ALGO_SELF : (int32_t)root;
            cr_expect(st->u.copy.src.owner == src_owner && st->u.copy.src.buf == ALGO_BUF_OUT &&
                          st->u.copy.src.offset == algo_chunk_off(count, n, r) * 4 &&
                          st->u.copy.bytes == algo_chunk_len(count, n, r) * 4,
                      "n=%u rank %u: a copy that is not its slice of the root's buffer", n, r);
        }
    cr_expect_eq(copies, n - 1, "n=%u rank %u: %u copies of its slice, want one per receiver", n, r, copies);
    algo_plan_free(p);
}

Test(algo_mesh, broadcast_shares_copies)
{
    const uint64_t count = (1u << 18) + 3; /* 1 MiB of fp32, and slices of two lengths */
    for (uint32_t n = 2; n <= ALGO_MESH_MAX_RANKS; n++) {
        uint32_t root = n / 2;
        for (uint32_t r = 0; r < n; r++) {
            uint64_t pulled, pushed, tail = (count - algo_chunk_off(count, n, n - 1)) * 4;
            if (n > 2 && n <= ALGO_MAX_STREAMS) {
                expect_bcast_slices(n, r, root, count);
                continue;
            }
            copy_bytes(ALGO_COLL_BROADCAST, n, r, root, count, true, &pulled, &pushed);
            if (r == root) {
                cr_expect_eq(pulled, 0, "n=%u: the root reads nobody", n);
                cr_expect_eq(pushed, (n - 1) * tail, "n=%u: the root writes the last 1/n into each peer", n);
            } else {
                cr_expect_eq(pushed, 0, "n=%u rank %u: a receiver writes nobody", n, r);
                cr_expect_eq(pulled, count * 4 - tail, "n=%u rank %u: a receiver reads the rest from the root", n, r);
            }
        }
        const uint32_t roots[3] = {0, root, n - 1};
        for (uint32_t k = 0; k < 3; k++) {
            algo_op op = {.coll = ALGO_COLL_BROADCAST, .nranks = n, .count = count, .dtype = HAL_DT_FP32,
                          .redop = HAL_OP_SUM, .root = roots[k], .in_place = true};
            algo_verify_report rep;
            cr_assert_eq(algo_verify(&op, NULL, ALGO_MESH, &rep), 0, "%s", rep.msg);
            cr_expect(rep.full_end, "n=%u: every rank must end after every publication", n);
        }
    }
}

/* Copies marked reread (algo_step copy.reread, a hint for copy kernels): a mesh AllReduce's slice
 * into every peer (in place, their IN its next call reduces from), and nothing of AllGather's or
 * Broadcast's, whose writers never read what they wrote for others. */
static uint32_t reread_copies(algo_coll coll, uint32_t n, uint32_t r, uint64_t count, bool in_place, uint32_t *copies)
{
    algo_op op = {.coll = coll, .nranks = n, .rank = r, .count = count, .dtype = HAL_DT_FP32, .redop = HAL_OP_SUM,
                  .root = 0, .in_place = in_place};
    algo_plan *p = NULL;
    cr_assert_eq(algo_compile(&op, NULL, ALGO_MESH, &p), 0);
    uint32_t marked = 0;
    *copies = 0;
    for (uint32_t s = 0; s < p->nstreams; s++)
        for (uint32_t i = 0; i < p->streams[s].nsteps; i++)
            if (p->streams[s].steps[i].kind == ALGO_STEP_COPY) {
                ++*copies;
                marked += p->streams[s].steps[i].u.copy.reread;
            }
    algo_plan_free(p);
    return marked;
}

Test(algo_mesh, only_allreduce_slices_are_reread)
{
    const uint64_t count = 1u << 20;
    for (uint32_t n = 2; n <= 8; n++)
        for (int inp = 0; inp < 2; inp++) {
            uint32_t copies;
            cr_expect_eq(reread_copies(ALGO_COLL_ALLREDUCE, n, 1, count, inp, &copies), n - 1,
                         "n=%u: AllReduce's slice into each of its n-1 peers", n);
            cr_expect_eq(reread_copies(ALGO_COLL_ALLGATHER, n, 1, count, inp, &copies), 0, "n=%u AllGather", n);
            cr_expect_gt(copies, 0);
            cr_expect_eq(reread_copies(ALGO_COLL_BROADCAST, n, 1, count, true, &copies), 0, "n=%u Broadcast", n);
            cr_expect_gt(copies, 0);
        }
}

/* Scatter on one server: each receiver reads its block from the root, the root copies only its own
 * (out of place) and writes nobody's; the plans still end full. */
Test(algo_mesh, scatter_receivers_pull)
{
    const uint64_t count = 1u << 16; /* per rank */
    for (uint32_t n = 2; n <= ALGO_MESH_MAX_RANKS; n++) {
        uint32_t root = n / 2;
        for (uint32_t r = 0; r < n; r++)
            for (int inp = 0; inp < 2; inp++) {
                uint64_t pulled, pushed;
                copy_bytes(ALGO_COLL_SCATTER, n, r, root, count, inp, &pulled, &pushed);
                uint64_t own = r == root && !inp ? count * 4 : 0;
                cr_expect_eq(pulled, r == root ? 0 : count * 4, "n=%u rank %u reads %llu B from the root", n, r,
                             (unsigned long long)pulled);
                cr_expect_eq(pushed, own, "n=%u rank %u%s copies %llu B of its own", n, r, inp ? " in place" : "",
                             (unsigned long long)pushed);
            }
        algo_op op = {.coll = ALGO_COLL_SCATTER, .nranks = n, .count = count, .dtype = HAL_DT_FP32,
                      .redop = HAL_OP_SUM, .root = root};
        algo_verify_report rep;
        cr_assert_eq(algo_verify(&op, NULL, ALGO_MESH, &rep), 0, "%s", rep.msg);
        cr_expect(rep.full_end, "n=%u: every rank must end after every publication", n);
    }
}

/* Across servers a rank may read no other server's memory: a forced mesh Broadcast or Scatter keeps
 * the root's push there (receivers pulling from a root on another server failed at launch). */
Test(algo_mesh, broadcast_across_servers_pushes)
{
    static const uint32_t so[4] = {0, 0, 1, 1};
    algo_topo topo = {.nranks = 4, .server_of = so};
    for (uint32_t root = 0; root < 4; root++) {
        algo_op op = {.coll = ALGO_COLL_BROADCAST, .nranks = 4, .count = 1u << 16, .dtype = HAL_DT_FP32,
                      .redop = HAL_OP_SUM, .root = root, .in_place = true};
        algo_verify_report rep;
        cr_assert_eq(algo_verify(&op, &topo, ALGO_MESH, &rep), 0, "root %u: %s", root, rep.msg);
        op.coll = ALGO_COLL_SCATTER; /* and Scatter's */
        cr_assert_eq(algo_verify(&op, &topo, ALGO_MESH, &rep), 0, "scatter root %u: %s", root, rep.msg);
    }
}

/* Reduce shares the work: every rank reduces its own 1/n slice (n operands) straight into the
 * root's OUT, so the root reduces no more than any other rank (it reduced the whole buffer alone
 * while the others waited); and the plans still end full. */
Test(algo_mesh, reduce_shares_the_work)
{
    const uint64_t count = 1u << 18;
    for (uint32_t n = 2; n <= ALGO_MESH_MAX_RANKS; n++) {
        uint32_t root = n / 2;
        for (uint32_t r = 0; r < n; r++) {
            for (int inp = 0; inp < 2; inp++) {
                algo_op op = {.coll = ALGO_COLL_REDUCE, .nranks = n, .rank = r, .count = count,
                              .dtype = HAL_DT_FP32, .redop = HAL_OP_SUM, .root = root, .in_place = inp};
                algo_plan *p = NULL;
                cr_assert_eq(algo_compile(&op, NULL, ALGO_MESH, &p), 0);
                uint64_t written = 0, foreign = 0;
                for (uint32_t s = 0; s < p->nstreams; s++)
                    for (uint32_t i = 0; i < p->streams[s].nsteps; i++) {
                        const algo_step *st = &p->streams[s].steps[i];
                        if (st->kind != ALGO_STEP_REDUCE)
                            continue;
                        written += st->u.reduce.count;
                        foreign += st->u.reduce.dst.buf != ALGO_BUF_OUT ||
                                   st->u.reduce.dst.owner != (r == root ? ALGO_SELF : (int32_t)root);
                    }
                algo_plan_free(p);
                /* out of place: one three-operand step and n - 2 more; in place: n - 1 steps */
                uint64_t slice = algo_chunk_len(count, n, r), steps = inp ? n - 1 : (n > 2 ? n - 2 : 0) + 1;
                cr_expect_eq(foreign, 0, "n=%u rank %u: a reduction writes outside the root's OUT", n, r);
                cr_expect_eq(written, slice * steps, "n=%u rank %u %s: reduced %llu elements, not %llu", n, r,
                             inp ? "in place" : "out of place", (unsigned long long)written,
                             (unsigned long long)(slice * steps));
            }
        }
        algo_op op = {.coll = ALGO_COLL_REDUCE, .nranks = n, .count = count, .dtype = HAL_DT_FP32,
                      .redop = HAL_OP_SUM, .root = root};
        algo_verify_report rep;
        cr_assert_eq(algo_verify(&op, NULL, ALGO_MESH, &rep), 0, "%s", rep.msg);
        cr_expect(rep.full_end, "n=%u: every rank must end after every publication", n);
    }
}
