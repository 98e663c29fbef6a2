/* Internal to algos/: what the copy-only ("push") plans for several servers share. A sender may
 * only COPY into a receiver's SCRATCH, which the receiver then reduces locally. When the data
 * is larger than the scratch budget (algo_topo.scratch_max, HCCL_BUFFSIZE), the receive slots are
 * reused: the k-th transfer from a sender goes into slot k % nbuf of the receiver, and before
 * reusing a slot the sender waits for a credit (READY) that the receiver signals once it has
 * consumed that slot's previous content. */
#ifndef ALGOS_PUSH_H
#define ALGOS_PUSH_H

#include "algos/algo_build.h"

/* Receive slots between one sender/receiver relation of a plan. The same geometry (base, elems,
 * nbuf, total) on every rank of the relation, so both ends name the same slot for transfer k. */
typedef struct algo_pslots {
    uint32_t from, to;    /* who writes my slots; whose slots I write */
    uint32_t stream;      /* every step of the relation runs on this stream */
    uint64_t base, elems; /* slot k at SCRATCH element base + k * elems */
    uint32_t nbuf;        /* slots */
    uint64_t total;       /* transfers over the whole plan, each way (credits: total - nbuf) */
    uint64_t sent, recvd; /* progress while building */
} algo_pslots;

/* Wait for a credit if the slot is reused, COPY src (elems) into `to`'s next slot, SIGNAL DATA. */
void algo_ps_send(algo_b *b, algo_pslots *ps, algo_ref src, uint64_t elems);
/* WAIT DATA from `from`; the ref of the slot it filled (to reduce from, then algo_ps_release). */
algo_ref algo_ps_recv(algo_b *b, algo_pslots *ps);
/* The slot received last is consumed: SIGNAL the credit if the sender will reuse it. */
void algo_ps_release(algo_b *b, algo_pslots *ps);

/* Rounds for `count` elements cut into `parts` pieces per round, each piece one slot: one round
 * with nbuf_single slots of ceil(count / parts) elements (+ `extra` slots of that size) when that
 * fits `budget` bytes (0: no budget), else the fewest rounds whose pieces fit nbuf_chunked
 * (+ extra) slots within the budget. Sets *elems (per slot) and *nbuf. With a budget below one
 * element per slot it still returns a plan (1 element per slot) whose scratch exceeds the budget,
 * which the runtime then refuses (HCCL_E_MEMORY) with the clear message. */
uint64_t algo_push_rounds(uint64_t count, uint64_t parts, uint32_t nbuf_single, uint32_t nbuf_chunked,
                          uint32_t extra, uint64_t esz, uint64_t budget, uint64_t *elems, uint32_t *nbuf);

/* Deterministic reductions across servers (ordered_push.c): a rank-ordered chain through scratch
 * slots, within the budget. AllReduce, Reduce, ReduceScatter. */
int algo_ordered_push_build(algo_b *b);

#endif
