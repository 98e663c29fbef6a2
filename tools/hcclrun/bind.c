/* CPU binding of the ranks (--bind, docs/launching.md). With at least as many ranks as CPUs,
 * every rank's threads (host, stream workers, DMA engines) share one CPU, rank r on the r-th
 * allowed CPU modulo their number, as mpirun binds to cores. Unbound, the scheduler balances
 * runnable threads, not ranks: two ranks' copying threads often shared one core while the other
 * held threads that only waited, and every migration moved a rank away from its cached buffers
 * (docs/perf-history.md, "CPU binding": 1 MiB AlltoAll and 8 B latencies about 2x better bound). With
 * fewer ranks than CPUs nothing is bound: a rank's DMA engines may then use the spare cores. */
#define _GNU_SOURCE /* sched_setaffinity, CPU_* */
#include "hcclrun.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

int hr_bind_parse(const char *s, hr_bind *out)
{
    if (!strcasecmp(s, "auto"))
        *out = HR_BIND_AUTO;
    else if (!strcasecmp(s, "none"))
        *out = HR_BIND_NONE;
    else if (!strcasecmp(s, "core"))
        *out = HR_BIND_CORE;
    else
        return -1;
    return 0;
}

/* The CPU a rank gets: index r % count of the allowed set. -1 if there is nothing to bind. */
static int pick_cpu(const cpu_set_t *allowed, unsigned r)
{
    int count = CPU_COUNT(allowed);
    if (count <= 0)
        return -1;
    int want = (int)(r % (unsigned)count);
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
        if (CPU_ISSET(cpu, allowed) && want-- == 0)
            return cpu;
    return -1;
}

void hr_bind_self(hr_bind mode, unsigned local_index, unsigned nlocal)
{
    cpu_set_t allowed;
    if (mode == HR_BIND_NONE || sched_getaffinity(0, sizeof allowed, &allowed) < 0)
        return;
    if (mode == HR_BIND_AUTO && nlocal < (unsigned)CPU_COUNT(&allowed))
        return;
    int cpu = pick_cpu(&allowed, local_index);
    if (cpu < 0)
        return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one) < 0) /* not fatal: the rank runs unbound */
        fprintf(stderr, "[hcclrun] rank %u: binding to CPU %d failed (%s); running unbound\n", local_index, cpu,
                strerror(errno));
}
