/* The verifier's topology rule: ranks on different servers reach each other only through
 * one-sided network writes (runtime/net), so across servers a step may only COPY from this
 * rank's memory into a peer's SCRATCH, OUT or INBOX. Checked statically over every rank's plan. */
#include "algos/verify_int.h"

static bool other_server(const vsim *s, uint32_t r, const algo_ref *ref)
{
    if (!s->topo || !s->topo->server_of || ref->owner == ALGO_SELF || (uint32_t)ref->owner >= s->n)
        return false;
    return s->topo->server_of[ref->owner] != s->topo->server_of[r];
}

static void check_step(vsim *s, uint32_t r, uint32_t st, uint32_t i, const algo_step *step)
{
    if (step->kind == ALGO_STEP_COPY) {
        const algo_ref *d = &step->u.copy.dst, *src = &step->u.copy.src;
        if (other_server(s, r, src))
            vsim_error(s, "rank %u stream %u step %u: copies from rank %d's memory on another server (links only write)",
                       r, st, i, src->owner);
        else if (other_server(s, r, d) && d->buf == ALGO_BUF_IN)
            vsim_error(s, "rank %u stream %u step %u: writes rank %d's IN on another server", r, st, i, d->owner);
        return;
    }
    if (step->kind != ALGO_STEP_REDUCE)
        return;
    const algo_ref *d = &step->u.reduce.dst, *src = &step->u.reduce.src, *src2 = &step->u.reduce.src2;
    if (other_server(s, r, d) || other_server(s, r, src) || (step->u.reduce.has_src2 && other_server(s, r, src2)))
        vsim_error(s, "rank %u stream %u step %u: reduces with memory of a rank on another server (reduce locally)", r,
                   st, i);
}

void vsim_check_links(vsim *s)
{
    for (uint32_t r = 0; r < s->n; r++)
        for (uint32_t st = 0; st < s->plans[r]->nstreams; st++) {
            const algo_step_list *l = &s->plans[r]->streams[st];
            for (uint32_t i = 0; i < l->nsteps; i++)
                check_step(s, r, st, i, &l->steps[i]);
        }
}
