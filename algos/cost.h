/* Alpha-beta cost model per link class, and nccl-tests bus bandwidth. Used by the verifier to
 * time the critical path of a set of plans and by plansim to predict time and busbw. */
#ifndef ALGOS_COST_H
#define ALGOS_COST_H

#include "algos/plan.h"

/* Where a transfer goes: inside one rank, between ranks of one server (HCCS), across servers. */
typedef enum algo_link { ALGO_LINK_SELF = 0, ALGO_LINK_INTRA, ALGO_LINK_NET, ALGO_LINK_COUNT } algo_link;

typedef struct algo_cost_model {
    double alpha_us[ALGO_LINK_COUNT]; /* start-up per COPY/REDUCE */
    double gbps[ALGO_LINK_COUNT];     /* GB/s (1e9 B/s) of one link of that class */
    double sync_us[ALGO_LINK_COUNT];  /* SIGNAL -> WAIT latency */
} algo_cost_model;

/* self 1 us + 200 GB/s (on-device SDMA copy); intra 2 us + 56 GB/s (one HCCS link);
 * net 10 us + 25 GB/s (RoCE 200 Gb/s); notify latency 0.2 / 1 / 5 us. */
const algo_cost_model *algo_cost_default(void);
const char *algo_link_name(algo_link l);

/* nccl-tests conventions: the "size" of an op (allreduce/broadcast/reduce: the buffer;
 * allgather/reducescatter/alltoall/scatter: the n-block buffer) and busbw = algbw * factor
 * (allreduce 2(n-1)/n; allgather, reducescatter, alltoall, scatter (n-1)/n; broadcast, reduce 1). */
uint64_t algo_cost_size_bytes(const algo_op *op);
double algo_cost_busbw_factor(algo_coll coll, uint32_t nranks);
/* Microseconds to move `bytes` over one link of class l, with its start-up. */
double algo_cost_xfer_us(const algo_cost_model *cm, algo_link l, double bytes);

typedef struct algo_cost_result {
    double crit_us;    /* critical path through the plans' steps (from the verifier) */
    double nic_us;     /* busiest rank's network bytes / network bandwidth (links are shared) */
    double time_us;    /* max of the two */
    double algbw_gbps; /* size / time */
    double busbw_gbps;
} algo_cost_result;

/* Slices hier AllReduce pipelines a `bytes` buffer in, for S servers of m ranks (1: no pipeline):
 * the C in [1, ALGO_PIPE_MAX] that minimises (A + B) / C-sized stages run as a two-stage pipeline,
 * A = intra reduce + inter ring (one stream), B = intra gather (another), each paying its start-up
 * and signal latencies per slice: T(1) = A + B, T(C) = A_c + B_c + (C - 1) max(A_c, B_c) + 2 forks.
 * From the op signature only, so every rank picks the same. cm NULL: algo_cost_default(). */
#define ALGO_PIPE_MAX 64
uint32_t algo_cost_hier_chunks(const algo_cost_model *cm, uint64_t bytes, uint32_t S, uint32_t m);

/* hier's inter stage among S servers: true when halving-doubling (hd_push.c: 2 log2 S' steps, +2
 * folding the S - S' extras into partners, S' the largest power of two <= S) is predicted faster
 * than the ring (2(S - 1) steps) for C_hd rounds of hd_bytes per member vs C_ring rounds of
 * ring_bytes: latency-bound slices take halving-doubling, bandwidth-bound ones the ring (its
 * bytes per member do not grow with extras). Ties (S = 2: the same steps) keep the ring. */
bool algo_cost_inter_hd(const algo_cost_model *cm, uint64_t hd_bytes, uint32_t S, uint64_t C_hd, uint64_t ring_bytes,
                        uint64_t C_ring);

/* Closed-form estimate (us) of the flat (kind != ALGO_HIER: ring, ring_push or pairwise, as
 * algo_select would pick) or the hierarchical plan of op across the servers of topo, from cm's
 * intra and net latency and bandwidth (NULL: the default model). The same on every rank (op
 * signature and placement only); a huge value when topo has no placement. algo_select picks
 * hier when its estimate is lower (cost_est.c). */
double algo_cost_estimate(const algo_op *op, const algo_topo *topo, algo_kind kind, const algo_cost_model *cm);

struct algo_verify_report;
/* Prediction from a verifier report made with the same cost model (rep->crit_us). */
void algo_cost_predict(const algo_op *op, const struct algo_verify_report *rep, const algo_cost_model *cm,
                       algo_cost_result *res);

#endif
