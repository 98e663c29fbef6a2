/* Every collective x data type x reduce op x placement x count x root on N ranks (coll_check),
 * each element checked against a host reference; point to point separately, so a failure in one
 * group does not hide the others. See docs/testing.md. */
#include "multirank/mr_run.h"

#define NON_P2P "--colls allreduce,broadcast,allgather,reducescatter,reduce,scatter,alltoall,alltoallv," \
                "alltoallvc,allgatherv,reducescatterv,barrier"
#define P2P "--colls sendrecv,batchsendrecv,group"

static void coll_check(unsigned n, const char *args)
{
    char what[64];
    snprintf(what, sizeof what, "coll_check on %u ranks", n);
    mr_expect_ok(mr_run_t("", n, n >= 8 ? 450 : 240, MR_COLL_CHECK, args), what, " 0 failed");
}

/* Counts 0, 1, 7 for every dtype x op; 1048579 for fp32 sum, bf16 max, int8 sum, int64 prod. */
Test(coll, n1, .timeout = 300) { coll_check(1, NON_P2P); }
Test(coll, n2, .timeout = 300) { coll_check(2, NON_P2P); }
Test(coll, n3, .timeout = 300) { coll_check(3, NON_P2P); }
Test(coll, n4, .timeout = 300) { coll_check(4, NON_P2P); }
Test(coll, n8, .timeout = 500) { coll_check(8, NON_P2P); }
/* Past 8 ranks on one server (up to 16, ALGO_MESH_MAX_RANKS) the automatic choice is eager and mesh
 * too: one dtype per width and float format x every op, counts on both sides of the crossovers. */
#define WIDE_DTYPES "--dtypes int8,uint16,int32,int64,fp16,bf16,fp32,fp64,int128 --counts 0,1,7,97,2049,65539"
Test(coll, n9, .timeout = 500) { coll_check(9, NON_P2P " " WIDE_DTYPES); }
Test(coll, n16, .timeout = 500) { coll_check(16, NON_P2P " " WIDE_DTYPES); }

Test(p2p, n2, .timeout = 300) { coll_check(2, P2P); }
Test(p2p, n3, .timeout = 300) { coll_check(3, P2P); }
Test(p2p, n4, .timeout = 300) { coll_check(4, P2P); }
Test(p2p, n8, .timeout = 300) { coll_check(8, P2P " --counts 0,1,7,1048579 --dtypes fp32,bf16,int8,int64,int128,fp8e4m3"); }
