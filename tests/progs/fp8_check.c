/* fp8_check: reductions of the 8-bit float types (fp8e4m3, fp8e5m2, fp8e8m0) checked element by
 * element: AllReduce (in and out of place), ReduceScatter and Reduce (roots 0 and N-1), every op
 * the type has (e8m0 has no sum), counts 1, 7 and 65539. Inputs are exact in any order: sums and
 * max/min of small integers (|partial sums| <= 8, exact in both OFP8 formats), products of
 * {1, -1, 2}, e8m0 powers of two near 1. The reference is computed in double and encoded here,
 * independently of any backend. Prints "fp8_check: P passed, F failed". */
#include <math.h>
#include <string.h>

#include "prog_common.h"

static const uint64_t counts[] = {1, 7, 65539};

static uint64_t hash(uint32_t salt, uint32_t rank, uint64_t i)
{
    uint64_t x = i * 0x9e3779b97f4a7c15ULL ^ ((uint64_t)rank << 40) ^ ((uint64_t)salt << 20);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

/* An exactly representable non-zero integer or power of two into OFP8 (mbits 3: e4m3, 2: e5m2). */
static uint8_t enc(HcclDataType dt, double v)
{
    if (dt == HCCL_DATA_TYPE_FP8E8M0) /* v = 2^k */
        return (uint8_t)(127 + ilogb(v));
    if (v == 0)
        return 0;
    int mbits = dt == HCCL_DATA_TYPE_FP8E4M3 ? 3 : 2, bias = dt == HCCL_DATA_TYPE_FP8E4M3 ? 7 : 15, e;
    double m = frexp(fabs(v), &e); /* [0.5, 1) */
    unsigned q = (unsigned)ldexp(m, mbits + 1);
    unsigned code = ((unsigned)(e - 1 + bias) << mbits) | (q & ((1u << mbits) - 1));
    return (uint8_t)(code | (v < 0 ? 0x80 : 0));
}

/* Rank r's input i for op, a value all of whose partial reductions over n ranks are exact. */
static double value(HcclDataType dt, HcclReduceOp op, uint32_t n, uint32_t salt, uint32_t r, uint64_t i)
{
    uint64_t h = hash(salt, r, i);
    if (dt == HCCL_DATA_TYPE_FP8E8M0)
        return op == HCCL_REDUCE_PROD ? ldexp(1, (int)(h % 3) - 1) : ldexp(1, (int)(h % 41) - 20);
    if (op == HCCL_REDUCE_PROD)
        return (double)((const int[]){1, -1, 2, 1})[h & 3];
    int lim = op == HCCL_REDUCE_SUM ? 8 / (int)n : 8;
    if (lim < 1)
        lim = 1;
    return (double)((int)(h % (uint64_t)(2 * lim + 1)) - lim);
}

static double combine(HcclReduceOp op, double a, double b)
{
    switch (op) {
    case HCCL_REDUCE_SUM: return a + b;
    case HCCL_REDUCE_PROD: return a * b;
    case HCCL_REDUCE_MAX: return a > b ? a : b;
    default: return a < b ? a : b;
    }
}

typedef struct fc_case {
    const char *coll;
    HcclDataType dt;
    HcclReduceOp op;
    uint64_t count; /* elements of the result per rank (ReduceScatter: per block) */
    uint32_t root;
    int inplace;
    uint32_t salt;
} fc_case;

/* Expected result element j of the reduction of rank inputs at index `first + j`. */
static uint8_t expect(prog_env *e, const fc_case *k, uint64_t idx)
{
    double acc = value(k->dt, k->op, e->n, k->salt, 0, idx);
    for (uint32_t r = 1; r < e->n; r++)
        acc = combine(k->op, acc, value(k->dt, k->op, e->n, k->salt, r, idx));
    return enc(k->dt, acc);
}

static int run_case(prog_env *e, const fc_case *k)
{
    int rs = !strcmp(k->coll, "ReduceScatter"), red = !strcmp(k->coll, "Reduce");
    uint64_t in_n = rs ? k->count * e->n : k->count, out_n = k->count;
    uint8_t *host = xmalloc(in_n), *got = xmalloc(in_n);
    for (uint64_t i = 0; i < in_n; i++)
        host[i] = enc(k->dt, value(k->dt, k->op, e->n, k->salt, e->rank, i));
    void *send = dev_alloc(in_n), *recv = k->inplace ? send : dev_alloc(in_n);
    to_dev(send, host, in_n);
    HcclResult rc;
    if (rs)
        rc = HcclReduceScatter(send, recv, k->count, k->dt, k->op, e->comm, e->stream);
    else if (red)
        rc = HcclReduce(send, recv, k->count, k->dt, k->op, k->root, e->comm, e->stream);
    else
        rc = HcclAllReduce(send, recv, k->count, k->dt, k->op, e->comm, e->stream);
    aclError se = rc == HCCL_SUCCESS ? aclrtSynchronizeStream(e->stream) : ACL_SUCCESS;
    int bad = rc != HCCL_SUCCESS || se != ACL_SUCCESS;
    if (!bad && (!red || e->rank == k->root)) {
        to_host(got, recv, out_n);
        uint64_t first = rs ? (uint64_t)e->rank * k->count : 0;
        for (uint64_t j = 0; j < out_n && !bad; j++) {
            uint8_t want = expect(e, k, first + j);
            if (got[j] != want) {
                printf("rank %u: %s %s %s count %llu%s: element %llu is 0x%02x, want 0x%02x\n", e->rank, k->coll,
                       dt_name(k->dt), op_name(k->op), (unsigned long long)k->count, k->inplace ? " in place" : "",
                       (unsigned long long)j, got[j], want);
                bad = 1;
            }
        }
    } else if (bad) {
        printf("rank %u: %s %s %s count %llu: enqueue %d, synchronize %d\n", e->rank, k->coll, dt_name(k->dt),
               op_name(k->op), (unsigned long long)k->count, (int)rc, (int)se);
    }
    if (recv != send)
        dev_free(recv);
    dev_free(send);
    free(host);
    free(got);
    return bad;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    prog_env e;
    prog_init(&e);
    static const HcclDataType dts[] = {HCCL_DATA_TYPE_FP8E4M3, HCCL_DATA_TYPE_FP8E5M2, HCCL_DATA_TYPE_FP8E8M0};
    unsigned pass = 0, fail = 0;
    uint32_t salt = 1;
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
        for (int op = 0; op < 4; op++) {
            if (dts[d] == HCCL_DATA_TYPE_FP8E8M0 && op == HCCL_REDUCE_SUM)
                continue; /* no e8m0 sum on any backend */
            for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
                fc_case ks[] = {
                    {"AllReduce", dts[d], (HcclReduceOp)op, counts[c], 0, 0, salt++},
                    {"AllReduce", dts[d], (HcclReduceOp)op, counts[c], 0, 1, salt++},
                    {"ReduceScatter", dts[d], (HcclReduceOp)op, counts[c], 0, 0, salt++},
                    {"Reduce", dts[d], (HcclReduceOp)op, counts[c], 0, 0, salt++},
                    {"Reduce", dts[d], (HcclReduceOp)op, counts[c], e.n - 1, 0, salt++},
                };
                for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
                    int bad = run_case(&e, &ks[i]);
                    pass += !bad;
                    fail += (unsigned)bad;
                }
            }
        }
    printf("fp8_check: %u passed, %u failed\n", pass, fail);
    prog_fini(&e);
    return fail ? 1 : 0;
}
