/* Op-level timeline events (docs/tracing.md): the launch tells the emulator's trace recorder
 * which op and which plan step the tasks it enqueues belong to. Off (no session recording, or a
 * libascendcl without the recorder): each hook costs one load and a predictable branch. */
#ifndef RT_TRACE_H
#define RT_TRACE_H

#include <stdatomic.h>
#include <stdint.h>

#include "hal/hal_trace.h"
#include "runtime/stream/rt_launch.h"

/* The recorder's active flag; until first resolved, a flag that is set, so that the first hook
 * takes the slow path once and resolves it (to the recorder's flag, or to a zero). */
extern const _Atomic uint32_t *rt_trace_flag;

static inline int rt_trace_on(void)
{
    return __builtin_expect(atomic_load_explicit(rt_trace_flag, memory_order_relaxed) != 0, 0);
}

void rt_trace_op_slow(rt_launch_ctx *ctx);
void rt_trace_step_slow(const rt_launch_ctx *ctx, uint32_t stream_idx, uint32_t index);
void rt_trace_op_end_slow(void);

/* Records the op of ctx (launched on ctx->stream); its tasks follow until rt_trace_op_end. */
static inline void rt_trace_op(rt_launch_ctx *ctx)
{
    if (rt_trace_on())
        rt_trace_op_slow(ctx);
}

/* The tasks enqueued next are step `index` of plan stream `stream_idx`. */
static inline void rt_trace_step(const rt_launch_ctx *ctx, uint32_t stream_idx, uint32_t index)
{
    if (ctx->trace_op)
        rt_trace_step_slow(ctx, stream_idx, index);
}

static inline void rt_trace_op_end(const rt_launch_ctx *ctx)
{
    if (ctx->trace_op)
        rt_trace_op_end_slow();
}

#endif
