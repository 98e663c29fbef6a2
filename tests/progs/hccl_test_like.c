/* hccl_test_like: our own program following the call sequence of CANN's hccl_test benchmark
 * (docs/testing.md): per process aclInit, aclrtGetSocName before aclrtSetDevice(rank % devices),
 * saturation mode, two timing events, a stream in failure mode 1; root info shared by the launcher
 * (HcclExtShareRootInfo stands in for MPI_Bcast); optional zero copy (-z 1: a reserved VA range set
 * with HcclCommSetMemoryRange, grown per size by aclrtMallocPhysical + aclrtMapMem +
 * HcclCommActivateCommMemory) or symmetric memory (-m 1: a VMM window registered with
 * HcclCommSymWinRegister); sizes -b..-e by factor -f; results checked on the host (-c 1).
 * It uses public headers only, so it builds against an installed prefix:
 *   cc hccl_test_like.c -I<prefix>/include -L<prefix>/lib -lhccl -lacl_rt -lmsprofiler
 *   hcclrun -n 4 ./hccl_test_like -t allreduce -b 8 -e 64K -f 2 -d all -o all -c 1 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <acl/acl.h>
#include <acl/acl_prof.h>
#include <hccl/hccl.h>
#include <hccl/hccl_ext.h>

#define ACLCHECK(call)                                                                                 \
    do {                                                                                               \
        aclError e_ = (call);                                                                          \
        if (e_ != ACL_SUCCESS) {                                                                       \
            fprintf(stderr, "error: %s:%d: %s returned %d\n", __FILE__, __LINE__, #call, (int)e_);     \
            exit(2);                                                                                   \
        }                                                                                              \
    } while (0)
#define HCCLCHECK(call)                                                                                \
    do {                                                                                               \
        HcclResult r_ = (call);                                                                        \
        if (r_ != HCCL_SUCCESS) {                                                                      \
            fprintf(stderr, "error: %s:%d: %s returned %d (%s)\n", __FILE__, __LINE__, #call, (int)r_, \
                    HcclGetErrorString(r_));                                                           \
            exit(2);                                                                                   \
        }                                                                                              \
    } while (0)

enum { OP_ALLREDUCE, OP_ALLGATHER, OP_ALLGATHERV, OP_ALLTOALL, OP_ALLTOALLV, OP_ALLTOALLVC, OP_BROADCAST,
       OP_REDUCE, OP_REDUCESCATTER, OP_REDUCESCATTERV, OP_SCATTER, OP_COUNT };
static const char *const op_names[OP_COUNT] = {"allreduce", "allgather", "allgatherv", "alltoall", "alltoallv",
                                               "alltoallvc", "broadcast", "reduce", "reducescatter",
                                               "reducescatterv", "scatter"};
static const HcclDataType all_dtypes[] = {HCCL_DATA_TYPE_INT8,   HCCL_DATA_TYPE_INT16,  HCCL_DATA_TYPE_INT32,
                                          HCCL_DATA_TYPE_FP16,   HCCL_DATA_TYPE_FP32,   HCCL_DATA_TYPE_INT64,
                                          HCCL_DATA_TYPE_UINT64, HCCL_DATA_TYPE_UINT8,  HCCL_DATA_TYPE_UINT16,
                                          HCCL_DATA_TYPE_UINT32, HCCL_DATA_TYPE_FP64,   HCCL_DATA_TYPE_BFP16};
static const char *const dt_names[] = {"int8", "int16", "int32", "fp16", "fp32", "int64",
                                       "uint64", "uint8", "uint16", "uint32", "fp64", "bfp16"};
static const char *const redop_names[] = {"sum", "prod", "max", "min"};
#define NDT (sizeof all_dtypes / sizeof all_dtypes[0])

typedef struct opts {
    bool ops[OP_COUNT], dts[NDT], redops[4];
    uint64_t b, e, f;
    int iters, warmup, check, zero_copy, sym, prof;
    uint32_t root;
} opts;

typedef struct job {
    uint32_t rank, n;
    HcclComm comm;
    aclrtStream stream;
    aclrtEvent start, end;
    int32_t dev;
    char *send, *recv;       /* device buffers of the largest size */
    uint64_t send_cap, recv_cap;
    /* -z: the reservation, its two halves' mapped bytes, and every chunk mapped into it */
    void *va;
    uint64_t va_size, gran, mapped[2];
    void *chunk_va[128];
    aclrtDrvMemHandle chunk[128];
    int nchunks;
    HcclCommSymWindow win;
    int failures;
} job;

/* ---- element access on the host ---------------------------------------------------------------- */

static size_t dt_size(HcclDataType dt)
{
    switch (dt) {
    case HCCL_DATA_TYPE_INT8: case HCCL_DATA_TYPE_UINT8: return 1;
    case HCCL_DATA_TYPE_INT16: case HCCL_DATA_TYPE_UINT16: case HCCL_DATA_TYPE_FP16: case HCCL_DATA_TYPE_BFP16: return 2;
    case HCCL_DATA_TYPE_INT32: case HCCL_DATA_TYPE_UINT32: case HCCL_DATA_TYPE_FP32: return 4;
    default: return 8;
    }
}

static void store(HcclDataType dt, void *buf, uint64_t i, double v)
{
    char *p = (char *)buf + i * dt_size(dt);
    float f = (float)v;
    uint32_t bits;
    switch (dt) {
    case HCCL_DATA_TYPE_INT8: *(int8_t *)p = (int8_t)v; break;
    case HCCL_DATA_TYPE_UINT8: *(uint8_t *)p = (uint8_t)v; break;
    case HCCL_DATA_TYPE_INT16: *(int16_t *)p = (int16_t)v; break;
    case HCCL_DATA_TYPE_UINT16: *(uint16_t *)p = (uint16_t)v; break;
    case HCCL_DATA_TYPE_INT32: *(int32_t *)p = (int32_t)v; break;
    case HCCL_DATA_TYPE_UINT32: *(uint32_t *)p = (uint32_t)v; break;
    case HCCL_DATA_TYPE_INT64: *(int64_t *)p = (int64_t)v; break;
    case HCCL_DATA_TYPE_UINT64: *(uint64_t *)p = (uint64_t)v; break;
    case HCCL_DATA_TYPE_FP32: *(float *)p = f; break;
    case HCCL_DATA_TYPE_FP64: *(double *)p = v; break;
    case HCCL_DATA_TYPE_FP16: *(aclFloat16 *)p = aclFloatToFloat16(f); break;
    default: /* bfp16: the high half of an fp32 (values here are small integers: exact) */
        memcpy(&bits, &f, 4);
        *(uint16_t *)p = (uint16_t)(bits >> 16);
    }
}

static double load(HcclDataType dt, const void *buf, uint64_t i)
{
    const char *p = (const char *)buf + i * dt_size(dt);
    uint32_t bits;
    float f;
    switch (dt) {
    case HCCL_DATA_TYPE_INT8: return *(const int8_t *)p;
    case HCCL_DATA_TYPE_UINT8: return *(const uint8_t *)p;
    case HCCL_DATA_TYPE_INT16: return *(const int16_t *)p;
    case HCCL_DATA_TYPE_UINT16: return *(const uint16_t *)p;
    case HCCL_DATA_TYPE_INT32: return *(const int32_t *)p;
    case HCCL_DATA_TYPE_UINT32: return *(const uint32_t *)p;
    case HCCL_DATA_TYPE_INT64: return (double)*(const int64_t *)p;
    case HCCL_DATA_TYPE_UINT64: return (double)*(const uint64_t *)p;
    case HCCL_DATA_TYPE_FP32: return *(const float *)p;
    case HCCL_DATA_TYPE_FP64: return *(const double *)p;
    case HCCL_DATA_TYPE_FP16: return aclFloat16ToFloat(*(const aclFloat16 *)p);
    default:
        bits = (uint32_t)*(const uint16_t *)p << 16;
        memcpy(&f, &bits, 4);
        return f;
    }
}

/* Input element i of rank r: small integers, so every reduction is exact in every type and order
 * (prod: 1 or 2, at most 2^nranks). */
static double value(int redop, uint32_t r, uint64_t i)
{
    return redop == HCCL_REDUCE_PROD ? (double)(1 + (r + i) % 2) : (double)((r * 7 + i * 3) % 5 + 1);
}

static double combine(int redop, double a, double b)
{
    switch (redop) {
    case HCCL_REDUCE_PROD: return a * b;
    case HCCL_REDUCE_MAX: return a > b ? a : b;
    case HCCL_REDUCE_MIN: return a < b ? a : b;
    default: return a + b;
    }
}

static double reduced(int redop, uint32_t n, uint64_t i)
{
    double acc = value(redop, 0, i);
    for (uint32_t r = 1; r < n; r++)
        acc = combine(redop, acc, value(redop, r, i));
    return acc;
}

/* ---- op shapes: counts per rank (V-ops: count + a rank-dependent extra) ----------------------- */

static uint64_t vcount(uint64_t count, uint32_t from, uint32_t to) { return count + (from + 2 * to) % 3; }
static uint64_t gvcount(uint64_t count, uint32_t r) { return count + r % 2; }

/* Elements of the send and receive buffers rank r uses for op with base count. */
static void shape(int op, uint64_t count, uint32_t r, uint32_t n, uint64_t *in, uint64_t *out)
{
    uint64_t s = 0, t = 0;
    switch (op) {
    case OP_ALLREDUCE: case OP_REDUCE: *in = *out = count; return;
    case OP_BROADCAST: *in = count, *out = 0; return;
    case OP_ALLGATHER: *in = count, *out = count * n; return;
    case OP_ALLTOALL: case OP_REDUCESCATTER: *in = count * n, *out = op == OP_ALLTOALL ? count * n : count; return;
    case OP_SCATTER: *in = count * n, *out = count; return;
    case OP_ALLGATHERV: case OP_REDUCESCATTERV:
        for (uint32_t j = 0; j < n; j++)
            s += gvcount(count, j);
        *in = op == OP_ALLGATHERV ? gvcount(count, r) : s;
        *out = op == OP_ALLGATHERV ? s : gvcount(count, r);
        return;
    default: /* alltoallv(c) */
        for (uint32_t j = 0; j < n; j++) {
            s += vcount(count, r, j);
            t += vcount(count, j, r);
        }
        *in = s, *out = t;
    }
}

/* Expected element i of rank r's output (broadcast: of its in-place buffer). */
static double expected(int op, int redop, uint64_t count, uint32_t r, uint32_t n, uint32_t root, uint64_t i)
{
    uint64_t at = 0;
    uint32_t j = 0;
    switch (op) {
    case OP_ALLREDUCE: case OP_REDUCE: return reduced(redop, n, i);
    case OP_BROADCAST: return value(redop, root, i);
    case OP_ALLGATHER: return value(redop, (uint32_t)(i / count), i % count);
    case OP_ALLTOALL: return value(redop, (uint32_t)(i / count), r * count + i % count);
    case OP_REDUCESCATTER: return reduced(redop, n, r * count + i);
    case OP_SCATTER: return value(redop, root, r * count + i);
    case OP_ALLGATHERV:
        while (i >= at + gvcount(count, j))
            at += gvcount(count, j++);
        return value(redop, j, i - at);
    case OP_REDUCESCATTERV:
        for (; j < r; j++)
            at += gvcount(count, j);
        return reduced(redop, n, at + i);
    default: /* alltoallv(c): block from sender j sits at the sender's displacement for r */
        while (i >= at + vcount(count, j, r))
            at += vcount(count, j++, r);
        uint64_t sd = 0;
        for (uint32_t d = 0; d < r; d++)
            sd += vcount(count, j, d);
        return value(redop, j, sd + (i - at));
    }
}

/* ---- buffers ------------------------------------------------------------------------------------ */

static uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

static aclrtPhysicalMemProp phys_prop(int32_t dev)
{
    aclrtPhysicalMemProp p;
    memset(&p, 0, sizeof p);
    p.handleType = ACL_MEM_HANDLE_TYPE_NONE;
    p.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
    p.memAttr = ACL_HBM_MEM_HUGE;
    p.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = (uint32_t)dev;
    return p;
}

/* -z: grows half h (0 send, 1 recv) of the reservation to cover `bytes`: one new chunk, mapped and
 * activated for zero copy. */
static void zc_grow(job *j, int h, uint64_t bytes)
{
    uint64_t want = align_up(bytes ? bytes : 1, j->gran);
    if (want <= j->mapped[h])
        return;
    if (j->nchunks == (int)(sizeof j->chunk / sizeof j->chunk[0])) {
        fprintf(stderr, "error: rank %u: too many VMM chunks\n", j->rank);
        exit(2);
    }
    char *at = (char *)j->va + (h ? j->va_size / 2 : 0) + j->mapped[h];
    uint64_t grow = want - j->mapped[h];
    aclrtPhysicalMemProp prop = phys_prop(j->dev);
    aclrtDrvMemHandle hd;
    ACLCHECK(aclrtMallocPhysical(&hd, grow, &prop, 0));
    ACLCHECK(aclrtMapMem(at, grow, 0, hd, 0));
    HCCLCHECK(HcclCommActivateCommMemory(j->comm, at, grow, 0, hd, 0));
    j->chunk_va[j->nchunks] = at;
    j->chunk[j->nchunks++] = hd;
    j->mapped[h] = want;
}

static void buffers_setup(job *j, const opts *o, uint64_t max_send, uint64_t max_recv)
{
    j->send_cap = max_send;
    j->recv_cap = max_recv;
    if (!o->zero_copy && !o->sym) {
        ACLCHECK(aclrtMalloc((void **)&j->send, max_send ? max_send : 1, ACL_MEM_MALLOC_HUGE_FIRST));
        ACLCHECK(aclrtMalloc((void **)&j->recv, max_recv ? max_recv : 1, ACL_MEM_MALLOC_HUGE_FIRST));
        return;
    }
    aclrtPhysicalMemProp prop = phys_prop(j->dev);
    ACLCHECK(aclrtMemGetAllocationGranularity(&prop, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, &j->gran));
    uint64_t half = align_up(max_send > max_recv ? max_send : max_recv, j->gran);
    j->va_size = 2 * (half ? half : j->gran);
    ACLCHECK(aclrtReserveMemAddress(&j->va, j->va_size, 0, NULL, 0));
    j->send = j->va;
    j->recv = (char *)j->va + j->va_size / 2;
    if (o->zero_copy) {
        HCCLCHECK(HcclCommSetMemoryRange(j->comm, j->va, j->va_size, 0, 0));
        return;
    }
    /* -m: one chunk backs the whole window */
    ACLCHECK(aclrtMallocPhysical(&j->chunk[0], j->va_size, &prop, 0));
    ACLCHECK(aclrtMapMem(j->va, j->va_size, 0, j->chunk[0], 0));
    j->chunk_va[0] = j->va;
    j->nchunks = 1;
    HCCLCHECK(HcclCommSymWinRegister(j->comm, j->va, j->va_size, &j->win, 1));
    HcclCommSymWindow got = NULL;
    size_t off = 0;
    HCCLCHECK(HcclCommSymWinGet(j->comm, j->recv, 1, &got, &off));
    if (got != j->win || off != j->va_size / 2) {
        fprintf(stderr, "error: rank %u: HcclCommSymWinGet returned window %p offset %zu\n", j->rank, got, off);
        exit(2);
    }
}

static void buffers_teardown(job *j, const opts *o)
{
    if (!o->zero_copy && !o->sym) {
        ACLCHECK(aclrtFree(j->send));
        ACLCHECK(aclrtFree(j->recv));
        return;
    }
    if (o->sym)
        HCCLCHECK(HcclCommSymWinDeregister(j->win));
    for (int i = 0; i < j->nchunks; i++) {
        if (o->zero_copy)
            HCCLCHECK(HcclCommDeactivateCommMemory(j->comm, j->chunk_va[i]));
        ACLCHECK(aclrtUnmapMem(j->chunk_va[i]));
        ACLCHECK(aclrtFreePhysical(j->chunk[i]));
    }
    if (o->zero_copy)
        HCCLCHECK(HcclCommUnsetMemoryRange(j->comm, j->va));
    ACLCHECK(aclrtReleaseMemAddress(j->va));
}

/* ---- one case ------------------------------------------------------------------------------------ */

static HcclResult issue(job *j, int op, uint64_t count, HcclDataType dt, int redop, uint32_t root,
                        uint64_t *tbl, uint64_t *matrix)
{
    uint32_t n = j->n, r = j->rank;
    uint64_t *c1 = tbl, *d1 = tbl + n, *c2 = tbl + 2 * n, *d2 = tbl + 3 * n;
    HcclReduceOp rop = (HcclReduceOp)redop;
    switch (op) {
    case OP_ALLREDUCE: return HcclAllReduce(j->send, j->recv, count, dt, rop, j->comm, j->stream);
    case OP_REDUCE: return HcclReduce(j->send, j->recv, count, dt, rop, root, j->comm, j->stream);
    case OP_BROADCAST: return HcclBroadcast(j->send, count, dt, root, j->comm, j->stream);
    case OP_ALLGATHER: return HcclAllGather(j->send, j->recv, count, dt, j->comm, j->stream);
    case OP_ALLTOALL: return HcclAlltoAll(j->send, count, dt, j->recv, count, dt, j->comm, j->stream);
    case OP_REDUCESCATTER: return HcclReduceScatter(j->send, j->recv, count, dt, rop, j->comm, j->stream);
    case OP_SCATTER: return HcclScatter(j->send, j->recv, count, dt, root, j->comm, j->stream);
    default: break;
    }
    for (uint32_t k = 0; k < n; k++) { /* V tables */
        bool gv = op == OP_ALLGATHERV || op == OP_REDUCESCATTERV;
        c1[k] = gv ? gvcount(count, k) : vcount(count, r, k);
        c2[k] = gv ? c1[k] : vcount(count, k, r);
        d1[k] = k ? d1[k - 1] + c1[k - 1] : 0;
        d2[k] = k ? d2[k - 1] + c2[k - 1] : 0;
        for (uint32_t m = 0; m < n; m++)
            matrix[k * n + m] = vcount(count, k, m);
    }
    switch (op) {
    case OP_ALLGATHERV: return HcclAllGatherV(j->send, c1[r], j->recv, c1, d1, dt, j->comm, j->stream);
    case OP_REDUCESCATTERV: return HcclReduceScatterV(j->send, c1, d1, j->recv, c1[r], dt, rop, j->comm, j->stream);
    case OP_ALLTOALLV: return HcclAlltoAllV(j->send, c1, d1, dt, j->recv, c2, d2, dt, j->comm, j->stream);
    default: return HcclAlltoAllVC(j->send, matrix, dt, j->recv, dt, j->comm, j->stream);
    }
}

static int check(job *j, int op, uint64_t count, size_t di, int redop, uint32_t root, uint64_t out_elems)
{
    HcclDataType dt = all_dtypes[di];
    bool inplace = op == OP_BROADCAST;
    if (op == OP_REDUCE && j->rank != root)
        return 0; /* only the root's output is defined */
    uint64_t elems = inplace ? count : out_elems, bytes = elems * dt_size(dt);
    if (bytes == 0)
        return 0;
    char *host = malloc(bytes);
    ACLCHECK(aclrtMemcpy(host, bytes, inplace ? j->send : j->recv, bytes, ACL_MEMCPY_DEVICE_TO_HOST));
    int bad = 0;
    for (uint64_t i = 0; i < elems && bad < 3; i++) {
        double want = expected(op, redop, count, j->rank, j->n, root, i), got = load(dt, host, i);
        if (got != want) {
            fprintf(stderr, "error: rank %u: %s %s count %llu: element %llu is %g, expected %g\n", j->rank,
                    op_names[op], dt_names[di], (unsigned long long)count, (unsigned long long)i, got, want);
            bad++;
        }
    }
    free(host);
    return bad;
}

static void run_case(job *j, const opts *o, int op, uint64_t bytes, size_t di, int redop)
{
    HcclDataType dt = all_dtypes[di];
    uint64_t count = bytes / dt_size(dt), in = 0, out = 0;
    if (count == 0)
        return;
    shape(op, count, j->rank, j->n, &in, &out);
    if (o->zero_copy) {
        zc_grow(j, 0, in * dt_size(dt));
        zc_grow(j, 1, out * dt_size(dt));
    }
    /* Inputs (broadcast: the root's buffer; the others' are cleared so a missed copy shows). */
    char *host = calloc(in ? in : 1, dt_size(dt));
    for (uint64_t i = 0; i < in; i++)
        store(dt, host, i, op == OP_BROADCAST && j->rank != o->root ? 0 : value(redop, j->rank, i));
    if (in)
        ACLCHECK(aclrtMemcpy(j->send, in * dt_size(dt), host, in * dt_size(dt), ACL_MEMCPY_HOST_TO_DEVICE));
    free(host);
    uint64_t *tbl = calloc(4 * (size_t)j->n, sizeof *tbl), *matrix = calloc((size_t)j->n * j->n, sizeof *matrix);
    for (int it = 0; it < o->warmup; it++)
        HCCLCHECK(issue(j, op, count, dt, redop, o->root, tbl, matrix));
    ACLCHECK(aclrtRecordEvent(j->start, j->stream));
    for (int it = 0; it < o->iters; it++)
        HCCLCHECK(issue(j, op, count, dt, redop, o->root, tbl, matrix));
    ACLCHECK(aclrtRecordEvent(j->end, j->stream));
    ACLCHECK(aclrtSynchronizeStream(j->stream));
    float ms = 0;
    ACLCHECK(aclrtEventElapsedTime(&ms, j->start, j->end));
    free(tbl);
    free(matrix);
    double us = o->iters ? ms * 1000.0 / o->iters : 0;
    bool reduces = op == OP_ALLREDUCE || op == OP_REDUCE || op == OP_REDUCESCATTER || op == OP_REDUCESCATTERV;
    if (j->rank == 0)
        printf("%14s %14llu %14llu %8s %6s %12.2f %12.3f\n", op_names[op], (unsigned long long)bytes,
               (unsigned long long)count, dt_names[di], reduces ? redop_names[redop] : "-", us,
               us > 0 ? (double)bytes / us / 1e3 : 0.0);
    if (o->check) {
        int bad = check(j, op, count, di, redop, o->root, out);
        j->failures += bad != 0;
        printf("rank %u: %s %s %s %llu bytes: check_result %s\n", j->rank, op_names[op], dt_names[di],
               reduces ? redop_names[redop] : "-", (unsigned long long)bytes, bad ? "fail" : "success");
    }
}

/* ---- options and setup ------------------------------------------------------------------------- */

static uint64_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    switch (*end) {
    case 'K': case 'k': v *= 1024; break;
    case 'M': case 'm': v *= 1024 * 1024; break;
    case 'G': case 'g': v *= 1024.0 * 1024 * 1024; break;
    default: break;
    }
    return (uint64_t)v;
}

/* "all", one name, or names separated by commas. */
static void parse_list(const char *s, const char *const *names, size_t n, bool *set)
{
    memset(set, 0, n * sizeof *set);
    for (const char *at = s; *at;) {
        size_t len = strcspn(at, ",");
        bool any = false;
        for (size_t i = 0; i < n; i++)
            if ((len == 3 && !strncasecmp(at, "all", 3)) || (strlen(names[i]) == len && !strncasecmp(at, names[i], len)))
                set[i] = any = true;
        if (!any) {
            fprintf(stderr, "error: unknown value '%.*s'\n", (int)len, at);
            exit(1);
        }
        at += len + (at[len] == ',');
    }
}

static void parse(int argc, char **argv, opts *o)
{
    *o = (opts){.b = 8, .e = 64, .f = 2, .iters = 20, .warmup = 5, .check = 1};
    bool dflt_dt[NDT] = {false}, dflt_op[4] = {true, false, false, false};
    dflt_dt[4] = true; /* fp32 */
    memcpy(o->dts, dflt_dt, sizeof dflt_dt);
    memcpy(o->redops, dflt_op, sizeof dflt_op);
    o->ops[OP_ALLREDUCE] = true;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "-t")) parse_list(v, op_names, OP_COUNT, o->ops);
        else if (!strcmp(k, "-b")) o->b = parse_size(v);
        else if (!strcmp(k, "-e")) o->e = parse_size(v);
        else if (!strcmp(k, "-f")) o->f = parse_size(v);
        else if (!strcmp(k, "-d")) parse_list(v, dt_names, NDT, o->dts);
        else if (!strcmp(k, "-o")) parse_list(v, redop_names, 4, o->redops);
        else if (!strcmp(k, "-n")) o->iters = atoi(v);
        else if (!strcmp(k, "-w")) o->warmup = atoi(v);
        else if (!strcmp(k, "-c")) o->check = atoi(v);
        else if (!strcmp(k, "-z")) o->zero_copy = atoi(v);
        else if (!strcmp(k, "-m")) o->sym = atoi(v);
        else if (!strcmp(k, "-p")) o->prof = atoi(v);
        else if (!strcmp(k, "-r")) o->root = (uint32_t)atoi(v);
        else {
            fprintf(stderr, "usage: %s [-t op|all] [-b 8] [-e 64K] [-f 2] [-d fp32|all] [-o sum|all] [-n 20] [-w 5] "
                    "[-c 1] [-z 0|1] [-m 0|1] [-p 0|1] [-r root]\n", argv[0]);
            exit(1);
        }
    }
    if (o->zero_copy && o->sym) {
        fprintf(stderr, "error: -z and -m are mutually exclusive\n");
        exit(1);
    }
    if (o->b == 0 || o->e < o->b || o->f < 2) {
        fprintf(stderr, "error: need 0 < -b <= -e and -f >= 2\n");
        exit(1);
    }
}

static void setup(job *j, const opts *o)
{
    HCCLCHECK(HcclExtGetLaunchEnv(&j->rank, &j->n, NULL, NULL));
    ACLCHECK(aclInit(NULL));
    const char *soc = aclrtGetSocName(); /* before any device is set, as hccl_test does */
    uint32_t ndev = 0;
    ACLCHECK(aclrtGetDeviceCount(&ndev));
    j->dev = (int32_t)(j->rank % (ndev ? ndev : 1));
    ACLCHECK(aclrtSetDevice(j->dev));
    ACLCHECK(aclrtSetDeviceSatMode(ACL_RT_OVERFLOW_MODE_INFNAN));
    ACLCHECK(aclrtCreateEvent(&j->start));
    ACLCHECK(aclrtCreateEvent(&j->end));
    ACLCHECK(aclrtCreateStream(&j->stream));
    ACLCHECK(aclrtSetStreamFailureMode(j->stream, 1));
    HcclRootInfo root; /* rank 0's HcclGetRootInfo, received by the others (hccl_test: MPI_Bcast) */
    HCCLCHECK(HcclExtShareRootInfo(j->rank, &root));
    if (o->sym) {
        HcclCommConfig cfg;
        HcclCommConfigInit(&cfg);
        cfg.hcclSymWinMaxMemSizePerRank = 1; /* GB */
        HCCLCHECK(HcclCommInitRootInfoConfig(j->n, &root, j->rank, &cfg, &j->comm));
    } else {
        HCCLCHECK(HcclCommInitRootInfo(j->n, &root, j->rank, &j->comm));
    }
    if (j->rank == 0)
        printf("soc %s, %u ranks, zero copy %d, symmetric memory %d\n", soc ? soc : "?", j->n, o->zero_copy, o->sym);
}

static aclprofConfig *prof_start(const job *j)
{
    const char *path = getenv("HCCL_TEST_PROFILING_PATH");
    path = path && *path ? path : "./hccl_test_prof";
    ACLCHECK(aclprofInit(path, strlen(path)));
    uint32_t dev = (uint32_t)j->dev;
    aclprofConfig *cfg = aclprofCreateConfig(&dev, 1, ACL_AICORE_NONE, NULL, ACL_PROF_TASK_TIME | ACL_PROF_HCCL_TRACE);
    if (!cfg) {
        fprintf(stderr, "error: rank %u: aclprofCreateConfig failed\n", j->rank);
        exit(2);
    }
    ACLCHECK(aclprofStart(cfg));
    return cfg;
}

int main(int argc, char **argv)
{
    opts o;
    parse(argc, argv, &o);
    job j;
    memset(&j, 0, sizeof j);
    setup(&j, &o);
    if (o.root >= j.n) {
        fprintf(stderr, "error: root %u out of range\n", o.root);
        return 1;
    }
    aclprofConfig *prof = o.prof ? prof_start(&j) : NULL;
    uint64_t max_send = 0, max_recv = 0;
    for (int op = 0; op < OP_COUNT; op++) /* the largest buffers any case needs */
        for (size_t di = 0; o.ops[op] && di < NDT; di++) {
            uint64_t in = 0, out = 0, c = o.e / dt_size(all_dtypes[di]);
            shape(op, c, j.rank, j.n, &in, &out);
            for (uint32_t r = 0; r < j.n; r++) { /* V-op sizes differ per rank: take every rank's */
                uint64_t i2, o2;
                shape(op, c, r, j.n, &i2, &o2);
                in = in > i2 ? in : i2;
                out = out > o2 ? out : o2;
            }
            max_send = max_send > in * dt_size(all_dtypes[di]) ? max_send : in * dt_size(all_dtypes[di]);
            max_recv = max_recv > out * dt_size(all_dtypes[di]) ? max_recv : out * dt_size(all_dtypes[di]);
        }
    buffers_setup(&j, &o, max_send, max_recv);
    if (j.rank == 0)
        printf("%14s %14s %14s %8s %6s %12s %12s\n", "op", "bytes", "count", "dtype", "redop", "time(us)", "algbw(GB/s)");
    for (int op = 0; op < OP_COUNT; op++)
        for (uint64_t bytes = o.b; o.ops[op] && bytes <= o.e; bytes *= o.f)
            for (size_t di = 0; di < NDT; di++)
                for (int rd = 0; o.dts[di] && rd < 4; rd++) {
                    bool reduces = op == OP_ALLREDUCE || op == OP_REDUCE || op == OP_REDUCESCATTER ||
                                   op == OP_REDUCESCATTERV;
                    if (reduces ? !o.redops[rd] : rd > 0)
                        continue;
                    run_case(&j, &o, op, bytes, di, reduces ? rd : HCCL_REDUCE_SUM);
                }
    buffers_teardown(&j, &o);
    if (prof) {
        ACLCHECK(aclprofStop(prof));
        ACLCHECK(aclprofDestroyConfig(prof));
        ACLCHECK(aclprofFinalize());
    }
    HCCLCHECK(HcclCommDestroy(j.comm));
    ACLCHECK(aclrtDestroyStream(j.stream));
    ACLCHECK(aclrtDestroyEvent(j.start));
    ACLCHECK(aclrtDestroyEvent(j.end));
    ACLCHECK(aclrtResetDevice(j.dev));
    ACLCHECK(aclFinalize());
    if (j.failures)
        fprintf(stderr, "error: rank %u: %d cases failed their result check\n", j.rank, j.failures);
    return j.failures ? 3 : 0;
}
