/* Geometry of the hierarchical plans: servers, local indices, leaders and groups (hier_geo.h). */
#include <stdlib.h>
#include <string.h>

#include "algos/hier_geo.h"

void algo_hgeo_free(algo_hgeo *g)
{
    free(g->sid); /* one block holds every array */
    memset(g, 0, sizeof *g);
}

/* Servers in order of first appearance: sid/lidx per rank, sizes; returns S. */
static uint32_t number_servers(const uint32_t *server_of, uint32_t n, algo_hgeo *g, uint32_t *first)
{
    uint32_t S = 0;
    for (uint32_t r = 0; r < n; r++) {
        uint32_t s = 0;
        while (s < S && server_of[first[s]] != server_of[r])
            s++;
        if (s == S) {
            first[S] = r;
            g->size[S++] = 0;
        }
        g->sid[r] = s;
        g->lidx[r] = g->size[s]++;
    }
    return S;
}

bool algo_hgeo_build(const algo_topo *topo, uint32_t n, uint32_t r, algo_hgeo *g)
{
    memset(g, 0, sizeof *g);
    if (!topo || !topo->server_of || topo->nranks < n || n == 0 || r >= n)
        return false;
    /* sid, lidx, size, start, members, group, first: seven arrays of at most n entries */
    uint32_t *blk = calloc((size_t)7 * n, sizeof *blk);
    if (!blk)
        return false;
    g->n = n;
    g->sid = blk;
    g->lidx = blk + n;
    g->size = blk + 2 * (size_t)n;
    g->start = blk + 3 * (size_t)n;
    g->members = blk + 4 * (size_t)n;
    g->group = blk + 5 * (size_t)n;
    g->S = number_servers(topo->server_of, n, g, blk + 6 * (size_t)n);
    for (uint32_t s = 1; s < g->S; s++)
        g->start[s] = g->start[s - 1] + g->size[s - 1];
    for (uint32_t q = 0; q < n; q++)
        g->members[g->start[g->sid[q]] + g->lidx[q]] = q;
    g->si = g->sid[r];
    g->l = g->lidx[r];
    g->m = g->size[g->si];
    g->local = g->members + g->start[g->si];
    for (uint32_t s = 0; s < g->S; s++)
        g->group[s] = g->l < g->size[s] ? algo_hgeo_rank(g, s, g->l) : ALGO_HGEO_NONE;
    return true;
}

bool algo_hgeo_equal(const algo_hgeo *g)
{
    return algo_hgeo_min(g) == algo_hgeo_max(g);
}

uint32_t algo_hgeo_min(const algo_hgeo *g)
{
    uint32_t v = g->S ? g->size[0] : 0;
    for (uint32_t s = 1; s < g->S; s++)
        v = g->size[s] < v ? g->size[s] : v;
    return v;
}

uint32_t algo_hgeo_max(const algo_hgeo *g)
{
    uint32_t v = 0;
    for (uint32_t s = 0; s < g->S; s++)
        v = g->size[s] > v ? g->size[s] : v;
    return v;
}
