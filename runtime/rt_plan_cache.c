/* Plans cached per communicator by the op's shape: the second call of a shape compiles
 * nothing, whatever its buffers (plans hold symbolic refs only). */
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_internal.h"

#define RT_CACHE_BUCKETS 64

typedef struct rt_plan_entry {
    algo_op key;           /* counts/items point into the plan's own copy */
    uint64_t counts_hash;
    algo_plan *plan;
    struct rt_plan_entry *next;
} rt_plan_entry;

struct rt_plan_cache {
    rt_plan_entry *buckets[RT_CACHE_BUCKETS];
};

static _Atomic uint64_t g_compiles;

uint64_t rt_plan_compile_count(void)
{
    return atomic_load(&g_compiles);
}

rt_plan_cache *rt_plan_cache_new(void)
{
    return calloc(1, sizeof(rt_plan_cache));
}

void rt_plan_cache_free(rt_plan_cache *pc)
{
    if (!pc)
        return;
    for (int b = 0; b < RT_CACHE_BUCKETS; b++) {
        rt_plan_entry *e = pc->buckets[b];
        while (e) {
            rt_plan_entry *next = e->next;
            algo_plan_free(e->plan);
            free(e);
            e = next;
        }
    }
    free(pc);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h;
}

static uint64_t hash_items(const algo_op *op)
{
    uint64_t h = 0;
    for (uint32_t i = 0; i < op->ncounts; i++)
        h = mix(h, op->counts[i]);
    for (uint32_t i = 0; i < op->nitems; i++) {
        const algo_p2p_item *it = &op->items[i];
        h = mix(mix(mix(mix(h, it->is_send), it->peer), it->count), it->offset);
    }
    return h;
}

static uint64_t hash_op(const algo_op *op, uint64_t counts_hash)
{
    uint64_t h = mix(op->coll, op->count);
    h = mix(h, ((uint64_t)op->dtype << 32) | op->redop);
    h = mix(h, ((uint64_t)op->root << 1) | op->in_place);
    return mix(h, counts_hash);
}

static bool same_items(const algo_op *a, const algo_op *b)
{
    if (a->ncounts != b->ncounts || a->nitems != b->nitems)
        return false;
    if (a->ncounts && memcmp(a->counts, b->counts, a->ncounts * sizeof *a->counts))
        return false;
    for (uint32_t i = 0; i < a->nitems; i++) {
        const algo_p2p_item *x = &a->items[i], *y = &b->items[i];
        if (x->is_send != y->is_send || x->peer != y->peer || x->count != y->count || x->offset != y->offset)
            return false;
    }
    return true;
}

static bool same_op(const algo_op *a, const algo_op *b)
{
    return a->coll == b->coll && a->count == b->count && a->dtype == b->dtype && a->redop == b->redop &&
           a->root == b->root && a->in_place == b->in_place && a->deterministic == b->deterministic &&
           same_items(a, b);
}

static HcclResult compile(rt_comm *c, const algo_op *op, algo_plan **plan)
{
    algo_kind forced = ALGO_AUTO;
    if (c->algo_spec[0] && algo_parse_env(c->algo_spec, op->coll, &forced) != 0) {
        OH_ERR("algo", "HCCL_ALGO=\"%s\" is malformed; expect: level0:NA;level1:<algo> or "
               "<op0>=level0:NA;level1:<algo0>/<op1>=level0:NA;level1:<algo1>", c->algo_spec);
        return HCCL_E_PARA;
    }
    algo_topo topo = {c->nranks, c->server_of};
    algo_kind kind = algo_select(op, &topo, forced);
    int rc = algo_compile(op, &topo, kind, plan);
    if (rc != 0) {
        OH_ERR("algo", "rank %u: compiling %s with %s for %u ranks failed (%d)", c->rank, algo_coll_name(op->coll),
               algo_kind_name(kind), c->nranks, rc);
        return rt_from_hal(rc);
    }
    if ((*plan)->scratch_bytes > c->scratch_bytes) {
        OH_ERR("algo", "rank %u: %s/%s needs %llu bytes of scratch but HCCL_BUFFSIZE gives %llu", c->rank,
               algo_coll_name(op->coll), (*plan)->name, (unsigned long long)(*plan)->scratch_bytes,
               (unsigned long long)c->scratch_bytes);
        algo_plan_free(*plan);
        return HCCL_E_MEMORY;
    }
    atomic_fetch_add(&g_compiles, 1);
    OH_DBG("algo", "rank %u: compiled %s with %s", c->rank, algo_coll_name(op->coll), (*plan)->name);
    return HCCL_SUCCESS;
}

HcclResult rt_plan_get(rt_comm *c, const algo_op *op, const algo_plan **out)
{
    uint64_t ch = hash_items(op);
    uint64_t b = hash_op(op, ch) % RT_CACHE_BUCKETS;
    for (rt_plan_entry *e = c->cache->buckets[b]; e; e = e->next) {
        if (e->counts_hash == ch && same_op(&e->key, op)) {
            *out = e->plan;
            return HCCL_SUCCESS;
        }
    }
    rt_plan_entry *e = calloc(1, sizeof *e);
    if (!e)
        return HCCL_E_MEMORY;
    HcclResult rc = compile(c, op, &e->plan);
    if (rc != HCCL_SUCCESS) {
        free(e);
        return rc;
    }
    e->key = e->plan->op; /* the plan's copy owns counts/items */
    e->counts_hash = ch;
    e->next = c->cache->buckets[b];
    c->cache->buckets[b] = e;
    *out = e->plan;
    return HCCL_SUCCESS;
}
