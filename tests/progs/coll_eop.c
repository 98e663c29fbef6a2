/* Checked ops issued back to back (coll_eop.h). */
#include "coll_eop.h"

#include <string.h>
#include <unistd.h>

const char *const ecoll_name[E_NKINDS] = {
    "AllReduce",     "AllGather",       "ReduceScatter", "AlltoAll", "Broadcast", "Reduce",
    "Scatter",       "BatchSendRecv",   "group Send/Recv", "Send/Recv", "Barrier", "AlltoAllV",
    "AlltoAllVC",    "AllGatherV",      "ReduceScatterV"};

/* The end of rank r's blocks: the largest displacement plus count of its tables counts, displs. */
static uint64_t v_span(const eop *o, uint32_t n, int counts, int displs, uint32_t r)
{
    uint64_t end = 0;
    for (uint32_t j = 0; j < n; j++) {
        uint64_t e = eop_vt(o, n, counts, r)[j] + eop_vt(o, n, displs, r)[j];
        end = e > end ? e : end;
    }
    return end;
}

static void v_layout(eop *o, uint32_t n)
{
    bool ag = o->coll == E_AGV, rs = o->coll == E_RSV;
    o->in_elems = o->out_elems = 0;
    for (uint32_t r = 0; r < n; r++) {
        uint64_t in = ag ? eop_vt(o, n, EOP_SC, r)[0] : v_span(o, n, EOP_SC, EOP_SD, r);
        uint64_t out = rs ? eop_vt(o, n, EOP_RC, r)[0] : v_span(o, n, EOP_RC, EOP_RD, r);
        o->in_elems = in > o->in_elems ? in : o->in_elems;
        o->out_elems = out > o->out_elems ? out : o->out_elems;
    }
}

void eop_layout(eop *o, uint32_t n)
{
    uint64_t c = o->count;
    if (o->vt) {
        v_layout(o, n);
        return;
    }
    switch (o->coll) {
    case E_AG: o->in_elems = c, o->out_elems = n * c; break;
    case E_RS: o->in_elems = n * c, o->out_elems = c; break;
    case E_A2A: o->in_elems = n * c, o->out_elems = n * c; break;
    case E_SC: o->in_elems = n * c, o->out_elems = c; break;
    case E_BAR: o->in_elems = 0, o->out_elems = 0; break;
    default: o->in_elems = c, o->out_elems = c;
    }
}

bool eop_reduces(ecoll c)
{
    return c == E_AR || c == E_RS || c == E_RED || c == E_RSV;
}

/* The communicator an op runs on: the program's, or the sub-communicator it names. */
static prog_env *env_of(const eop *o, prog_env *e)
{
    return o->env ? o->env : e;
}

/* Buffers and inputs; in place as HCCL defines it (AllGather: my block of OUT; ReduceScatter:
 * OUT is my block of IN). */
static void prepare(eop *o, prog_env *e, uint32_t salt)
{
    e = env_of(o, e);
    size_t es = dt_size(o->dt);
    gen_spec g = {eop_reduces(o->coll) ? GEN_REDUCE : GEN_BITS, o->dt, o->op, e->n, salt};
    o->host_in = xmalloc(e->n * o->in_elems * es + 1);
    for (uint32_t r = 0; r < e->n; r++)
        gen_fill(&g, r, 0, o->in_elems, (char *)o->host_in + r * o->in_elems * es);
    const void *mine = (char *)o->host_in + e->rank * o->in_elems * es;
    if (o->inplace && o->coll == E_AG) {
        o->out = dev_alloc(o->out_elems * es);
        o->in = (char *)o->out + e->rank * o->count * es;
    } else if (o->inplace) {
        o->in = dev_alloc(o->in_elems * es);
        o->out = o->coll == E_RS ? (char *)o->in + e->rank * o->count * es : o->in;
    } else {
        o->in = dev_alloc(o->in_elems * es);
        o->out = o->coll == E_BC ? o->in : dev_alloc(o->out_elems * es);
        if (o->out != o->in) {
            void *s = xmalloc(o->out_elems * es + 1);
            fill_sentinel(s, o->out_elems * es);
            to_dev(o->out, s, o->out_elems * es);
            free(s);
        }
    }
    to_dev(o->in, mine, o->in_elems * es);
}

static aclrtStream stream_of(const eop *o, const prog_env *e)
{
    return o->stream ? o->stream : e->stream;
}

static HcclResult issue_group(eop *o, prog_env *e, aclrtStream s, uint32_t to, uint32_t from)
{
    HcclResult rc = HcclGroupStart();
    for (uint32_t k = 0; k < 2 && rc == HCCL_SUCCESS; k++)
        rc = (k + o->root) % 2 ? HcclRecv(o->out, o->count, o->dt, from, e->comm, s)
                               : HcclSend(o->in, o->count, o->dt, to, e->comm, s);
    HcclResult end = HcclGroupEnd();
    return rc != HCCL_SUCCESS ? rc : end;
}

static HcclResult issue_p2p(eop *o, prog_env *e, aclrtStream s)
{
    uint32_t to = (e->rank + o->shift) % e->n, from = (e->rank + e->n - o->shift) % e->n;
    if (o->coll == E_SR) {
        HcclSendRecvItem items[2] = {{HCCL_SEND, o->in, o->count, o->dt, to},
                                     {HCCL_RECV, o->out, o->count, o->dt, from}};
        return HcclBatchSendRecv(items, 2, e->comm, s);
    }
    if (o->coll == E_GRP)
        return issue_group(o, e, s, to, from);
    if (e->rank == o->root)
        return HcclSend(o->in, o->count, o->dt, to, e->comm, s);
    if (e->rank == (o->root + o->shift) % e->n)
        return HcclRecv(o->out, o->count, o->dt, o->root, e->comm, s);
    return HCCL_SUCCESS; /* not a party to it */
}

static HcclResult issue_v(eop *o, prog_env *e, aclrtStream s)
{
    uint32_t n = e->n, r = e->rank;
    const uint64_t *sc = eop_vt(o, n, EOP_SC, r), *sd = eop_vt(o, n, EOP_SD, r);
    const uint64_t *rc = eop_vt(o, n, EOP_RC, r), *rd = eop_vt(o, n, EOP_RD, r);
    switch (o->coll) {
    case E_A2AV: return HcclAlltoAllV(o->in, sc, sd, o->dt, o->out, rc, rd, o->dt, e->comm, s);
    case E_A2AVC: return HcclAlltoAllVC(o->in, eop_vt(o, n, EOP_SC, 0), o->dt, o->out, o->dt, e->comm, s);
    case E_AGV: return HcclAllGatherV(o->in, sc[0], o->out, rc, rd, o->dt, e->comm, s);
    default: return HcclReduceScatterV(o->in, sc, sd, o->out, rc[0], o->dt, o->op, e->comm, s);
    }
}

static HcclResult issue(eop *o, prog_env *e)
{
    e = env_of(o, e);
    aclrtStream s = stream_of(o, e);
    if (o->vt)
        return issue_v(o, e, s);
    switch (o->coll) {
    case E_AR: return HcclAllReduce(o->in, o->out, o->count, o->dt, o->op, e->comm, s);
    case E_AG: return HcclAllGather(o->in, o->out, o->count, o->dt, e->comm, s);
    case E_RS: return HcclReduceScatter(o->in, o->out, o->count, o->dt, o->op, e->comm, s);
    case E_A2A: return HcclAlltoAll(o->in, o->count, o->dt, o->out, o->count, o->dt, e->comm, s);
    case E_BC: return HcclBroadcast(o->in, o->count, o->dt, o->root, e->comm, s);
    case E_RED: return HcclReduce(o->in, o->out, o->count, o->dt, o->op, o->root, e->comm, s);
    case E_SC: return HcclScatter(o->in, o->out, o->count, o->dt, o->root, e->comm, s);
    case E_BAR: return HcclBarrier(e->comm, s);
    default: return issue_p2p(o, e, s);
    }
}

/* A V form's OUT: every block where this rank's tables put it, the sentinel in the gaps and past
 * its blocks (a call that writes outside them fails). */
static void expect_v(const eop *o, const prog_env *e, void *want)
{
    size_t es = dt_size(o->dt);
    uint32_t n = e->n, r = e->rank;
    const char *in = o->host_in;
    const uint64_t *rc = eop_vt(o, n, EOP_RC, r), *rd = eop_vt(o, n, EOP_RD, r);
    fill_sentinel(want, o->out_elems * es);
    if (o->coll == E_RSV) {
        uint64_t at = eop_vt(o, n, EOP_SD, 0)[r]; /* the same on every rank */
        memcpy(want, in + at * es, rc[0] * es);
        for (uint32_t j = 1; j < n; j++)
            ref_reduce(want, in + (j * o->in_elems + at) * es, o->dt, o->op, rc[0]);
        return;
    }
    for (uint32_t j = 0; j < n; j++) { /* block j comes from rank j's IN */
        uint64_t from = o->coll == E_AGV ? 0 : eop_vt(o, n, EOP_SD, j)[r];
        memcpy((char *)want + rd[j] * es, in + (j * o->in_elems + from) * es, rc[j] * es);
    }
}

/* What this rank's OUT must hold; false when nothing is checked (Reduce off the root, a Send/Recv
 * this rank does not receive, a Barrier). */
static bool expect(const eop *o, const prog_env *e, void *want)
{
    if (o->vt) {
        expect_v(o, e, want);
        return true;
    }
    size_t es = dt_size(o->dt);
    uint64_t c = o->count, ie = o->in_elems;
    const char *in = o->host_in;
    uint32_t from = (e->rank + e->n - o->shift) % e->n;
    switch (o->coll) {
    case E_AR:
    case E_RED:
    case E_RS: {
        if (o->coll == E_RED && e->rank != o->root)
            return false;
        uint64_t off = o->coll == E_RS ? e->rank * c : 0;
        memcpy(want, in + off * es, c * es);
        for (uint32_t r = 1; r < e->n; r++)
            ref_reduce(want, in + (r * ie + off) * es, o->dt, o->op, c);
        return true;
    }
    case E_AG:
        for (uint32_t j = 0; j < e->n; j++)
            memcpy((char *)want + j * c * es, in + j * ie * es, c * es);
        return true;
    case E_A2A:
        for (uint32_t j = 0; j < e->n; j++)
            memcpy((char *)want + j * c * es, in + (j * ie + e->rank * c) * es, c * es);
        return true;
    case E_BC: memcpy(want, in + o->root * ie * es, c * es); return true;
    case E_SC: memcpy(want, in + (o->root * ie + e->rank * c) * es, c * es); return true;
    case E_P2P: /* the receiver's OUT holds the sender's IN, as a ring's does */
    case E_SR:
    case E_GRP:
        if (o->coll == E_P2P && from != o->root)
            return false;
        memcpy(want, in + from * ie * es, c * es);
        return true;
    default: return false;
    }
}

static int check(const eop *o, prog_env *e, int i)
{
    e = env_of(o, e);
    size_t es = dt_size(o->dt);
    void *want = xmalloc(o->out_elems * es + 1), *got = xmalloc(o->out_elems * es + 1);
    int bad = 0;
    if (expect(o, e, want)) {
        to_host(got, o->out, o->out_elems * es);
        for (uint64_t k = 0; k < o->out_elems && !bad; k++)
            if (memcmp((char *)got + k * es, (char *)want + k * es, es)) {
                char g[64], w[64];
                dt_format(g, sizeof g, o->dt, got, k);
                dt_format(w, sizeof w, o->dt, want, k);
                char count[32];
                snprintf(count, sizeof count, o->vt ? "its tables" : "count=%llu", (unsigned long long)o->count);
                FAILIF(1, "rank %u%s op %d %s(%s, %s, %s, root=%u, shift=%u, %s, %s stream): element %llu is %s, "
                       "expected %s", e->rank, o->env ? " of a sub-communicator" : "", i, ecoll_name[o->coll], count,
                       dt_name(o->dt),
                       op_name(o->op), o->root, o->shift, o->inplace ? "in place" : "out of place",
                       o->stream ? "second" : "first", (unsigned long long)k, g, w);
            }
    }
    free(want);
    free(got);
    return bad;
}

static void release(eop *o)
{
    bool own_out = o->out != o->in && !(o->inplace && o->coll == E_RS);
    if (o->inplace && o->coll == E_AG)
        dev_free(o->out);
    else {
        dev_free(o->in);
        if (own_out)
            dev_free(o->out);
    }
    free(o->host_in);
    free(o->vt);
}

static void stall_fn(void *arg)
{
    (void)arg;
    usleep(30000);
}

/* Prepares ops[0, nops) and issues ops[0, upto) back to back until one fails (its result, or
 * success). */
static HcclResult prepare_and_issue(prog_env *e, eop *ops, int nops, int upto, uint32_t salt0)
{
    for (int i = 0; i < nops; i++)
        prepare(&ops[i], e, salt0 + (uint32_t)i);
    ACL_OK(aclrtSynchronizeDevice());
    HcclResult rc = HCCL_SUCCESS;
    for (int i = 0; i < upto && rc == HCCL_SUCCESS; i++) {
        if (ops[i].hold && (env_of(&ops[i], e)->rank == ops[i].root) == (ops[i].coll == E_RED))
            ACL_OK(aclrtLaunchHostFunc(stream_of(&ops[i], e), stall_fn, NULL));
        rc = issue(&ops[i], e);
        if (rc != HCCL_SUCCESS)
            printf("rank %u: call %d (%s) returned %d (%s)\n", e->rank, i, ecoll_name[ops[i].coll], (int)rc,
                   HcclGetErrorString(rc));
    }
    return rc;
}

/* Synchronizes the second stream of any op (the program's own is the caller's). */
static aclError sync_other_streams(const eop *ops, int nops)
{
    aclError worst = ACL_SUCCESS;
    for (int i = 0; i < nops; i++)
        if (ops[i].stream) {
            aclError se = aclrtSynchronizeStream(ops[i].stream);
            worst = se != ACL_SUCCESS ? se : worst;
        }
    return worst;
}

int eop_run_failing(prog_env *e, eop *ops, int nops, uint32_t salt0, const char *what, const char *failure)
{
    double t0 = prog_now_s();
    HcclResult rc = prepare_and_issue(e, ops, nops, nops, salt0);
    if (sync_other_streams(ops, nops) != ACL_SUCCESS && rc == HCCL_SUCCESS)
        rc = HCCL_E_INTERNAL; /* the second stream failed: as if a call had returned it */
    bool seen = prog_saw_failure(e, rc, what);
    if (!seen) {
        char next[160];
        snprintf(next, sizeof next, "HcclBarrier after %s", what);
        seen = prog_saw_failure(e, HcclBarrier(e->comm, e->stream), next);
    }
    printf("rank %u: %s %s after %.2f s\n", e->rank, failure, seen ? "DETECTED" : "NOT DETECTED", prog_now_s() - t0);
    for (int i = 0; i < nops; i++)
        release(&ops[i]);
    free(ops);
    return seen ? 0 : 1;
}

_Noreturn void eop_run_exit(prog_env *e, eop *ops, int at, uint32_t salt0, bool sync)
{
    HCCL_OK(prepare_and_issue(e, ops, at, at, salt0));
    if (sync) {
        ACL_OK(aclrtSynchronizeStream(e->stream));
        ACL_OK(sync_other_streams(ops, at));
    }
    printf("rank %u: exiting after %d calls%s, without HcclCommDestroy\n", e->rank, at,
           sync ? " and their synchronize" : ", some of them not done");
    fflush(stdout);
    _exit(0);
}

int eop_run_back_to_back(prog_env *e, eop *ops, int nops, uint32_t salt0, const char *what)
{
    HCCL_OK(prepare_and_issue(e, ops, nops, nops, salt0));
    ACL_OK(aclrtSynchronizeStream(e->stream));
    ACL_OK(sync_other_streams(ops, nops));
    int bad = 0;
    for (int i = 0; i < nops; i++) {
        bad |= check(&ops[i], e, i);
        release(&ops[i]);
    }
    free(ops);
    printf("rank %u: %d back-to-back %s checked, %s\n", e->rank, nops, what, bad ? "FAILED" : "all exact");
    return bad;
}
