/* Running ahead on the emulator (hal.h, HAL_INSN_AHEAD): while a program that passed a mark of
 * group g waits for a signal not there yet, the programs queued right after it on the stream run
 * their prefixes (up to their own marks of group g) on the same executor, each only if its mark's
 * depth reaches the waiting program, and later resume past them (a prefix never runs twice).
 * Nothing runs ahead across another group, a mark of group 0, a task queued in between, or for a
 * program that passed no mark. A gate holds the stream while the programs are queued, so the
 * first program's wait always finds the others queued. */
#include <stdatomic.h>
#include <unistd.h>

#include "common/hal_testutil.h"
#include "hal/emu/emu_internal.h"

typedef struct ahead_log {
    atomic_int n;
    int id[16];
} ahead_log;

typedef struct ahead_item {
    ahead_log *log;
    int id;
} ahead_item;

static int log_fn(void *arg, char *msg, size_t len)
{
    (void)msg;
    (void)len;
    ahead_item *it = arg;
    int k = atomic_fetch_add(&it->log->n, 1);
    if (k < 16)
        it->log->id[k] = it->id;
    return 0;
}

static hal_insn fn_insn(ahead_item *it)
{
    hal_insn in = {.kind = HAL_INSN_FN};
    in.u.fn.fn = log_fn;
    in.u.fn.arg = it;
    return in;
}

static int nop_fn(void *arg, char *msg, size_t len)
{
    (void)arg;
    (void)msg;
    (void)len;
    return 0;
}

static hal_insn mark_insn(uint64_t group, uint32_t depth)
{
    hal_insn in = {.kind = HAL_INSN_AHEAD};
    in.u.ahead.group = group;
    in.u.ahead.depth = depth;
    return in;
}

/* Polls until the log holds `count` entries (a bound, not a measurement: 30 s, then fails). */
static void await_entries(const ahead_log *log, int count)
{
    for (int i = 0; i < 30000 && atomic_load(&log->n) < count; i++)
        usleep(1000);
    cr_assert_geq(atomic_load(&log->n), count, "%d of %d entries after 30 s", atomic_load(&log->n), count);
}

/* A stream held by a gate until every program of a case is queued, so that A's wait always finds
 * them queued; the notify A waits on; the log the items write. */
typedef struct ahead_rig {
    const hal_ops *h;
    hal_device *d;
    hal_stream *s;
    hal_notify *n;
    hal_insn wait; /* A's wait on n */
    ht_gate gate;
    uint64_t runs; /* prefixes run ahead before the case */
    ahead_log log;
} ahead_rig;

static void rig_open(ahead_rig *g)
{
    g->h = ht_hal();
    cr_assert_not_null(g->h->prog_launch, "the emulator offers prog_launch (is HCCL_EMU_NO_PROG set?)");
    g->d = ht_open(g->h, 0);
    HT_OK(g->h->stream_create(g->d, &g->s));
    HT_OK(g->h->notify_create(g->d, &g->n));
    atomic_store(&g->log.n, 0);
    g->wait = (hal_insn){.kind = HAL_INSN_NOTIFY_WAIT};
    g->wait.u.notify.n = g->n;
    g->wait.u.notify.timeout_ms = 30000;
    ht_gate_init(&g->gate);
    g->runs = emu_prog_test_ahead_runs();
    HT_OK(g->h->host_func_async(g->s, ht_gate_fn, &g->gate));
}

/* Opens the gate; checks that `ran` items ran while A waits (none more 20 ms later, when a prefix
 * that may not run ahead would have run), then records n and lets the stream finish. */
static void rig_run(ahead_rig *g, int ran)
{
    while (sem_wait(&g->gate.entered) != 0)
        ;
    ht_gate_open(&g->gate);
    await_entries(&g->log, ran);
    usleep(20000);
    cr_expect_eq(atomic_load(&g->log.n), ran, "%d items ran while A waited, expected %d", atomic_load(&g->log.n), ran);
    HT_OK(g->h->notify_host_record(g->n));
    HT_OK(g->h->stream_sync(g->s, 30000));
}

/* Checks the order the items ran in and how many prefixes ran ahead, and frees the rig. */
static void rig_close(ahead_rig *g, const int *want, int want_n, uint64_t ahead_runs)
{
    cr_assert_eq(atomic_load(&g->log.n), want_n);
    for (int i = 0; i < want_n; i++)
        cr_expect_eq(g->log.id[i], want[i], "entry %d is item %d, expected %d", i, g->log.id[i], want[i]);
    cr_expect_eq(emu_prog_test_ahead_runs() - g->runs, ahead_runs, "prefixes run ahead");
    ht_gate_fini(&g->gate);
    HT_OK(g->h->notify_destroy(g->n));
    HT_OK(g->h->stream_destroy(g->s));
    HT_OK(g->h->device_close(g->d));
}

typedef struct ahead_case {
    uint64_t group_a, group_b; /* marks of the two programs (group_a 0: A has no mark at all) */
    bool task_between;         /* a task function queued between them */
} ahead_case;

/* Queues [gate] A = {a0, mark?, wait n, a1} [task?] B = {b1, mark, b2}, opens the gate, records n
 * once A waits (and B's prefix ran, if `ahead`), and checks the order the items ran in. */
static void run_case(ahead_case k, bool ahead)
{
    static ahead_rig g;
    rig_open(&g);
    static ahead_item a0, a1, b1, b2, mid;
    a0 = (ahead_item){&g.log, 0}, a1 = (ahead_item){&g.log, 1}, b1 = (ahead_item){&g.log, 2};
    b2 = (ahead_item){&g.log, 3}, mid = (ahead_item){&g.log, 4};
    hal_insn pa[4] = {fn_insn(&a0), mark_insn(k.group_a, 1), g.wait, fn_insn(&a1)};
    hal_insn pb[3] = {fn_insn(&b1), mark_insn(k.group_b, 1), fn_insn(&b2)};
    if (!k.group_a) { /* no mark at all: a plain program */
        pa[1] = (hal_insn){.kind = HAL_INSN_FN};
        pa[1].u.fn.fn = nop_fn;
    }
    HT_OK(g.h->prog_launch(g.s, pa, 4));
    if (k.task_between)
        HT_OK(g.h->task_async(g.s, log_fn, &mid));
    HT_OK(g.h->prog_launch(g.s, pb, 3));
    rig_run(&g, ahead ? 2 : 1);
    static const int run_ahead[] = {0, 2, 1, 3}, in_order[] = {0, 1, 2, 3}, with_task[] = {0, 1, 4, 2, 3};
    const int *want = ahead ? run_ahead : k.task_between ? with_task : in_order;
    rig_close(&g, want, k.task_between ? 5 : 4, ahead ? 1u : 0u);
}

Test(emu_prog_ahead, prefix_runs_while_the_program_before_waits, .timeout = 60)
{
    run_case((ahead_case){7, 7, false}, true);
}

Test(emu_prog_ahead, not_across_groups, .timeout = 60)
{
    run_case((ahead_case){7, 8, false}, false);
}

Test(emu_prog_ahead, not_when_the_mark_is_off, .timeout = 60)
{
    run_case((ahead_case){7, 0, false}, false);
}

Test(emu_prog_ahead, not_past_a_task_in_between, .timeout = 60)
{
    run_case((ahead_case){7, 7, true}, false);
}

Test(emu_prog_ahead, not_after_a_program_without_a_mark, .timeout = 60)
{
    run_case((ahead_case){0, 7, false}, false);
}

#define CHAIN_MAX 3

/* Queues [gate] A = {a0, mark of depth 0, wait n, a1} and after it programs P1..Pk = {prefix,
 * mark of depth[i], suffix}, all of one group. While A waits, the first `ahead` of them run their
 * prefixes (Pi may run ahead of A only if its depth is at least i; A's own depth 0 only keeps its
 * prefix in order); the rest run in order. */
static void run_chain(const uint32_t *depth, int k, int ahead)
{
    static ahead_rig g;
    rig_open(&g);
    static ahead_item it[2 + 2 * CHAIN_MAX]; /* a0, a1, then each program's prefix and suffix */
    for (int i = 0; i < 2 + 2 * k; i++)
        it[i] = (ahead_item){&g.log, i};
    hal_insn pa[4] = {fn_insn(&it[0]), mark_insn(7, 0), g.wait, fn_insn(&it[1])};
    hal_insn p[CHAIN_MAX][3];
    HT_OK(g.h->prog_launch(g.s, pa, 4));
    for (int i = 0; i < k; i++) {
        p[i][0] = fn_insn(&it[2 + 2 * i]);
        p[i][1] = mark_insn(7, depth[i]);
        p[i][2] = fn_insn(&it[3 + 2 * i]);
        HT_OK(g.h->prog_launch(g.s, p[i], 3));
    }
    rig_run(&g, 1 + ahead);
    int want[2 + 2 * CHAIN_MAX], w = 0;
    want[w++] = 0;
    for (int i = 0; i < ahead; i++)
        want[w++] = 2 + 2 * i;
    want[w++] = 1;
    for (int i = 0; i < k; i++) {
        if (i >= ahead)
            want[w++] = 2 + 2 * i;
        want[w++] = 3 + 2 * i;
    }
    rig_close(&g, want, w, (uint64_t)ahead);
}

Test(emu_prog_ahead, a_chain_runs_ahead_as_deep_as_its_marks_allow, .timeout = 60)
{
    static const uint32_t depth[CHAIN_MAX] = {1, 2, 3};
    run_chain(depth, CHAIN_MAX, 3);
}

Test(emu_prog_ahead, a_chain_stops_at_a_mark_too_shallow, .timeout = 60)
{
    static const uint32_t depth[CHAIN_MAX] = {1, 1, HAL_AHEAD_MAX}; /* P2 may not pass A: P3 neither */
    run_chain(depth, CHAIN_MAX, 1);
}

Test(emu_prog_ahead, depth_zero_stays_in_order, .timeout = 60)
{
    static const uint32_t depth[1] = {0};
    run_chain(depth, 1, 0);
}
