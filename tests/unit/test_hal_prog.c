/* HAL conformance: stream programs (prog_launch). A program runs its instructions in order as one
 * task of its stream; notifies order programs on two streams; the first failing instruction fails
 * the stream and skips the rest of the program and later tasks; a stream that failed before a
 * program skips it whole; malformed programs are refused at launch. prog_launch_record: the
 * program and an event record after it as one task, the record carrying errors as its own would. */
#include <stdatomic.h>

#include "common/hal_testutil.h"

typedef struct prog_log {
    atomic_int next;
    int seen[64];
} prog_log;

typedef struct prog_item {
    prog_log *log;
    int id;
    int rc; /* what the function returns */
} prog_item;

static int log_fn(void *arg, char *msg, size_t len)
{
    prog_item *it = arg;
    int slot = atomic_fetch_add(&it->log->next, 1);
    if (slot < 64)
        it->log->seen[slot] = it->id;
    if (it->rc)
        snprintf(msg, len, "item %d failed on purpose", it->id);
    return it->rc;
}

static hal_insn fn_insn(prog_item *it)
{
    hal_insn in = {.kind = HAL_INSN_FN};
    in.u.fn.fn = log_fn;
    in.u.fn.arg = it;
    return in;
}

static const hal_ops *prog_hal(void)
{
    const hal_ops *h = ht_hal();
    if (!strcmp(h->name, "ascend"))
        cr_skip_test("hal/ascend has no stream program executor (prog_launch NULL): the runtime enqueues one task "
                     "per instruction, which the collective suites run on it");
    cr_assert_not_null(h->prog_launch, "the emulator must offer prog_launch (is HCCL_EMU_NO_PROG set?)");
    return h;
}

Test(hal_prog, runs_in_order_with_dma)
{
    const hal_ops *h = prog_hal();
    hal_device *d = ht_open(h, 0);
    hal_stream *s;
    HT_OK(h->stream_create(d, &s));
    enum { N = 4096 };
    char *a, *b;
    HT_OK(h->mem_alloc(d, N, (void **)&a));
    HT_OK(h->mem_alloc(d, N, (void **)&b));
    ht_fill(a, N, 7);
    memset(b, 0, N);
    static prog_log log;
    static prog_item items[3];
    for (int i = 0; i < 3; i++)
        items[i] = (prog_item){&log, i, 0};
    hal_dma_desc copy = {.kind = HAL_DMA_COPY, .dst = hal_ref_ptr(b), .src = hal_ref_ptr(a), .bytes = N};
    hal_insn prog[4] = {fn_insn(&items[0]), {.kind = HAL_INSN_DMA}, fn_insn(&items[1]), fn_insn(&items[2])};
    prog[1].u.dma.descs = &copy;
    prog[1].u.dma.n = 1;
    HT_OK(h->prog_launch(s, prog, 4));
    HT_OK(h->stream_sync(s, -1));
    cr_assert_eq(atomic_load(&log.next), 3);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(log.seen[i], i, "instruction %d ran at position %d", log.seen[i], i);
    cr_assert_eq(memcmp(a, b, N), 0, "the DMA instruction did not copy");
    /* An empty program is a no-op task. */
    HT_OK(h->prog_launch(s, NULL, 0));
    HT_OK(h->stream_sync(s, -1));
    HT_OK(h->mem_free(d, a));
    HT_OK(h->mem_free(d, b));
    HT_OK(h->stream_destroy(s));
    HT_OK(h->device_close(d));
}

/* B: [mark 0, record n1, wait n2, mark 2]; A: [wait n1, mark 1, record n2]: 0 < 1 < 2 whatever the
 * order the two programs were launched and started in. */
Test(hal_prog, notifies_order_two_streams)
{
    const hal_ops *h = prog_hal();
    hal_device *d = ht_open(h, 0);
    hal_stream *sa, *sb;
    HT_OK(h->stream_create(d, &sa));
    HT_OK(h->stream_create(d, &sb));
    hal_notify *n1, *n2;
    HT_OK(h->notify_create(d, &n1));
    HT_OK(h->notify_create(d, &n2));
    static prog_log log;
    static prog_item items[3];
    for (int i = 0; i < 3; i++)
        items[i] = (prog_item){&log, i, 0};
    hal_insn pa[3] = {{.kind = HAL_INSN_NOTIFY_WAIT}, fn_insn(&items[1]), {.kind = HAL_INSN_NOTIFY_RECORD}};
    pa[0].u.notify.n = n1;
    pa[2].u.notify.n = n2;
    hal_insn pb[4] = {fn_insn(&items[0]), {.kind = HAL_INSN_NOTIFY_RECORD}, {.kind = HAL_INSN_NOTIFY_WAIT},
                      fn_insn(&items[2])};
    pb[1].u.notify.n = n1;
    pb[2].u.notify.n = n2;
    HT_OK(h->prog_launch(sa, pa, 3)); /* A first: it must wait for B's record */
    HT_OK(h->prog_launch(sb, pb, 4));
    HT_OK(h->stream_sync(sa, -1));
    HT_OK(h->stream_sync(sb, -1));
    cr_assert_eq(atomic_load(&log.next), 3);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(log.seen[i], i, "step %d ran at position %d", log.seen[i], i);
    HT_OK(h->notify_destroy(n1));
    HT_OK(h->notify_destroy(n2));
    HT_OK(h->stream_destroy(sa));
    HT_OK(h->stream_destroy(sb));
    HT_OK(h->device_close(d));
}

Test(hal_prog, failing_fn_fails_stream_and_skips_the_rest)
{
    const hal_ops *h = prog_hal();
    hal_device *d = ht_open(h, 0);
    hal_stream *s;
    HT_OK(h->stream_create(d, &s));
    static prog_log log;
    static prog_item items[4];
    items[0] = (prog_item){&log, 0, 0};
    items[1] = (prog_item){&log, 1, HAL_E_PEER};
    items[2] = (prog_item){&log, 2, 0};
    items[3] = (prog_item){&log, 3, 0};
    hal_insn prog[3] = {fn_insn(&items[0]), fn_insn(&items[1]), fn_insn(&items[2])};
    hal_event *after;
    HT_OK(h->event_create(d, 0, &after));
    HT_OK(h->prog_launch(s, prog, 3));
    HT_OK(h->task_async(s, log_fn, &items[3])); /* a later task: skipped too */
    HT_OK(h->event_record(after, s));
    cr_assert_eq(h->stream_sync(s, -1), HAL_E_PEER);
    cr_assert_eq(h->event_sync(after, -1), HAL_E_PEER, "an event recorded after the program carries the error");
    cr_assert_eq(atomic_load(&log.next), 2, "%d functions ran, expected 2", atomic_load(&log.next));
    cr_assert_eq(log.seen[0], 0);
    cr_assert_eq(log.seen[1], 1);
    cr_assert(strstr(h->stream_error_msg(s), "item 1 failed on purpose") != NULL, "message: %s",
              h->stream_error_msg(s));
    HT_OK(h->event_destroy(after));
    HT_OK(h->stream_destroy(s));
    HT_OK(h->device_close(d));
}

Test(hal_prog, sticky_error_skips_program)
{
    const hal_ops *h = prog_hal();
    hal_device *d = ht_open(h, 0);
    hal_stream *s;
    HT_OK(h->stream_create(d, &s));
    static prog_log log;
    static prog_item bad, items[2];
    bad = (prog_item){&log, 9, HAL_E_INTERNAL};
    items[0] = (prog_item){&log, 0, 0};
    items[1] = (prog_item){&log, 1, 0};
    hal_insn prog[2] = {fn_insn(&items[0]), fn_insn(&items[1])};
    HT_OK(h->task_async(s, log_fn, &bad));
    HT_OK(h->prog_launch(s, prog, 2));
    cr_assert_eq(h->stream_sync(s, -1), HAL_E_INTERNAL);
    cr_assert_eq(atomic_load(&log.next), 1, "the program ran on a failed stream");
    /* Cleared: the same program runs. */
    h->stream_clear_error(s);
    HT_OK(h->prog_launch(s, prog, 2));
    HT_OK(h->stream_sync(s, -1));
    cr_assert_eq(atomic_load(&log.next), 3);
    cr_assert_eq(log.seen[1], 0);
    cr_assert_eq(log.seen[2], 1);
    HT_OK(h->stream_destroy(s));
    HT_OK(h->device_close(d));
}

/* A wait that times out fails the stream with HAL_E_TIMEOUT and ends the program there. */
Test(hal_prog, wait_timeout_ends_program)
{
    const hal_ops *h = prog_hal();
    hal_device *d = ht_open(h, 0);
    hal_stream *s;
    HT_OK(h->stream_create(d, &s));
    hal_notify *n;
    HT_OK(h->notify_create(d, &n));
    static prog_log log;
    static prog_item item;
    item = (prog_item){&log, 0, 0};
    hal_insn prog[2] = {{.kind = HAL_INSN_NOTIFY_WAIT}, fn_insn(&item)};
    prog[0].u.notify.n = n;
    prog[0].u.notify.timeout_ms = 50;
    HT_OK(h->prog_launch(s, prog, 2));
    cr_assert_eq(h->stream_sync(s, -1), HAL_E_TIMEOUT);
    cr_assert_eq(atomic_load(&log.next), 0, "the instruction after the failed wait ran");
    HT_OK(h->notify_destroy(n));
    HT_OK(h->stream_destroy(s));
    HT_OK(h->device_close(d));
}

Test(hal_prog, malformed_programs_are_refused)
{
    const hal_ops *h = prog_hal();
    hal_device *d = ht_open(h, 0);
    hal_stream *s;
    HT_OK(h->stream_create(d, &s));
    hal_insn no_fn = {.kind = HAL_INSN_FN};
    cr_assert_eq(h->prog_launch(s, &no_fn, 1), HAL_E_PARAM);
    hal_insn unknown = {.kind = 77};
    cr_assert_eq(h->prog_launch(s, &unknown, 1), HAL_E_PARAM);
    hal_insn no_notify = {.kind = HAL_INSN_NOTIFY_WAIT};
    cr_assert_eq(h->prog_launch(s, &no_notify, 1), HAL_E_PARAM);
    hal_dma_desc bad = {.kind = HAL_DMA_REDUCE, .dtype = HAL_DT_COUNT, .count = 1};
    hal_insn dma = {.kind = HAL_INSN_DMA};
    dma.u.dma.descs = &bad;
    dma.u.dma.n = 1;
    cr_assert_eq(h->prog_launch(s, &dma, 1), HAL_E_PARAM);
    cr_assert_eq(h->prog_launch(s, NULL, 1), HAL_E_PARAM);
    cr_assert_eq(h->prog_launch(NULL, &no_fn, 0), HAL_E_PARAM);
    HT_OK(h->stream_sync(s, -1)); /* nothing was enqueued, nothing failed */
    HT_OK(h->stream_destroy(s));
    HT_OK(h->device_close(d));
}

/* HCCL_EMU_NO_PROG=1 presents the emulator as a backend without a program executor: libhccl then
 * submits one task per instruction (test_coll_algos' "unrolled" suite runs collectives that way). */
Test(hal_prog, no_prog_env_hides_the_executor)
{
    const char *backend = getenv("HCCL_HAL");
    if (backend && !strcmp(backend, "ascend"))
        cr_skip_test("HCCL_EMU_NO_PROG is a switch of the emulator backend (HCCL_HAL=emu)");
    setenv("HCCL_EMU_NO_PROG", "1", 1);
    const hal_ops *h = ht_hal();
    cr_assert_null(h->prog_launch, "HCCL_EMU_NO_PROG=1 must leave prog_launch NULL");
    cr_assert_null(h->prog_launch_record, "HCCL_EMU_NO_PROG=1 must leave prog_launch_record NULL");
    cr_assert_not_null(h->task_async);
    cr_assert_str_eq(h->name, "emu");
}

/* A device, a stream and an event on the emulator's program executor: what the prog_launch_record
 * cases share. */
typedef struct rec_fix {
    const hal_ops *h;
    hal_device *d;
    hal_stream *s;
    hal_event *done;
} rec_fix;

static rec_fix rec_open(void)
{
    rec_fix f = {.h = prog_hal()};
    cr_assert_not_null(f.h->prog_launch_record, "the emulator offers prog_launch_record");
    f.d = ht_open(f.h, 0);
    HT_OK(f.h->stream_create(f.d, &f.s));
    HT_OK(f.h->event_create(f.d, 0, &f.done));
    return f;
}

static void rec_close(rec_fix *f)
{
    HT_OK(f->h->event_destroy(f->done));
    HT_OK(f->h->stream_destroy(f->s));
    HT_OK(f->h->device_close(f->d));
}

/* The record completes when the program has run, not before; a sync of it runs the stream up to it. */
Test(hal_prog, launch_record_completes_after_the_program)
{
    rec_fix f = rec_open();
    static prog_log log;
    static prog_item items[2];
    items[0] = (prog_item){&log, 0, 0};
    items[1] = (prog_item){&log, 1, 0};
    hal_insn prog[2] = {fn_insn(&items[0]), fn_insn(&items[1])};
    ht_gate gate;
    ht_gate_init(&gate);
    HT_OK(f.h->host_func_async(f.s, ht_gate_fn, &gate));
    HT_OK(f.h->prog_launch_record(f.s, prog, 2, f.done));
    cr_assert_eq(f.h->event_query(f.done), HAL_E_NOT_READY, "completed while its stream is held");
    cr_assert_eq(atomic_load(&log.next), 0);
    ht_gate_open(&gate);
    HT_OK(f.h->event_sync(f.done, -1));
    cr_assert_eq(atomic_load(&log.next), 2, "the record completed before its program ran");
    HT_OK(f.h->event_query(f.done));
    /* Again on the same event: the later record is the one waited for. */
    HT_OK(f.h->prog_launch_record(f.s, prog, 2, f.done));
    HT_OK(f.h->event_sync(f.done, -1));
    cr_assert_eq(atomic_load(&log.next), 4);
    HT_OK(f.h->stream_sync(f.s, -1));
    ht_gate_fini(&gate);
    rec_close(&f);
}

/* A failing instruction, or a stream that failed before: the record still completes, carrying the
 * error (as event_record after the program would), and a malformed program is refused. */
Test(hal_prog, launch_record_carries_errors)
{
    rec_fix f = rec_open();
    const hal_ops *h = f.h;
    static prog_log log;
    static prog_item items[3];
    items[0] = (prog_item){&log, 0, 0};
    items[1] = (prog_item){&log, 1, HAL_E_PEER};
    items[2] = (prog_item){&log, 2, 0};
    hal_insn failing[3] = {fn_insn(&items[0]), fn_insn(&items[1]), fn_insn(&items[2])};
    HT_OK(h->prog_launch_record(f.s, failing, 3, f.done));
    cr_assert_eq(h->event_sync(f.done, -1), HAL_E_PEER, "the record must carry the program's failure");
    cr_assert_eq(atomic_load(&log.next), 2, "%d instructions ran, expected 2", atomic_load(&log.next));
    hal_insn fine[1] = {fn_insn(&items[0])};
    HT_OK(h->prog_launch_record(f.s, fine, 1, f.done)); /* the stream failed before: skipped, record made */
    cr_assert_eq(h->event_sync(f.done, -1), HAL_E_PEER, "the record on a failed stream must carry its error");
    cr_assert_eq(atomic_load(&log.next), 2, "a program ran on a failed stream");
    cr_assert_eq(h->stream_sync(f.s, -1), HAL_E_PEER);
    h->stream_clear_error(f.s);
    hal_insn bad[1] = {{.kind = HAL_INSN_FN}}; /* no function */
    cr_assert_eq(h->prog_launch_record(f.s, bad, 1, f.done), HAL_E_PARAM);
    cr_assert_eq(h->prog_launch_record(f.s, fine, 1, NULL), HAL_E_PARAM);
    cr_assert_eq(h->event_sync(f.done, -1), HAL_E_PEER, "a refused launch recorded something: the last record stands");
    HT_OK(h->stream_sync(f.s, -1));
    rec_close(&f);
}
