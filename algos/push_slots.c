/* Scratch receive slots with credits (push.h): how the copy-only plans stay within the scratch
 * budget whatever the count. */
#include "algos/push.h"

void algo_ps_send(algo_b *b, algo_pslots *ps, algo_ref src, uint64_t elems)
{
    uint64_t t = ps->sent++;
    if (t >= ps->nbuf) /* slot t % nbuf held transfer t - nbuf: the receiver must be done with it */
        algo_b_wait(b, ps->stream, ps->to, ALGO_SLOT_READY);
    algo_ref dst = algo_b_ref(b, ALGO_BUF_SCRATCH, ps->to, ps->base + (t % ps->nbuf) * ps->elems);
    algo_b_copy(b, ps->stream, dst, src, elems);
    algo_b_signal(b, ps->stream, ps->to, ALGO_SLOT_DATA);
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
                          uint32_t extra, uint64_t esz, uint64_t budget, uint64_t *elems, uint32_t *nbuf)
{
    uint64_t one = (count + parts - 1) / parts;
    if (!budget || count == 0 || (nbuf_single + extra) * one * esz <= budget) {
        *elems = one ? one : 1;
        *nbuf = nbuf_single;
        return 1;
    }
    uint64_t e = budget / ((uint64_t)(nbuf_chunked + extra) * esz);
    *elems = e ? e : 1;
    *nbuf = nbuf_chunked;
    uint64_t per_round = parts * *elems;
    return (count + per_round - 1) / per_round;
}
