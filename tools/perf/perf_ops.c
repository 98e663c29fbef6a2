/* Per-collective parts of the perf tools: sizes as nccl-tests computes them, bus-bandwidth
 * factors, buffer layouts (HCCL's in-place forms), the call, and the data check.
 *
 * Check data: rank r's input element s is g((3r + s) mod P) with small integers (sum: 1..4,
 * prod: {2,1,1,1,1}, max/min: 0..16, movement: 0..250), so every result is exact in every type
 * whatever the reduction order, and expected values repeat with period P: the check is a table
 * lookup per element. */
#include "perf_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[] = {"all_reduce", "all_gather", "reduce_scatter",  "broadcast",  "reduce",
                                    "scatter",    "alltoall",   "alltoallv",       "sendrecv",   "all_gatherv",
                                    "reduce_scatterv", "alltoallvc"};

const char *perf_name(perf_kind k) { return names[k]; }

/* A V form is benchmarked with equal blocks: sizes, layout and check of its plain collective. */
static perf_kind plain(perf_kind k)
{
    switch (k) {
    case PERF_ALL_GATHERV: return PERF_ALL_GATHER;
    case PERF_REDUCE_SCATTERV: return PERF_REDUCE_SCATTER;
    case PERF_ALLTOALLV:
    case PERF_ALLTOALLVC: return PERF_ALLTOALL;
    default: return k;
    }
}

bool perf_reduces(perf_kind k)
{
    k = plain(k);
    return k == PERF_ALL_REDUCE || k == PERF_REDUCE_SCATTER || k == PERF_REDUCE;
}
bool perf_rooted(perf_kind k) { return k == PERF_BROADCAST || k == PERF_REDUCE || k == PERF_SCATTER; }

bool perf_has_inplace(perf_kind k)
{
    k = plain(k);
    return k == PERF_ALL_REDUCE || k == PERF_ALL_GATHER || k == PERF_REDUCE_SCATTER || k == PERF_REDUCE ||
           k == PERF_BROADCAST;
}

/* HcclBroadcast has one buffer: it is in place by definition. */
bool perf_has_outofplace(perf_kind k) { return k != PERF_BROADCAST; }

void perf_sizes(perf_kind k, size_t bytes, size_t es, uint32_t n, uint64_t *count, uint64_t *send_elems,
                uint64_t *recv_elems)
{
    uint64_t c = bytes / es, blk = (c / n) & ~(uint64_t)(16 / es - 1);
    switch (plain(k)) {
    case PERF_ALL_GATHER: *count = blk, *send_elems = blk, *recv_elems = blk * n; break;
    case PERF_REDUCE_SCATTER:
    case PERF_SCATTER: *count = blk, *send_elems = blk * n, *recv_elems = blk; break;
    case PERF_ALLTOALL: *count = blk, *send_elems = *recv_elems = blk * n; break;
    default: *count = *send_elems = *recv_elems = c; break;
    }
}

double perf_alg_bytes(perf_kind k, uint64_t count, size_t es, uint32_t n)
{
    switch (plain(k)) {
    case PERF_ALL_GATHER:
    case PERF_REDUCE_SCATTER:
    case PERF_SCATTER:
    case PERF_ALLTOALL: return (double)count * (double)es * n;
    default: return (double)count * (double)es;
    }
}

double perf_bus_factor(perf_kind k, uint32_t n)
{
    switch (plain(k)) {
    case PERF_ALL_REDUCE: return 2.0 * (n - 1) / n;
    case PERF_ALL_GATHER:
    case PERF_REDUCE_SCATTER:
    case PERF_SCATTER:
    case PERF_ALLTOALL: return (double)(n - 1) / n;
    default: return 1.0;
    }
}

static void *dmalloc(uint64_t bytes)
{
    void *p = NULL;
    if (aclrtMalloc(&p, bytes ? bytes : 1, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
        fprintf(stderr, "aclrtMalloc(%llu) failed: %s\n", (unsigned long long)bytes, aclGetRecentErrMsg());
        exit(2);
    }
    return p;
}

/* Block i -> j's count in table set `set`: c, or (set >= 0, -v 1) c +- c/2 by the parity of
 * i + j + set, so that sets differ entry by entry, their totals about n * c, and every rank
 * computes every entry alike. */
static uint64_t v_block(uint64_t c, int set, uint32_t i, uint32_t j)
{
    if (set < 0)
        return c;
    return (i + j + (uint32_t)set) % 2 ? c + c / 2 : c - c / 2;
}

/* n counts, then their displacements (blocks in rank order): of blocks me -> j (from) or j -> me. */
static void counts_displs(uint64_t *t, uint32_t n, uint64_t c, int set, uint32_t me, bool from)
{
    uint64_t at = 0;
    for (uint32_t j = 0; j < n; j++) {
        t[j] = from ? v_block(c, set, me, j) : v_block(c, set, j, me);
        t[n + j] = at;
        at += t[j];
    }
}

/* Tables of table set `set` (-1: equal blocks of c elements): counts then displacements
 * (AllGatherV, ReduceScatterV: rank j's block), twice for AlltoAllV (send, then receive), or the
 * n x n send-count matrix (AlltoAllVC). */
static uint64_t *v_tables(perf_kind k, uint32_t n, uint64_t c, int set, uint32_t me)
{
    uint32_t entries = k == PERF_ALLTOALLVC ? n * n : k == PERF_ALLTOALLV ? 4 * n : 2 * n;
    uint64_t *v = malloc(entries * sizeof *v);
    if (!v) {
        fprintf(stderr, "out of memory for %u table entries\n", entries);
        exit(2);
    }
    if (k == PERF_ALLTOALLVC) {
        for (uint32_t i = 0; i < n * n; i++)
            v[i] = v_block(c, set, i / n, i % n);
    } else if (k == PERF_ALLTOALLV) {
        counts_displs(v, n, c, set, me, true);
        counts_displs(v + 2 * n, n, c, set, me, false);
    } else {
        counts_displs(v, n, c, set, 0, false);
    }
    return v;
}

bool perf_is_v(perf_kind k) { return plain(k) != k; }

void perf_alloc(const perf_env *e, perf_point *p)
{
    uint64_t c = p->count, es = p->es, me = e->rank;
    perf_kind k = plain(p->kind);
    p->base = p->send = p->recv = NULL;
    p->v = perf_is_v(p->kind) ? v_tables(p->kind, e->n, c, -1, e->rank) : NULL;
    uint64_t pad = 0; /* -v 1: an uneven set's blocks may add up to c/2 more */
    for (int s = 0; s < PERF_VSETS && p->vary && p->v; s++, pad = c)
        p->vsets[s] = v_tables(p->kind, e->n, c, s, e->rank);
    if (p->inplace) {
        uint64_t total = (p->send_elems > p->recv_elems ? p->send_elems : p->recv_elems) + pad;
        p->base = dmalloc(total * es);
        p->send = p->recv = p->base;
        if (k == PERF_ALL_GATHER)
            p->send = (char *)p->base + me * c * es; /* sendBuf = recvBuf + rank*count */
        if (k == PERF_REDUCE_SCATTER)
            p->recv = (char *)p->base + me * c * es; /* recvBuf = sendBuf + rank*recvCount */
        return;
    }
    p->send = dmalloc((p->send_elems + pad) * es);
    p->recv = dmalloc((p->recv_elems + pad) * es);
}

void perf_release(perf_point *p)
{
    if (p->base) {
        aclrtFree(p->base);
    } else {
        aclrtFree(p->send);
        aclrtFree(p->recv);
    }
    free(p->v);
    for (int s = 0; s < PERF_VSETS; s++) {
        free(p->vsets[s]);
        p->vsets[s] = NULL;
    }
    p->base = p->send = p->recv = NULL;
    p->v = NULL;
}

HcclResult perf_call(const perf_env *e, perf_point *p)
{
    HcclComm cm = e->comm;
    aclrtStream st = e->stream;
    uint64_t c = p->count;
    uint32_t n = e->n, me = e->rank;
    const uint64_t *v = p->vary && p->v ? p->vsets[p->ncalls++ % PERF_VSETS] : p->v;
    char *at = p->inplace && v ? (char *)p->base + v[n + me] * p->es : NULL; /* my block, in place */
    switch (p->kind) {
    case PERF_ALL_REDUCE: return HcclAllReduce(p->send, p->recv, c, p->dt, p->op, cm, st);
    case PERF_ALL_GATHER: return HcclAllGather(p->send, p->recv, c, p->dt, cm, st);
    case PERF_REDUCE_SCATTER: return HcclReduceScatter(p->send, p->recv, c, p->dt, p->op, cm, st);
    case PERF_BROADCAST: return HcclBroadcast(p->recv, c, p->dt, p->root, cm, st);
    case PERF_REDUCE: return HcclReduce(p->send, p->recv, c, p->dt, p->op, p->root, cm, st);
    case PERF_SCATTER: return HcclScatter(p->send, p->recv, c, p->dt, p->root, cm, st);
    case PERF_ALLTOALL: return HcclAlltoAll(p->send, c, p->dt, p->recv, c, p->dt, cm, st);
    case PERF_ALLTOALLV:
        return HcclAlltoAllV(p->send, v, v + n, p->dt, p->recv, v + 2 * n, v + 3 * n, p->dt, cm, st);
    case PERF_ALL_GATHERV: /* in place: sendBuf = recvBuf + recvDispls[rank] */
        return HcclAllGatherV(at ? at : p->send, v[me], p->recv, v, v + n, p->dt, cm, st);
    case PERF_REDUCE_SCATTERV: /* in place: recvBuf = sendBuf + sendDispls[rank] */
        return HcclReduceScatterV(p->send, v, v + n, at ? at : p->recv, v[me], p->dt, p->op, cm, st);
    case PERF_ALLTOALLVC: return HcclAlltoAllVC(p->send, v, p->dt, p->recv, p->dt, cm, st);
    case PERF_SENDRECV: {
        HcclSendRecvItem it[2] = {{HCCL_SEND, p->send, c, p->dt, (e->rank + 1) % n},
                                  {HCCL_RECV, p->recv, c, p->dt, (e->rank + n - 1) % n}};
        if (!p->separate)
            return HcclBatchSendRecv(it, 2, cm, st);
        /* Even ranks send first, odd ranks receive first: no rank's send waits on its own receive. */
        const HcclSendRecvItem *first = &it[e->rank % 2], *second = &it[1 - e->rank % 2];
        HcclResult rc = (first->sendRecvType == HCCL_SEND ? HcclSend : HcclRecv)(first->buf, c, p->dt,
                                                                              first->remoteRank, cm, st);
        return rc != HCCL_SUCCESS ? rc : (second->sendRecvType == HCCL_SEND ? HcclSend : HcclRecv)(
                                             second->buf, c, p->dt, second->remoteRank, cm, st);
    }
    }
    return HCCL_E_PARA;
}

/* ---- check data ---------------------------------------------------------------------------- */

static uint16_t to_half(double v)
{
    if (v == 0)
        return 0;
    int e;
    double m = frexp(fabs(v), &e);
    return (uint16_t)((v < 0 ? 0x8000 : 0) | ((e + 14) << 10) | (int)lrint((m * 2 - 1) * 1024));
}

static void store(HcclDataType dt, double v, void *dst)
{
    float f = (float)v;
    uint32_t u;
    uint16_t h;
    int64_t i = (int64_t)v;
    switch (dt) {
    case HCCL_DATA_TYPE_FP32: memcpy(dst, &f, 4); break;
    case HCCL_DATA_TYPE_FP64: memcpy(dst, &v, 8); break;
    case HCCL_DATA_TYPE_BFP16:
        memcpy(&u, &f, 4);
        h = (uint16_t)(u >> 16);
        memcpy(dst, &h, 2);
        break;
    case HCCL_DATA_TYPE_FP16:
        h = to_half(v);
        memcpy(dst, &h, 2);
        break;
    default: memcpy(dst, &i, perf_dtype_size(dt)); break; /* little-endian: wraps to the width */
    }
}

static uint32_t period(const perf_point *p)
{
    if (!perf_reduces(p->kind))
        return 251;
    return p->op == HCCL_REDUCE_SUM ? 4 : p->op == HCCL_REDUCE_PROD ? 5 : 17;
}

static double g(const perf_point *p, uint32_t x)
{
    if (perf_reduces(p->kind) && p->op == HCCL_REDUCE_SUM)
        return 1 + x;
    if (perf_reduces(p->kind) && p->op == HCCL_REDUCE_PROD)
        return x == 0 ? 2 : 1;
    return x;
}

static double val(const perf_point *p, uint32_t r, uint64_t s)
{
    return g(p, (uint32_t)((3 * (uint64_t)r + s) % period(p)));
}

/* tab[x] = stored value of rank r's element x (r == UINT32_MAX: the reduction over n ranks). */
static void *table(const perf_point *p, uint32_t r, uint32_t n)
{
    uint32_t P = period(p);
    char *tab = malloc(P * p->es);
    for (uint32_t x = 0; x < P; x++) {
        double v = r != UINT32_MAX ? val(p, r, x) : val(p, 0, x);
        for (uint32_t k = 1; r == UINT32_MAX && k < n; k++) {
            double w = val(p, k, x);
            v = p->op == HCCL_REDUCE_SUM ? v + w : p->op == HCCL_REDUCE_PROD ? v * w
              : p->op == HCCL_REDUCE_MAX ? fmax(v, w) : fmin(v, w);
        }
        store(p->dt, v, tab + x * p->es);
    }
    return tab;
}

void perf_fill(const perf_env *e, perf_point *p)
{
    uint64_t n = p->send_elems;
    void *dst = p->send;
    if (plain(p->kind) == PERF_ALL_GATHER && p->inplace)
        n = p->count;
    if (p->kind == PERF_BROADCAST) {
        dst = p->recv;
        if (e->rank != p->root) {
            aclrtMemset(dst, n * p->es, 0, n * p->es);
            return;
        }
    }
    if (n == 0)
        return;
    uint32_t P = period(p);
    char *tab = table(p, e->rank, e->n), *h = malloc(n * p->es);
    for (uint64_t s = 0; s < n; s++)
        memcpy(h + s * p->es, tab + (s % P) * p->es, p->es);
    aclrtMemcpy(dst, n * p->es, h, n * p->es, ACL_MEMCPY_HOST_TO_DEVICE);
    free(h);
    free(tab);
}

/* Source rank and source index of output element idx; rank UINT32_MAX = reduction. */
static void source(const perf_env *e, const perf_point *p, uint64_t idx, uint32_t *r, uint64_t *s)
{
    uint64_t c = p->count ? p->count : 1, me = e->rank;
    switch (plain(p->kind)) {
    case PERF_ALL_REDUCE:
    case PERF_REDUCE: *r = UINT32_MAX, *s = idx; break;
    case PERF_REDUCE_SCATTER: *r = UINT32_MAX, *s = me * c + idx; break;
    case PERF_ALL_GATHER: *r = (uint32_t)(idx / c), *s = idx % c; break;
    case PERF_BROADCAST: *r = p->root, *s = idx; break;
    case PERF_SCATTER: *r = p->root, *s = me * c + idx; break;
    case PERF_ALLTOALL: *r = (uint32_t)(idx / c), *s = me * c + idx % c; break;
    case PERF_SENDRECV: *r = (e->rank + e->n - 1) % e->n, *s = idx; break;
    default: break; /* plain() maps every V form */
    }
}

uint64_t perf_check(const perf_env *e, const perf_point *p)
{
    uint64_t n = p->recv_elems, wrong = 0;
    if (n == 0 || (p->kind == PERF_REDUCE && e->rank != p->root))
        return 0;
    uint32_t P = period(p);
    char *got = malloc(n * p->es), *red = table(p, UINT32_MAX, e->n), **tabs = calloc(e->n, sizeof *tabs);
    aclrtMemcpy(got, n * p->es, p->recv, n * p->es, ACL_MEMCPY_DEVICE_TO_HOST);
    for (uint64_t i = 0; i < n; i++) {
        uint32_t r = UINT32_MAX;
        uint64_t s = i;
        source(e, p, i, &r, &s);
        const char *want;
        if (r == UINT32_MAX) {
            want = red + (s % P) * p->es;
        } else {
            if (!tabs[r])
                tabs[r] = table(p, r, e->n);
            want = tabs[r] + (s % P) * p->es;
        }
        wrong += memcmp(got + i * p->es, want, p->es) != 0;
    }
    for (uint32_t r = 0; r < e->n; r++)
        free(tabs[r]);
    free(tabs);
    free(red);
    free(got);
    return wrong;
}

/* ---- data types ---------------------------------------------------------------------------- */

static const struct {
    HcclDataType dt;
    size_t size;
    const char *nccl, *hccl;
} types[] = {
    {HCCL_DATA_TYPE_INT8, 1, "int8", "int8"},      {HCCL_DATA_TYPE_UINT8, 1, "uint8", "uint8"},
    {HCCL_DATA_TYPE_INT16, 2, "int16", "int16"},   {HCCL_DATA_TYPE_UINT16, 2, "uint16", "uint16"},
    {HCCL_DATA_TYPE_INT32, 4, "int32", "int32"},   {HCCL_DATA_TYPE_UINT32, 4, "uint32", "uint32"},
    {HCCL_DATA_TYPE_INT64, 8, "int64", "int64"},   {HCCL_DATA_TYPE_UINT64, 8, "uint64", "uint64"},
    {HCCL_DATA_TYPE_FP16, 2, "half", "fp16"},      {HCCL_DATA_TYPE_FP32, 4, "float", "fp32"},
    {HCCL_DATA_TYPE_FP64, 8, "double", "fp64"},    {HCCL_DATA_TYPE_BFP16, 2, "bfloat16", "bfp16"},
};

const HcclDataType perf_all_dtypes[12] = {
    HCCL_DATA_TYPE_INT8,  HCCL_DATA_TYPE_UINT8,  HCCL_DATA_TYPE_INT16, HCCL_DATA_TYPE_UINT16,
    HCCL_DATA_TYPE_INT32, HCCL_DATA_TYPE_UINT32, HCCL_DATA_TYPE_INT64, HCCL_DATA_TYPE_UINT64,
    HCCL_DATA_TYPE_FP16,  HCCL_DATA_TYPE_FP32,   HCCL_DATA_TYPE_FP64,  HCCL_DATA_TYPE_BFP16,
};

bool perf_dtype_parse(const char *s, HcclDataType *dt)
{
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(s, types[i].nccl) || !strcmp(s, types[i].hccl) || (!strcmp(s, "bf16") && i == 11)) {
            *dt = types[i].dt;
            return true;
        }
    return false;
}

const char *perf_dtype_name(HcclDataType dt)
{
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (types[i].dt == dt)
            return types[i].nccl;
    return "?";
}

size_t perf_dtype_size(HcclDataType dt)
{
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (types[i].dt == dt)
            return types[i].size;
    return 0;
}
