/* coll_misc eagerseq: 42 collectives issued back to back without a synchronize in between, every
 * collective the eager protocol serves, sizes on both sides of the crossover (so eager and mesh
 * plans alternate and the inbox slots are reused while peers are at most two calls apart), several
 * dtypes and ops, in and out of place, rotating roots. Then one synchronize and every element of
 * every output checked against a host reference. */
#include "coll_eop.h"

#include "algos/plan.h" /* algo_oneway_slots: the runs go around the real depth */

#include <string.h>
#include <unistd.h>

enum { ES_OPS = 42 };

static const struct { HcclDataType dt; HcclReduceOp op; } k_types[] = {
    {HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM}, {HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM},
    {HCCL_DATA_TYPE_INT8, HCCL_REDUCE_MAX},  {HCCL_DATA_TYPE_INT64, HCCL_REDUCE_PROD},
    {HCCL_DATA_TYPE_BFP16, HCCL_REDUCE_MIN},
};
/* Bytes of one box's data straddle 16 KiB and 64 KiB (the default and largest crossover). */
static const uint64_t k_bytes[] = {4, 20, 16380, 16384, 16388, 65536, 65540, 200004, 1000};

static void plan_op(eop *o, int i, uint32_t n)
{
    memset(o, 0, sizeof *o);
    o->coll = (ecoll)(i % E_NCOLL);
    int t = (i * 3) % (int)(sizeof k_types / sizeof k_types[0]);
    o->dt = k_types[t].dt, o->op = k_types[t].op;
    uint64_t bytes = k_bytes[(i + i / E_NCOLL) % (int)(sizeof k_bytes / sizeof k_bytes[0])];
    o->count = bytes / dt_size(o->dt) ? bytes / dt_size(o->dt) : 1;
    o->root = (uint32_t)i % n;
    o->inplace = o->coll != E_A2A && o->coll != E_SC && (i / E_NCOLL) % 2 == 1;
    eop_layout(o, n);
}

int misc_eagerseq(prog_env *e)
{
    eop *ops = xmalloc(ES_OPS * sizeof *ops);
    for (int i = 0; i < ES_OPS; i++)
        plan_op(&ops[i], i, e->n);
    return eop_run_back_to_back(e, ops, ES_OPS, 1000, "collectives");
}

/* coll_misc onewayseq: eager Broadcasts and Scatters in runs go one-way (docs/runtime.md, "One-way
 * calls"): a root writes its data (a Broadcast root into its own inbox, a Scatter root into its
 * receivers') and goes on, taking a credit per receiver once it is S (ow_slots) calls ahead.
 * Issued back to back, then checked after one synchronize: runs of one root shorter than, as long
 * as and longer than the slots (1, S - 1, S, S + 1, 3S + 2 calls; a run goes one-way from its
 * first call when the run before was longer than one and ended with a call that could not go
 * one-way, else from its second), some ended by an AllReduce or a Broadcast too
 * large to go one-way (the root drains its credits before it), roots changing every call (a call
 * of another root goes full), and a run at the very end (the destroy checks it). The receivers of
 * the 3S + 2-call run stall 30 ms after its first call, so its root writes as far as its credits
 * let it (a root that overran its slots would overwrite calls not read yet).
 * Sizes (4 B to 2 KiB) and dtypes vary per call, each call its own buffers. */
static int ow_slots(uint32_t n) /* the runtime's (rt_comm.c): every rank of the test on this machine */
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return (int)algo_oneway_slots(cpus > 0 && n <= (uint64_t)cpus);
}

static int ow_ops(uint32_t n) /* what oneway_schedule makes */
{
    return 9 * ow_slots(n) + 13;
}

static void plan_oneway(eop *o, int i, ecoll coll, uint32_t root, uint32_t n)
{
    static const uint64_t bytes[] = {4, 20, 1000, 2048}; /* one-way up to 2 KiB (ALGO_ONEWAY_MAX_BYTES) */
    memset(o, 0, sizeof *o);
    o->coll = coll;
    int t = i % (int)(sizeof k_types / sizeof k_types[0]);
    o->dt = k_types[t].dt, o->op = k_types[t].op;
    uint64_t b = bytes[i % 4];
    o->count = b / dt_size(o->dt) ? b / dt_size(o->dt) : 1;
    o->root = root % n;
    eop_layout(o, n);
}

static int oneway_schedule(eop *ops, uint32_t n)
{
    const int S = ow_slots(n);
    const int runs[] = {1, S - 1, S, S + 1, 3 * S + 2};
    int k = 0;
    for (int r = 0; r < 5; r++) {
        for (int j = 0; j < runs[r]; j++, k++)
            plan_oneway(&ops[k], k, j % 3 == 2 ? E_SC : E_BC, (uint32_t)r * 3 + 1, n);
        if (r == 4) /* the longest run's receivers stall after its first call (full if the root changed):
                       its root runs up to its credits */
            ops[k - runs[r] + 1].hold = true;
        if (r % 2 == 1 || r == 4)
            plan_oneway(&ops[k], k, E_AR, 0, n), k++;
        if (r == 2) { /* past the one-way size: a Broadcast that exchanges with every rank */
            plan_oneway(&ops[k], k, E_BC, 1, n);
            ops[k].count = 2052 / dt_size(ops[k].dt);
            eop_layout(&ops[k++], n);
        }
    }
    for (int j = 0; j < 2 * S + 3; j++, k++) /* a new root every call */
        plan_oneway(&ops[k], k, j % 2 ? E_SC : E_BC, (uint32_t)j, n);
    for (int j = 0; j < S + 3; j++, k++) /* the last run: nothing drains it but the destroy */
        plan_oneway(&ops[k], k, E_BC, n - 1, n);
    return k;
}

/* Makes the `want` calls of a schedule, then issues and checks them (eop_run_back_to_back). */
static int run_schedule(prog_env *e, int want, int (*make)(eop *, uint32_t), const char *name, const char *what)
{
    eop *ops = xmalloc((size_t)want * sizeof *ops);
    int nops = make(ops, e->n);
    if (nops != want) {
        fprintf(stderr, "%s: the schedule made %d calls, expected %d\n", name, nops, want);
        free(ops);
        return 1;
    }
    return eop_run_back_to_back(e, ops, nops, 1000, what);
}

int misc_onewayseq(prog_env *e)
{
    return run_schedule(e, ow_ops(e->n), oneway_schedule, "onewayseq", "one-way and other collectives");
}

/* coll_misc onewayreduce: small Reduces in runs go one-way (a gather, docs/runtime.md, "One-way
 * calls"): every rank but the root writes its IN into its box of the root's gather slot and goes
 * on, taking its credit from the root once it is S calls ahead. Issued back to back, checked after
 * one synchronize: a run of S + 1 calls; the same root then Broadcasting (a run of the other
 * direction); a run of 2S + 2 whose root stalls 30 ms after its second call, so its writers write
 * as far as their credits let them (one that overran its slots would overwrite calls not read
 * yet); an AllReduce and a Reduce too large to go one-way (each ends the run: the writers drain);
 * a new root every call; and a run at the very end (the destroy checks it). Sizes up to what a
 * writer's part of the box holds (algo_oneway_gather_bytes), dtypes and ops vary per call, every
 * other call in place, each call its own buffers. */
static void plan_reduce(eop *o, int i, uint32_t root, uint32_t n)
{
    uint64_t most = algo_oneway_gather_bytes(n), bytes[] = {4, 20, most / 2, most};
    plan_oneway(o, i, E_RED, root, n);
    o->count = bytes[i % 4] / dt_size(o->dt) ? bytes[i % 4] / dt_size(o->dt) : 1;
    o->inplace = i % 2;
    eop_layout(o, n);
}

static int owr_ops(uint32_t n) /* what oneway_reduce_schedule makes */
{
    return 4 * ow_slots(n) + (int)n + 14;
}

static int oneway_reduce_schedule(eop *ops, uint32_t n)
{
    const int S = ow_slots(n);
    int k = 0;
    for (int j = 0; j < S + 1; j++, k++)
        plan_reduce(&ops[k], k, 1, n);
    for (int j = 0; j < 3; j++, k++)
        plan_oneway(&ops[k], k, E_BC, 1, n);
    int first = k;
    for (int j = 0; j < 2 * S + 2; j++, k++)
        plan_reduce(&ops[k], k, 0, n);
    ops[first + 1].hold = true;
    plan_oneway(&ops[k], k, E_AR, 0, n), k++;
    plan_reduce(&ops[k], k, 0, n); /* past what a writer's part holds: the full exchange */
    ops[k].count = (algo_oneway_gather_bytes(n) + 64) / dt_size(ops[k].dt);
    eop_layout(&ops[k++], n);
    for (int j = 0; j < (int)n + 3; j++, k++)
        plan_reduce(&ops[k], k, (uint32_t)j, n);
    for (int j = 0; j < S + 3; j++, k++)
        plan_reduce(&ops[k], k, n - 1, n);
    return k;
}

int misc_onewayreduce(prog_env *e)
{
    return run_schedule(e, owr_ops(e->n), oneway_reduce_schedule, "onewayreduce",
                        "one-way Reduces and other collectives");
}

/* coll_misc deepqueue: more launches of one communicator in flight than the runtime keeps
 * queued (256, rt_launch.h): past that the host runs half the queue itself before it enqueues
 * more. DQ_CALLS AllReduces, each with its own buffers (every third in place), are issued without
 * a synchronize and checked after one. */
#define DQ_CALLS 1000
#define DQ_COUNT 3

static int32_t dq_value(uint32_t rank, int call, int j)
{
    return (int32_t)(rank * 1000 + (uint32_t)call * 7 + (uint32_t)j);
}

int misc_deepqueue(prog_env *e)
{
    const size_t per = 2 * DQ_COUNT; /* in, then out, per call */
    size_t bytes = DQ_CALLS * per * sizeof(int32_t);
    int32_t *host = xmalloc(bytes);
    int32_t *dev = dev_alloc(bytes);
    for (int i = 0; i < DQ_CALLS; i++)
        for (int j = 0; j < DQ_COUNT; j++) {
            host[i * per + j] = dq_value(e->rank, i, j);
            host[i * per + DQ_COUNT + j] = -1;
        }
    to_dev(dev, host, bytes);
    for (int i = 0; i < DQ_CALLS; i++) {
        int32_t *in = dev + i * per, *out = i % 3 ? in + DQ_COUNT : in;
        HCCL_OK(HcclAllReduce(in, out, DQ_COUNT, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, e->comm, e->stream));
    }
    ACL_OK(aclrtSynchronizeStream(e->stream));
    to_host(host, dev, bytes);
    int bad = 0;
    for (int i = 0; i < DQ_CALLS && bad < 4; i++)
        for (int j = 0; j < DQ_COUNT; j++) {
            int32_t want = 0, got = host[i * per + (i % 3 ? DQ_COUNT : 0) + j];
            for (uint32_t r = 0; r < e->n; r++)
                want += dq_value(r, i, j);
            if (got != want) {
                printf("FAIL: call %d element %d: got %d want %d\n", i, j, got, want);
                bad++;
            }
        }
    dev_free(dev);
    free(host);
    printf("rank %u: %d queued AllReduces checked, %s\n", e->rank, DQ_CALLS, bad ? "FAILED" : "all exact");
    return bad != 0;
}

/* coll_misc eagerchain: eager calls that may run ahead, and calls that must not (docs/runtime.md,
 * "Running ahead"). CH_ROUNDS rounds of five int64 AllReduces (sum) and a copy, queued behind a
 * hold that each rank releases a little after the rank before, so a rank's calls wait for later
 * ranks and whatever may run ahead of a waiting call does:
 *   A -> B;
 *   D -> E, independent of the call before (its sends may run while A -> B waits);
 *   B -> C, whose IN is the OUT of the call two before: it may not run ahead of A -> B;
 *   C -> A, whose IN is the OUT of the call right before it: it must wait for that call's end;
 *   a copy A -> F on the same stream (aclrtMemcpyAsync), then F -> D: F is written between the calls.
 * After the first calls every rank holds the same values, so each call multiplies by n; a call that
 * read its IN before the call or copy before it wrote it gets an older value: checked exactly. */
#define CH_ROUNDS 5 /* A grows n^3 a round: 8^15 times the first sums stays within int64 */
#define CH_COUNT 5
#define CH_BUFS 6
#define CH_STEPS 5

/* in, out per step (A..F = 0..5); the copy A -> F comes before the last step. */
static const int ch_steps[CH_STEPS][2] = {{0, 1}, {3, 4}, {1, 2}, {2, 0}, {5, 3}};

/* The buffers' contents after every call, replayed on the host. */
static void chain_reference(int64_t ref[CH_BUFS][CH_COUNT], uint32_t n)
{
    for (int b = 0; b < CH_BUFS; b++)
        for (int j = 0; j < CH_COUNT; j++) {
            ref[b][j] = 0;
            for (uint32_t r = 0; b % 3 == 0 && r < n; r++) /* A and D: the first calls' sums */
                ref[b][j] += (int64_t)(r + 1 + j + b);
        }
    for (int round = 0; round < CH_ROUNDS; round++)
        for (int k = 0; k < CH_STEPS; k++)
            for (int j = 0; j < CH_COUNT; j++) {
                if (k == CH_STEPS - 1)
                    ref[5][j] = ref[0][j];
                bool first = round == 0 && k < 2; /* reads a rank's own values: the sums above */
                ref[ch_steps[k][1]][j] = first ? ref[ch_steps[k][0]][j] : ref[ch_steps[k][0]][j] * (int64_t)n;
            }
}

int misc_eagerchain(prog_env *e)
{
    const size_t bytes = CH_COUNT * sizeof(int64_t);
    int64_t *buf[CH_BUFS], host[CH_BUFS][CH_COUNT], ref[CH_BUFS][CH_COUNT];
    for (int b = 0; b < CH_BUFS; b++) {
        buf[b] = dev_alloc(bytes);
        for (int j = 0; j < CH_COUNT; j++)
            host[b][j] = b % 3 == 0 ? (int64_t)(e->rank + 1 + j + b) : -1;
        to_dev(buf[b], host[b], bytes);
    }
    hold h[CH_ROUNDS];
    for (int round = 0; round < CH_ROUNDS; round++) {
        hold_init(&h[round]);
        ACL_OK(aclrtLaunchHostFunc(e->stream, hold_fn, &h[round]));
        for (int k = 0; k < CH_STEPS; k++) {
            if (k == CH_STEPS - 1)
                ACL_OK(aclrtMemcpyAsync(buf[5], bytes, buf[0], bytes, ACL_MEMCPY_DEVICE_TO_DEVICE, e->stream));
            HCCL_OK(HcclAllReduce(buf[ch_steps[k][0]], buf[ch_steps[k][1]], CH_COUNT, HCCL_DATA_TYPE_INT64,
                                  HCCL_REDUCE_SUM, e->comm, e->stream));
        }
        /* The round's calls are all queued: released one rank after another, each rank's calls
         * wait for later ranks, and whatever may run ahead of a waiting call does. */
        hold_wait_entered(&h[round]);
        usleep(2000 * e->rank);
        hold_release(&h[round]);
    }
    ACL_OK(aclrtSynchronizeStream(e->stream));
    chain_reference(ref, e->n);
    int bad = 0;
    for (int b = 0; b < CH_BUFS; b++) {
        to_host(host[b], buf[b], bytes);
        for (int j = 0; j < CH_COUNT; j++)
            if (host[b][j] != ref[b][j] && bad++ < 4)
                printf("FAIL: buffer %c element %d: got %lld want %lld\n", 'A' + b, j, (long long)host[b][j],
                       (long long)ref[b][j]);
        dev_free(buf[b]);
    }
    printf("rank %u: %d chained AllReduces checked, %s\n", e->rank, CH_STEPS * CH_ROUNDS, bad ? "FAILED" : "all exact");
    return bad != 0;
}
