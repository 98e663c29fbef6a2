/* Scratch receive slots with credits (push.h): how the copy-only plans stay within the scratch
 * budget whatever the count, and never rewrite a buffer a queued network write may still read. */
#include "algos/push.h"

static void take_credit(algo_b *b, algo_pslots *ps)
{
    if (!ps->credited && ps->sent >= ps->nbuf) /* slot sent % nbuf held transfer sent - nbuf */
        algo_b_wait(b, ps->stream, ps->to, ALGO_SLOT_READY);
    ps->credited = true;
}

algo_ref algo_ps_acc(algo_b *b, algo_pslots *ps)
{
    take_credit(b, ps);
    return algo_b_ref(b, ALGO_BUF_SCRATCH, b->r, ps->acc + (ps->sent % ps->nbuf) * ps->elems);
}

void algo_ps_send(algo_b *b, algo_pslots *ps, algo_ref src, uint64_t elems)
{
    take_credit(b, ps);
    algo_ref dst = algo_b_ref(b, ALGO_BUF_SCRATCH, ps->to, ps->base + (ps->sent % ps->nbuf) * ps->elems);
    algo_b_copy(b, ps->stream, dst, src, elems);
    algo_b_signal(b, ps->stream, ps->to, ALGO_SLOT_DATA);
    ps->sent++;
    ps->credited = false;
}

algo_ref algo_ps_recv(algo_b *b, algo_pslots *ps)
{
    algo_b_wait(b, ps->stream, ps->from, ALGO_SLOT_DATA);
    return algo_b_ref(b, ALGO_BUF_SCRATCH, b->r, ps->base + (ps->recvd % ps->nbuf) * ps->elems);
}

void algo_ps_release(algo_b *b, algo_pslots *ps)
{
    uint64_t t = ps->recvd++;
    if (t + ps->nbuf < ps->total) /* the sender reuses this slot for transfer t + nbuf */
        algo_b_signal(b, ps->stream, ps->from, ALGO_SLOT_READY);
}

uint64_t algo_push_rounds(uint64_t count, uint64_t parts, uint32_t nbuf_single, uint32_t nbuf_chunked,
                          uint32_t mult, uint64_t esz, uint64_t budget, uint64_t *elems, uint32_t *nbuf)
{
    uint64_t one = (count + parts - 1) / parts;
    if (!budget || count == 0 || (uint64_t)nbuf_single * mult * one * esz <= budget) {
        *elems = one ? one : 1;
        *nbuf = nbuf_single;
        return 1;
    }
    uint64_t e = budget / ((uint64_t)nbuf_chunked * mult * esz);
    *elems = e ? e : 1;
    *nbuf = nbuf_chunked;
    uint64_t per_round = parts * *elems;
    return (count + per_round - 1) / per_round;
}
