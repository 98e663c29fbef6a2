/* nccl-tests-style benchmarks for OpenHCCL: one program per collective, all sharing
 * perf_common.c. Run under hcclrun, e.g.
 *   hcclrun -n 2 build/tools/perf/all_reduce_perf -b 8 -e 256M -f 4
 * Flags, columns and bus-bandwidth factors follow nccl-tests (docs/perf.md). */
#ifndef PERF_COMMON_H
#define PERF_COMMON_H

typedef enum {
    PERF_ALL_REDUCE,
    PERF_ALL_GATHER,
    PERF_REDUCE_SCATTER,
    PERF_BROADCAST,
    PERF_REDUCE,
    PERF_SCATTER,
    PERF_ALLTOALL,
    PERF_ALLTOALLV,
    PERF_SENDRECV,
    PERF_ALL_GATHERV,     /* the V forms with equal blocks: the same sizes, layouts and checks */
    PERF_REDUCE_SCATTERV, /* as AllGather, ReduceScatter and AlltoAll, through the V calls */
    PERF_ALLTOALLVC,
} perf_kind;

/* Parses the flags, runs the sweep, prints the table (rank 0); exit status for main. */
int perf_main(perf_kind kind, int argc, char **argv);

#endif
