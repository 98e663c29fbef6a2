/* Runners for the fixed-count collectives, and the helpers every runner shares. Each runner
 * fills its inputs, fills outputs with a sentinel, runs the collective, synchronizes and compares
 * every element of what it owns against the host reference. */
#include "coll_check.h"

#include <string.h>

cc_result cc_call(cc_ctx *c, const cc_case *k, HcclResult rc)
{
    if (rc == HCCL_SUCCESS)
        return CC_PASS;
    if (rc == HCCL_E_NOT_SUPPORT && cc_known_unsupported(c, k))
        return CC_UNSUPPORTED;
    if (rc == HCCL_E_NOT_SUPPORT) { /* symmetric on every rank: the job can go on */
        printf("[FAIL] rank %u Hccl%s %s %s count=%llu root=%u %s algo=%s: HCCL_E_NOT_SUPPORT, and the combination "
               "is not in the unsupported table\n", c->e->rank, k->coll, dt_name(k->dt), op_name(k->op),
               (unsigned long long)k->count, k->root, k->inplace ? "in-place" : "out-of-place", c->algo);
        return CC_FAIL;
    }
    fprintf(stderr, "[FATAL] rank %u Hccl%s %s %s count=%llu root=%u %s: returned %d (%s)\n", c->e->rank, k->coll,
            dt_name(k->dt), op_name(k->op), (unsigned long long)k->count, k->root,
            k->inplace ? "in-place" : "out-of-place", (int)rc, HcclGetErrorString(rc));
    printf("coll_check: aborted at Hccl%s: the call returned %d\n", k->coll, (int)rc);
    exit(1);
}

void cc_sync(cc_ctx *c, const cc_case *k)
{
    aclError e = aclrtSynchronizeStream(c->e->stream);
    if (e == ACL_SUCCESS)
        return;
    HcclResult async = HCCL_SUCCESS;
    HcclGetCommAsyncError(c->e->comm, &async);
    char msg[512] = "";
    HcclExtGetCommErrorMessage(c->e->comm, msg, sizeof msg);
    fprintf(stderr, "[FATAL] rank %u Hccl%s %s %s count=%llu root=%u %s: aclrtSynchronizeStream returned %d, "
            "async error %d: %s\n", c->e->rank, k->coll, dt_name(k->dt), op_name(k->op),
            (unsigned long long)k->count, k->root, k->inplace ? "in-place" : "out-of-place", (int)e, (int)async, msg);
    printf("coll_check: aborted at Hccl%s: stream synchronize failed\n", k->coll);
    exit(1);
}

static gen_spec spec(const cc_case *k, gen_kind kind, uint32_t nranks)
{
    gen_spec g = {kind, k->dt, k->op, nranks, k->salt};
    return g;
}

void *cc_input(const cc_case *k, gen_kind kind, uint32_t nranks, uint32_t r, uint64_t first, uint64_t n)
{
    void *h = xmalloc(n * dt_size(k->dt));
    gen_spec g = spec(k, kind, nranks);
    gen_fill(&g, r, first, n, h);
    return h;
}

void cc_expect_reduce(const cc_case *k, uint32_t nranks, uint64_t first, uint64_t n, void *want)
{
    gen_spec g = spec(k, GEN_REDUCE, nranks);
    gen_fill(&g, 0, first, n, want);
    if (nranks < 2)
        return;
    void *tmp = xmalloc(n * dt_size(k->dt));
    for (uint32_t r = 1; r < nranks; r++) {
        gen_fill(&g, r, first, n, tmp);
        ref_reduce(want, tmp, k->dt, k->op, n);
    }
    free(tmp);
}

cc_result cc_compare(cc_ctx *c, const cc_case *k, const void *got, const void *want, uint64_t n, const char *what)
{
    size_t es = dt_size(k->dt);
    if (!memcmp(got, want, n * es))
        return CC_PASS;
    uint64_t wrong = 0;
    bool detail = c->cases_printed < 20;
    for (uint64_t i = 0; i < n; i++) {
        if (!memcmp((const char *)got + i * es, (const char *)want + i * es, es))
            continue;
        if (detail && wrong < (uint64_t)c->max_print) {
            char g[64], w[64];
            dt_format(g, sizeof g, k->dt, got, i);
            dt_format(w, sizeof w, k->dt, want, i);
            printf("[FAIL] rank %u Hccl%s %s %s count=%llu root=%u %s %s[%llu]: got %s want %s\n", c->e->rank,
                   k->coll, dt_name(k->dt), op_name(k->op), (unsigned long long)k->count, k->root,
                   k->inplace ? "in-place" : "out-of-place", what, (unsigned long long)i, g, w);
        }
        wrong++;
    }
    printf("[FAIL] rank %u Hccl%s %s %s count=%llu root=%u %s: %llu of %llu elements of %s wrong\n", c->e->rank,
           k->coll, dt_name(k->dt), op_name(k->op), (unsigned long long)k->count, k->root,
           k->inplace ? "in-place" : "out-of-place", (unsigned long long)wrong, (unsigned long long)n, what);
    c->cases_printed++;
    return CC_FAIL;
}

/* One device buffer per side, or one shared buffer in place; host images in and out. */
typedef struct bufs {
    void *send, *recv, *base;
    size_t base_bytes;
} bufs;

static void bufs_free(bufs *b)
{
    if (b->base) {
        dev_free(b->base);
    } else {
        dev_free(b->send);
        dev_free(b->recv);
    }
}

/* Out of place: send <- in (in_elems), recv <- sentinel (out_elems). */
static bufs bufs_oop(const cc_case *k, const void *in, uint64_t in_elems, uint64_t out_elems)
{
    size_t es = dt_size(k->dt);
    bufs b = {dev_alloc(in_elems * es), dev_alloc(out_elems * es), NULL, 0};
    to_dev(b.send, in, in_elems * es);
    void *s = xmalloc(out_elems * es);
    fill_sentinel(s, out_elems * es);
    to_dev(b.recv, s, out_elems * es);
    free(s);
    return b;
}

/* In place: one buffer of total elems initialised from image; send/recv at element offsets. */
static bufs bufs_inplace(const cc_case *k, const void *image, uint64_t total, uint64_t send_off, uint64_t recv_off)
{
    size_t es = dt_size(k->dt);
    bufs b;
    b.base = dev_alloc(total * es);
    b.base_bytes = total * es;
    to_dev(b.base, image, total * es);
    b.send = (char *)b.base + send_off * es;
    b.recv = (char *)b.base + recv_off * es;
    return b;
}

static cc_result finish(cc_ctx *c, const cc_case *k, const void *dev, const void *want, uint64_t n,
                        const char *what)
{
    size_t es = dt_size(k->dt);
    void *got = xmalloc(n * es);
    to_host(got, dev, n * es);
    cc_result r = cc_compare(c, k, got, want, n, what);
    free(got);
    return r;
}

cc_result cc_allreduce(cc_ctx *c, const cc_case *k)
{
    uint32_t me = c->e->rank, n = c->e->n;
    uint64_t cnt = k->count;
    void *in = cc_input(k, GEN_REDUCE, n, me, 0, cnt), *want = xmalloc(cnt * dt_size(k->dt) + 1);
    bufs b = k->inplace ? bufs_inplace(k, in, cnt, 0, 0) : bufs_oop(k, in, cnt, cnt);
    cc_result r = cc_call(c, k, HcclAllReduce(b.send, b.recv, cnt, k->dt, k->op, c->e->comm, c->e->stream));
    if (r == CC_PASS) {
        cc_sync(c, k);
        cc_expect_reduce(k, n, 0, cnt, want);
        r = finish(c, k, b.recv, want, cnt, "recvBuf");
    }
    bufs_free(&b);
    free(in);
    free(want);
    return r;
}

cc_result cc_reduce(cc_ctx *c, const cc_case *k)
{
    uint32_t me = c->e->rank, n = c->e->n;
    uint64_t cnt = k->count;
    void *in = cc_input(k, GEN_REDUCE, n, me, 0, cnt), *want = xmalloc(cnt * dt_size(k->dt) + 1);
    bufs b = k->inplace ? bufs_inplace(k, in, cnt, 0, 0) : bufs_oop(k, in, cnt, cnt);
    cc_result r = cc_call(c, k, HcclReduce(b.send, b.recv, cnt, k->dt, k->op, k->root, c->e->comm, c->e->stream));
    if (r == CC_PASS) {
        cc_sync(c, k);
        if (me == k->root) {
            cc_expect_reduce(k, n, 0, cnt, want);
            r = finish(c, k, b.recv, want, cnt, "recvBuf");
        } else if (!k->inplace) { /* a non-root's sendBuf is input only */
            r = finish(c, k, b.send, in, cnt, "sendBuf (non-root, must be unchanged)");
        }
    }
    bufs_free(&b);
    free(in);
    free(want);
    return r;
}

cc_result cc_broadcast(cc_ctx *c, const cc_case *k)
{
    uint32_t me = c->e->rank;
    uint64_t cnt = k->count;
    size_t es = dt_size(k->dt);
    void *want = cc_input(k, GEN_BITS, c->e->n, k->root, 0, cnt);
    void *img = xmalloc(cnt * es);
    if (me == k->root)
        memcpy(img, want, cnt * es);
    else
        fill_sentinel(img, cnt * es);
    bufs b = bufs_inplace(k, img, cnt, 0, 0);
    cc_result r = cc_call(c, k, HcclBroadcast(b.send, cnt, k->dt, k->root, c->e->comm, c->e->stream));
    if (r == CC_PASS) {
        cc_sync(c, k);
        r = finish(c, k, b.recv, want, cnt, "buf");
    }
    bufs_free(&b);
    free(img);
    free(want);
    return r;
}

/* want = every rank's block j at j*cnt (AllGather's output). */
static void *gathered(const cc_case *k, uint32_t n, uint64_t cnt)
{
    size_t es = dt_size(k->dt);
    char *want = xmalloc(n * cnt * es);
    gen_spec g = spec(k, GEN_BITS, n);
    for (uint32_t j = 0; j < n; j++)
        gen_fill(&g, j, 0, cnt, want + j * cnt * es);
    return want;
}

cc_result cc_allgather(cc_ctx *c, const cc_case *k)
{
    uint32_t me = c->e->rank, n = c->e->n;
    uint64_t cnt = k->count;
    size_t es = dt_size(k->dt);
    char *want = gathered(k, n, cnt);
    bufs b;
    if (k->inplace) { /* sendBuf = recvBuf + rank*count, already holding this rank's block */
        char *img = xmalloc(n * cnt * es);
        fill_sentinel(img, n * cnt * es);
        memcpy(img + me * cnt * es, want + me * cnt * es, cnt * es);
        b = bufs_inplace(k, img, n * cnt, me * cnt, 0);
        free(img);
    } else {
        b = bufs_oop(k, want + me * cnt * es, cnt, n * cnt);
    }
    cc_result r = cc_call(c, k, HcclAllGather(b.send, b.recv, cnt, k->dt, c->e->comm, c->e->stream));
    if (r == CC_PASS) {
        cc_sync(c, k);
        r = finish(c, k, b.recv, want, n * cnt, "recvBuf");
    }
    bufs_free(&b);
    free(want);
    return r;
}

cc_result cc_reducescatter(cc_ctx *c, const cc_case *k)
{
    uint32_t me = c->e->rank, n = c->e->n;
    uint64_t cnt = k->count;
    void *in = cc_input(k, GEN_REDUCE, n, me, 0, n * cnt), *want = xmalloc(cnt * dt_size(k->dt) + 1);
    /* in place: recvBuf = sendBuf + rank*recvCount */
    bufs b = k->inplace ? bufs_inplace(k, in, n * cnt, 0, me * cnt) : bufs_oop(k, in, n * cnt, cnt);
    cc_result r = cc_call(c, k, HcclReduceScatter(b.send, b.recv, cnt, k->dt, k->op, c->e->comm, c->e->stream));
    if (r == CC_PASS) {
        cc_sync(c, k);
        cc_expect_reduce(k, n, me * cnt, cnt, want);
        r = finish(c, k, b.recv, want, cnt, "recvBuf");
    }
    bufs_free(&b);
    free(in);
    free(want);
    return r;
}

cc_result cc_scatter(cc_ctx *c, const cc_case *k)
{
    uint32_t me = c->e->rank, n = c->e->n;
    uint64_t cnt = k->count;
    size_t es = dt_size(k->dt);
    char *all = cc_input(k, GEN_BITS, n, k->root, 0, n * cnt);
    bufs b = bufs_oop(k, all, me == k->root ? n * cnt : 0, cnt);
    cc_result r = cc_call(c, k, HcclScatter(b.send, b.recv, cnt, k->dt, k->root, c->e->comm, c->e->stream));
    if (r == CC_PASS) {
        cc_sync(c, k);
        r = finish(c, k, b.recv, all + me * cnt * es, cnt, "recvBuf");
    }
    bufs_free(&b);
    free(all);
    return r;
}

cc_result cc_alltoall(cc_ctx *c, const cc_case *k)
{
    uint32_t me = c->e->rank, n = c->e->n;
    uint64_t cnt = k->count;
    size_t es = dt_size(k->dt);
    void *in = cc_input(k, GEN_BITS, n, me, 0, n * cnt);
    char *want = xmalloc(n * cnt * es + 1);
    gen_spec g = spec(k, GEN_BITS, n);
    for (uint32_t j = 0; j < n; j++) /* block j of my output = block me of rank j's input */
        gen_fill(&g, j, (uint64_t)me * cnt, cnt, want + j * cnt * es);
    /* in place (HCCL's form: sendBuf == recvBuf) is in the unsupported table for now */
    bufs b = k->inplace ? bufs_inplace(k, in, n * cnt, 0, 0) : bufs_oop(k, in, n * cnt, n * cnt);
    cc_result r = cc_call(c, k, HcclAlltoAll(b.send, cnt, k->dt, b.recv, cnt, k->dt, c->e->comm, c->e->stream));
    if (r == CC_PASS) {
        cc_sync(c, k);
        r = finish(c, k, b.recv, want, n * cnt, "recvBuf");
    }
    bufs_free(&b);
    free(in);
    free(want);
    return r;
}

cc_result cc_barrier(cc_ctx *c, const cc_case *k)
{
    cc_result r = cc_call(c, k, HcclBarrier(c->e->comm, c->e->stream));
    if (r == CC_PASS)
        cc_sync(c, k);
    return r;
}
