/* The verifier's step semantics: synchronisation with vector clocks, buffer accesses with the
 * fetch, bounds and race checks, symbolic data movement, byte counts and timing. */
#include <stdlib.h>
#include <string.h>

#include "algos/algo_build.h"
#include "algos/verify_int.h"

const char *vstep_name(uint8_t kind)
{
    static const char *const names[] = {"COPY", "REDUCE", "SIGNAL", "WAIT", "FORK", "JOIN", "PUBLISH", "FETCH"};
    return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "BAD";
}

algo_link vlink(const vsim *s, uint32_t a, uint32_t b)
{
    if (a == b)
        return ALGO_LINK_SELF;
    const uint32_t *so = s->topo ? s->topo->server_of : NULL;
    return !so || so[a] == so[b] ? ALGO_LINK_INTRA : ALGO_LINK_NET;
}

static uint32_t tid_of(const vsim *s, uint32_t rank, uint32_t stream)
{
    return s->tbase[rank] + stream;
}

/* Does the access (tid, clk) happen before everything thread `cur` does from now on? */
static bool hb(vsim *s, uint32_t tid, uint32_t clk, uint32_t cur)
{
    return tid == cur || vsim_vc(s, cur)[tid] >= clk;
}

/* dst = max(dst, src) elementwise, 4 lanes at a time (T is padded to a multiple of 8): the join is
 * the verifier's inner loop. Returns whether dst grew. */
typedef uint32_t vc4 __attribute__((vector_size(16)));
static bool vc_join(vsim *s, uint32_t *restrict dst, const uint32_t *restrict src)
{
    vc4 grew = {0, 0, 0, 0};
    for (uint32_t i = 0; i < s->T; i += 4) {
        vc4 a, b;
        memcpy(&a, dst + i, sizeof(a));
        memcpy(&b, src + i, sizeof(b));
        vc4 m = (vc4)(b > a);
        grew |= m;
        a = (a & ~m) | (b & m);
        memcpy(dst + i, &a, sizeof(a));
    }
    return grew[0] | grew[1] | grew[2] | grew[3];
}

static vqueue *queue(vsim *s, uint32_t from, uint32_t to, uint32_t slot)
{
    return &s->q[((size_t)from * s->n + to) * ALGO_MAX_SLOTS + slot];
}

static void snap_drop(vsim *s, uint32_t id)
{
    if (id != VSNAP_NONE && --s->snap_refs[id] == 0)
        s->freesnap[s->nfree++] = id;
}

/* th's clock grew by a join: its snapshot no longer describes it. */
static void clock_grew(vsim *s, vthr *th)
{
    snap_drop(s, th->snap);
    th->snap = VSNAP_NONE;
}

static int snap_grow(vsim *s)
{
    uint32_t cap = s->capsnap ? s->capsnap * 2 : 64;
    uint32_t *ns = realloc(s->snaps, (size_t)cap * s->T * sizeof(*ns));
    if (ns)
        s->snaps = ns;
    uint32_t *nr = ns ? realloc(s->snap_refs, (size_t)cap * sizeof(*nr)) : NULL;
    if (nr)
        s->snap_refs = nr;
    uint32_t *nf = nr ? realloc(s->freesnap, (size_t)cap * sizeof(*nf)) : NULL;
    if (nf)
        s->freesnap = nf;
    if (!nf)
        return -1;
    s->capsnap = cap;
    return 0;
}

/* A reference to a snapshot of th's clock (its own entry may be older than now: a signal carries
 * that one itself); VSNAP_NONE without data or out of memory (s->oom). */
static uint32_t snap_take(vsim *s, vthr *th)
{
    if (!s->data)
        return VSNAP_NONE;
    if (th->snap == VSNAP_NONE) {
        uint32_t id;
        if (s->nfree) {
            id = s->freesnap[--s->nfree];
        } else if (s->nsnap < s->capsnap || !snap_grow(s)) {
            id = s->nsnap++;
        } else {
            s->oom = 1;
            return VSNAP_NONE;
        }
        memcpy(&s->snaps[(size_t)id * s->T], vsim_vc(s, th->tid), s->T * sizeof(uint32_t));
        s->snap_refs[id] = 1; /* the thread's own */
        th->snap = id;
    }
    s->snap_refs[th->snap]++;
    return th->snap;
}

static int q_push(vqueue *q, vsig g)
{
    if (q->len == q->cap) {
        uint32_t cap = q->cap ? q->cap * 2 : 4;
        vsig *ns = realloc(q->sig, cap * sizeof(*ns));
        if (!ns)
            return -1;
        q->sig = ns;
        q->cap = cap;
    }
    q->sig[q->len++] = g;
    return 0;
}

/* Consumes the oldest signal of q into thread th (clock join and time). */
static void q_pop(vsim *s, vqueue *q, vthr *th, double lat)
{
    vsig g = q->sig[q->head++];
    if (s->data && g.snap != VSNAP_NONE) {
        uint32_t *vc = vsim_vc(s, th->tid);
        bool grew = vc_join(s, vc, &s->snaps[(size_t)g.snap * s->T]);
        if (vc[g.tid] < g.clk) {
            vc[g.tid] = g.clk;
            grew = true;
        }
        if (grew)
            clock_grew(s, th);
        snap_drop(s, g.snap);
    }
    if (g.t + lat > th->t)
        th->t = g.t + lat;
}

static bool stream_rule(vsim *s, vthr *th, int8_t *slot_stream, const char *what)
{
    if (*slot_stream < 0)
        *slot_stream = (int8_t)th->stream;
    if (*slot_stream == (int8_t)th->stream)
        return true;
    vsim_step_error(s, th, "%s on one (sender, receiver, slot) from two streams (%d and %u): the k-th WAIT "
                    "no longer pairs with the k-th SIGNAL", what, *slot_stream, th->stream);
    return false;
}

static int do_signal(vsim *s, vthr *th, const algo_step *st)
{
    uint32_t peer = st->u.sync.peer, slot = st->u.sync.slot, r = th->rank;
    if (peer >= s->n || slot >= ALGO_MAX_SLOTS || slot >= s->plans[r]->nslots) {
        vsim_step_error(s, th, "SIGNAL{peer %u, slot %u} out of range", peer, slot);
        return -1;
    }
    if (slot == ALGO_SLOT_PUB && (!s->pub_clk[r] || (s->data && !hb(s, tid_of(s, r, 0), s->pub_clk[r],
                                                                      tid_of(s, r, th->stream))))) {
        vsim_step_error(s, th, "PUB signal to rank %u before this rank's PUBLISH", peer);
        return -1;
    }
    vqueue *q = queue(s, r, peer, slot);
    if (!stream_rule(s, th, &q->sstream, "SIGNAL"))
        return -1;
    vsig g = {.snap = snap_take(s, th), .tid = th->tid, .clk = s->data ? vsim_vc(s, th->tid)[th->tid] : 0,
              .t = th->t};
    if (s->oom || q_push(q, g)) {
        s->oom = 1;
        return -1;
    }
    return 1;
}

/* A one-way writer's credits, given before the call: a root's from every receiver, a gather
 * writer's from the root (plan.h, INBOX). */
static int preload_credit(vsim *s, uint32_t from, uint32_t to)
{
    vsig none = {.snap = VSNAP_NONE};
    vqueue *cq = queue(s, from, to, ALGO_SLOT_CREDIT);
    if (q_push(cq, none))
        return HAL_E_NOMEM;
    cq->preload++;
    return 0;
}

int vexec_preload_credits(vsim *s)
{
    for (uint32_t r = 0; r < s->n; r++) {
        const algo_plan *p = s->plans[r];
        uint32_t root = p->op.root;
        if (!p->oneway || (p->oneway_gather ? r == root : r != root))
            continue;
        for (uint32_t q = 0; q < s->n; q++)
            if (q != r && (!p->oneway_gather || q == root) && preload_credit(s, q, r))
                return HAL_E_NOMEM;
    }
    return 0;
}

static int do_wait(vsim *s, vthr *th, const algo_step *st, bool fetch)
{
    uint32_t r = th->rank, peer = fetch ? st->u.fetch.peer : st->u.sync.peer;
    uint32_t slot = fetch ? ALGO_SLOT_PUB : st->u.sync.slot;
    if (peer >= s->n || slot >= ALGO_MAX_SLOTS || (!fetch && slot == ALGO_SLOT_PUB) || (fetch && peer == r)) {
        vsim_step_error(s, th, "%s{peer %u, slot %u} invalid (PUB is only waited through FETCH of a peer)",
                        vstep_name(st->kind), peer, slot);
        return -1;
    }
    vqueue *q = queue(s, peer, r, slot);
    if (!stream_rule(s, th, &q->wstream, fetch ? "FETCH" : "WAIT"))
        return -1;
    if (q->head == q->len)
        return 0; /* blocked */
    q_pop(s, q, th, s->cm->sync_us[vlink(s, peer, r)]);
    if (fetch) {
        vfetch *f = &s->fetch[(size_t)r * s->n + peer];
        if (f->clk && s->plans[r]->op.coll != ALGO_COLL_SENDRECV) { /* p2p: one FETCH per send item */
            vsim_step_error(s, th, "second FETCH of rank %u in one plan", peer);
            return -1;
        }
        f->tid = tid_of(s, r, th->stream);
        f->clk = s->data ? vsim_vc(s, f->tid)[f->tid] : 1;
    }
    return 1;
}

static int do_fork_join(vsim *s, vthr *th, const algo_step *st)
{
    uint32_t r = th->rank, sl = st->u.fork.stream;
    bool join = st->kind == ALGO_STEP_JOIN;
    if (th->stream != 0 || sl == 0 || sl >= s->plans[r]->nstreams) {
        vsim_step_error(s, th, "%s{%u} must run on stream 0 and name a slave stream < nstreams %u",
                        vstep_name(st->kind), sl, s->plans[r]->nstreams);
        return -1;
    }
    vthr *slave = vsim_thr(s, r, sl);
    if (join ? slave->joins || !slave->forks : slave->forks) {
        vsim_step_error(s, th, "stream %u %s", sl,
                        join ? (slave->joins ? "joined twice" : "joined before its FORK") : "forked twice");
        return -1;
    }
    if (join && slave->state != VT_DONE)
        return 0;
    uint32_t *me = s->data ? vsim_vc(s, tid_of(s, r, 0)) : NULL, *sv = s->data ? vsim_vc(s, tid_of(s, r, sl)) : NULL;
    if (join) {
        slave->joins++;
        if (me && vc_join(s, me, sv))
            clock_grew(s, th);
        if (slave->t > th->t)
            th->t = slave->t;
    } else {
        slave->forks++;
        slave->state = slave->list->nsteps ? VT_RUN : VT_DONE;
        slave->t = th->t;
        if (me && vc_join(s, sv, me))
            clock_grew(s, slave);
    }
    return 1;
}

/* Is this rank's FETCH of rank o ordered before the step (a peer's buffers are touched only after
 * it)? Reported, naming `what` of o's, when not. */
static bool fetched(vsim *s, vthr *th, uint32_t o, const char *what)
{
    uint32_t r = th->rank;
    const vfetch *f = &s->fetch[(size_t)r * s->n + o];
    if (!f->clk || (s->data && !hb(s, f->tid, f->clk, tid_of(s, r, th->stream)))) {
        vsim_step_error(s, th, "touches rank %u's %s without an ordered FETCH of rank %u", o, what, o);
        return false;
    }
    return true;
}

/* An INBOX ref (plan.h): within the box the plan declared; a peer's inbox only written, in this
 * rank's own box (what makes it need no FETCH), or, by a one-way Broadcast's receiver, only read,
 * in the owner's own box and after an ordered FETCH of the owner (its root). */
static bool resolve_inbox(vsim *s, vthr *th, const algo_ref *ref, uint64_t bytes, bool write, uint32_t o,
                          uint64_t *lo)
{
    uint32_t r = th->rank;
    uint64_t box = ref->offset / ALGO_EAGER_BOX, in = ref->offset % ALGO_EAGER_BOX;
    bool pull = o != r && !write && box == o && s->plans[r]->oneway_pull;
    if (o != r && !pull && (!write || box != r)) {
        vsim_step_error(s, th, "%s box %llu of rank %u's INBOX: a peer's inbox is only written, in the writer's box, "
                        "or read by a one-way receiver in its root's box",
                        write ? "writes" : "reads", (unsigned long long)box, o);
        return false;
    }
    if (pull && !fetched(s, th, o, "INBOX"))
        return false;
    if (box >= s->n || in % s->esz || bytes % s->esz || in + bytes > s->plans[r]->inbox_bytes ||
        s->plans[r]->inbox_bytes > ALGO_EAGER_BOX) {
        vsim_step_error(s, th, "INBOX of rank %u bytes [%llu, +%llu) outside box %llu's %llu declared bytes", o,
                        (unsigned long long)in, (unsigned long long)bytes, (unsigned long long)box,
                        (unsigned long long)s->plans[r]->inbox_bytes);
        return false;
    }
    if (s->data)
        *lo = s->sp[o].ibx_base + box * s->sp[o].box_len + in / s->esz;
    return true;
}

/* Resolves a ref to elements [*lo, *lo + cnt) of owner's space; checks bounds and the fetch. */
static bool resolve(vsim *s, vthr *th, const algo_ref *ref, uint64_t bytes, bool write, uint32_t *owner,
                    uint64_t *lo)
{
    uint32_t r = th->rank, o = ref->owner == ALGO_SELF ? r : (uint32_t)ref->owner;
    if ((ref->owner != ALGO_SELF && (ref->owner < 0 || (uint32_t)ref->owner >= s->n)) || ref->buf > ALGO_BUF_INBOX ||
        (ref->buf == ALGO_BUF_INBOX && (ref->vdispl >= 0 || ref->vsym.tab))) {
        vsim_step_error(s, th, "bad ref (owner %d, buf %u)", ref->owner, ref->buf);
        return false;
    }
    *owner = o;
    if (ref->buf == ALGO_BUF_INBOX)
        return resolve_inbox(s, th, ref, bytes, write, o, lo);
    if (o != r && ref->buf != ALGO_BUF_SCRATCH && !fetched(s, th, o, ref->buf == ALGO_BUF_IN ? "IN" : "OUT"))
        return false;
    if (!s->data)
        return true;
    int ok = 1;
    uint64_t off = ref->offset + (ref->vdispl >= 0 ? vref_displ(s, r, o, ref->vdispl, &ok) * s->esz : 0) +
                   algo_vt_entry(&s->plans[r]->op, ref->vsym) * s->esz; /* the executing rank's tables */
    const vspace *sp = &s->sp[o];
    uint64_t base = ref->buf == ALGO_BUF_IN ? sp->in_base : ref->buf == ALGO_BUF_OUT ? sp->out_base : sp->scr_base;
    uint64_t len = ref->buf == ALGO_BUF_IN ? sp->in_len : ref->buf == ALGO_BUF_OUT ? sp->out_len : sp->scr_len;
    if (!ok || off % s->esz || bytes % s->esz || off / s->esz > len || bytes / s->esz > len - off / s->esz) {
        vsim_step_error(s, th, "rank %u %s bytes [%llu, +%llu) out of its %llu elements (or misaligned / no such "
                        "displacement)", o, ref->buf == ALGO_BUF_IN ? "IN" : ref->buf == ALGO_BUF_OUT ? "OUT" : "SCRATCH",
                   (unsigned long long)off, (unsigned long long)bytes, (unsigned long long)len);
        return false;
    }
    *lo = base + off / s->esz;
    return true;
}

/* Checks [lo, lo+cnt) of owner's space against earlier accesses and records this one. */
static bool mem_access(vsim *s, vthr *th, uint32_t owner, uint64_t lo, uint64_t cnt, bool write)
{
    vspace *sp = &s->sp[owner];
    uint32_t cur = tid_of(s, th->rank, th->stream);
    for (uint32_t i = 0; i < sp->nrec; i++) {
        const vrec *a = &sp->recs[i];
        if (a->hi <= lo || a->lo >= lo + cnt || (!a->write && !write) || hb(s, a->tid, a->clk, cur))
            continue;
        char w[96], o[96];
        vsim_where(s, th, w, sizeof(w));
        vthr other = s->thr[a->tid];
        other.pc = a->pc;
        vsim_where(s, &other, o, sizeof(o));
        vsim_error(s, "race on rank %u's memory [%llu, %llu): %s %s it, unordered with %s that %s it", owner,
                   (unsigned long long)(lo > a->lo ? lo : a->lo),
                   (unsigned long long)(lo + cnt < a->hi ? lo + cnt : a->hi), w, write ? "writes" : "reads", o,
                   a->write ? "writes" : "reads");
        return false;
    }
    if (sp->nrec == sp->cap) {
        uint32_t cap = sp->cap ? sp->cap * 2 : 16;
        vrec *nr = realloc(sp->recs, cap * sizeof(*nr));
        if (!nr) {
            s->oom = 1;
            return false;
        }
        sp->recs = nr;
        sp->cap = cap;
    }
    sp->recs[sp->nrec++] = (vrec){lo, lo + cnt, cur, vsim_vc(s, cur)[cur], th->pc, write};
    return true;
}

static int do_move(vsim *s, vthr *th, const algo_step *st)
{
    bool red = st->kind == ALGO_STEP_REDUCE;
    const algo_ref *dst = red ? &st->u.reduce.dst : &st->u.copy.dst, *src = red ? &st->u.reduce.src : &st->u.copy.src;
    const algo_op *op = &s->plans[th->rank]->op;
    algo_vsym vc = red ? st->u.reduce.vcount : st->u.copy.vcount;
    uint64_t bytes = vc.tab ? algo_vt_entry(op, vc) * s->esz : red ? st->u.reduce.count * s->esz : st->u.copy.bytes;
    uint64_t cnt = bytes / s->esz, dlo = 0, slo = 0;
    if (vc.tab && !bytes)
        return 1; /* an empty V block moves nothing and is skipped at launch: its displs may be anything */
    uint32_t dow, sow, s2ow = 0;
    bool three = red && st->u.reduce.has_src2;
    uint64_t s2lo = 0;
    if (!resolve(s, th, dst, bytes, true, &dow, &dlo) || !resolve(s, th, src, bytes, false, &sow, &slo) ||
        (three && !resolve(s, th, &st->u.reduce.src2, bytes, false, &s2ow, &s2lo)))
        return -1;
    algo_link l = vlink(s, sow, dow);
    s->tx[sow * ALGO_LINK_COUNT + l] += bytes;
    s->rx[dow * ALGO_LINK_COUNT + l] += bytes;
    s->rep->link_bytes[l] += bytes;
    s->rep->link_xfers[l]++;
    if (three) { /* the second operand travels too */
        algo_link l2 = vlink(s, s2ow, dow);
        s->tx[s2ow * ALGO_LINK_COUNT + l2] += bytes;
        s->rx[dow * ALGO_LINK_COUNT + l2] += bytes;
        s->rep->link_bytes[l2] += bytes;
    }
    th->t += s->cm->alpha_us[l] + (double)bytes / (s->cm->gbps[l] * 1e3);
    if (!s->data || !cnt)
        return 1;
    if ((dow == sow && dlo < slo + cnt && slo < dlo + cnt) ||
        (three && dow == s2ow && dlo < s2lo + cnt && s2lo < dlo + cnt)) {
        vsim_step_error(s, th, "source and destination overlap");
        return -1;
    }
    if (!mem_access(s, th, sow, slo, cnt, false) || (three && !mem_access(s, th, s2ow, s2lo, cnt, false)) ||
        !mem_access(s, th, dow, dlo, cnt, true))
        return -1;
    uint64_t *d = s->sp[dow].mem + dlo;
    const uint64_t *x = s->sp[sow].mem + slo;
    bool det = red && s->plans[dow]->op.deterministic;
    if (three) {
        const uint64_t *y = s->sp[s2ow].mem + s2lo;
        for (uint64_t i = 0; i < cnt; i++)
            d[i] = det ? vdet_fold(x[i], y[i]) : x[i] + y[i];
    } else if (red)
        for (uint64_t i = 0; i < cnt; i++)
            d[i] = det ? vdet_fold(d[i], x[i]) : d[i] + x[i];
    else
        memcpy(d, x, cnt * sizeof(*d));
    return 1;
}

/* PUBLISH comes first on stream 0; a one-way root takes its credits before it (plan.h, INBOX: the
 * header it writes is in the slot the credits free). */
static bool publish_may_run(const vsim *s, const vthr *th)
{
    for (uint32_t i = 0; i < th->pc; i++) {
        const algo_step *st = &th->list->steps[i];
        if (!s->plans[th->rank]->oneway || st->kind != ALGO_STEP_WAIT || st->u.sync.slot != ALGO_SLOT_CREDIT)
            return false;
    }
    return true;
}

int vexec_step(vsim *s, vthr *th)
{
    const algo_step *st = &th->list->steps[th->pc];
    const algo_plan *plan = s->plans[th->rank];
    if (st->when != ALGO_WHEN_ALWAYS && !algo_step_runs(plan, st, algo_vt_entry(&plan->op, st->when_sym)))
        return 1; /* not for this call's block sizes: skipped at launch too */
    uint32_t tid = tid_of(s, th->rank, th->stream);
    if (s->data)
        vsim_vc(s, tid)[tid]++; /* the step's own clock tick, undone if it blocks */
    int rc;
    switch (st->kind) {
    case ALGO_STEP_COPY:
    case ALGO_STEP_REDUCE: rc = do_move(s, th, st); break;
    case ALGO_STEP_SIGNAL: rc = do_signal(s, th, st); break;
    case ALGO_STEP_WAIT: rc = do_wait(s, th, st, false); break;
    case ALGO_STEP_FETCH: rc = do_wait(s, th, st, true); break;
    case ALGO_STEP_FORK:
    case ALGO_STEP_JOIN: rc = do_fork_join(s, th, st); break;
    case ALGO_STEP_PUBLISH: {
        rc = 1;
        if (th->stream != 0 || !publish_may_run(s, th) || s->pub_clk[th->rank]) {
            vsim_step_error(s, th, "PUBLISH must be the first step of stream 0, once");
            rc = -1;
        } else {
            s->pub_clk[th->rank] = s->data ? vsim_vc(s, tid)[tid] : 1;
        }
        break;
    }
    default:
        vsim_step_error(s, th, "unknown step kind %u", st->kind);
        rc = -1;
    }
    if (rc == 0 && s->data)
        vsim_vc(s, tid)[tid]--;
    return rc;
}
