/* Stream programs (hal.h, hal_insn): a list of instructions that runs as ONE task of its stream,
 * so a plan step costs an interpreter step instead of a queue entry and a hand-off to the worker.
 * The task points at the caller's array (nothing is copied: the caller keeps it alive until an
 * event recorded after the program completes). Instructions run in order on the thread that runs
 * the task; the first failure fails the stream (sticky, as a failing task) and ends the program,
 * and a stream that failed before the program skips it whole (emu_tasks.c). */
#include "common/oh_log.h"
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
        if (in->u.notify.n)
            return HAL_OK;
        break;
    case HAL_INSN_FN:
        if (in->u.fn.fn)
            return HAL_OK;
        break;
    default:
        OH_ERR("emu", "prog_launch: instruction %u has unknown kind %u", i, (unsigned)in->kind);
        return HAL_E_PARAM;
    }
    OH_ERR("emu", "prog_launch: instruction %u (kind %u) has a NULL operand", i, (unsigned)in->kind);
    return HAL_E_PARAM;
}

/* A checked program task (its record, if any, set by the caller), or NULL with *rc. */
static emu_task *prog_task(hal_stream *s, const hal_insn *insns, uint32_t n, hal_result *rc)
{
    *rc = HAL_E_PARAM;
    if (!s || (n && !insns))
        return NULL;
    for (uint32_t i = 0; i < n; i++)
        if ((*rc = insn_check(&insns[i], i)) != HAL_OK)
            return NULL;
    emu_task *t = emu_task_new(EMU_T_PROG);
    *rc = t ? HAL_OK : HAL_E_NOMEM;
    if (t) {
        t->u.prog.insns = insns;
        t->u.prog.n = n;
        t->u.prog.pc = 0;
        t->u.prog.e = NULL;
    }
    return t;
}

hal_result emu_prog_launch(hal_stream *s, const hal_insn *insns, uint32_t n)
{
    hal_result rc;
    emu_task *t = prog_task(s, insns, n, &rc);
    return t ? emu_stream_push(s, t) : rc;
}

hal_result emu_prog_launch_record(hal_stream *s, const hal_insn *insns, uint32_t n, struct hal_event *done)
{
    if (!done)
        return HAL_E_PARAM;
    hal_result rc;
    emu_task *t = prog_task(s, insns, n, &rc);
    if (!t)
        return rc;
    t->u.prog.e = done;
    return emu_event_push_record(done, s, t, &t->u.prog.seq);
}

/* As a task function's failure: its code if it is a HAL code, else HAL_E_INTERNAL. */
static bool run_fn(hal_stream *s, const hal_insn *in)
{
    char msg[EMU_MSG_LEN] = "";
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
    bool synced; /* peers' VMM mappings mirrored since the last wait or task function */
    bool help;   /* a host thread helping: waits do not sleep (emu_prog_run) */
} prog_run;

/* Peers map memory and then tell us (a signal, a publication): the mirror of their VMM tables is
 * brought up to date before the program's first DMA and before the first after anything that may
 * carry such news (a wait, a task function), not before every DMA (a scan of every region). */
static bool run_dma(prog_run *r, const hal_insn *in)
{
    if (!r->synced) {
        emu_vmm_sync_imports();
        r->synced = true;
    }
    char msg[EMU_MSG_LEN] = "";
    hal_result rc = emu_dma_run_synced(&r->s->dev->dma, in->u.dma.descs, in->u.dma.n, msg, sizeof msg);
    if (rc != HAL_OK)
        emu_stream_fail(r->s, rc, "%s", msg);
    return rc == HAL_OK;
}

static emu_wait_end run_wait(prog_run *r, const hal_insn *in)
{
    r->synced = false;
    emu_take take = {false, in->u.notify.at_least, in->u.notify.keep_rest};
    if (r->help)
        return emu_notify_help_wait(r->s, in->u.notify.n, in->u.notify.abort_flag, take);
    uint64_t ms = in->u.notify.timeout_ms ? in->u.notify.timeout_ms : emu_cfg()->exec_timeout_ms;
    bool ok = emu_notify_do_wait(r->s, in->u.notify.n, ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms,
                                 in->u.notify.abort_flag, take);
    return ok ? EMU_WAIT_MET : EMU_WAIT_FAILED;
}

static emu_wait_end run_insn(prog_run *r, const hal_insn *in)
{
    hal_stream *s = r->s;
    bool ok;
    switch (in->kind) {
    case HAL_INSN_DMA:
        ok = run_dma(r, in);
        break;
    case HAL_INSN_NOTIFY_RECORD:
        ok = emu_notify_do_record(s, in->u.notify.n);
        break;
    case HAL_INSN_NOTIFY_WAIT:
        return run_wait(r, in);
    case HAL_INSN_FN:
        r->synced = false;
        ok = run_fn(s, in);
        break;
    default:
        emu_stream_fail(s, HAL_E_PARAM, "program instruction of unknown kind %u", (unsigned)in->kind);
        ok = false;
    }
    return ok ? EMU_WAIT_MET : EMU_WAIT_FAILED;
}

emu_prog_end emu_prog_run(hal_stream *s, emu_task *t, bool help)
{
    prog_run r = {s, false, help};
    for (uint32_t i = t->u.prog.pc; i < t->u.prog.n; i++) {
        emu_wait_end end = run_insn(&r, &t->u.prog.insns[i]);
        if (end == EMU_WAIT_LATER) {
            t->u.prog.pc = i; /* the next run resumes at this wait */
            return EMU_PROG_SUSPENDED;
        }
        if (end == EMU_WAIT_FAILED)
            return EMU_PROG_FAILED;
    }
    return EMU_PROG_DONE;
}
