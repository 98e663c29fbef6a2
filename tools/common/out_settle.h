/* The benchmarks' output and their timed windows (perf tools, mpi_coll_bench): rank 0's output
 * leaves in one write per row (stdout fully buffered, flushed here), and then nothing is timed for
 * OUT_SETTLE_US. Relaying it (hcclrun or mpirun, and whatever reads their output) takes a few
 * hundred microseconds of CPU, which on a machine with few cores landed in the next timed window
 * (a 100 us loop measured 700 us: docs/perf-history.md). The other ranks wait in the next row's first call. */
#ifndef OH_TOOLS_OUT_SETTLE_H
#define OH_TOOLS_OUT_SETTLE_H

#include <stdio.h>
#include <unistd.h>

#define OUT_SETTLE_US 5000

/* At start: stdout is flushed by out_settle only. */
static inline void out_settle_init(void)
{
    setvbuf(stdout, NULL, _IOFBF, 1 << 16);
}

static inline void out_settle(unsigned rank)
{
    if (rank != 0)
        return;
    fflush(stdout);
    usleep(OUT_SETTLE_US);
}

#endif
