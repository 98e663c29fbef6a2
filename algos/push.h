/* Internal to algos/: what the copy-only ("push") plans for several servers share. A sender may
 * only COPY into a receiver's SCRATCH, which the receiver then reduces locally.
 *
 * Scratch budget: when the data is larger than algo_topo.scratch_max (HCCL_BUFFSIZE), receive
 * slots are reused: the k-th transfer of a relation goes into slot k % nbuf of the receiver, and
 * before reusing a slot the sender waits for a credit (READY) that the receiver signals once it
 * has reduced that slot's previous content.
 *
 * Sources of writes across servers: runtime/net reads a COPY's source after the step returned
 * (the write is queued; hal/net's net_write: "src must stay untouched until the write
 * completes"), so a plan may overwrite the source of a cross-server COPY only once the receiver
 * has shown it got the data. The verifier models a COPY as done at its step, so this rule is kept
 * by construction: partials are sent from accumulator slots (acc k % nbuf for transfer k) that are
 * rewritten only after the credit for transfer k + nbuf, which the receiver gives after reducing
 * transfer k; results delivered to a rank that does not send back go through stage slots whose
 * reuse waits for that rank's ACK (signalled on a slave stream of the receiver, so its own chain
 * never blocks on it). IN and final OUT regions are never rewritten, so they need neither. */
#ifndef ALGOS_PUSH_H
#define ALGOS_PUSH_H

#include "algos/algo_build.h"

/* Slots beyond ALGO_NSLOTS used by push plans (plan nslots = ALGO_PUSH_NSLOTS). */
#define ALGO_SLOT_DLV 4 /* a delivery (finished result) landed in your OUT; hier: FIN, slice final */
#define ALGO_SLOT_ACK 5 /* I got your delivery: you may reuse its stage slot */
#define ALGO_PUSH_NSLOTS 6

/* Transfers from one sender to one receiver (a relation of a plan). The same geometry on both
 * ends, so both name the same slot for transfer k. */
typedef struct algo_pslots {
    uint32_t from, to;    /* who writes my slots; whose slots I write */
    uint32_t stream;      /* every step of the relation runs on this stream */
    uint64_t base, elems; /* receive slot k at SCRATCH element base + k * elems */
    uint64_t acc;         /* my accumulator slot k at SCRATCH element acc + k * elems */
    uint32_t nbuf;        /* slots */
    uint64_t total;       /* transfers over the whole plan, each way (credits: total - nbuf) */
    uint64_t sent, recvd; /* progress while building */
    bool credited;        /* the credit for the next send was taken (algo_ps_acc) */
} algo_pslots;

/* Waits for the next send's credit if its slot is reused and returns my accumulator for it
 * (reusable now: the credit says the send that last read it landed). */
algo_ref algo_ps_acc(algo_b *b, algo_pslots *ps);
/* COPY src (elems) into `to`'s next slot and SIGNAL DATA (waiting for the credit first unless
 * algo_ps_acc took it). src must be IN, a final region, or algo_ps_acc's accumulator. */
void algo_ps_send(algo_b *b, algo_pslots *ps, algo_ref src, uint64_t elems);
/* WAIT DATA from `from`; the ref of the slot it filled (reduce from it, then algo_ps_release). */
algo_ref algo_ps_recv(algo_b *b, algo_pslots *ps);
/* The slot received last is reduced: SIGNAL the credit if the sender will reuse it. */
void algo_ps_release(algo_b *b, algo_pslots *ps);

/* The scratch bytes a plan may use (algo_topo.scratch_max; 0: no limit). */
static inline uint64_t algo_b_budget(const algo_b *b)
{
    return b->topo ? b->topo->scratch_max : 0;
}

/* Rounds for `count` elements cut into `parts` pieces per round, each piece one slot: one round
 * with nbuf_single slots of ceil(count / parts) elements (times `mult` kinds of slot: receive,
 * accumulator, stage) when that fits `budget` bytes (0: no budget), else the fewest rounds whose
 * pieces fit nbuf_chunked x mult slots within the budget. Sets *elems (per slot) and *nbuf. A
 * budget below one element per slot still gives a plan (1 element per slot) whose scratch exceeds
 * the budget, which the runtime refuses (HCCL_E_MEMORY) with the clear message. */
uint64_t algo_push_rounds(uint64_t count, uint64_t parts, uint32_t nbuf_single, uint32_t nbuf_chunked,
                          uint32_t mult, uint64_t esz, uint64_t budget, uint64_t *elems, uint32_t *nbuf);

/* Deterministic reductions across servers (ordered_push.c): a rank-ordered chain through scratch
 * slots, within the budget. AllReduce, Reduce, ReduceScatter. */
int algo_ordered_push_build(algo_b *b);

#endif
