/* The verifier's driver: builds the simulation of n plans, runs it to completion or deadlock,
 * then checks what can only be checked at the end (matching, plan-end rule, results). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algos/verify_int.h"

void vsim_error(vsim *s, const char *fmt, ...)
{
    algo_verify_report *rep = s->rep;
    rep->ok = false;
    if (rep->nerrors++ >= VMAX_ERRORS_SHOWN)
        return;
    size_t used = strlen(rep->msg);
    if (used + 2 >= sizeof(rep->msg))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rep->msg + used, sizeof(rep->msg) - used, fmt, ap);
    va_end(ap);
    used = strlen(rep->msg);
    if (used + 1 < sizeof(rep->msg))
        strcat(rep->msg, "\n");
}

void vsim_step_error(vsim *s, const vthr *th, const char *fmt, ...)
{
    char w[96], m[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof(m), fmt, ap);
    va_end(ap);
    vsim_where(s, th, w, sizeof(w));
    vsim_error(s, "%s: %s", w, m);
}

uint32_t *vsim_vc(vsim *s, uint32_t tid)
{
    return &s->vc[(size_t)tid * s->T];
}

void vsim_where(const vsim *s, const vthr *th, char *buf, size_t cap)
{
    const char *k = th->pc < th->list->nsteps ? vstep_name(th->list->steps[th->pc].kind) : "end";
    (void)s;
    snprintf(buf, cap, "rank %u stream %u step %u (%s)", th->rank, th->stream, th->pc, k);
}

static void sim_free(vsim *s)
{
    if (s->sp)
        for (uint32_t r = 0; r < s->n; r++) {
            free(s->sp[r].mem);
            free(s->sp[r].recs);
        }
    if (s->q)
        for (size_t i = 0; i < (size_t)s->n * s->n * ALGO_MAX_SLOTS; i++)
            free(s->q[i].sig);
    free(s->sp);
    free(s->q);
    free(s->thr);
    free(s->tbase);
    free(s->vc);
    free(s->snaps);
    free(s->snap_refs);
    free(s->freesnap);
    free(s->fetch);
    free(s->pub_clk);
    free(s->endvc);
    free(s->ended);
    free(s->tx);
    free(s->rx);
    free(s->nsteps);
}

static int sim_alloc(vsim *s)
{
    size_t n = s->n, T = s->T;
    s->thr = calloc(T, sizeof(*s->thr));
    if (!s->thr)
        return HAL_E_NOMEM;
    s->sp = calloc(n, sizeof(*s->sp));
    s->q = calloc(n * n * ALGO_MAX_SLOTS, sizeof(*s->q));
    s->fetch = calloc(n * n, sizeof(*s->fetch));
    s->pub_clk = calloc(n, sizeof(*s->pub_clk));
    s->ended = calloc(n, 1);
    s->tx = calloc(n * ALGO_LINK_COUNT, sizeof(*s->tx));
    s->rx = calloc(n * ALGO_LINK_COUNT, sizeof(*s->rx));
    s->nsteps = calloc(n, sizeof(*s->nsteps));
    if (s->data) {
        s->vc = calloc(T * T, sizeof(*s->vc));
        s->endvc = calloc(n * T, sizeof(*s->endvc));
    }
    if (!s->thr || !s->sp || !s->q || !s->fetch || !s->pub_clk || !s->ended || !s->tx || !s->rx || !s->nsteps ||
        (s->data && (!s->vc || !s->endvc)))
        return HAL_E_NOMEM;
    for (size_t i = 0; i < n * n * ALGO_MAX_SLOTS; i++)
        s->q[i].sstream = s->q[i].wstream = -1;
    for (uint32_t r = 0; r < n; r++)
        for (uint32_t k = 0; k < s->plans[r]->nstreams; k++) {
            vthr *th = vsim_thr(s, r, k);
            th->tid = s->tbase[r] + k;
            th->snap = VSNAP_NONE;
            th->rank = r;
            th->stream = k;
            th->list = &s->plans[r]->streams[k];
            th->state = k == 0 ? (th->list->nsteps ? VT_RUN : VT_DONE) : VT_IDLE;
        }
    return s->data ? vref_alloc(s) : 0;
}

/* A thread ran off its list: a slave is done; stream 0 ending ends the rank's plan. */
static void thread_end(vsim *s, vthr *th)
{
    th->state = VT_DONE;
    if (th->stream != 0)
        return;
    uint32_t r = th->rank;
    s->ended[r] = 1;
    if (s->data)
        memcpy(&s->endvc[(size_t)r * s->T], vsim_vc(s, s->tbase[r]), s->T * sizeof(uint32_t));
    for (uint32_t k = 1; k < s->plans[r]->nstreams; k++) {
        const vthr *sl = vsim_thr(s, r, k);
        if (!sl->forks || !sl->joins)
            vsim_error(s, "rank %u: slave stream %u %s when stream 0 ended", r, k,
                       !sl->forks ? "was never forked" : "was not joined");
    }
}

/* Runs every thread as far as it goes, round after round, until nothing moves. */
static void run(vsim *s)
{
    bool progress = true;
    while (progress && !s->oom) {
        progress = false;
        for (uint32_t t = 0; t < s->T; t++) {
            vthr *th = &s->thr[t];
            while (th->state == VT_RUN) {
                int rc = vexec_step(s, th);
                if (rc == 0)
                    break;
                progress = true;
                if (rc < 0) { /* reported; stop this thread so the report stays readable */
                    th->state = VT_DONE;
                    th->pc = th->list->nsteps;
                    break;
                }
                s->nsteps[th->rank]++;
                if (++th->pc == th->list->nsteps)
                    thread_end(s, th);
            }
        }
    }
}

static void report_stuck(vsim *s)
{
    uint32_t stuck = 0;
    for (uint32_t t = 0; t < s->T; t++) {
        vthr *th = &s->thr[t];
        if (th->state != VT_RUN)
            continue;
        const algo_step *st = &th->list->steps[th->pc];
        char w[96];
        vsim_where(s, th, w, sizeof(w));
        if (stuck++ == 0)
            vsim_error(s, "deadlock: steps blocked forever:");
        if (st->kind == ALGO_STEP_JOIN)
            vsim_error(s, "  %s waits for stream %u", w, st->u.fork.stream);
        else
            vsim_error(s, "  %s waits for rank %u slot %u", w,
                       st->kind == ALGO_STEP_FETCH ? st->u.fetch.peer : st->u.sync.peer,
                       st->kind == ALGO_STEP_FETCH ? (uint32_t)ALGO_SLOT_PUB : st->u.sync.slot);
    }
    for (uint32_t r = 0; r < s->n; r++)
        for (uint32_t k = 1; k < s->plans[r]->nstreams; k++)
            if (vsim_thr(s, r, k)->state == VT_IDLE && !vsim_thr(s, r, k)->forks && s->ended[r] == 0)
                vsim_error(s, "  rank %u stream %u never forked", r, k);
}

static void report_unmatched(vsim *s)
{
    for (uint32_t a = 0; a < s->n; a++)
        for (uint32_t b = 0; b < s->n; b++)
            for (uint32_t k = 0; k < ALGO_MAX_SLOTS; k++) {
                const vqueue *q = &s->q[((size_t)a * s->n + b) * ALGO_MAX_SLOTS + k];
                if (q->len - q->head != q->preload)
                    vsim_error(s, "rank %u signalled rank %u on slot %u %u times, %u consumed", a, b, k,
                               q->len - q->preload, q->head);
            }
}

/* Plan-end rule: every access to rank p's memory and every FETCH of p happens before p's end
 * (FETCHes of an eager plan's record excepted, see below, and reads of a one-way Broadcast root's
 * box, which its receivers make after it ended: plan.h, INBOX). */
static void check_end_rule(vsim *s)
{
    for (uint32_t p = 0; p < s->n; p++) {
        const uint32_t *end = &s->endvc[(size_t)p * s->T];
        const vspace *sp = &s->sp[p];
        for (uint32_t i = 0; i < sp->nrec; i++) {
            const vrec *a = &sp->recs[i];
            /* A one-way Broadcast root's box is read after its end: its credits bound its reuse. */
            bool oneway_box = s->plans[p]->oneway_pull && a->lo >= sp->ibx_base;
            if (end[a->tid] >= a->clk || oneway_box)
                continue;
            vthr other = s->thr[a->tid];
            char w[96];
            other.pc = a->pc;
            vsim_where(s, &other, w, sizeof(w));
            vsim_error(s, "%s touches rank %u's memory without being ordered before rank %u's plan end", w, p, p);
            return;
        }
        /* Eager plans end full, or bound the drift with credits (one-way): the runtime's ring of
         * records keeps this call's while p publishes its next ones (check_full_end). */
        for (uint32_t q = 0; q < s->n && s->plans[p]->algo != ALGO_EAGER; q++) {
            const vfetch *f = &s->fetch[(size_t)q * s->n + p];
            if (f->clk && end[f->tid] < f->clk) {
                vsim_error(s, "rank %u's FETCH of rank %u is not ordered before rank %u's plan end (its record "
                           "may be reused by its next call)", q, p, p);
                return;
            }
        }
    }
}

/* Full end (plan.h, INBOX): every rank's end is ordered after every rank's PUBLISH. Eager plans
 * must have it (the next eager call reuses the inbox on that ground). */
static void check_full_end(vsim *s)
{
    bool eager = false, full = true;
    for (uint32_t p = 0; p < s->n; p++) /* one-way plans end without their receivers (plan.h) */
        eager |= s->plans[p]->algo == ALGO_EAGER && !s->plans[p]->oneway;
    for (uint32_t p = 0; p < s->n; p++) {
        const uint32_t *end = &s->endvc[(size_t)p * s->T];
        for (uint32_t q = 0; q < s->n; q++)
            if (full && (!s->pub_clk[q] || end[s->tbase[q]] < s->pub_clk[q])) {
                if (eager)
                    vsim_error(s, "rank %u's plan may end before rank %u PUBLISHed: eager plans must end full", p, q);
                full = false;
            }
    }
    s->rep->full_end = full;
}

static void fill_stats(vsim *s)
{
    algo_verify_report *rep = s->rep;
    rep->nranks = s->n;
    snprintf(rep->name, sizeof(rep->name), "%s", s->plans[0]->name);
    for (uint32_t r = 0; r < s->n; r++) {
        const algo_plan *p = s->plans[r];
        uint64_t steps = 0, sent = 0;
        for (uint32_t k = 0; k < p->nstreams; k++)
            steps += p->streams[k].nsteps;
        rep->total_steps += steps;
        if (steps > rep->max_rank_steps)
            rep->max_rank_steps = steps;
        if (p->nstreams > rep->max_streams)
            rep->max_streams = p->nstreams;
        uint64_t scratch = algo_plan_scratch(p, &p->op);
        if (scratch > rep->max_scratch_bytes)
            rep->max_scratch_bytes = scratch;
        for (uint32_t l = 0; l < ALGO_LINK_COUNT; l++) {
            uint64_t tx = s->tx[r * ALGO_LINK_COUNT + l], rx = s->rx[r * ALGO_LINK_COUNT + l];
            if (tx > rep->max_rank_tx[l])
                rep->max_rank_tx[l] = tx;
            if (rx > rep->max_rank_rx[l])
                rep->max_rank_rx[l] = rx;
            if (l != ALGO_LINK_SELF)
                sent += tx;
        }
        if (sent > rep->max_rank_sent)
            rep->max_rank_sent = sent;
        double t = vsim_thr(s, r, 0)->t;
        if (t > rep->crit_us)
            rep->crit_us = t;
    }
}

int algo_verify_plans(algo_plan *const *plans, uint32_t nranks, const algo_topo *topo,
                      const algo_verify_opts *opts, algo_verify_report *rep)
{
    memset(rep, 0, sizeof(*rep));
    rep->ok = true;
    if (!plans || !nranks)
        return HAL_E_PARAM;
    vsim s = {.n = nranks, .plans = plans, .topo = topo, .rep = rep};
    s.cm = opts && opts->cost ? opts->cost : algo_cost_default();
    s.data = !(opts && opts->skip_data);
    s.esz = hal_dtype_size(plans[0]->op.dtype);
    for (uint32_t r = 0; r < nranks; r++)
        if (!plans[r] || plans[r]->op.rank != r || plans[r]->op.nranks != nranks || plans[r]->nstreams < 1 ||
            plans[r]->nstreams > ALGO_MAX_STREAMS || hal_dtype_size(plans[r]->op.dtype) != s.esz || !s.esz)
            return HAL_E_PARAM;
    s.tbase = malloc(nranks * sizeof(uint32_t));
    if (!s.tbase)
        return HAL_E_NOMEM;
    for (uint32_t r = 0; r < nranks; r++) {
        s.tbase[r] = s.T;
        s.T += plans[r]->nstreams;
    }
    s.T = (s.T + 7) & ~7u; /* padding threads never run */
    int rc = sim_alloc(&s);
    if (!rc) {
        vsim_check_links(&s);
        rc = vexec_preload_credits(&s);
    }
    if (!rc) {
        run(&s);
        if (s.oom) {
            rc = HAL_E_NOMEM;
        } else {
            report_stuck(&s);
            report_unmatched(&s);
            if (s.data && rep->ok)
                check_end_rule(&s);
            if (s.data && rep->ok)
                check_full_end(&s);
            if (s.data && rep->ok)
                vref_check(&s);
            fill_stats(&s);
        }
    }
    sim_free(&s);
    if (rc)
        return rc;
    return rep->ok ? 0 : ALGO_VERIFY_FAILED;
}

int algo_verify_ops(const algo_op *ops, const algo_topo *topo, algo_kind kind, const algo_verify_opts *opts,
                    algo_verify_report *rep)
{
    uint32_t n = ops[0].nranks;
    algo_plan **plans = calloc(n, sizeof(*plans));
    int rc = plans ? 0 : HAL_E_NOMEM;
    for (uint32_t r = 0; !rc && r < n; r++) {
        algo_kind k = kind == ALGO_AUTO ? algo_select(&ops[r], topo, ALGO_AUTO) : kind;
        rc = algo_compile(&ops[r], topo, k, &plans[r]);
    }
    if (!rc)
        rc = algo_verify_plans(plans, n, topo, opts, rep);
    else {
        memset(rep, 0, sizeof(*rep));
        rep->compile_rc = rc;
        snprintf(rep->msg, sizeof(rep->msg), "compile failed: %d", rc);
    }
    for (uint32_t r = 0; plans && r < n; r++)
        algo_plan_free(plans[r]);
    free(plans);
    return rc;
}

int algo_verify(const algo_op *tmpl, const algo_topo *topo, algo_kind kind, algo_verify_report *rep)
{
    uint32_t n = tmpl->nranks;
    if (tmpl->coll == ALGO_COLL_SENDRECV || !n)
        return HAL_E_PARAM;
    algo_op *ops = calloc(n, sizeof(*ops));
    uint64_t *cbuf = calloc((size_t)n * n * 4, sizeof(*cbuf));
    int rc = ops && cbuf ? 0 : HAL_E_NOMEM;
    for (uint32_t r = 0; !rc && r < n; r++)
        rc = algo_verify_derive(tmpl, r, &ops[r], cbuf + (size_t)r * 4 * n);
    if (!rc)
        rc = algo_verify_ops(ops, topo, kind, NULL, rep);
    free(ops);
    free(cbuf);
    return rc;
}
