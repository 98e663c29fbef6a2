/* coll_vops: scenarios in files of their own. */
#ifndef COLL_VOPS_H
#define COLL_VOPS_H

#include "prog_common.h"

#define VOPS_SEQ_MAX_RANKS 16u

/* coll_vops_seq.c: `calls` V-ops back to back (mixed: among Broadcasts and AllReduces), one
 * synchronize, every output checked; 0 ok. */
int vops_backtoback(prog_env *e, uint32_t calls, bool mixed);
/* coll_vops_seq.c: rounds of AlltoAllV into one OUT, small and large blocks alternating; 0 ok. */
int vops_a2av_reuse(prog_env *e, uint32_t rounds);

#endif
