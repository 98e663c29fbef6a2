/* Command-line byte counts of the perf and bench tools: a number with an optional K/M/G suffix
 * (powers of 1024), as nccl-tests reads -b/-e. Header-only: mpi_coll_bench is compiled apart by
 * compare.sh with mpicc. */
#ifndef TOOLS_SIZE_ARG_H
#define TOOLS_SIZE_ARG_H

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

/* true and *bytes set when s is a whole size in [lo, hi] bytes. */
static inline bool size_arg_parse(const char *s, double lo, double hi, double *bytes)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    switch (*end) {
    case 'G': case 'g': v *= 1024.0;  /* fall through */
    case 'M': case 'm': v *= 1024.0;  /* fall through */
    case 'K': case 'k': v *= 1024.0; end++; break;
    default: break;
    }
    if (errno || end == s || *end || !(v >= lo) || v > hi)
        return false;
    *bytes = v;
    return true;
}

#endif
