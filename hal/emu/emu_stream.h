/* The emulator's streams: tasks, the stream object and its gate, who executes (emu_stream.c,
 * emu_stream_gate.c, emu_stream_host.c, emu_stream_kick.c; hal/emu only, through emu_internal.h).
 * See docs/emulator.md, "Emulator internals". */
#ifndef EMU_STREAM_H
#define EMU_STREAM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "hal/emu/emu_trace.h"
#include "hal/hal.h"

#define EMU_MSG_LEN 256 /* a failed stream's (or task's) message */

typedef enum emu_task_kind {
    EMU_T_DMA,
    EMU_T_MEMSET,
    EMU_T_FN,
    EMU_T_HOST,
    EMU_T_EVENT_RECORD,
    EMU_T_EVENT_WAIT,
    EMU_T_NOTIFY_RECORD,
    EMU_T_NOTIFY_WAIT,
    EMU_T_PROG,        /* a stream program: the caller's hal_insn array (emu_prog.c) */
    EMU_T_FLAG_WAIT,   /* hal_ops.flag_wait (emu_flag.c): u.nt.flag, sleeping on u.nt.n */
    EMU_T_NOTIFY_WAKE, /* hal_ops.notify_wake: u.nt.n */
} emu_task_kind;

/* What a notify wait takes once it may go on: one signal; all of them (reset: notify_wait_reset);
 * or, with at_least > 0, none, once at least that many are there (notify_wait_count). keep_rest
 * (hal_insn): one signal, but the others there are taken too and kept in the handle. */
typedef struct emu_take {
    bool reset;
    uint32_t at_least;
    bool keep_rest;
    hal_task_fn check; /* hal_insn's: run where the wait would sleep (emu_notify.c wait_asleep) */
    void *check_arg;
} emu_take;

/* A record a task completes: the event and the record's sequence number. */
typedef struct emu_rec {
    struct hal_event *e; /* NULL: none */
    uint64_t seq;
} emu_rec;

/* Records a program task completes after its program: the launch's own (prog_launch_record) and
 * one recorded on the stream behind it while it waited in the queue (emu_event.c, ride). */
#define EMU_PROG_RECORDS 2u

typedef struct emu_task {
    struct emu_task *next;
    emu_task_kind kind;
    union {
        struct { hal_dma_desc *descs; uint32_t n; } dma;
        struct { void *dst; int value; size_t bytes; } set;
        struct { hal_task_fn fn; void *arg; } fn;
        struct { hal_host_fn fn; void *arg; } host;
        /* from, from_gen: a wait's, where the record it waits for was queued (NULL: unknown);
         * rec: a wait's, a record behind it that rides on it (emu_event.c, ride; NULL: none) */
        struct { struct hal_event *e; uint64_t seq; hal_stream *from; uint32_t from_gen; emu_rec rec; } ev;
        struct {
            struct hal_notify *n;
            uint64_t timeout_ms;
            const volatile uint32_t *abort;
            emu_take take;
            const hal_flag_wait *flag; /* EMU_T_FLAG_WAIT */
        } nt;
        /* rec: records after it; pc: the next instruction (a program a helping host suspended resumes there) */
        struct { const hal_insn *insns; uint32_t n, pc; emu_rec rec[EMU_PROG_RECORDS]; } prog;
    } u;
    hal_dma_desc inline_desc[2]; /* small batches avoid a second allocation */
    hal_dma_desc *heap_descs;    /* larger batches: kept with the pooled task for reuse */
    uint32_t heap_cap;           /* descriptors heap_descs holds */
    emu_trace_tag trace_tag;     /* op step it belongs to (filled at push while tracing) */
} emu_task;

/* A stream lives in a slot of a process-wide, type-stable table (emu_stream.c): the memory of a
 * destroyed stream is never unmapped, only reused by a later stream (with another `gen`), so a
 * stale pointer can be checked (emu_stream_live) or locked (events) without reading freed memory.
 * Execution: exactly one executor at a time (`running`): the worker thread, or a host thread that
 * blocks in a sync without deadline and runs the queued tasks itself (docs/emulator.md). */
struct hal_stream {
    hal_device *dev;
    pthread_mutex_t mu;
    pthread_cond_t cv_work, cv_done;
    emu_task *head, *tail;
    uint64_t enq;
    _Atomic uint64_t enq_pub; /* enq, polled by the idle worker without mu */
    _Atomic uint64_t done; /* written under mu; polled without it by syncs */
    uint64_t wake_at;      /* smallest `done` a sleeping sync waiter needs (UINT64_MAX: none) */
    bool sleeping, stop;   /* sleeping: the worker waits on cv_work */
    bool running;          /* an executor (worker or host) holds the stream through mu */
    _Atomic uint32_t gate; /* emu_gate: or a host thread holds it through the gate (emu_stream_gate.c) */
    bool running_prog;     /* ... and the task it runs (or ran last) is a program */
    bool parked;           /* tests: the worker takes no task until a host executor ran */
    bool awaiting;         /* the head is an event wait whose record's completion kicks s: pushes
                            * and handbacks leave the sleeping worker alone (emu_stream_kick.c) */
    int sync_waiters;
    uint32_t host_wants;   /* host threads in a sync without deadline: the worker hands over */
    _Atomic uint32_t handovers; /* bumped when the worker stops for them; polled without mu */
    hal_result err;
    char msg[EMU_MSG_LEN];
    pthread_t thread;
    emu_task *free_tasks;  /* task pool: tasks that ran, for the next enqueues */
    uint32_t nfree;
    uint32_t gen;          /* bumped when the slot is freed */
    _Atomic uint32_t live; /* 1 between create and destroy */
    bool inited;           /* slot's mutex and condvars initialized (once, never destroyed) */
    struct hal_stream *next, *prev; /* device list */
    /* What the last scan for a waiting stream's own work found (emu_event_wait.c,
     * behind_own_work_locked): the queued tasks up to position own_upto (own_last, the one there)
     * wait for nothing but stream own_for's work (slot generation own_for_gen). Last: the fields
     * above keep their cache lines. */
    const struct hal_stream *own_for;
    uint32_t own_for_gen;
    uint64_t own_upto;
    const struct emu_task *own_last;
};
hal_result emu_stream_new(hal_device *dev, hal_stream **out);
void emu_stream_free(hal_stream *s);
/* A task from the pool of this thread (or a new one). Fill it, then emu_stream_push it (or
 * emu_task_free it). */
emu_task *emu_task_new(emu_task_kind kind);
hal_result emu_stream_push(hal_stream *s, emu_task *t);
/* The same; *pos = the stream's task count once t ran (its `done` then), *gen = the slot's gen. */
hal_result emu_stream_push_at(hal_stream *s, emu_task *t, uint64_t *pos, uint32_t *gen);
/* Records an error on the stream if it has none yet. */
void emu_stream_fail(hal_stream *s, hal_result rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* O(1), lock-free: s points at a live stream of this process. */
bool emu_stream_live(const hal_stream *s);
hal_result emu_stream_sync_impl(hal_stream *s, int32_t timeout_ms);
/* Host side of a sync without deadline: runs s's queued tasks on the calling thread until s has
 * completed `pos` tasks, if no executor holds s and s still has slot generation `gen`; returns
 * at once otherwise (the caller then waits as usual). */
void emu_stream_run_until(hal_stream *s, uint32_t gen, uint64_t pos);
/* The same, helping (hal_ops.event_help): runs only tasks that cannot wait on the calling thread
 * (programs, DMA, records, met event waits); stops at any other, and where a program's wait is not
 * met within its poll it suspends the program there; the worker goes on from where it stopped. */
void emu_stream_help_until(hal_stream *s, uint32_t gen, uint64_t pos);
/* A host thread takes the executor role of s if s is idle: nothing queued, no executor, no error,
 * not stopping (emu_prog_run_now); false leaves s alone. emu_stream_give_back ends the role and
 * wakes the worker for what was queued meanwhile. Both without s->mu while nothing else happens on
 * s: through the gate (emu_stream_gate.c). */
bool emu_stream_take_idle(hal_stream *s);
void emu_stream_give_back(hal_stream *s);
/* Whether s is idle right now, seen at its gate (acquire: what ran on s before is visible); false
 * says nothing (the gate may be shut on an idle stream). */
bool emu_stream_idle_now(hal_stream *s);
/* The gate's states: OPEN only while s is idle; HELD/DIRTY while a host thread holds the role
 * through it (DIRTY: something changed under s->mu meanwhile, it gives the role back through mu). */
typedef enum emu_gate { EMU_GATE_SHUT, EMU_GATE_OPEN, EMU_GATE_HELD, EMU_GATE_DIRTY } emu_gate;
/* s->mu held, about to change what idle means (queue, take the role, fail, stop, park): whether a
 * host thread holds the role through the gate (then it is marked DIRTY); an open gate is shut. */
bool emu_stream_gate_held_locked(hal_stream *s);
/* s->mu held: an executor holds s, through mu or the gate (emu_stream_gate_held_locked's marks). */
bool emu_stream_running_locked(hal_stream *s);
/* s->mu held: opens a shut gate if s is idle. */
void emu_stream_gate_reopen_locked(hal_stream *s);
/* s->mu held, the role given back: wakes sleeping sync waiters, and the worker if work is left. */
void emu_stream_wake_locked(hal_stream *s);
/* s->mu held: wakes a sleeping worker if work is left (or s stops) and it may take it. */
void emu_stream_wake_worker_locked(hal_stream *s);
/* Who executes: the worker; a host thread in a sync without deadline (emu_stream_host.c); a host
 * thread helping (it runs only what cannot wait on it, and no wait sleeps); or a host thread about
 * to run at once, clearing records and met waits off the head first (emu_stream_take_idle). */
typedef enum emu_exec_mode { EMU_EXEC_WORKER, EMU_EXEC_HOST, EMU_EXEC_HELP, EMU_EXEC_INSTANT } emu_exec_mode;
/* s->mu held, no executor, s->head set: the calling thread takes the role, runs queued tasks up
 * to target as mode allows, and gives the role back (the worker cannot take it while a host
 * thread wants it: the caller wakes it once it stops wanting). False: stopped before target. */
bool emu_stream_host_exec_locked(hal_stream *s, uint64_t target, emu_exec_mode mode);
/* s->mu held: whether the head of s's queue takes no time (EMU_EXEC_INSTANT runs it): an event
 * record, or an event wait whose record completed. */
bool emu_stream_head_instant_locked(hal_stream *s);
/* True while the calling thread runs a stream's tasks inside a synchronize without deadline
 * (emu_stream_run_until). */
bool emu_stream_in_host_sync(void);
/* s->mu held: the head of s is an event wait whose record has not completed, which the worker
 * waits for without the role (await_head), unless s failed, its device closes or the trace records. */
bool emu_stream_waits_aside_locked(hal_stream *s);
/* s->mu held: where s's worker sleeps, nothing executes s and its head waits aside, registers s
 * with the record's event so that the record's completion runs what then takes no time on s
 * (emu_stream_kick) instead of the worker waking for it; returns s->awaiting (emu_stream_kick.c). */
bool emu_stream_await_kick_locked(hal_stream *s);
/* The same for the worker that stopped at such a wait, about to sleep (s->mu held throughout). */
bool emu_stream_worker_await_kick_locked(hal_stream *s);
/* The kick of a record's completion (no lock held): s, if it is still slot generation gen and
 * awaits a kick, runs its records and met waits at the head on the calling thread, then awaits
 * the next wait's record the same way, or wakes the worker for what is left. */
void emu_stream_kick(hal_stream *s, uint32_t gen);
/* An event's list of streams awaiting a kick (emu_stream_kick.c). Its mutex is a leaf: nothing
 * else is locked under it. `n` is read without it, after a record's completion raised rec_done:
 * a registration raises n and then reads rec_done, both seq_cst, so one of the two sees the other. */
#define EMU_EVENT_KICKS 4u
typedef struct emu_kick {
    hal_stream *s;
    uint32_t gen;
    uint64_t seq; /* the record it waits for */
} emu_kick;
typedef struct emu_kicks {
    _Atomic uint32_t n;
    pthread_mutex_t mu;
    emu_kick k[EMU_EVENT_KICKS];
} emu_kicks;
void emu_kicks_init(emu_kicks *l);
void emu_kicks_destroy(emu_kicks *l);
/* False: the list is full (the stream's worker waits as before). */
bool emu_kicks_add(emu_kicks *l, emu_kick k);
/* Removes k if it is still there. */
void emu_kicks_remove(emu_kicks *l, emu_kick k);
/* Takes the entries of records up to done into out; returns how many. */
uint32_t emu_kicks_take(emu_kicks *l, uint64_t done, emu_kick out[EMU_EVENT_KICKS]);
/* s->mu held, t the head of s, an event wait: registers s for the completion of t's record;
 * false if the list is full or the record completed meanwhile (then s is not registered). */
bool emu_event_kick_on(const emu_task *t, hal_stream *s);
/* Tests only: the worker leaves queued tasks alone until a host executor has run some (and
 * then woken it): makes "the host executes" observable without races. */
void emu_stream_test_park(hal_stream *s);

#endif
