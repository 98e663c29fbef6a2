/* The tools' host clock: CLOCK_MONOTONIC in seconds, what every benchmark times with (the host
 * clock of back-to-back calls, as nccl-tests and the MPI peers do: docs/perf.md). */
#ifndef OH_CLOCK_H
#define OH_CLOCK_H

#include <time.h>

static inline double oh_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
