/* Internal to algos/: where ranks sit for the hierarchical plans (HCCL's level0 = inside a
 * server, level1 = across servers). Servers are numbered in order of first appearance in rank
 * order; a rank's local index is its position among its server's ranks. Servers may hold
 * different numbers of ranks (e.g. 3+2+3): each server's leader is its local index 0, and the
 * "group" of local index l is the ranks of local index l on the servers that have one. */
#ifndef ALGOS_HIER_GEO_H
#define ALGOS_HIER_GEO_H

#include "algos/algo_build.h"

#define ALGO_HGEO_NONE UINT32_MAX

typedef struct algo_hgeo {
    uint32_t n, S;      /* ranks, servers */
    uint32_t si, l, m;  /* this rank's server, local index, and its server's rank count */
    uint32_t *sid;      /* [n] server of each rank */
    uint32_t *lidx;     /* [n] local index of each rank */
    uint32_t *size;     /* [S] ranks per server */
    uint32_t *start;    /* [S] where server s's ranks start in members */
    uint32_t *members;  /* [n] ranks grouped by server, each server's in local-index order */
    uint32_t *local;    /* = members + start[si]: my server's ranks (m of them) */
    uint32_t *group;    /* [S] rank of local index l on each server, ALGO_HGEO_NONE where too small */
} algo_hgeo;

/* Builds the geometry of `n` ranks placed by topo, seen from rank r. False (nothing allocated)
 * when topo has no placement or memory runs out; S may be 1. */
bool algo_hgeo_build(const algo_topo *topo, uint32_t n, uint32_t r, algo_hgeo *g);
void algo_hgeo_free(algo_hgeo *g);
/* Rank of local index k on server s (k < size[s]). */
static inline uint32_t algo_hgeo_rank(const algo_hgeo *g, uint32_t s, uint32_t k)
{
    return g->members[g->start[s] + k];
}
/* Every server holds the same number of ranks. */
bool algo_hgeo_equal(const algo_hgeo *g);
/* Smallest and largest server. */
uint32_t algo_hgeo_min(const algo_hgeo *g);
uint32_t algo_hgeo_max(const algo_hgeo *g);

/* Marks q as fetched by and fetching this rank (both sides of a pair mark each other, so the
 * end-of-plan handshake algo_b_epilogue pairs up). No-op for q == this rank or ALGO_HGEO_NONE. */
static inline void algo_hgeo_pair(algo_b *b, uint32_t q)
{
    if (q != b->r && q < b->n)
        b->fetch[q] = b->fetched_by[q] = 1;
}
/* Pairs this rank with every rank of its server. */
static inline void algo_hgeo_pair_local(algo_b *b, const algo_hgeo *g)
{
    for (uint32_t k = 0; k < g->m; k++)
        algo_hgeo_pair(b, g->local[k]);
}

/* The hierarchical plans other than AllReduce (hier.c), by collective: hier_gather.c
 * (AllGather(V), Scatter), hier_bcast.c (Broadcast), hier_reduce.c (ReduceScatter, Reduce),
 * hier_rsv.c (ReduceScatterV), hier_a2a.c (AlltoAll).
 * Each returns HAL_E_NOT_SUPPORTED when the placement does not fit (one server). */
int algo_hier_allgather(algo_b *b, const algo_hgeo *g);
int algo_hier_broadcast(algo_b *b, const algo_hgeo *g);
int algo_hier_scatter(algo_b *b, const algo_hgeo *g);
int algo_hier_reduce_scatter(algo_b *b, const algo_hgeo *g);
int algo_hier_reduce_scatterv(algo_b *b, const algo_hgeo *g); /* hier_rsv.c */
int algo_hier_reduce(algo_b *b, const algo_hgeo *g);
int algo_hier_alltoall(algo_b *b, const algo_hgeo *g);

#endif
