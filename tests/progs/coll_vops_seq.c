/* coll_vops backtoback CALLS: AllGatherV, ReduceScatterV and AlltoAllVC issued back to back with
 * no synchronize in between, each call its own buffers and tables (drawn per call, alike on every
 * rank), blocks of 0 to ~3000 int32 so that calls fall on both sides of the eager crossover (eager
 * calls run ahead of the calls before them and reuse the inbox slots, mesh calls go between), in
 * and out of place (AllGatherV, ReduceScatterV). Then one synchronize and every receive buffer
 * checked on the host, gaps and one element past the end included (they keep their sentinel). */
#include "coll_vops.h"

#include <string.h>

enum { K_AGV, K_RSV, K_A2AVC, K_KINDS };
static const char *const kind_name[K_KINDS] = {"AllGatherV", "ReduceScatterV", "AlltoAllVC"};

typedef struct vcall {
    int kind;
    bool inplace;
    uint64_t m[VOPS_SEQ_MAX_RANKS * VOPS_SEQ_MAX_RANKS]; /* AlltoAllVC: the matrix; else cnt[n], then dsp[n] */
    uint64_t in_elems, out_elems;
    uint64_t checked;                            /* OUT's elements checked: the sentinel past it too,
                                                    but not in place for ReduceScatterV (IN's) */
    int32_t *in, *out;                           /* device; in place, one inside the other */
    int32_t *want;                               /* host: OUT after the call */
    void *base;                                  /* in place: the one allocation */
} vcall;

static uint64_t mix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Elements of one block: empty, small (eager) or ~12 KB (past the crossover, for the call's class). */
static uint64_t block(uint64_t *s, bool big)
{
    uint64_t x = mix64(s);
    if (x % 6 == 0)
        return 0;
    return big ? 2990 + x % 20 : 1 + (x >> 8) % 48;
}

static int32_t val(uint32_t it, uint32_t src, uint32_t dst, uint64_t i)
{
    return (int32_t)((it * 7919u + src * 131u + dst * 17u) * 1024u + (uint32_t)i);
}

static int32_t *image(uint64_t elems, int32_t v)
{
    int32_t *h = xmalloc((elems + 1) * sizeof *h);
    for (uint64_t k = 0; k <= elems; k++)
        h[k] = v;
    return h;
}

/* Start of entry j in a run of entries cnt[0], cnt[stride], ... laid end to end. */
static uint64_t prefix(const uint64_t *cnt, uint32_t j, size_t stride)
{
    uint64_t at = 0;
    for (uint32_t q = 0; q < j; q++)
        at += cnt[q * stride];
    return at;
}

/* AllGatherV / ReduceScatterV: blocks in rank order with gaps of 0..2 elements. */
static void layout_tables(vcall *v, uint32_t n, uint64_t *s, bool big, uint64_t *extent)
{
    uint64_t *cnt = v->m, *dsp = v->m + n, cur = 0;
    for (uint32_t j = 0; j < n; j++) {
        cnt[j] = block(s, big);
        dsp[j] = cur;
        cur += cnt[j] + mix64(s) % 3;
    }
    *extent = cur;
}

/* My IN (host, in_elems + 1) and the OUT I must see (v->want), for call it. */
static int32_t *inputs(prog_env *e, vcall *v, uint32_t it, uint64_t extent)
{
    uint32_t n = e->n, r = e->rank;
    const uint64_t *cnt = v->m, *dsp = v->m + n;
    int32_t *in;
    if (v->kind == K_A2AVC) {
        v->in_elems = prefix(v->m + (size_t)r * n, n, 1);
        v->out_elems = prefix(v->m + r, n, n);
        in = image(v->in_elems, -2);
        v->want = image(v->out_elems, -1);
        for (uint32_t j = 0; j < n; j++)
            for (uint64_t i = 0; i < v->m[(size_t)r * n + j]; i++)
                in[prefix(v->m + (size_t)r * n, j, 1) + i] = val(it, r, j, i);
        for (uint32_t j = 0; j < n; j++)
            for (uint64_t i = 0; i < v->m[(size_t)j * n + r]; i++)
                v->want[prefix(v->m + r, j, n) + i] = val(it, j, r, i);
    } else if (v->kind == K_AGV) {
        v->in_elems = cnt[r], v->out_elems = extent;
        in = image(v->in_elems, -2);
        v->want = image(v->out_elems, -1);
        for (uint32_t j = 0; j < n; j++)
            for (uint64_t i = 0; i < cnt[j]; i++)
                v->want[dsp[j] + i] = val(it, j, 0, i);
        memcpy(in, v->want + dsp[r], cnt[r] * sizeof *in);
    } else {
        v->in_elems = extent, v->out_elems = cnt[r];
        in = image(v->in_elems, -2);
        v->want = image(v->out_elems, -1);
        for (uint32_t j = 0; j < n; j++)
            for (uint64_t i = 0; i < cnt[j]; i++)
                in[dsp[j] + i] = val(it, r, j, i);
        for (uint64_t i = 0; i < cnt[r]; i++) {
            uint32_t sum = 0; /* int32 sums wrap alike on the device */
            for (uint32_t q = 0; q < n; q++)
                sum += (uint32_t)val(it, q, r, i);
            v->want[i] = (int32_t)sum;
        }
    }
    return in;
}

static void prepare(prog_env *e, vcall *v, uint32_t it)
{
    uint32_t n = e->n;
    uint64_t s = 0xb2bull + it, extent = 0;
    bool big = mix64(&s) % 3 == 0;
    v->kind = (int)(it % K_KINDS);
    v->inplace = v->kind != K_A2AVC && (it / K_KINDS) % 2 == 1;
    if (v->kind == K_A2AVC)
        for (uint32_t j = 0; j < n * n; j++)
            v->m[j] = block(&s, big);
    else
        layout_tables(v, n, &s, big, &extent);
    int32_t *in = inputs(e, v, it, extent);
    uint64_t my = v->kind == K_A2AVC ? 0 : v->m[n + e->rank]; /* dsp[rank] */
    v->base = NULL;
    v->checked = v->out_elems + 1;
    if (v->inplace && v->kind == K_AGV) { /* sendBuf = recvBuf + recvDispls[rank], holding my block */
        int32_t *img = image(extent, -1);
        memcpy(img + my, in, v->in_elems * sizeof *img);
        v->base = v->out = dev_alloc((extent + 1) * sizeof *img);
        v->in = v->out + my;
        to_dev(v->out, img, (extent + 1) * sizeof *img);
        free(img);
    } else if (v->inplace) { /* recvBuf = sendBuf + sendDispls[rank] */
        v->base = v->in = dev_alloc((v->in_elems + 1) * sizeof *in);
        v->out = v->in + my;
        to_dev(v->in, in, (v->in_elems + 1) * sizeof *in);
        v->checked = v->out_elems;
    } else {
        v->in = dev_alloc((v->in_elems + 1) * sizeof *in);
        v->out = dev_alloc((v->out_elems + 1) * sizeof *in);
        to_dev(v->in, in, (v->in_elems + 1) * sizeof *in);
        int32_t *img = image(v->out_elems, -1);
        to_dev(v->out, img, (v->out_elems + 1) * sizeof *img);
        free(img);
    }
    free(in);
}

static HcclResult issue(prog_env *e, const vcall *v)
{
    uint32_t n = e->n;
    switch (v->kind) {
    case K_AGV:
        return HcclAllGatherV(v->in, v->in_elems, v->out, v->m, v->m + n, HCCL_DATA_TYPE_INT32, e->comm, e->stream);
    case K_RSV:
        return HcclReduceScatterV(v->in, v->m, v->m + n, v->out, v->out_elems, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM,
                                  e->comm, e->stream);
    default: return HcclAlltoAllVC(v->in, v->m, HCCL_DATA_TYPE_INT32, v->out, HCCL_DATA_TYPE_INT32, e->comm, e->stream);
    }
}

static int check_and_free(prog_env *e, vcall *v, uint32_t it)
{
    int32_t *got = xmalloc((v->out_elems + 1) * sizeof *got);
    to_host(got, v->out, v->checked * sizeof *got);
    int bad = 0;
    for (uint64_t k = 0; k < v->checked && !bad; k++)
        if (got[k] != v->want[k]) {
            printf("FAIL call %u rank %u: %s %s, element %llu of %llu is %d, want %d\n", it, e->rank,
                   kind_name[v->kind], v->inplace ? "in place" : "out of place", (unsigned long long)k,
                   (unsigned long long)v->out_elems, got[k], v->want[k]);
            bad = 1;
        }
    if (v->base) {
        dev_free(v->base);
    } else {
        dev_free(v->in);
        dev_free(v->out);
    }
    free(v->want);
    free(got);
    return bad;
}

int vops_backtoback(prog_env *e, uint32_t calls)
{
    if (e->n > VOPS_SEQ_MAX_RANKS) {
        printf("backtoback supports up to %u ranks\n", VOPS_SEQ_MAX_RANKS);
        return 1;
    }
    vcall *v = xmalloc(calls * sizeof *v);
    for (uint32_t it = 0; it < calls; it++)
        prepare(e, &v[it], it);
    ACL_OK(aclrtSynchronizeDevice());
    for (uint32_t it = 0; it < calls; it++)
        HCCL_OK(issue(e, &v[it]));
    ACL_OK(aclrtSynchronizeStream(e->stream));
    int bad = 0;
    for (uint32_t it = 0; it < calls; it++)
        bad |= check_and_free(e, &v[it], it);
    free(v);
    printf("rank %u: %u back-to-back V calls checked, %s\n", e->rank, calls, bad ? "FAILED" : "all exact");
    return bad;
}
