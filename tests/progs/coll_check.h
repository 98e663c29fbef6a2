/* coll_check: every collective x data type x reduce op x placement x count x root, each element
 * checked against a host reference. Internal interface between coll_check.c (driver) and the
 * per-collective runners (coll_cases.c, coll_cases_v.c). */
#ifndef COLL_CHECK_H
#define COLL_CHECK_H

#include "prog_common.h"

typedef enum {
    CC_PASS,
    CC_FAIL,
    CC_UNSUPPORTED, /* HCCL_E_NOT_SUPPORT for a combination listed in the unsupported table */
} cc_result;

typedef struct cc_case {
    HcclDataType dt;
    HcclReduceOp op;
    uint64_t count;
    uint32_t root;
    bool inplace;
    uint32_t salt;
    const char *coll; /* name, for messages */
} cc_case;

typedef struct cc_ctx {
    prog_env *e;
    int max_print;    /* wrong elements printed per failing case */
    int cases_printed; /* failing cases printed in detail so far */
    const char *algo; /* --algo: ring, mesh, pairwise or auto (what HCCL_ALGO forces) */
} cc_ctx;

typedef cc_result (*cc_runner)(cc_ctx *c, const cc_case *k);

typedef struct cc_coll {
    const char *name;  /* HCCL API name without "Hccl" */
    const char *flag;  /* --colls name */
    bool reduces;
    bool rooted;
    bool has_inplace;
    bool p2p;        /* needs at least two ranks */
    bool shapeless;  /* Barrier: no dtype/op/count */
    cc_runner run;
} cc_coll;

extern const cc_coll cc_colls[];
extern const int cc_ncolls;

/* ---- helpers shared by the runners (coll_cases.c) -------------------------------------------- */

/* Result of an HCCL call. HCCL_E_NOT_SUPPORT is CC_UNSUPPORTED when (algorithm, collective,
 * placement) is in the table of known unsupported combinations (coll_check.c), else a failure;
 * other errors abort the job (a rank that stops issuing collectives would leave the others
 * waiting on a mismatched sequence). */
cc_result cc_call(cc_ctx *c, const cc_case *k, HcclResult rc);
void cc_sync(cc_ctx *c, const cc_case *k);
/* true when (c->algo, k->coll, k->inplace) is a known unsupported combination. */
bool cc_known_unsupported(const cc_ctx *c, const cc_case *k);
/* Host copy of rank r's input elements [first, first+n) (gen_spec of k, nranks). */
void *cc_input(const cc_case *k, gen_kind kind, uint32_t nranks, uint32_t r, uint64_t first, uint64_t n);
/* want[0..n) = reduction over all ranks of their input elements [first, first+n). */
void cc_expect_reduce(const cc_case *k, uint32_t nranks, uint64_t first, uint64_t n, void *want);
/* Compares n elements; prints the first few wrong ones. */
cc_result cc_compare(cc_ctx *c, const cc_case *k, const void *got, const void *want, uint64_t n,
                     const char *what);

/* runners */
cc_result cc_allreduce(cc_ctx *c, const cc_case *k);
cc_result cc_broadcast(cc_ctx *c, const cc_case *k);
cc_result cc_allgather(cc_ctx *c, const cc_case *k);
cc_result cc_reducescatter(cc_ctx *c, const cc_case *k);
cc_result cc_reduce(cc_ctx *c, const cc_case *k);
cc_result cc_scatter(cc_ctx *c, const cc_case *k);
cc_result cc_alltoall(cc_ctx *c, const cc_case *k);
cc_result cc_alltoallv(cc_ctx *c, const cc_case *k);
cc_result cc_alltoallvc(cc_ctx *c, const cc_case *k);
cc_result cc_allgatherv(cc_ctx *c, const cc_case *k);
cc_result cc_reducescatterv(cc_ctx *c, const cc_case *k);
cc_result cc_sendrecv(cc_ctx *c, const cc_case *k);
cc_result cc_batchsendrecv(cc_ctx *c, const cc_case *k);
cc_result cc_group(cc_ctx *c, const cc_case *k);
cc_result cc_barrier(cc_ctx *c, const cc_case *k);

#endif
