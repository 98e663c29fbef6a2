/* Stream programs (hal.h, hal_insn): a list of instructions that runs as ONE task of its stream,
 * so a plan step costs an interpreter step instead of a queue entry and a hand-off to the worker.
 * The task points at the caller's array (nothing is copied: the caller keeps it alive until an
 * event recorded after the program completes). Instructions run in order on the thread that runs
 * the task; the first failure fails the stream (sticky, as a failing task) and ends the program,
 * and a stream that failed before the program skips it whole (emu_tasks.c). */
#include "common/oh_log.h"
#include "hal/emu/emu_copy.h"
#include "hal/emu/emu_internal.h"

static hal_result insn_check(const hal_insn *in, uint32_t i)
{
    switch (in->kind) {
    case HAL_INSN_DMA:
        if (in->u.dma.n && !in->u.dma.descs)
            break;
        for (uint32_t k = 0; k < in->u.dma.n; k++) {
            hal_result rc = emu_dma_check(&in->u.dma.descs[k], k);
            if (rc != HAL_OK)
                return rc;
        }
        return HAL_OK;
    case HAL_INSN_NOTIFY_RECORD:
    case HAL_INSN_NOTIFY_WAIT:
    case HAL_INSN_NOTIFY_WAKE:
        if (in->u.notify.n)
            return HAL_OK;
        break;
    case HAL_INSN_FLAG_WAIT:
        if (in->u.flag.w && in->u.flag.w->flag && in->u.flag.w->wake)
            return HAL_OK;
        break;
    case HAL_INSN_FN:
        if (in->u.fn.fn)
            return HAL_OK;
        break;
    case HAL_INSN_AHEAD:
        return HAL_OK;
    default:
        OH_ERR("emu", "prog_launch: instruction %u has unknown kind %u", i, (unsigned)in->kind);
        return HAL_E_PARAM;
    }
    OH_ERR("emu", "prog_launch: instruction %u (kind %u) has a NULL operand", i, (unsigned)in->kind);
    return HAL_E_PARAM;
}

static _Atomic uint64_t g_checks; /* programs checked (about): for tests */

uint64_t emu_prog_test_checks(void)
{
    return atomic_load(&g_checks);
}

hal_result emu_prog_check(const hal_insn *insns, uint32_t n)
{
    /* no locked add on the hot path: threads that race may lose a count, tests need no more */
    atomic_store_explicit(&g_checks, atomic_load_explicit(&g_checks, memory_order_relaxed) + 1, memory_order_relaxed);
    if (n && !insns)
        return HAL_E_PARAM;
    for (uint32_t i = 0; i < n; i++) {
        hal_result rc = insn_check(&insns[i], i);
        if (rc != HAL_OK)
            return rc;
    }
    return HAL_OK;
}

static hal_result prog_check(hal_stream *s, const hal_insn *insns, uint32_t n)
{
    return s ? emu_prog_check(insns, n) : HAL_E_PARAM;
}

/* A program task of checked instructions, from instruction pc on, recording `done` after it
 * (NULL: no record); NULL when out of memory. */
static emu_task *prog_task_at(const hal_insn *insns, uint32_t n, uint32_t pc, struct hal_event *done)
{
    emu_task *t = emu_task_new(EMU_T_PROG);
    if (t) {
        t->u.prog.insns = insns;
        t->u.prog.n = n;
        t->u.prog.pc = pc;
        for (uint32_t i = 1; i < EMU_PROG_RECORDS; i++)
            t->u.prog.rec[i].e = NULL;
        t->u.prog.rec[0].e = done;
    }
    return t;
}

/* hal_ops.prog_launch_checked: a program task of instructions prog_check passed, its record after
 * it where done is set. */
hal_result emu_prog_launch_checked(hal_stream *s, const hal_insn *insns, uint32_t n, struct hal_event *done)
{
    if (!s || (n && !insns))
        return HAL_E_PARAM;
    emu_task *t = prog_task_at(insns, n, 0, done);
    if (!t)
        return HAL_E_NOMEM;
    return done ? emu_event_push_record(done, s, t, &t->u.prog.rec[0].seq) : emu_stream_push(s, t);
}

hal_result emu_prog_launch(hal_stream *s, const hal_insn *insns, uint32_t n)
{
    hal_result rc = prog_check(s, insns, n);
    return rc == HAL_OK ? emu_prog_launch_checked(s, insns, n, NULL) : rc;
}

hal_result emu_prog_launch_record(hal_stream *s, const hal_insn *insns, uint32_t n, struct hal_event *done)
{
    if (!done)
        return HAL_E_PARAM;
    hal_result rc = prog_check(s, insns, n);
    return rc == HAL_OK ? emu_prog_launch_checked(s, insns, n, done) : rc;
}

static _Atomic uint64_t g_runs_now; /* programs prog_run_now ran to their end (about): for tests */

uint64_t emu_prog_test_runs_now(void)
{
    return atomic_load(&g_runs_now);
}

/* hal_ops.prog_run_now. The program runs as a helping host thread runs a queued one (its waits
 * poll, EMU_RUN_NOW_POLL_NS, and never sleep: emu_prog_run), in a task of this frame; what it
 * leaves (the rest from a wait that would sleep, or only the record, which carries the failure of
 * a program that failed) is queued as prog_launch_record queues a whole program. The caller
 * checked the program (emu_prog_check), so its instructions are not checked again. */
hal_result emu_prog_run_now(hal_stream *s, const hal_insn *insns, uint32_t n, struct hal_event *done, bool *queued)
{
    *queued = false;
    hal_result rc = HAL_OK;
    if (!s || !done || (n && !insns))
        return HAL_E_PARAM;
    if (emu_trace_on() || !emu_stream_take_idle(s)) /* traced: every task timed as queued (docs/tracing.md) */
        return HAL_E_NOT_READY;
    emu_task now; /* what emu_prog_run reads of it, no more: zeroing all 328 bytes was most of this function */
    now.kind = EMU_T_PROG;
    now.u.prog.insns = insns;
    now.u.prog.n = n;
    now.u.prog.pc = 0;
    for (uint32_t i = 0; i < EMU_PROG_RECORDS; i++)
        now.u.prog.rec[i].e = NULL;
    emu_prog_end end = emu_prog_run(s, &now, EMU_RUN_NOW_POLL_NS);
    if (end != EMU_PROG_DONE) { /* the rest from the wait it stopped at; after a failure, the record */
        emu_task *t = prog_task_at(insns, n, now.u.prog.pc, done);
        rc = t ? emu_event_push_record(done, s, t, &t->u.prog.rec[0].seq) : HAL_E_NOMEM;
        *queued = rc == HAL_OK;
    } else {
        /* no locked add on the hot path: threads that race may lose a count, tests need no more */
        atomic_store_explicit(&g_runs_now, atomic_load_explicit(&g_runs_now, memory_order_relaxed) + 1,
                              memory_order_relaxed);
    }
    emu_stream_give_back(s);
    return rc;
}

/* As a task function's failure: its code if it is a HAL code, else HAL_E_INTERNAL. */
static bool run_fn(hal_stream *s, const hal_insn *in)
{
    char msg[EMU_MSG_LEN];
    msg[0] = 0; /* not = "": that zeroes all of it, per instruction or task */
    int rc = in->u.fn.fn(in->u.fn.arg, msg, sizeof msg);
    if (rc == 0)
        return true;
    msg[sizeof msg - 1] = 0;
    hal_result code = rc > 0 && rc <= HAL_E_INTERNAL ? (hal_result)rc : HAL_E_INTERNAL;
    emu_stream_fail(s, code, "%s", msg[0] ? msg : "task function failed");
    return false;
}

/* What the runner carries between instructions. */
typedef struct prog_run {
    hal_stream *s;
    uint64_t ahead; /* the group of the AHEAD mark the program passed (0: none; hal.h, "Running ahead") */
    uint64_t poll;  /* a host thread's: waits poll this long and do not sleep (emu_prog_run); 0 none */
    bool fenced;    /* the instruction before was a wake: its fence serves this one's (a root's wakes of
                       every receiver in a row: one fence) */
} prog_run;

/* Inlined into its two loops: as a call, its frame's setup and teardown were a third of an
 * instruction's cost (callgrind, an 8 B Broadcast's receiver: 17 of 55 instructions). */
static inline __attribute__((always_inline)) emu_wait_end run_insn(prog_run *r, const hal_insn *in);

static bool run_dma(prog_run *r, const hal_insn *in)
{
    char msg[EMU_MSG_LEN];
    msg[0] = 0; /* not = "": that zeroes all of it, per instruction or task */
    hal_result rc = emu_dma_run(&r->s->dev->dma, in->u.dma.descs, in->u.dma.n, msg, sizeof msg);
    if (rc != HAL_OK)
        emu_stream_fail(r->s, rc, "%s", msg);
    return rc == HAL_OK;
}

/* The DMA instructions from ins[0] on (up to the end, n of them) that copy one set of sources, if
 * two or more do (a mesh AllGather's own block into its output and then into every peer's): run
 * as one (emu_dma_run_fanout), reading each source once. Returns how many ran, 0 if none. */
static uint32_t run_dma_fanout(prog_run *r, const hal_insn *ins, uint32_t n, emu_wait_end *end)
{
    if (n < 2 || ins[0].kind != HAL_INSN_DMA || ins[1].kind != HAL_INSN_DMA ||
        !emu_dma_fanout_worth(ins[0].u.dma.descs, ins[0].u.dma.n))
        return 0; /* the common case (small copies, or a single one): nothing to scan */
    const hal_dma_desc *batch[EMU_COPY_FANOUT_MAX];
    uint32_t k = 0;
    while (k < n && k < EMU_COPY_FANOUT_MAX && ins[k].kind == HAL_INSN_DMA && ins[k].u.dma.n == ins[0].u.dma.n)
        batch[k] = ins[k].u.dma.descs, k++;
    if (k < 2)
        return 0;
    char msg[EMU_MSG_LEN];
    msg[0] = 0; /* not = "": that zeroes all of it, per instruction or task */
    hal_result rc;
    uint32_t ran = emu_dma_run_fanout(&r->s->dev->dma, batch, k, ins[0].u.dma.n, &rc, msg, sizeof msg);
    if (!ran)
        return 0;
    if (rc != HAL_OK)
        emu_stream_fail(r->s, rc, "%s", msg);
    *end = rc == HAL_OK ? EMU_WAIT_MET : EMU_WAIT_FAILED;
    return ran;
}

static _Atomic uint64_t g_ahead_runs; /* prefixes run ahead: for tests */

uint64_t emu_prog_test_ahead_runs(void)
{
    return atomic_load(&g_ahead_runs);
}

/* Where t's prefix ends: its AHEAD mark of group g allowing `depth` (t runs ahead of the
 * depth-th program before it), if no wait comes before it; else t->u.prog.n. */
static uint32_t ahead_end(const emu_task *t, uint64_t g, uint32_t depth)
{
    const hal_insn *in = t->u.prog.insns;
    for (uint32_t i = 0; i < t->u.prog.n && !hal_insn_waits(&in[i]); i++)
        if (in[i].kind == HAL_INSN_AHEAD)
            return in[i].u.ahead.group == g && in[i].u.ahead.depth >= depth ? i : t->u.prog.n;
    return t->u.prog.n;
}

/* r's program, past its mark, waits for a signal that is not there yet: the programs queued right
 * after it, not started, run their prefixes now (hal.h, "Running ahead"), each as far ahead as its
 * mark allows. An exchange's next calls send while this one waits for its peers: ranks that share
 * CPUs then each finish several calls per turn on the CPU, where in order every call needs every
 * rank to get the CPU once more. Every wait of r's program that is not met looks again: programs
 * queued since may run ahead too. Only the executor takes tasks off the queue, so the next tasks
 * stay put; their pc moves past the mark before the lock is dropped, and each resumes there. */
static __attribute__((noinline)) void run_next_ahead(prog_run *r)
{
    hal_stream *s = r->s;
    emu_task *run[HAL_AHEAD_MAX];
    uint32_t ends[HAL_AHEAD_MAX], k = 0, depth = 1;
    pthread_mutex_lock(&s->mu);
    for (emu_task *nt = s->head; nt && nt->kind == EMU_T_PROG && depth <= HAL_AHEAD_MAX;
         nt = nt->next, depth++) {
        uint32_t end = ahead_end(nt, r->ahead, depth);
        if (end >= nt->u.prog.n || (nt->u.prog.pc && nt->u.prog.pc != end + 1))
            break; /* no mark for this far ahead, or started past its prefix: later ones stay in order */
        if (nt->u.prog.pc)
            continue; /* its prefix ran while an earlier wait looked */
        nt->u.prog.pc = end + 1;
        run[k] = nt;
        ends[k++] = end;
    }
    pthread_mutex_unlock(&s->mu);
    for (uint32_t j = 0; j < k; j++) {
        atomic_fetch_add_explicit(&g_ahead_runs, 1, memory_order_relaxed);
        prog_run pr = {s, 0, false, false}; /* a prefix has no waits: it never suspends */
        for (uint32_t i = 0; i < ends[j]; i++)
            if (run_insn(&pr, &run[j]->u.prog.insns[i]) != EMU_WAIT_MET)
                return; /* the stream failed: the programs are skipped when their turn comes */
    }
}

static emu_wait_end run_wait(prog_run *r, const hal_insn *in)
{
    /* A one-way root's credit waits mostly find one kept: taken as notify_take would, without
     * setting up a take and a poll (and with one kept, nothing is pending to run ahead of). */
    if (!in->u.notify.at_least && emu_notify_take_kept(in->u.notify.n))
        return EMU_WAIT_MET;
    if (r->ahead && emu_notify_pending(in->u.notify.n) == 0)
        run_next_ahead(r);
    emu_take take = {false, in->u.notify.at_least, in->u.notify.keep_rest, in->u.notify.check,
                     in->u.notify.check_arg};
    if (r->poll)
        return emu_notify_help_wait(r->s, in->u.notify.n, in->u.notify.abort_flag, &take, r->poll);
    uint64_t ms = in->u.notify.timeout_ms ? in->u.notify.timeout_ms : emu_cfg()->exec_timeout_ms;
    bool ok = emu_notify_do_wait(r->s, in->u.notify.n, ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms,
                                 in->u.notify.abort_flag, &take);
    return ok ? EMU_WAIT_MET : EMU_WAIT_FAILED;
}

static inline __attribute__((always_inline)) emu_wait_end run_insn(prog_run *r, const hal_insn *in)
{
    hal_stream *s = r->s;
    bool ok;
    r->fenced = r->fenced && in->kind == HAL_INSN_NOTIFY_WAKE;
    switch (in->kind) {
    case HAL_INSN_DMA:
        ok = run_dma(r, in);
        break;
    case HAL_INSN_NOTIFY_RECORD:
        ok = emu_notify_do_record(s, in->u.notify.n);
        break;
    case HAL_INSN_NOTIFY_WAIT:
        return run_wait(r, in);
    case HAL_INSN_FLAG_WAIT:
        if (r->ahead && !hal_flag_met(in->u.flag.w))
            run_next_ahead(r);
        return emu_flag_do_wait(s, in->u.flag.w, r->poll);
    case HAL_INSN_NOTIFY_WAKE:
        ok = emu_notify_do_wake(s, in->u.notify.n, !r->fenced);
        r->fenced = true;
        return ok ? EMU_WAIT_MET : EMU_WAIT_FAILED;
    case HAL_INSN_FN:
        ok = run_fn(s, in);
        break;
    case HAL_INSN_AHEAD:
        r->ahead = in->u.ahead.group;
        ok = true;
        break;
    default:
        emu_stream_fail(s, HAL_E_PARAM, "program instruction of unknown kind %u", (unsigned)in->kind);
        ok = false;
    }
    return ok ? EMU_WAIT_MET : EMU_WAIT_FAILED;
}

emu_prog_end emu_prog_run(hal_stream *s, emu_task *t, uint64_t poll_ns)
{
    prog_run r = {s, 0, poll_ns, false};
    for (uint32_t i = 0; i < t->u.prog.pc; i++) /* resumed: after a help, or past a prefix run ahead */
        if (t->u.prog.insns[i].kind == HAL_INSN_AHEAD)
            r.ahead = t->u.prog.insns[i].u.ahead.group;
    const hal_insn *in = t->u.prog.insns;
    for (uint32_t i = t->u.prog.pc; i < t->u.prog.n; i++) {
        emu_wait_end end;
        uint32_t fanned = in[i].kind == HAL_INSN_DMA ? run_dma_fanout(&r, &in[i], t->u.prog.n - i, &end) : 0;
        if (fanned) {
            i += fanned - 1; /* all ran (a fan-out never waits) */
            r.fenced = false;
        }
        else
            end = run_insn(&r, &in[i]);
        if (end == EMU_WAIT_LATER) {
            t->u.prog.pc = i; /* the next run resumes at this wait */
            return EMU_PROG_SUSPENDED;
        }
        if (end == EMU_WAIT_FAILED)
            return EMU_PROG_FAILED;
    }
    return EMU_PROG_DONE;
}
