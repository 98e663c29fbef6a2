/* HAL conformance: notify_wait_count, the wait of a one-way root's drain (runtime/rt_oneway.c). It
 * goes on once the notify holds at least the count, takes none of the signals, sleeps through
 * records that leave it short (every record wakes it, none passes it early), times out like any
 * wait, and does the same as a program instruction (HAL_INSN_NOTIFY_WAIT with at_least).
 * Also keep_rest, the hint of every wait of a communicator's programs: whatever a backend does with
 * it, the handle's count stays what plain waits would leave (the kept signals serve later waits,
 * count waits and notify_pending through it); the emulator keeps them in the handle, off the
 * shared count. */
#include "common/hal_testutil.h"

static const hal_ops *count_hal(void)
{
    const hal_ops *h = ht_hal();
    if (!h->notify_wait_count)
        cr_skip_test("%s has no notify_wait_count (optional: one-way calls stay off there)", h->name);
    cr_assert_not_null(h->notify_host_record, "the emulator must offer notify_host_record");
    return h;
}

typedef struct fixture {
    const hal_ops *h;
    hal_device *d;
    hal_stream *s;
    hal_notify *n;
} fixture;

static fixture open_fixture(void)
{
    fixture f = {count_hal(), NULL, NULL, NULL};
    f.d = ht_open(f.h, 0);
    HT_OK(f.h->stream_create(f.d, &f.s));
    HT_OK(f.h->notify_create(f.d, &f.n));
    return f;
}

static void close_fixture(fixture *f)
{
    HT_OK(f->h->notify_destroy(f->n));
    HT_OK(f->h->stream_destroy(f->s));
    HT_OK(f->h->device_close(f->d));
}

static void host_records(const fixture *f, int k)
{
    for (int i = 0; i < k; i++)
        HT_OK(f->h->notify_host_record(f->n));
}

/* The stream is still behind the wait: a timed sync comes back without it. */
static void expect_blocked(const fixture *f, const char *why)
{
    cr_assert_eq(f->h->stream_sync(f->s, 50), HAL_E_TIMEOUT, "%s", why);
    cr_assert_eq(f->h->stream_query(f->s), HAL_E_NOT_READY, "%s", why);
}

/* One more record lets the stream finish; `left` signals are then still there. */
static void record_and_finish(const fixture *f, uint32_t left)
{
    host_records(f, 1);
    HT_OK(f->h->stream_sync(f->s, 20000));
    cr_assert_eq(f->h->notify_pending(f->n), left);
}

Test(hal_count_wait, waits_for_the_count_and_takes_none, .timeout = 60)
{
    fixture f = open_fixture();
    host_records(&f, 2);
    HT_OK(f.h->notify_wait_count(f.n, f.s, 3, 10000, NULL));
    expect_blocked(&f, "2 signals of 3: the wait must not pass");
    host_records(&f, 1);
    HT_OK(f.h->stream_sync(f.s, 20000));
    cr_assert_eq(f.h->notify_pending(f.n), 3u, "a count wait takes nothing");
    for (int i = 0; i < 3; i++) /* the signals are all still there for plain waits */
        HT_OK(f.h->notify_wait(f.n, f.s, 10000, NULL));
    HT_OK(f.h->stream_sync(f.s, 20000));
    cr_assert_eq(f.h->notify_pending(f.n), 0u);
    close_fixture(&f);
}

/* Past the poll window the wait sleeps; records that leave it short wake it and it sleeps again. */
Test(hal_count_wait, sleeps_through_short_records, .timeout = 60)
{
    fixture f = open_fixture();
    HT_OK(f.h->notify_wait_count(f.n, f.s, 4, 10000, NULL));
    for (int i = 0; i < 3; i++) {
        expect_blocked(&f, "fewer than 4 signals");
        host_records(&f, 1);
    }
    expect_blocked(&f, "3 signals of 4");
    record_and_finish(&f, 4);
    close_fixture(&f);
}

Test(hal_count_wait, times_out_and_refuses_zero, .timeout = 60)
{
    fixture f = open_fixture();
    cr_assert_eq(f.h->notify_wait_count(f.n, f.s, 0, 1000, NULL), HAL_E_PARAM, "a count of 0 is refused");
    host_records(&f, 1);
    HT_OK(f.h->notify_wait_count(f.n, f.s, 2, 300, NULL));
    cr_assert_eq(f.h->stream_sync(f.s, 20000), HAL_E_TIMEOUT, "1 signal of 2 until the timeout");
    cr_assert_eq(f.h->notify_pending(f.n), 1u, "a wait that timed out took nothing");
    f.h->stream_clear_error(f.s);
    close_fixture(&f);
}

static int mark(void *arg, char *msg, size_t len)
{
    (void)msg, (void)len;
    *(int *)arg = 1;
    return 0;
}

Test(hal_count_wait, as_a_program_instruction, .timeout = 60)
{
    fixture f = open_fixture();
    if (!f.h->prog_launch) {
        close_fixture(&f);
        cr_skip_test("%s has no stream program executor", f.h->name);
    }
    int ran = 0;
    hal_insn prog[2] = {{.kind = HAL_INSN_NOTIFY_WAIT}, {.kind = HAL_INSN_FN}};
    prog[0].u.notify.n = f.n;
    prog[0].u.notify.timeout_ms = 10000;
    prog[0].u.notify.at_least = 2;
    prog[1].u.fn.fn = mark;
    prog[1].u.fn.arg = &ran;
    HT_OK(f.h->prog_launch(f.s, prog, 2));
    host_records(&f, 1);
    expect_blocked(&f, "1 signal of 2");
    cr_assert_eq(ran, 0, "the instruction after the wait ran early");
    host_records(&f, 1);
    HT_OK(f.h->stream_sync(f.s, 20000));
    cr_assert_eq(ran, 1);
    cr_assert_eq(f.h->notify_pending(f.n), 2u, "a count wait takes nothing");
    close_fixture(&f);
}

/* One program: a keep_rest wait on f's notify, in an instruction of its own (a program reads it
 * when it runs). */
static void launch_keep_rest_wait(const fixture *f, hal_insn *prog)
{
    memset(prog, 0, sizeof *prog);
    prog->kind = HAL_INSN_NOTIFY_WAIT;
    prog->u.notify.n = f->n;
    prog->u.notify.timeout_ms = 10000;
    prog->u.notify.keep_rest = true;
    HT_OK(f->h->prog_launch(f->s, prog, 1));
}

static fixture open_prog_fixture(void)
{
    fixture f = open_fixture();
    if (!f.h->prog_launch) {
        close_fixture(&f);
        cr_skip_test("%s has no stream program executor", f.h->name);
    }
    return f;
}

Test(hal_count_wait, keep_rest_takes_one_and_keeps_the_others, .timeout = 60)
{
    fixture f = open_prog_fixture();
    hal_insn prog[4];
    host_records(&f, 5);
    launch_keep_rest_wait(&f, &prog[0]);
    HT_OK(f.h->stream_sync(f.s, 20000));
    cr_assert_eq(f.h->notify_pending(f.n), 4u, "one signal taken, four left for the next waits");
    if (!strcmp(f.h->name, "emu")) { /* kept in the handle: another handle of the notify sees none */
        hal_notify_handle nh;
        hal_notify *other = NULL;
        HT_OK(f.h->notify_export(f.n, &nh));
        HT_OK(f.h->notify_import(f.d, &nh, &other));
        cr_assert_eq(f.h->notify_pending(other), 0u, "the emulator keeps the rest in the waiting handle");
        HT_OK(f.h->notify_destroy(other));
    }
    for (int i = 0; i < 4; i++) /* plain waits and keep_rest waits take the kept ones */
        if (i % 2)
            HT_OK(f.h->notify_wait(f.n, f.s, 10000, NULL));
        else
            launch_keep_rest_wait(&f, &prog[1 + i / 2]);
    HT_OK(f.h->stream_sync(f.s, 20000));
    cr_assert_eq(f.h->notify_pending(f.n), 0u);
    launch_keep_rest_wait(&f, &prog[3]);
    expect_blocked(&f, "all five signals were taken: a sixth wait must block");
    record_and_finish(&f, 0);
    close_fixture(&f);
}

/* A one-way root's credits: taken by keep_rest waits, drained by a count wait over all of them. */
Test(hal_count_wait, count_wait_counts_kept_signals, .timeout = 60)
{
    fixture f = open_prog_fixture();
    hal_insn prog;
    host_records(&f, 3);
    launch_keep_rest_wait(&f, &prog);
    HT_OK(f.h->stream_sync(f.s, 20000));
    cr_assert_eq(f.h->notify_pending(f.n), 2u);
    host_records(&f, 1); /* 2 kept (or left) + 1 new */
    if (f.h->notify_count)
        cr_assert_eq(f.h->notify_count(f.n), 3u, "notify_count: the kept signals and the new one");
    HT_OK(f.h->notify_wait_count(f.n, f.s, 3, 10000, NULL));
    HT_OK(f.h->stream_sync(f.s, 20000));
    HT_OK(f.h->notify_wait_count(f.n, f.s, 4, 10000, NULL));
    expect_blocked(&f, "3 signals of 4, kept ones included");
    host_records(&f, 1);
    HT_OK(f.h->stream_sync(f.s, 20000));
    close_fixture(&f);
}

Test(hal_count_wait, wait_reset_clears_kept_signals, .timeout = 60)
{
    fixture f = open_prog_fixture();
    if (!f.h->notify_wait_reset) {
        close_fixture(&f);
        cr_skip_test("%s has no notify_wait_reset", f.h->name);
    }
    hal_insn prog[2];
    host_records(&f, 3);
    launch_keep_rest_wait(&f, &prog[0]);
    HT_OK(f.h->notify_wait_reset(f.n, f.s, 10000));
    HT_OK(f.h->stream_sync(f.s, 20000));
    cr_assert_eq(f.h->notify_pending(f.n), 0u, "a reset takes every signal, kept ones too");
    launch_keep_rest_wait(&f, &prog[1]);
    expect_blocked(&f, "nothing left after the reset");
    record_and_finish(&f, 0);
    close_fixture(&f);
}
