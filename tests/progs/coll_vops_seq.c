/* coll_vops backtoback CALLS: AllGatherV, ReduceScatterV, AlltoAllVC and AlltoAllV issued back to back with
 * no synchronize in between, each call its own buffers and tables (drawn per call, alike on every
 * rank), blocks of 0 to ~3000 int32 so that calls fall on both sides of the eager crossover (eager
 * calls run ahead of the calls before them and reuse the inbox slots, mesh calls go between; an
 * AlltoAllV mixes both in one call: its small blocks go through inboxes, its large ones direct), in
 * and out of place (AllGatherV, ReduceScatterV). Then one synchronize and every receive buffer
 * checked on the host, gaps and one element past the end included (they keep their sentinel).
 * coll_vops mixed CALLS: the same among Broadcasts and AllReduces of 0 to ~3000 int32 (the
 * protocols side by side: one-way runs of a root, eager calls in header mode, AlltoAllV in record
 * mode, mesh calls; the running ahead of each past the others). */
#include "coll_vops.h"

#include <string.h>

/* The V kinds, then (mixed only) the fixed calls the V-ops run among. */
enum { K_AGV, K_RSV, K_A2AVC, K_A2AV, K_V_KINDS, K_BCAST = K_V_KINDS, K_AR, K_KINDS };
static const char *const kind_name[K_KINDS] = {"AllGatherV", "ReduceScatterV", "AlltoAllVC", "AlltoAllV",
                                               "Broadcast",  "AllReduce"};

typedef struct vcall {
    int kind;
    bool inplace;
    uint32_t root; /* Broadcast */
    uint64_t m[VOPS_SEQ_MAX_RANKS * VOPS_SEQ_MAX_RANKS]; /* AlltoAll(V)C: the matrix; else cnt[n], then dsp[n] */
    uint64_t t[4 * VOPS_SEQ_MAX_RANKS];                  /* AlltoAllV: send counts, displs, recv counts, displs */
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

/* AlltoAllV: this rank's row and column of the matrix, displacements with gaps of 0..2, the
 * receive side in reverse peer order (so that the displacements really matter). */
static void a2av_tables(vcall *v, uint32_t n, uint32_t r, uint64_t *s)
{
    uint64_t *sc = v->t, *sd = v->t + n, *rc = v->t + 2 * n, *rd = v->t + 3 * n, cur = 0;
    for (uint32_t j = 0; j < n; j++) {
        sc[j] = v->m[(size_t)r * n + j], sd[j] = cur;
        cur += sc[j] + mix64(s) % 3;
    }
    v->in_elems = cur;
    cur = 0;
    for (uint32_t j = n; j-- > 0;) {
        rc[j] = v->m[(size_t)j * n + r], rd[j] = cur;
        cur += rc[j] + mix64(s) % 3;
    }
    v->out_elems = cur;
}

/* My IN (host, in_elems + 1) and the OUT I must see (v->want), for call it. */
static int32_t *inputs(prog_env *e, vcall *v, uint32_t it, uint64_t extent)
{
    uint32_t n = e->n, r = e->rank;
    const uint64_t *cnt = v->m, *dsp = v->m + n;
    int32_t *in;
    if (v->kind == K_A2AV) {
        const uint64_t *sc = v->t, *sd = v->t + n, *rc = v->t + 2 * n, *rd = v->t + 3 * n;
        in = image(v->in_elems, -2);
        v->want = image(v->out_elems, -1);
        for (uint32_t j = 0; j < n; j++) {
            for (uint64_t i = 0; i < sc[j]; i++)
                in[sd[j] + i] = val(it, r, j, i);
            for (uint64_t i = 0; i < rc[j]; i++)
                v->want[rd[j] + i] = val(it, j, r, i);
        }
    } else if (v->kind == K_A2AVC) {
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

/* Broadcast (in place, the root the same for 3 rounds of the kinds) or AllReduce (int32 sum, in
 * place every other round): count elements, one sentinel past them. */
static void prepare_fixed(prog_env *e, vcall *v, uint32_t it, uint32_t kinds, uint64_t count)
{
    uint32_t n = e->n, r = e->rank;
    v->inplace = v->kind == K_BCAST || (it / kinds) % 2 == 1;
    v->root = (it / (3 * kinds)) % n;
    v->in_elems = v->out_elems = count;
    v->checked = count + 1;
    v->want = image(count, -1);
    int32_t *in = image(count, -1);
    for (uint64_t i = 0; i < count; i++) {
        uint32_t sum = 0; /* int32 sums wrap alike on the device */
        for (uint32_t q = 0; q < n; q++)
            sum += (uint32_t)val(it, q, 0, i);
        v->want[i] = v->kind == K_BCAST ? val(it, v->root, 0, i) : (int32_t)sum;
        if (v->kind == K_AR || r == v->root)
            in[i] = val(it, r, 0, i);
    }
    v->base = v->in = dev_alloc((count + 1) * sizeof *in);
    to_dev(v->in, in, (count + 1) * sizeof *in);
    v->out = v->in;
    if (!v->inplace) {
        int32_t *img = image(count, -1);
        v->base = NULL;
        v->out = dev_alloc((count + 1) * sizeof *img);
        to_dev(v->out, img, (count + 1) * sizeof *img);
        free(img);
    }
    free(in);
}

/* mixed: the kinds in turn, Broadcasts in runs (a call goes one-way after a Broadcast of the same
 * root, rt_oneway.c) so that one-way runs start and drain between the other calls. */
static const int k_mixed[] = {K_AGV, K_BCAST, K_BCAST, K_BCAST, K_RSV, K_AR, K_A2AVC, K_BCAST, K_BCAST, K_A2AV, K_AR};
#define K_MIXED ((uint32_t)(sizeof k_mixed / sizeof k_mixed[0]))

static void prepare(prog_env *e, vcall *v, uint32_t it, bool mixed)
{
    uint32_t n = e->n;
    uint64_t s = 0xb2bull + it, extent = 0;
    bool big = mix64(&s) % 3 == 0;
    v->kind = mixed ? k_mixed[it % K_MIXED] : (int)(it % K_V_KINDS);
    if (v->kind >= K_V_KINDS) {
        prepare_fixed(e, v, it, K_MIXED, block(&s, big));
        return;
    }
    bool a2a = v->kind == K_A2AVC || v->kind == K_A2AV;
    v->inplace = !a2a && (it / (mixed ? K_MIXED : K_V_KINDS)) % 2 == 1;
    if (a2a)
        for (uint32_t j = 0; j < n * n; j++) /* AlltoAllV: small and large blocks in one call */
            v->m[j] = block(&s, v->kind == K_A2AV ? mix64(&s) % 3 == 0 : big);
    else
        layout_tables(v, n, &s, big, &extent);
    if (v->kind == K_A2AV)
        a2av_tables(v, n, e->rank, &s);
    int32_t *in = inputs(e, v, it, extent);
    uint64_t my = a2a ? 0 : v->m[n + e->rank]; /* dsp[rank] */
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
    case K_A2AV:
        return HcclAlltoAllV(v->in, v->t, v->t + n, HCCL_DATA_TYPE_INT32, v->out, v->t + 2 * n, v->t + 3 * n,
                             HCCL_DATA_TYPE_INT32, e->comm, e->stream);
    case K_BCAST: return HcclBroadcast(v->out, v->out_elems, HCCL_DATA_TYPE_INT32, v->root, e->comm, e->stream);
    case K_AR:
        return HcclAllReduce(v->in, v->out, v->out_elems, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, e->comm, e->stream);
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

int vops_backtoback(prog_env *e, uint32_t calls, bool mixed)
{
    if (e->n > VOPS_SEQ_MAX_RANKS) {
        printf("backtoback supports up to %u ranks\n", VOPS_SEQ_MAX_RANKS);
        return 1;
    }
    vcall *v = xmalloc(calls * sizeof *v);
    for (uint32_t it = 0; it < calls; it++)
        prepare(e, &v[it], it, mixed);
    ACL_OK(aclrtSynchronizeDevice());
    for (uint32_t it = 0; it < calls; it++)
        HCCL_OK(issue(e, &v[it]));
    ACL_OK(aclrtSynchronizeStream(e->stream));
    int bad = 0;
    for (uint32_t it = 0; it < calls; it++)
        bad |= check_and_free(e, &v[it], it);
    free(v);
    printf("rank %u: %u back-to-back %s calls checked, %s\n", e->rank, calls, mixed ? "V and fixed" : "V",
           bad ? "FAILED" : "all exact");
    return bad;
}

/* coll_vops a2av-reuse ROUNDS: rounds of 8 AlltoAllV into one OUT, no synchronize within a round,
 * alternating two INs: A's blocks small (through the inboxes), B's large (straight into OUT), the
 * same displacements, so a call's blocks land where the call before put its own. After each round,
 * OUT must hold the last call's blocks. A call that receives a large block must not let its peers
 * write its OUT before the calls before it end (rt_prog_ahead.c, receives_directly): the call before
 * still copies its small blocks out of the inbox into the same places. */
enum { REUSE_CALLS = 8, REUSE_SMALL = 4, REUSE_LARGE = 3000 };

int vops_a2av_reuse(prog_env *e, uint32_t rounds)
{
    uint32_t n = e->n, r = e->rank;
    if (n > VOPS_SEQ_MAX_RANKS)
        return printf("a2av-reuse supports up to %u ranks\n", VOPS_SEQ_MAX_RANKS), 1;
    uint64_t t[2][4 * VOPS_SEQ_MAX_RANKS], per = REUSE_LARGE, elems = n * per;
    int32_t *in[2], *out = dev_alloc(elems * sizeof(int32_t)), *h = xmalloc(elems * sizeof *h);
    for (int k = 0; k < 2; k++) {
        for (uint32_t j = 0; j < n; j++) {
            t[k][j] = t[k][2 * n + j] = k ? REUSE_LARGE : REUSE_SMALL;
            t[k][n + j] = t[k][3 * n + j] = j * per;
        }
        for (uint64_t i = 0; i < elems; i++)
            h[i] = val((uint32_t)k, r, (uint32_t)(i / per), i % per);
        in[k] = dev_alloc(elems * sizeof(int32_t));
        to_dev(in[k], h, elems * sizeof *h);
    }
    int bad = 0;
    for (uint32_t round = 0; round < rounds && !bad; round++) {
        for (uint32_t c = 0; c < REUSE_CALLS; c++) {
            uint32_t k = (c + round) % 2;
            HCCL_OK(HcclAlltoAllV(in[k], t[k], t[k] + n, HCCL_DATA_TYPE_INT32, out, t[k] + 2 * n, t[k] + 3 * n,
                                  HCCL_DATA_TYPE_INT32, e->comm, e->stream));
        }
        ACL_OK(aclrtSynchronizeStream(e->stream));
        uint32_t last = (REUSE_CALLS - 1 + round) % 2;
        to_host(h, out, elems * sizeof *h);
        for (uint32_t j = 0; j < n && !bad; j++)
            for (uint64_t i = 0; i < t[last][2 * n + j]; i++)
                if (h[j * per + i] != val(last, j, r, i)) {
                    printf("FAIL round %u rank %u: element %llu from rank %u is %d, want %d (the last call's)\n",
                           round, r, (unsigned long long)i, j, h[j * per + i], val(last, j, r, i));
                    bad = 1;
                    break;
                }
    }
    dev_free(in[0]);
    dev_free(in[1]);
    dev_free(out);
    free(h);
    printf("rank %u: %u rounds of AlltoAllV into one OUT, %s\n", r, rounds, bad ? "FAILED" : "all exact");
    return bad;
}
