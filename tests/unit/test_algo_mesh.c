/* The mesh algorithm: every collective it supports, verified for 1..64 ranks, several counts,
 * roots and in/out of place (see test_algo_util.h for the sweep). */
#include "test_algo_util.h"

#define SWEEP(name, coll) \
    Test(algo_mesh, name) { cr_assert_eq(ta_sweep(ALGO_MESH, coll), 0, "see the failures above"); }

SWEEP(allreduce, ALGO_COLL_ALLREDUCE)
SWEEP(broadcast, ALGO_COLL_BROADCAST)
SWEEP(allgather, ALGO_COLL_ALLGATHER)
SWEEP(reduce_scatter, ALGO_COLL_REDUCE_SCATTER)
SWEEP(reduce, ALGO_COLL_REDUCE)
SWEEP(scatter, ALGO_COLL_SCATTER)
SWEEP(alltoall, ALGO_COLL_ALLTOALL)
SWEEP(alltoallv, ALGO_COLL_ALLTOALLV)
SWEEP(alltoallvc, ALGO_COLL_ALLTOALLVC)
SWEEP(allgatherv, ALGO_COLL_ALLGATHERV)
SWEEP(reduce_scatterv, ALGO_COLL_REDUCE_SCATTERV)
