/* Staging mode internals shared by rt_staging_launch.c and rt_staging_v.c. */
#ifndef RT_STAGING_H
#define RT_STAGING_H

#include "runtime/rt_internal.h"

/* The copies of one chunk: user IN -> staging IN before its plan, staging OUT -> user OUT after. */
typedef struct rt_stage_copies {
    hal_dma_desc *pre, *post; /* room for nranks + 1 each */
    uint32_t npre, npost;
} rt_stage_copies;

/* Appends a copy of bytes (none when 0). */
void rt_stage_copy(hal_dma_desc *d, uint32_t *n, void *dst, const void *src, uint64_t bytes);
/* One chunk: call's op replaced by op (count, V tables), bound to the staging buffers. */
HcclResult rt_stage_launch(rt_comm *c, const rt_call *call, const algo_op *op, const rt_stage_copies *sc);
/* V-ops (rt_staging_v.c): AllGatherV, ReduceScatterV, AlltoAllVC in chunks; AlltoAllV when it fits. */
HcclResult rt_staging_v(rt_comm *c, const rt_call *call, rt_stage_copies *sc);

#endif
