/* Runners for the per-rank-count collectives (uneven counts, zero counts, displacements with
 * gaps in reverse order, so a wrong displacement lands somewhere checked) and point to point
 * (a ring: send to the right, receive from the left). Whole receive buffers are checked,
 * gaps included: they must keep their sentinel. */
#include "coll_check.h"

#include <string.h>

/* Elements rank i sends rank j: uneven, some zero, all zero for count 0. */
static uint64_t a2a_count(uint64_t count, uint32_t n, uint32_t i, uint32_t j)
{
    if (count == 0)
        return 0;
    return ((uint64_t)i * n + j) % 4 == 1 ? 0 : count + (i + 2 * j) % 3;
}

/* Per-rank count for AllGatherV / ReduceScatterV. */
static uint64_t v_count(uint64_t count, uint32_t j)
{
    if (count == 0)
        return 0;
    return j % 3 == 1 ? 0 : count + j % 2;
}

/* Displacements of blocks cnt[0..n) placed in reverse order with `gap` elements between. */
static uint64_t rev_displs(const uint64_t *cnt, uint32_t n, uint64_t gap, uint64_t *dsp)
{
    uint64_t off = 0;
    for (uint32_t j = n; j-- > 0;) {
        dsp[j] = off;
        off += cnt[j] + gap;
    }
    return off;
}

static uint64_t fwd_displs(const uint64_t *cnt, uint32_t n, uint64_t gap, uint64_t *dsp)
{
    uint64_t off = 0;
    for (uint32_t j = 0; j < n; j++) {
        dsp[j] = off;
        off += cnt[j] + gap;
    }
    return off;
}

static void *sentinel_buf(uint64_t elems, size_t es)
{
    void *h = xmalloc(elems * es);
    fill_sentinel(h, elems * es);
    return h;
}

/* Runs the call already enqueued (rc), syncs, compares recv (elems) with want. */
static cc_result check_recv(cc_ctx *c, const cc_case *k, HcclResult rc, void *recv, const void *want,
                            uint64_t elems)
{
    cc_result r = cc_call(c, k, rc);
    if (r != CC_PASS)
        return r;
    cc_sync(c, k);
    size_t es = dt_size(k->dt);
    void *got = xmalloc(elems * es);
    to_host(got, recv, elems * es);
    r = cc_compare(c, k, got, want, elems, "recvBuf");
    free(got);
    return r;
}

cc_result cc_alltoallv(cc_ctx *c, const cc_case *k)
{
    uint32_t me = c->e->rank, n = c->e->n;
    size_t es = dt_size(k->dt);
    uint64_t *v = xmalloc(6 * n * sizeof *v), *sc = v, *sd = v + n, *rc = v + 2 * n, *rd = v + 3 * n;
    uint64_t *pc = v + 4 * n, *pd = v + 5 * n; /* a peer's send counts / displacements */
    for (uint32_t j = 0; j < n; j++) {
        sc[j] = a2a_count(k->count, n, me, j);
        rc[j] = a2a_count(k->count, n, j, me);
    }
    uint64_t in_elems = fwd_displs(sc, n, 1, sd), out_elems = rev_displs(rc, n, 2, rd);
    void *in = cc_input(k, GEN_BITS, n, me, 0, in_elems);
    char *want = sentinel_buf(out_elems, es);
    gen_spec g = {GEN_BITS, k->dt, k->op, n, k->salt};
    for (uint32_t j = 0; j < n; j++) {
        for (uint32_t t = 0; t < n; t++)
            pc[t] = a2a_count(k->count, n, j, t);
        fwd_displs(pc, n, 1, pd);
        gen_fill(&g, j, pd[me], rc[j], want + rd[j] * es);
    }
    void *send = dev_alloc(in_elems * es), *recv = dev_alloc(out_elems * es), *s = sentinel_buf(out_elems, es);
    to_dev(send, in, in_elems * es);
    to_dev(recv, s, out_elems * es);
    HcclResult hr = HcclAlltoAllV(send, sc, sd, k->dt, recv, rc, rd, k->dt, c->e->comm, c->e->stream);
    cc_result r = check_recv(c, k, hr, recv, want, out_elems);
    dev_free(send);
    dev_free(recv);
    free(s);
    free(in);
    free(want);
    free(v);
    return r;
}

cc_result cc_alltoallvc(cc_ctx *c, const cc_case *k)
{
    uint32_t me = c->e->rank, n = c->e->n;
    size_t es = dt_size(k->dt);
    uint64_t *m = xmalloc((size_t)n * n * sizeof *m), in_elems = 0, out_elems = 0;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = 0; j < n; j++)
            m[i * n + j] = a2a_count(k->count, n, i, j);
    for (uint32_t j = 0; j < n; j++) {
        in_elems += m[me * n + j];
        out_elems += m[j * n + me];
    }
    void *in = cc_input(k, GEN_BITS, n, me, 0, in_elems);
    char *want = xmalloc(out_elems * es + 1);
    gen_spec g = {GEN_BITS, k->dt, k->op, n, k->salt};
    uint64_t roff = 0;
    for (uint32_t i = 0; i < n; i++) { /* packed: from rank i, in rank order */
        uint64_t soff = 0;
        for (uint32_t t = 0; t < me; t++)
            soff += m[i * n + t];
        gen_fill(&g, i, soff, m[i * n + me], want + roff * es);
        roff += m[i * n + me];
    }
    void *send = dev_alloc(in_elems * es), *recv = dev_alloc(out_elems * es), *s = sentinel_buf(out_elems, es);
    to_dev(send, in, in_elems * es);
    to_dev(recv, s, out_elems * es);
    HcclResult hr = HcclAlltoAllVC(send, m, k->dt, recv, k->dt, c->e->comm, c->e->stream);
    cc_result r = check_recv(c, k, hr, recv, want, out_elems);
    dev_free(send);
    dev_free(recv);
    free(s);
    free(in);
    free(want);
    free(m);
    return r;
}

cc_result cc_allgatherv(cc_ctx *c, const cc_case *k)
{
    uint32_t me = c->e->rank, n = c->e->n;
    size_t es = dt_size(k->dt);
    uint64_t *cnt = xmalloc(2 * n * sizeof *cnt), *dsp = cnt + n;
    for (uint32_t j = 0; j < n; j++)
        cnt[j] = v_count(k->count, j);
    uint64_t out_elems = rev_displs(cnt, n, 1, dsp);
    void *in = cc_input(k, GEN_BITS, n, me, 0, cnt[me]);
    char *want = sentinel_buf(out_elems, es);
    gen_spec g = {GEN_BITS, k->dt, k->op, n, k->salt};
    for (uint32_t j = 0; j < n; j++)
        gen_fill(&g, j, 0, cnt[j], want + dsp[j] * es);
    void *recv = dev_alloc(out_elems * es), *s = sentinel_buf(out_elems, es);
    /* in place: sendBuf = recvBuf + recvDispls[rank], already holding this rank's block */
    void *send = k->inplace ? (char *)recv + dsp[me] * es : dev_alloc(cnt[me] * es);
    if (k->inplace)
        memcpy((char *)s + dsp[me] * es, in, cnt[me] * es);
    to_dev(recv, s, out_elems * es);
    if (!k->inplace)
        to_dev(send, in, cnt[me] * es);
    HcclResult hr = HcclAllGatherV(send, cnt[me], recv, cnt, dsp, k->dt, c->e->comm, c->e->stream);
    cc_result r = check_recv(c, k, hr, recv, want, out_elems);
    if (!k->inplace)
        dev_free(send);
    dev_free(recv);
    free(s);
    free(in);
    free(want);
    free(cnt);
    return r;
}

cc_result cc_reducescatterv(cc_ctx *c, const cc_case *k)
{
    uint32_t me = c->e->rank, n = c->e->n;
    size_t es = dt_size(k->dt);
    uint64_t *cnt = xmalloc(2 * n * sizeof *cnt), *dsp = cnt + n;
    for (uint32_t j = 0; j < n; j++)
        cnt[j] = v_count(k->count, j);
    uint64_t in_elems = rev_displs(cnt, n, 1, dsp);
    void *in = cc_input(k, GEN_REDUCE, n, me, 0, in_elems);
    void *want = xmalloc(cnt[me] * es + 1);
    cc_expect_reduce(k, n, dsp[me], cnt[me], want);
    void *send = dev_alloc(in_elems * es), *s = sentinel_buf(cnt[me], es);
    /* in place: recvBuf = sendBuf + sendDispls[rank] */
    void *recv = k->inplace ? (char *)send + dsp[me] * es : dev_alloc(cnt[me] * es);
    to_dev(send, in, in_elems * es);
    if (!k->inplace)
        to_dev(recv, s, cnt[me] * es);
    HcclResult hr = HcclReduceScatterV(send, cnt, dsp, recv, cnt[me], k->dt, k->op, c->e->comm, c->e->stream);
    cc_result r = check_recv(c, k, hr, recv, want, cnt[me]);
    dev_free(send);
    if (!k->inplace)
        dev_free(recv);
    free(s);
    free(in);
    free(want);
    free(cnt);
    return r;
}

/* Ring p2p: mode 0 = HcclSend/HcclRecv (even ranks send first), 1 = one HcclBatchSendRecv,
 * 2 = HcclSend + HcclRecv inside HcclGroupStart/End. */
static cc_result ring(cc_ctx *c, const cc_case *k, int mode)
{
    uint32_t me = c->e->rank, n = c->e->n, right = (me + 1) % n, left = (me + n - 1) % n;
    uint64_t cnt = k->count;
    size_t es = dt_size(k->dt);
    void *in = cc_input(k, GEN_BITS, n, me, 0, cnt), *want = cc_input(k, GEN_BITS, n, left, 0, cnt);
    void *send = dev_alloc(cnt * es), *recv = dev_alloc(cnt * es), *s = sentinel_buf(cnt, es);
    to_dev(send, in, cnt * es);
    to_dev(recv, s, cnt * es);
    HcclComm comm = c->e->comm;
    aclrtStream st = c->e->stream;
    HcclResult hr;
    if (mode == 1) {
        HcclSendRecvItem it[2] = {{HCCL_SEND, send, cnt, k->dt, right}, {HCCL_RECV, recv, cnt, k->dt, left}};
        hr = HcclBatchSendRecv(it, 2, comm, st);
    } else if (mode == 2) {
        HCCL_OK(HcclGroupStart());
        hr = HcclSend(send, cnt, k->dt, right, comm, st);
        HcclResult h2 = HcclRecv(recv, cnt, k->dt, left, comm, st);
        HcclResult h3 = HcclGroupEnd();
        hr = hr != HCCL_SUCCESS ? hr : h2 != HCCL_SUCCESS ? h2 : h3;
    } else if (me % 2 == 0) {
        hr = HcclSend(send, cnt, k->dt, right, comm, st);
        if (hr == HCCL_SUCCESS)
            hr = HcclRecv(recv, cnt, k->dt, left, comm, st);
    } else {
        hr = HcclRecv(recv, cnt, k->dt, left, comm, st);
        if (hr == HCCL_SUCCESS)
            hr = HcclSend(send, cnt, k->dt, right, comm, st);
    }
    cc_result r = check_recv(c, k, hr, recv, want, cnt);
    dev_free(send);
    dev_free(recv);
    free(s);
    free(in);
    free(want);
    return r;
}

cc_result cc_sendrecv(cc_ctx *c, const cc_case *k)
{
    return ring(c, k, 0);
}

cc_result cc_batchsendrecv(cc_ctx *c, const cc_case *k)
{
    return ring(c, k, 1);
}

cc_result cc_group(cc_ctx *c, const cc_case *k)
{
    return ring(c, k, 2);
}
