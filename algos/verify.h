/* The plan verifier: runs every rank's plan of one collective together, symbolically, in one
 * process, and checks
 *  (a) the result: every rank's OUT equals the collective's reference exactly. Each IN element of
 *      rank r holds a distinct 64-bit value H(r, i); COPY moves values, REDUCE adds them (mod 2^64),
 *      whatever the redop, so a missing or doubled contribution, a wrong origin or an element never
 *      written changes the value. Elements outside the result (IN out of place, gaps between V
 *      blocks) must keep their initial value: no stray writes;
 *  (b) synchronisation: every WAIT/FETCH matched, no signal left unconsumed (a one-way plan's
 *      credits: one given before the call, one left after it, plan.h INBOX), no deadlock (the
 *      blocked steps are reported); FORK/JOIN once per slave stream, on stream 0; every
 *      (sender, receiver, slot) signalled from one stream and waited on one stream (so the k-th
 *      WAIT pairs with the k-th SIGNAL whatever the timing);
 *  (c) races: no two accesses to overlapping elements, one a write, unordered by happens-before
 *      (stream order, FORK/JOIN, SIGNAL->WAIT, PUB->FETCH), across ranks too (vector clocks);
 *      and the plan-end rule: every access to a rank's buffers, and every FETCH of its record,
 *      happens before that rank's stream 0 ends;
 *  (d) a peer's IN/OUT is touched only after an ordered FETCH of that peer, at most one FETCH per
 *      peer, PUB signals only after PUBLISH, PUBLISH first on stream 0; refs in bounds; a peer's
 *      INBOX only written, in the writer's own box (or read by a one-way Broadcast's receiver,
 *      in its root's own box, after an ordered FETCH of the root), within the plan's
 *      inbox_bytes; eager plans end full (every rank's end after every rank's PUBLISH; reported
 *      for all plans), one-way plans aside, whose root may take its credits before PUBLISH;
 *  (e) counts steps, bytes and transfers per link class, per-rank maxima, and times the critical
 *      path with the alpha-beta cost model.
 * The simulation runs one schedule; (b) and (c) make the outcome schedule-independent. */
#ifndef ALGOS_VERIFY_H
#define ALGOS_VERIFY_H

#include "algos/cost.h"
#include "algos/plan.h"

#define ALGO_VERIFY_FAILED 100 /* return code: the plans compiled but a check failed */

typedef struct algo_verify_opts {
    bool skip_data;   /* no symbolic buffers, result, race or bounds checks: sync, counts and
                         time only (for sizes too large to simulate element by element) */
    const algo_cost_model *cost; /* NULL: algo_cost_default() */
} algo_verify_opts;

typedef struct algo_verify_report {
    bool ok;
    int compile_rc;      /* first algo_compile failure, 0 if all compiled */
    uint32_t nerrors;    /* check failures found (msg holds the first few) */
    char msg[2048];
    char name[32];       /* algorithm name (rank 0's plan) */
    uint32_t nranks, max_streams;
    uint64_t total_steps, max_rank_steps;
    uint64_t link_bytes[ALGO_LINK_COUNT], link_xfers[ALGO_LINK_COUNT];
    uint64_t max_rank_tx[ALGO_LINK_COUNT], max_rank_rx[ALGO_LINK_COUNT];
    uint64_t max_rank_sent; /* max over ranks of bytes leaving the rank (intra + net) */
    uint64_t max_scratch_bytes;
    double crit_us;      /* critical path under the cost model */
    bool full_end;       /* every rank's stream 0 ends after every rank's PUBLISH (with data checks;
                            required of eager plans and of every plan that may run next to them,
                            plan.h INBOX) */
} algo_verify_report;

/* Compiles every rank's plan from a template (rank = r, everything else shared; ALLTOALLV takes
 * the n x n send matrix in counts, see algo_verify_derive; SENDRECV needs algo_verify_ops) with
 * `kind` (AUTO: algo_select per rank) and verifies them with data checks.
 * 0 ok; ALGO_VERIFY_FAILED; or the compile error (HAL_E_NOT_SUPPORTED, ...). */
int algo_verify(const algo_op *tmpl, const algo_topo *topo, algo_kind kind, algo_verify_report *rep);
/* Same from explicit per-rank ops (ops[r].rank == r). */
int algo_verify_ops(const algo_op *ops, const algo_topo *topo, algo_kind kind, const algo_verify_opts *opts,
                    algo_verify_report *rep);
/* Verifies given plans (plans[r] for rank r, e.g. hand-made ones); ops are taken from plan->op. */
int algo_verify_plans(algo_plan *const *plans, uint32_t nranks, const algo_topo *topo,
                      const algo_verify_opts *opts, algo_verify_report *rep);

/* Rank `rank`'s op from a template. For ALLTOALLV the template's counts are the n x n matrix
 * m[i][j] = what i sends to j; this builds [send counts, send displs, recv counts, recv displs]
 * into counts_buf (4n entries) with a one-element gap between send blocks and the recv blocks in
 * reverse peer order, so displacements really matter. Other collectives: a copy with rank set.
 * 0, or HAL_E_PARAM. */
int algo_verify_derive(const algo_op *tmpl, uint32_t rank, algo_op *out, uint64_t *counts_buf);

#endif
