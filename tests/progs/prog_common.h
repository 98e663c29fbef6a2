/* Shared helpers for the rank programs that tests/multirank runs under hcclrun: setup, data-type
 * helpers, deterministic input generation and the host reference for reductions. */
#ifndef PROG_COMMON_H
#define PROG_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <acl/acl.h>
#include <hccl/hccl.h>
#include <hccl/hccl_ext.h>

#define ACL_OK(call)                                                                                   \
    do {                                                                                               \
        aclError e_ = (call);                                                                          \
        if (e_ != ACL_SUCCESS) {                                                                       \
            fprintf(stderr, "%s:%d: %s failed: %d (%s)\n", __FILE__, __LINE__, #call, (int)e_,         \
                    aclGetRecentErrMsg());                                                             \
            exit(2);                                                                                   \
        }                                                                                              \
    } while (0)

#define HCCL_OK(call)                                                                                  \
    do {                                                                                               \
        HcclResult r_ = (call);                                                                        \
        if (r_ != HCCL_SUCCESS) {                                                                      \
            fprintf(stderr, "%s:%d: %s failed: %d (%s)\n", __FILE__, __LINE__, #call, (int)r_,         \
                    HcclGetErrorString(r_));                                                           \
            exit(2);                                                                                   \
        }                                                                                              \
    } while (0)

typedef struct prog_env {
    uint32_t rank, n, local_rank;
    HcclComm comm;
    aclrtStream stream;
} prog_env;

/* aclInit, device, one stream, one communicator over all ranks (HcclExtShareRootInfo). */
void prog_init(prog_env *e);
/* The same with HcclCommInitRootInfoConfig. */
void prog_init_config(prog_env *e, const HcclCommConfig *config);
void prog_fini(prog_env *e);
double prog_now_s(void);
/* After a call that must fail: synchronizes, reads HcclGetCommAsyncError and the error message,
 * prints "rank R: WHAT: enqueue=.. synchronize=.. asyncError=..: MESSAGE" and returns whether this
 * rank saw the failure (from the call or the stream) and the communicator reports it. */
bool prog_saw_failure(prog_env *e, HcclResult enq, const char *what);

/* ---- data types ---------------------------------------------------------------------------- */

#define PROG_NDTYPES 17
extern const HcclDataType prog_all_dtypes[PROG_NDTYPES];
size_t dt_size(HcclDataType dt);
const char *dt_name(HcclDataType dt);
bool dt_parse(const char *s, HcclDataType *dt);
/* Types the host reference can reduce: the 12 main types and int128. */
bool dt_reducible(HcclDataType dt);
const char *op_name(HcclReduceOp op);
bool op_parse(const char *s, HcclReduceOp *op);
/* Prints element i of buf (dtype dt) into out. */
void dt_format(char *out, size_t len, HcclDataType dt, const void *buf, uint64_t i);

/* ---- inputs ---------------------------------------------------------------------------------- */

/* What the values are for: any bit pattern (movement only), or values for which a reduction with
 * op over nranks ranks is exact in dt whatever the order (floats: small integers / {1,-1,2}). */
typedef enum { GEN_BITS, GEN_REDUCE } gen_kind;

typedef struct gen_spec {
    gen_kind kind;
    HcclDataType dt;
    HcclReduceOp op;
    uint32_t nranks;
    uint32_t salt; /* differs per case so stale data from an earlier case is caught */
} gen_spec;

/* Writes elements [first, first+n) of rank's logical input stream into buf[0..n). */
void gen_fill(const gen_spec *g, uint32_t rank, uint64_t first, uint64_t n, void *buf);
/* Floats (fp16, bf16, fp32, fp64) of mixed sign and magnitude (2^-12 .. 2^13), seeded: sums of
 * them round differently in different orders, so they expose the reduction order. */
void gen_mixed(HcclDataType dt, uint32_t seed, uint32_t rank, uint64_t first, uint64_t n, void *buf);
/* acc[i] = acc[i] op in[i] for i < n, in the width and arithmetic of dt (integers wrap). */
void ref_reduce(void *acc, const void *in, HcclDataType dt, HcclReduceOp op, uint64_t n);
/* Fills n elements with a sentinel byte pattern. */
void fill_sentinel(void *buf, size_t bytes);

/* ---- device buffers -------------------------------------------------------------------------- */

void *dev_alloc(size_t bytes); /* at least 1 byte, never NULL */
void dev_free(void *p);
void to_dev(void *dev, const void *host, size_t bytes);
void to_host(void *host, const void *dev, size_t bytes);
void *xmalloc(size_t bytes);

#endif
