/* The event itself, shared by the files of hal/emu that make up events (emu_event.c: records,
 * completion, host syncs; emu_event_wait.c: stream waits). Nothing else reads it. */
#ifndef OH_EMU_EVENT_H
#define OH_EMU_EVENT_H

#include "hal/emu/emu_internal.h"

struct hal_event {
    hal_device *dev;
    uint32_t flags;
    /* Low 32 bits of the record `err` came with (emu_event_err). A completion without the lock
     * raises rec_done past a failed record's: `err` is then an older record's, not the event's. */
    _Atomic uint32_t err_seq;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    _Atomic uint64_t rec_enq, reset_mark; /* written under mu; query and sync read them without */
    _Atomic uint64_t rec_done;  /* raised with or without mu (emu_event_complete), polled without */
    _Atomic int sleepers;       /* waiters in cv (changed under mu): a record broadcasts only then */
    uint32_t rec_gen;           /* rec_stream's slot generation (here: the struct keeps its size) */
    hal_stream *rec_stream;     /* the stream of queued record rec_seq and the stream's task count */
    uint64_t rec_pos;           /* once the record ran (host execution in event_sync); rec_stream */
    uint64_t rec_seq;           /* NULL = unknown. A record on an idle stream (record_now) takes no
                                 * lock and sets none of them */
    uint64_t ts_ns;
    _Atomic hal_result err; /* error carried by the last completed record (written before rec_done) */
    char msg[EMU_MSG_LEN];
    _Atomic int refs; /* the user's + one per pending task */
    bool destroyed;
    struct hal_event *next, *prev;
    /* Streams a record's completion kicks (emu_stream_kick.c). Last: the fields above keep the
     * cache lines a record and its completion write, and every completion only reads its count. */
    emu_kicks kicks;
};

/* The error the event's latest completed record carried: `err` only where it came with that
 * record. A record that completes without the lock (it read `err` as HAL_OK) may raise rec_done
 * past a failed record that another stream completed meanwhile; that later record carried none.
 * Callers read rec_done first (acquire), so `err` is at least that record's. */
static inline hal_result emu_event_err(hal_event *e)
{
    hal_result err = atomic_load_explicit(&e->err, memory_order_relaxed);
    if (err == HAL_OK) /* the common case: one load */
        return HAL_OK;
    uint64_t done = atomic_load_explicit(&e->rec_done, memory_order_acquire);
    return atomic_load_explicit(&e->err_seq, memory_order_relaxed) == (uint32_t)done ? err : HAL_OK;
}

/* Polls (emu_poll) until rec_done >= seq or the poll budget is spent; true if reached. */
bool emu_event_poll(hal_event *e, uint64_t seq);
/* Waits (emu_event_poll, then the condvar) until record seq of e completed or dev closes, with
 * e->mu held at the end; true if it completed. */
bool emu_event_await_locked(hal_event *e, uint64_t seq, hal_device *dev);
/* After a completion raised rec_done, without e->mu (a kick runs another stream's tasks, which may
 * complete other events): kicks the streams whose record completed (emu_event_wait.c). */
void emu_event_kick_waiters(hal_event *e);

#endif
