/* One-way rooted eager plans (plan.h, INBOX; algos/eager.c): Broadcast and Scatter where the
 * runtime allows it (topo.oneway) and a box holds at most ALGO_ONEWAY_MAX_BYTES, and Reduce (a
 * gather) where a writer's part of the box holds its IN. Verified with the writers' credits given
 * before the call, at 2..16 ranks, every root, counts 0/1/97/the most, in and out of place (Reduce:
 * every count that fits, deterministic mode too); their shape (the root fetches nobody; a
 * Broadcast root writes only its own box, which its receivers read, and so does a Scatter root
 * whose blocks all fit it, else it writes every receiver's; receivers signal no PUB and write no
 * inbox; a Reduce's writers write their part of the root's box and the root fetches them all);
 * that nothing else goes one-way, nor a call that does not continue a run; and that the verifier
 * refuses a root that skips its credit waits or publishes after its first copy, a Broadcast
 * receiver that reads the root's box before it fetched the root, or another box, a gather writer
 * without its credit wait and a gather root that folds a box before it fetched its writer. */
#include <criterion/criterion.h>
#include <string.h>

#include "algos/verify.h"

static const algo_topo k_oneway = {.nranks = 0, .eager_max = ALGO_EAGER_AUTO, .oneway = true};

static int verify_oneway(algo_coll coll, uint32_t n, uint64_t count, uint32_t root, bool inp, algo_verify_report *rep)
{
    algo_op o = {.coll = coll, .nranks = n, .count = count, .dtype = HAL_DT_FP32, .root = root, .in_place = inp,
                 .oneway_run = true};
    algo_topo topo = k_oneway;
    topo.nranks = n;
    return algo_verify(&o, &topo, ALGO_EAGER, rep);
}

Test(algo_oneway, broadcast_and_scatter_verify)
{
    const algo_coll colls[] = {ALGO_COLL_BROADCAST, ALGO_COLL_SCATTER};
    for (size_t i = 0; i < 2; i++)
        for (uint32_t n = ALGO_ONEWAY_MIN_RANKS; n <= ALGO_MESH_MAX_RANKS; n++) {
            uint64_t counts[4] = {0, 1, 97, ALGO_ONEWAY_MAX_BYTES / 4};
            for (uint32_t root = 0; root < n; root++)
                for (size_t ci = 0; ci < 4; ci++)
                    for (int inp = 0; inp < 2; inp++) {
                        algo_verify_report rep;
                        int rc = verify_oneway(colls[i], n, counts[ci], root, inp, &rep);
                        cr_expect_eq(rc, 0, "%s n=%u root=%u count=%llu %s: %s", algo_coll_name(colls[i]), n, root,
                                     (unsigned long long)counts[ci], inp ? "in place" : "out of place", rep.msg);
                        cr_expect_not(rep.full_end, "a one-way call ends without its receivers");
                    }
        }
}

/* One-way Reduce (a gather): every count up to what a writer's part of the box holds, every root,
 * in and out of place, in deterministic mode too (the rank-ordered fold); one more element goes
 * the full exchange. */
Test(algo_oneway, reduce_verifies)
{
    for (uint32_t n = ALGO_ONEWAY_MIN_RANKS; n <= ALGO_MESH_MAX_RANKS; n++) {
        uint64_t most = algo_oneway_gather_bytes(n) / 4, counts[4] = {0, 1, most / 2 + 1, most};
        for (uint32_t root = 0; root < n; root++)
            for (size_t ci = 0; ci < 4; ci++)
                for (int mode = 0; mode < 4; mode++) {
                    algo_op o = {.coll = ALGO_COLL_REDUCE, .nranks = n, .count = counts[ci], .dtype = HAL_DT_FP32,
                                 .redop = HAL_OP_SUM, .root = root, .in_place = mode & 1,
                                 .deterministic = mode >> 1, .oneway_run = true};
                    algo_topo topo = k_oneway;
                    topo.nranks = n;
                    algo_verify_report rep;
                    int rc = algo_verify(&o, &topo, ALGO_EAGER, &rep);
                    cr_expect_eq(rc, 0, "reduce n=%u root=%u count=%llu mode %d: %s", n, root,
                                 (unsigned long long)counts[ci], mode, rep.msg);
                    cr_expect_not(rep.full_end, "n=%u: a one-way Reduce ends without waiting for the root", n);
                }
        algo_op o = {.coll = ALGO_COLL_REDUCE, .nranks = n, .count = most + 1, .dtype = HAL_DT_FP32,
                     .redop = HAL_OP_SUM, .root = 0, .oneway_run = true};
        algo_plan *p = NULL;
        algo_topo topo = k_oneway;
        topo.nranks = n;
        cr_assert_eq(algo_compile(&o, &topo, ALGO_EAGER, &p), 0);
        cr_expect_not(p->oneway, "n=%u: %llu elements do not fit a writer's part", n, (unsigned long long)(most + 1));
        algo_plan_free(p);
    }
}

static uint32_t count_kind(const algo_plan *p, algo_step_kind kind, uint32_t slot)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < p->streams[0].nsteps; i++) {
        const algo_step *st = &p->streams[0].steps[i];
        bool sync = kind == ALGO_STEP_SIGNAL || kind == ALGO_STEP_WAIT;
        k += st->kind == kind && (!sync || st->u.sync.slot == slot);
    }
    return k;
}

/* The plan's one COPY on stream 0, NULL if it has none or more. */
static const algo_step *only_copy(const algo_plan *p)
{
    const algo_step *found = NULL;
    for (uint32_t i = 0; i < p->streams[0].nsteps; i++) {
        const algo_step *st = &p->streams[0].steps[i];
        if (st->kind == ALGO_STEP_COPY && found)
            return NULL;
        found = st->kind == ALGO_STEP_COPY ? st : found;
    }
    return found;
}

/* Box `owner` of owner's inbox (ALGO_SELF: the plan's own), from its start. */
static bool is_root_box(algo_ref ref, int32_t owner)
{
    uint32_t box = owner == ALGO_SELF ? 1u : (uint32_t)owner; /* the shape test's root is rank 1 */
    return ref.buf == ALGO_BUF_INBOX && ref.owner == owner && ref.offset == (uint64_t)box * ALGO_EAGER_BOX;
}

/* Rank r's one-way plan of a `count`-element fp32 `coll` at 4 ranks, root 1. */
static algo_plan *compile_rank(algo_coll coll, uint32_t r, uint64_t count)
{
    algo_topo topo = k_oneway;
    topo.nranks = 4;
    algo_op op = {.coll = coll, .nranks = 4, .rank = r, .count = count, .dtype = HAL_DT_FP32, .root = 1,
                  .oneway_run = true};
    cr_assert_eq(algo_select(&op, &topo, ALGO_AUTO), ALGO_EAGER);
    algo_plan *p = NULL;
    cr_assert_eq(algo_compile(&op, &topo, ALGO_EAGER, &p), 0);
    return p;
}

Test(algo_oneway, shape)
{
    for (uint32_t r = 0; r < 4; r++) {
        algo_plan *p = compile_rank(ALGO_COLL_BROADCAST, r, 2);
        cr_expect(p->oneway);
        cr_expect_eq(p->nstreams, 1u);
        const algo_step *copy = only_copy(p);
        cr_assert(copy, "rank %u: one COPY", r);
        if (r == 1) {
            cr_expect_eq(count_kind(p, ALGO_STEP_WAIT, ALGO_SLOT_CREDIT), 3u, "a credit from every receiver");
            cr_expect_eq(p->streams[0].steps[3].kind, ALGO_STEP_PUBLISH, "after the credits");
            cr_expect_eq(count_kind(p, ALGO_STEP_FETCH, 0), 0u, "the root fetches nobody");
            cr_expect_eq(count_kind(p, ALGO_STEP_SIGNAL, ALGO_SLOT_PUB), 3u);
            cr_expect(is_root_box(copy->u.copy.dst, ALGO_SELF), "the root writes its own box, once");
            cr_expect_eq(copy->u.copy.bytes, 8u);
        } else {
            cr_expect_eq(p->streams[0].steps[0].kind, ALGO_STEP_PUBLISH, "a receiver publishes its view first");
            cr_expect_eq(count_kind(p, ALGO_STEP_FETCH, 0), 1u, "a receiver fetches the root only");
            cr_expect_eq(count_kind(p, ALGO_STEP_SIGNAL, ALGO_SLOT_CREDIT), 1u, "and gives its credit back");
            cr_expect_eq(count_kind(p, ALGO_STEP_SIGNAL, ALGO_SLOT_PUB), 0u);
            cr_expect(is_root_box(copy->u.copy.src, 1), "rank %u reads the root's box", r);
            cr_expect_eq(copy->u.copy.dst.buf, ALGO_BUF_OUT);
        }
        cr_expect(p->oneway_pull);
        algo_plan_free(p);
    }
}

/* A Scatter whose n blocks fit a one-way box: the root writes them all into its own box, once, and
 * each receiver reads its block there. Larger: the root writes each receiver's block into its box
 * of that receiver's slot (all blocks in its own box would make one-way Scatters n times smaller),
 * and receivers read their own inbox. */
Test(algo_oneway, scatter_root_writes_its_box_or_the_receivers)
{
    const uint64_t fits = ALGO_ONEWAY_MAX_BYTES / 4 / 4, too_big = fits + 1; /* fp32 blocks, 4 ranks */
    for (uint32_t r = 0; r < 4; r++) {
        algo_plan *p = compile_rank(ALGO_COLL_SCATTER, r, fits);
        cr_expect(p->oneway && p->oneway_pull, "rank %u: %llu elements a block pull", r, (unsigned long long)fits);
        const algo_step *copy = only_copy(p);
        cr_assert(copy || r == 1, "rank %u: one COPY", r);
        if (r == 1) { /* out of place the root also copies its block into its OUT */
            uint32_t own_box = 0;
            for (uint32_t i = 0; i < p->streams[0].nsteps; i++) {
                const algo_step *st = &p->streams[0].steps[i];
                if (st->kind == ALGO_STEP_COPY && st->u.copy.dst.buf == ALGO_BUF_INBOX) {
                    cr_expect(is_root_box(st->u.copy.dst, ALGO_SELF), "the root writes only its own box");
                    cr_expect_eq(st->u.copy.bytes, fits * 4 * 4, "every block, once");
                    own_box++;
                }
            }
            cr_expect_eq(own_box, 1u);
        } else {
            algo_ref want = copy->u.copy.src;
            want.offset -= (uint64_t)r * fits * 4; /* block r of the root's box */
            cr_expect(is_root_box(want, 1), "rank %u reads its block of the root's box", r);
            cr_expect_eq(copy->u.copy.bytes, fits * 4);
        }
        algo_plan_free(p);
        p = compile_rank(ALGO_COLL_SCATTER, r, too_big);
        cr_expect(p->oneway);
        cr_expect_not(p->oneway_pull, "rank %u: %llu elements a block push", r, (unsigned long long)too_big);
        uint32_t into_peers = 0, from_own = 0;
        for (uint32_t i = 0; i < p->streams[0].nsteps; i++) {
            const algo_step *st = &p->streams[0].steps[i];
            if (st->kind != ALGO_STEP_COPY)
                continue;
            into_peers += st->u.copy.dst.buf == ALGO_BUF_INBOX && st->u.copy.dst.owner != ALGO_SELF;
            from_own += st->u.copy.src.buf == ALGO_BUF_INBOX && st->u.copy.src.owner == ALGO_SELF;
        }
        cr_expect_eq(into_peers, r == 1 ? 3u : 0u, "rank %u", r);
        cr_expect_eq(from_own, r == 1 ? 0u : 1u, "rank %u", r);
        algo_plan_free(p);
    }
}

/* Everything but Broadcast, Scatter and Reduce, and every call where the runtime did not allow it,
 * ends full as before. */
Test(algo_oneway, only_rooted_calls)
{
    algo_topo topo = k_oneway;
    topo.nranks = 3;
    const algo_coll others[] = {ALGO_COLL_ALLREDUCE, ALGO_COLL_ALLGATHER, ALGO_COLL_REDUCE_SCATTER,
                                ALGO_COLL_ALLTOALL};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        algo_op op = {.coll = others[i], .nranks = 3, .count = 5, .dtype = HAL_DT_FP32, .redop = HAL_OP_SUM,
                      .oneway_run = true};
        algo_verify_report rep;
        cr_expect_eq(algo_verify(&op, &topo, ALGO_EAGER, &rep), 0, "%s: %s", algo_coll_name(others[i]), rep.msg);
        cr_expect(rep.full_end, "%s ends full", algo_coll_name(others[i]));
    }
    algo_op bc = {.coll = ALGO_COLL_BROADCAST, .nranks = 3, .count = ALGO_ONEWAY_MAX_BYTES / 4 + 1,
                  .dtype = HAL_DT_FP32, .oneway_run = true};
    algo_verify_report rep;
    cr_expect_eq(algo_verify(&bc, &topo, ALGO_EAGER, &rep), 0, "%s", rep.msg);
    cr_expect(rep.full_end, "past ALGO_ONEWAY_MAX_BYTES a Broadcast is the full exchange");
    bc.count = 5;
    topo.oneway = false;
    cr_expect_eq(algo_verify(&bc, &topo, ALGO_EAGER, &rep), 0, "%s", rep.msg);
    cr_expect(rep.full_end, "without topo.oneway a Broadcast is the full exchange");
    topo.oneway = true;
    for (bc.nranks = 1; bc.nranks < ALGO_ONEWAY_MIN_RANKS; bc.nranks++) {
        topo.nranks = bc.nranks;
        cr_expect_eq(algo_verify(&bc, &topo, ALGO_EAGER, &rep), 0, "%s", rep.msg);
        cr_expect(rep.full_end, "at %u ranks a Broadcast is the full exchange", bc.nranks);
    }
}

/* A call goes one-way only when it continues a run (op.oneway_run, set by the runtime when the
 * previous collective could go one-way too): alone, its end would cost its root a drain before the
 * next call, which the full exchange does not need. The plan says it could (oneway_able). */
Test(algo_oneway, needs_a_run)
{
    algo_topo topo = k_oneway;
    topo.nranks = 4;
    for (int run = 0; run < 2; run++) {
        algo_op op = {.coll = ALGO_COLL_SCATTER, .nranks = 4, .rank = 2, .count = 3, .dtype = HAL_DT_INT8,
                      .root = 2, .oneway_run = run};
        algo_plan *p = NULL;
        cr_assert_eq(algo_compile(&op, &topo, ALGO_EAGER, &p), 0);
        cr_expect(p->oneway_able, "an eager Scatter of 3 B per box at 4 ranks can go one-way");
        cr_expect_eq(p->oneway, run, "one-way only in a run (oneway_run %d)", run);
        algo_plan_free(p);
        algo_verify_report rep;
        cr_expect_eq(algo_verify(&op, &topo, ALGO_EAGER, &rep), 0, "%s", rep.msg);
        cr_expect_eq(rep.full_end, !run, "the first call of a run ends full");
    }
    algo_op ar = {.coll = ALGO_COLL_ALLREDUCE, .nranks = 4, .count = 3, .dtype = HAL_DT_INT8, .redop = HAL_OP_SUM,
                  .oneway_run = true};
    algo_plan *p = NULL;
    cr_assert_eq(algo_compile(&ar, &topo, ALGO_EAGER, &p), 0);
    cr_expect_not(p->oneway_able, "an AllReduce ends a run");
    algo_plan_free(p);
}

/* Compiles the 3-rank one-way `coll` (root 0) and lets `edit` break rank `victim`'s plan. */
static int verify_coll_edited(algo_coll coll, uint32_t victim, void (*edit)(algo_plan *), algo_verify_report *rep)
{
    algo_topo topo = k_oneway;
    topo.nranks = 3;
    algo_plan *plans[3] = {0};
    for (uint32_t r = 0; r < 3; r++) {
        algo_op op = {.coll = coll, .nranks = 3, .rank = r, .count = 4, .dtype = HAL_DT_FP32, .redop = HAL_OP_SUM,
                      .oneway_run = true};
        cr_assert_eq(algo_compile(&op, &topo, ALGO_EAGER, &plans[r]), 0);
    }
    edit(plans[victim]);
    int rc = algo_verify_plans(plans, 3, &topo, NULL, rep);
    for (uint32_t r = 0; r < 3; r++)
        algo_plan_free(plans[r]);
    return rc;
}

static int verify_edited(uint32_t victim, void (*edit)(algo_plan *), algo_verify_report *rep)
{
    return verify_coll_edited(ALGO_COLL_BROADCAST, victim, edit, rep);
}

static void drop_credit_waits(algo_plan *p)
{
    algo_step_list *l = &p->streams[0];
    memmove(l->steps, l->steps + 2, (l->nsteps - 2) * sizeof *l->steps);
    l->nsteps -= 2;
}

static void publish_after_copy(algo_plan *p)
{
    algo_step *s = p->streams[0].steps; /* WAIT WAIT PUBLISH COPY ...: PUBLISH after the first COPY */
    algo_step pub = s[2];
    s[2] = s[3], s[3] = pub;
}

/* A receiver's steps: PUBLISH FETCH COPY SIGNAL. */
static void copy_before_fetch(algo_plan *p)
{
    algo_step *s = p->streams[0].steps, fetch = s[1];
    s[1] = s[2], s[2] = fetch;
}

static void read_other_box(algo_plan *p)
{
    p->streams[0].steps[2].u.copy.src.offset += ALGO_EAGER_BOX; /* box 1 of the root's inbox */
}

Test(algo_oneway, verifier_refuses_broken_roots)
{
    algo_verify_report rep;
    cr_expect_eq(verify_edited(0, drop_credit_waits, &rep), ALGO_VERIFY_FAILED, "credits never taken");
    cr_expect(strstr(rep.msg, "slot 6"), "names the credit slot: %s", rep.msg);
    cr_expect_eq(verify_edited(0, publish_after_copy, &rep), ALGO_VERIFY_FAILED);
    cr_expect(strstr(rep.msg, "PUBLISH must be the first step"), "%s", rep.msg);
}

Test(algo_oneway, verifier_refuses_broken_receivers)
{
    algo_verify_report rep;
    cr_expect_eq(verify_edited(2, copy_before_fetch, &rep), ALGO_VERIFY_FAILED, "the root's box read unordered");
    cr_expect(strstr(rep.msg, "rank 0's INBOX without an ordered FETCH of rank 0"), "%s", rep.msg);
    cr_expect_eq(verify_edited(2, read_other_box, &rep), ALGO_VERIFY_FAILED, "a box the root does not write");
    cr_expect(strstr(rep.msg, "read by a one-way receiver in its root's box"), "%s", rep.msg);
}

/* A gather writer's steps: WAIT{root, CREDIT} PUBLISH COPY SIGNAL{root, PUB}. */
static void drop_writer_credit_wait(algo_plan *p)
{
    algo_step_list *l = &p->streams[0];
    memmove(l->steps, l->steps + 1, (l->nsteps - 1) * sizeof *l->steps);
    l->nsteps -= 1;
}

/* The root's steps: PUBLISH FETCH FETCH REDUCE REDUCE SIGNAL SIGNAL: the last FETCH after the fold. */
static void fold_before_last_fetch(algo_plan *p)
{
    algo_step *s = p->streams[0].steps, fetch = s[2];
    s[2] = s[3], s[3] = s[4], s[4] = fetch;
}

Test(algo_oneway, reduce_shape)
{
    for (uint32_t r = 0; r < 4; r++) {
        algo_plan *p = compile_rank(ALGO_COLL_REDUCE, r, 2);
        cr_expect(p->oneway && p->oneway_gather && !p->oneway_pull, "rank %u", r);
        if (r == 1) {
            cr_expect_eq(count_kind(p, ALGO_STEP_WAIT, ALGO_SLOT_CREDIT), 0u, "the root takes no credit");
            cr_expect_eq(count_kind(p, ALGO_STEP_FETCH, 0), 3u, "the root fetches every writer");
            cr_expect_eq(count_kind(p, ALGO_STEP_SIGNAL, ALGO_SLOT_CREDIT), 3u, "and gives each its credit back");
            cr_expect_eq(count_kind(p, ALGO_STEP_SIGNAL, ALGO_SLOT_PUB), 0u);
        } else {
            cr_expect_eq(p->streams[0].steps[0].kind, ALGO_STEP_WAIT, "a writer takes its credit first");
            cr_expect_eq(count_kind(p, ALGO_STEP_WAIT, ALGO_SLOT_CREDIT), 1u);
            cr_expect_eq(count_kind(p, ALGO_STEP_FETCH, 0), 0u, "a writer fetches nobody");
            cr_expect_eq(count_kind(p, ALGO_STEP_SIGNAL, ALGO_SLOT_PUB), 1u, "it signals the root only");
            const algo_step *copy = only_copy(p);
            cr_assert(copy, "rank %u: one COPY", r);
            cr_expect(copy->u.copy.dst.buf == ALGO_BUF_INBOX && copy->u.copy.dst.owner == 1 &&
                          copy->u.copy.dst.offset == (uint64_t)r * ALGO_EAGER_BOX,
                      "rank %u writes its own box of the root's slot", r);
        }
        algo_plan_free(p);
    }
}

Test(algo_oneway, verifier_refuses_broken_gathers)
{
    algo_verify_report rep;
    cr_expect_eq(verify_coll_edited(ALGO_COLL_REDUCE, 2, drop_writer_credit_wait, &rep), ALGO_VERIFY_FAILED,
                 "a writer that never takes its credit");
    cr_expect(strstr(rep.msg, "slot 6"), "names the credit slot: %s", rep.msg);
    cr_expect_eq(verify_coll_edited(ALGO_COLL_REDUCE, 0, fold_before_last_fetch, &rep), ALGO_VERIFY_FAILED,
                 "a root that folds a box before it fetched its writer");
}
