/* Eager exchanges signal by flags (c->flag_waits, docs/runtime.md "Eager header mode"): a rank's
 * FETCH of a peer waits for the call's seq in the header of the peer's box in its own inbox (a
 * flag wait, in the line it reads the data from), and its PUB signals store that seq and wake the
 * peer only if it sleeps there, instead of a count on a notify line both sides write. A call that
 * is not eager keeps the PUB counts. Ranks are threads of this process (HcclCommInitAll); each
 * call is synchronized, its result checked, and then the program its launch context built (kept
 * for the next call of the same plan) is read: which waits and signals it has. */
#include <criterion/criterion.h>
#include <unistd.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#include "common/pair_ranks.h"
#include "runtime/stream/rt_launch.h"

#define MAX_RANKS 4
#define SMALL 7   /* eager */
#define BIG 70001 /* 280 KB of int32: a mesh plan */

typedef struct prog_kinds {
    uint32_t flag_waits, wakes, pub_waits, pub_records;
} prog_kinds;

static bool built_for(const rt_launch_ctx *ctx, uint64_t count)
{
    return ctx->built && ctx->built->op.coll == ALGO_COLL_ALLREDUCE && ctx->built->op.count == count;
}

/* The context that built the program of an AllReduce of `count` elements: pooled, or still among
 * the pending launches (a synchronize completes them; the next call reclaims them). */
static const rt_launch_ctx *built_ctx(const rt_comm *c, uint64_t count)
{
    for (uint32_t i = 0; i < c->npending; i++)
        if (built_for(rt_pending_at(c, i), count))
            return rt_pending_at(c, i);
    for (const rt_launch_ctx *ctx = c->ctx_pool; ctx; ctx = ctx->next)
        if (built_for(ctx, count))
            return ctx;
    return NULL;
}

/* What the program built for an AllReduce of `count` elements waits for and signals. */
static prog_kinds pooled_prog(HcclComm comm, uint64_t count)
{
    rt_comm *c = rt_comm_check(comm);
    cr_assert_not_null(c);
    const rt_launch_ctx *ctx = built_ctx(c, count);
    cr_assert_not_null(ctx, "rank %u: no program of the AllReduce of %llu", c->rank, (unsigned long long)count);
    prog_kinds k = {0};
    for (uint32_t i = 0; i < ctx->ninsns; i++) {
        const hal_insn *in = &ctx->insns[i];
        bool pub_wait = false, pub_record = false;
        for (uint32_t q = 0; q < c->nranks; q++) {
            pub_wait |= in->kind == HAL_INSN_NOTIFY_WAIT && in->u.notify.n == c->peers[q].from_peer[ALGO_SLOT_PUB];
            pub_record |= in->kind == HAL_INSN_NOTIFY_RECORD && in->u.notify.n == c->peers[q].to_peer[ALGO_SLOT_PUB];
        }
        k.flag_waits += in->kind == HAL_INSN_FLAG_WAIT;
        k.wakes += in->kind == HAL_INSN_NOTIFY_WAKE;
        k.pub_waits += pub_wait;
        k.pub_records += pub_record;
    }
    return k;
}

typedef struct job {
    pair_rank *r;
    uint32_t n;
    uint64_t count;
    useconds_t late_us; /* sleep before the call: the peers' flag waits sleep meanwhile */
} job;

static void *allreduce_job(void *arg)
{
    job *j = arg;
    pair_rank *r = j->r;
    cr_assert_eq(aclrtSetDevice((int32_t)r->rank), ACL_SUCCESS);
    pair_ranks_fill(r, (int)j->count);
    if (j->late_us)
        usleep(j->late_us);
    cr_assert_eq(HcclAllReduce(r->in[0], r->out[0], j->count, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, r->comm, r->s),
                 HCCL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeStream(r->s), ACL_SUCCESS);
    size_t bytes = j->count * sizeof *r->host;
    cr_assert_eq(aclrtMemcpy(r->host, bytes, r->out[0], bytes, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    for (uint64_t e = 0; e < j->count && r->bad < 3; e++) {
        int32_t want = 0;
        for (uint32_t q = 0; q < j->n; q++)
            want += pair_ranks_value(0, q, (int)e);
        if (r->host[e] != want) {
            cr_log_error("rank %u: element %llu is %d, want %d", r->rank, (unsigned long long)e, r->host[e], want);
            r->bad++;
        }
    }
    return NULL;
}

/* One AllReduce of count elements on every rank, rank `late` calling late_us after the others. */
static void run_allreduce(pair_rank *ranks, uint32_t n, uint64_t count, uint32_t late, useconds_t late_us)
{
    job jobs[MAX_RANKS];
    for (uint32_t i = 0; i < n; i++)
        jobs[i] = (job){&ranks[i], n, count, i == late ? late_us : 0};
    pair_ranks_run(ranks, n, allreduce_job, jobs, sizeof jobs[0]);
}

static void expect_flags(pair_rank *ranks, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        prog_kinds k = pooled_prog(ranks[i].comm, SMALL);
        cr_expect_eq(k.flag_waits, n - 1, "rank %u: %u flag waits, want one per peer", i, k.flag_waits);
        cr_expect_eq(k.wakes, n - 1, "rank %u: %u wakes, want one per peer", i, k.wakes);
        cr_expect_eq(k.pub_waits + k.pub_records, 0,
                     "rank %u: the eager exchange waits for %u PUB counts and signals %u", i, k.pub_waits,
                     k.pub_records);
    }
}

static void flags_then_counts(uint32_t n)
{
    pair_rank ranks[MAX_RANKS];
    pair_ranks_open(ranks, n, BIG * sizeof(int32_t));
    run_allreduce(ranks, n, SMALL, n, 0);
    expect_flags(ranks, n);
    run_allreduce(ranks, n, BIG, n, 0);
    for (uint32_t i = 0; i < n; i++) {
        prog_kinds k = pooled_prog(ranks[i].comm, BIG);
        cr_expect_gt(k.pub_waits, 0, "rank %u: a mesh plan's FETCHes do not wait for PUB counts", i);
        cr_expect_eq(k.flag_waits, 0, "rank %u: a mesh plan has %u flag waits", i, k.flag_waits);
    }
    pair_ranks_close(ranks, n);
}

Test(eager_flags, exchanges_wait_for_flags_other_plans_for_counts_n2, .timeout = 120) { flags_then_counts(2); }
Test(eager_flags, exchanges_wait_for_flags_other_plans_for_counts_n3, .timeout = 120) { flags_then_counts(3); }

/* A peer that calls late finds the others asleep in their flag waits for its header: its PUB signal
 * wakes them, and every rank sums right. */
Test(eager_flags, a_late_peers_header_ends_the_sleeping_waits_n4, .timeout = 120)
{
    pair_rank ranks[MAX_RANKS];
    pair_ranks_open(ranks, 4, BIG * sizeof(int32_t));
    for (uint32_t late = 0; late < 4; late++)
        run_allreduce(ranks, 4, SMALL, late, 300000);
    expect_flags(ranks, 4);
    pair_ranks_close(ranks, 4);
}
