/* The trace recorder inside the emulator (hal/emu only): stream workers record each task they
 * run, libhccl records its ops through hal_trace.h. Records go to per-thread buffers (chunks of
 * fixed-size records, a process-wide cap) and are written as Chrome trace JSON when the session
 * stops (emu_trace_write.c). See docs/tracing.md. */
#ifndef EMU_TRACE_H
#define EMU_TRACE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "hal/hal_trace.h"

/* Nonzero while a session records: the one flag hot paths test. */
extern _Atomic uint32_t emu_trace_active;

static inline bool emu_trace_on(void)
{
    return __builtin_expect(atomic_load_explicit(&emu_trace_active, memory_order_relaxed) != 0, 0);
}

#define EMU_TRACE_STEP_LEN 12

/* Which op step a task belongs to: copied from the enqueuing thread into the task at push. */
typedef struct emu_trace_tag {
    uint32_t op; /* 0: none */
    int32_t peer;
    uint16_t stream, index;
    char step[EMU_TRACE_STEP_LEN];
} emu_trace_tag;

struct emu_task;
struct hal_stream;

/* Copies this thread's current tag (set by op_begin/step) into *tag. */
void emu_trace_tag_copy(emu_trace_tag *tag);
/* Records task t, run on s from t0_ns until now; sticky != HAL_OK: it was skipped. */
void emu_trace_task(struct hal_stream *s, const struct emu_task *t, uint64_t t0_ns, hal_result sticky);

/* --- what the writer sees (emu_trace_write.c) --- */
typedef enum { EMU_TR_TASK = 1, EMU_TR_OP = 2 } emu_trace_rec_kind;

#define EMU_TRACE_NAME_LEN 24
#define EMU_TRACE_ALGO_LEN 16
#define EMU_TRACE_COMM_LEN 48

typedef struct emu_trace_rec {
    uint8_t kind;      /* emu_trace_rec_kind */
    uint8_t task;      /* EMU_TASK: emu_task_kind */
    uint8_t is_default; /* the device's default stream */
    uint8_t skipped;   /* the stream had failed: the task did not run */
    uint16_t device;
    uint64_t stream;   /* stream identity (its address) */
    uint64_t t0, t1;   /* ns, CLOCK_MONOTONIC */
    union {
        struct {
            uint64_t bytes;
            uint64_t aux;      /* notify index, event or function address */
            int16_t dtype, redop; /* reduce DMA, else -1 */
            uint32_t ndesc;    /* DMA descriptors */
            emu_trace_tag tag;
        } task;
        struct {
            uint32_t id;
            uint32_t rank, nranks;
            int32_t root;
            uint64_t count, bytes, seq;
            char name[EMU_TRACE_NAME_LEN];
            char algo[EMU_TRACE_ALGO_LEN];
            char dtype[8], redop[8];
            char comm[EMU_TRACE_COMM_LEN];
        } op;
    } u;
} emu_trace_rec;

typedef struct emu_trace_session {
    char dir[4097];
    uint64_t device_mask;
    uint32_t what;
    uint32_t first_op, end_op; /* op ids recorded in this session: [first_op, end_op) */
    uint32_t index;            /* sessions of this process so far */
    uint64_t dropped;          /* records lost past the cap */
} emu_trace_session;

/* Calls fn for every committed record (the session is stopped: nothing records meanwhile). */
void emu_trace_for_each(void (*fn)(const emu_trace_rec *r, void *arg), void *arg);
/* Writes the session's file; path into path. */
hal_result emu_trace_write(const emu_trace_session *ses, char *path, size_t len);

/* HCCL_TRACE: aclFinalize ends the session the environment started (no-op otherwise). */
void emu_trace_env_finish(void);

#endif
