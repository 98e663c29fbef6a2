/* Halving-doubling allreduce with receive-side reduction ("H-D" inter stage of hier), for any
 * number S of group members: S' = the largest power of two <= S, the S - S' "extra" members fold
 * into partners first. Every cross-rank step is a COPY into the peer's SCRATCH (partials, which
 * the receiver reduces) or OUT (results), so it runs across servers.
 *   fold:     extra i >= S' copies its slice into partner i - S' (fold slot), which reduces it;
 *   halving:  for d = S'/2 .. 1, partners i, i ^ d swap halves of their current range (the lower
 *             member keeps the lower half) through halving slot k, each reduces the half it keeps;
 *   doubling: for d = 1 .. S'/2, partners copy their finished range into each other's OUT;
 *   unfold:   partner i - S' copies the whole result into the extra's OUT.
 * 2 log2 S' (+2 with extras) steps instead of the ring's 2(S - 1): fewer start-up and signal
 * latencies for small slices, the same bytes per member for a power of two.
 * Rounds reuse each slot (one per step, so one per pair of members): a member writes its
 * partner's slot again only after the partner's READY (it reduced the previous round's). Sources
 * are OUT ranges the member rewrites only after its partner reduced them (push.h). */
#include "algos/hd_push.h"

static uint32_t pow2_floor(uint32_t S)
{
    uint32_t p = 1;
    while (p * 2 <= S)
        p *= 2;
    return p;
}

static uint32_t log2u(uint32_t p)
{
    uint32_t k = 0;
    while ((1u << k) < p)
        k++;
    return k;
}

uint64_t algo_hd_scratch_elems(uint64_t maxlen, uint32_t S)
{
    uint32_t P = pow2_floor(S), K = log2u(P);
    uint64_t e = P < S ? maxlen : 0; /* the fold slot */
    for (uint32_t k = 0; k < K; k++)
        e += (maxlen + (2ull << k) - 1) >> (k + 1);
    return e;
}

/* Element offset of halving slot k (after the fold slot). */
static uint64_t hslot(const algo_hd *h, uint32_t k)
{
    uint64_t e = h->base + (pow2_floor(h->S) < h->S ? h->maxlen : 0);
    for (uint32_t j = 0; j < k; j++)
        e += (h->maxlen + (2ull << j) - 1) >> (j + 1);
    return e;
}

/* Copy my part into the peer's slot (credit first if the slot is reused), then its part from mine. */
static void swap_reduce(algo_b *b, const algo_hd *h, uint32_t peer, uint64_t slot, uint64_t so, uint64_t sl,
                        uint64_t ko, uint64_t kl)
{
    uint32_t s = h->stream, r = b->r;
    if (h->round > 0)
        algo_b_wait(b, s, peer, ALGO_SLOT_READY);
    algo_b_copy(b, s, algo_b_ref(b, ALGO_BUF_SCRATCH, peer, slot), algo_b_ref(b, ALGO_BUF_OUT, r, so), sl);
    algo_b_signal(b, s, peer, ALGO_SLOT_DATA);
    algo_b_wait(b, s, peer, ALGO_SLOT_DATA);
    algo_b_reduce(b, s, algo_b_ref(b, ALGO_BUF_OUT, r, ko), algo_b_ref(b, ALGO_BUF_SCRATCH, r, slot), kl);
    if (h->round + 1 < h->rounds)
        algo_b_signal(b, s, peer, ALGO_SLOT_READY);
}

void algo_hd_allreduce(algo_b *b, const algo_hd *h, uint64_t off, uint64_t len)
{
    uint32_t S = h->S, i = h->i, P = pow2_floor(S), K = log2u(P), s = h->stream, r = b->r;
    bool first = h->round == 0, more = h->round + 1 < h->rounds;
    if (i >= P) { /* extra: fold in, wait for the result */
        uint32_t p = h->group[i - P];
        if (!first)
            algo_b_wait(b, s, p, ALGO_SLOT_READY);
        algo_b_copy(b, s, algo_b_ref(b, ALGO_BUF_SCRATCH, p, h->base), algo_b_ref(b, ALGO_BUF_OUT, r, off), len);
        algo_b_signal(b, s, p, ALGO_SLOT_DATA);
        algo_b_wait(b, s, p, ALGO_SLOT_DATA);
        return;
    }
    if (i + P < S) { /* my extra's slice */
        uint32_t e = h->group[i + P];
        algo_b_wait(b, s, e, ALGO_SLOT_DATA);
        algo_b_reduce(b, s, algo_b_ref(b, ALGO_BUF_OUT, r, off), algo_b_ref(b, ALGO_BUF_SCRATCH, r, h->base), len);
        if (more)
            algo_b_signal(b, s, e, ALGO_SLOT_READY);
    }
    uint64_t lo[32], hi[32]; /* my range before halving step k */
    lo[0] = off;
    hi[0] = off + len;
    for (uint32_t k = 0; k < K; k++) {
        uint32_t d = P >> (k + 1), peer = h->group[i ^ d];
        uint64_t mid = lo[k] + (hi[k] - lo[k]) / 2;
        bool lower = !(i & d);
        uint64_t so = lower ? mid : lo[k], sl = lower ? hi[k] - mid : mid - lo[k];
        lo[k + 1] = lower ? lo[k] : mid;
        hi[k + 1] = lower ? mid : hi[k];
        swap_reduce(b, h, peer, hslot(h, k), so, sl, lo[k + 1], hi[k + 1] - lo[k + 1]);
    }
    for (uint32_t k = K; k-- > 0;) { /* doubling: my finished range into the partner's OUT */
        uint32_t d = P >> (k + 1), peer = h->group[i ^ d];
        uint64_t o = lo[k + 1], l = hi[k + 1] - lo[k + 1];
        algo_b_copy(b, s, algo_b_ref(b, ALGO_BUF_OUT, peer, o), algo_b_ref(b, ALGO_BUF_OUT, r, o), l);
        algo_b_signal(b, s, peer, ALGO_SLOT_DATA);
        algo_b_wait(b, s, peer, ALGO_SLOT_DATA);
    }
    if (i + P < S) { /* unfold */
        uint32_t e = h->group[i + P];
        algo_b_copy(b, s, algo_b_ref(b, ALGO_BUF_OUT, e, off), algo_b_ref(b, ALGO_BUF_OUT, r, off), len);
        algo_b_signal(b, s, e, ALGO_SLOT_DATA);
    }
}
