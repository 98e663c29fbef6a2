/* What the builders of a launch's instructions share (rt_prog.c builds, rt_prog_p2p.c builds the
 * point-to-point steps). Internal to runtime/stream. */
#ifndef RT_PROG_BUILD_H
#define RT_PROG_BUILD_H

#include "runtime/stream/rt_launch.h"

/* A wait's timeout (HCCL_EXEC_TIMEOUT) and the communicator's abort word, which every wait polls. */
uint32_t rt_prog_wait_timeout_ms(const rt_comm *c);
const volatile uint32_t *rt_prog_abort_flag(rt_comm *c);
/* Appends one instruction of plan stream `stream`, from its step `step`; NULL when out of memory. */
hal_insn *rt_prog_push_insn(rt_launch_ctx *ctx, uint32_t stream, uint32_t step, uint8_t kind);
/* A notify wait (this rank's from_peer notifies) or record. */
hal_result rt_prog_push_notify(rt_launch_ctx *ctx, uint32_t stream, uint32_t step, bool wait, hal_notify *n);
hal_result rt_prog_push_fn(rt_launch_ctx *ctx, uint32_t stream, uint32_t step, hal_task_fn fn, void *arg);

/* Point to point (rt_prog_p2p.c). A send's FETCH; a SIGNAL or WAIT of a p2p launch with a peer on
 * flags (rt_p2p_on_flags); whether a step makes no instruction (an eager send's COPY). */
hal_result rt_prog_p2p_fetch(rt_launch_ctx *ctx, uint32_t stream, uint32_t step, rt_p2p_item *it);
hal_result rt_prog_p2p_sync(rt_launch_ctx *ctx, uint32_t stream, uint32_t step, const algo_step *st);
bool rt_prog_p2p_skips(const rt_launch_ctx *ctx, const algo_step *st);
/* The instructions that start stream 0's first program of a p2p launch through the boxes: what may
 * run ahead of the launches before, and the AHEAD mark (rt_prog_p2p_ahead sets it). */
hal_result rt_prog_p2p_prefix(rt_launch_ctx *ctx);

#endif
