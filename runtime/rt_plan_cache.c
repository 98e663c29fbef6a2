/* Plans cached per communicator by the op's shape: the second call of a shape compiles
 * nothing, whatever its buffers (plans hold symbolic refs only). V-op plans (AlltoAllV(C),
 * AllGatherV, ReduceScatterV) do not depend on the counts (algo_counts_symbolic), so their key
 * leaves the counts out; a V plan whose scratch need comes from the counts is checked against
 * HCCL_BUFFSIZE per call (call_fits).
 *
 * The cache is bounded: at most `limit` plans (RT_PLAN_CACHE_DEFAULT, or HCCL_PLAN_CACHE_SIZE),
 * least recently used evicted first. A launch holds its plan (rt_plan_get .. rt_plan_put) until
 * the launch is reclaimed, so a plan still read by queued device tasks is never freed: held
 * plans are skipped by eviction and the cache may exceed its limit while they are in flight. */
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_internal.h"

#define RT_CACHE_BUCKETS 64
#define RT_PLAN_CACHE_DEFAULT 256
#define RT_PLAN_CACHE_MAX 1000000

typedef struct rt_plan_entry {
    algo_op key;           /* counts/items point into the plan's own copy */
    uint64_t counts_hash;
    algo_plan *plan;
    uint32_t holds;        /* launches not yet reclaimed that use the plan */
    struct rt_plan_entry *next;             /* bucket chain */
    struct rt_plan_entry *lru_prev, *lru_next; /* most recently used first */
} rt_plan_entry;

struct rt_plan_cache {
    rt_plan_entry *buckets[RT_CACHE_BUCKETS];
    rt_plan_entry *lru_head, *lru_tail;
    uint32_t nplans, limit;
    uint64_t evictions;
    rt_plan_entry *last;   /* the entry found last: a loop of one shape skips hashing (get and put) */
};

static _Atomic uint64_t g_compiles;

uint64_t rt_plan_compile_count(void)
{
    return atomic_load(&g_compiles);
}

static uint32_t limit_from_env(void)
{
    const char *env = getenv("HCCL_PLAN_CACHE_SIZE");
    if (!env || !*env)
        return RT_PLAN_CACHE_DEFAULT;
    char *end = NULL;
    unsigned long v = strtoul(env, &end, 10);
    if (*end || v < 1 || v > RT_PLAN_CACHE_MAX) {
        OH_WARN("plan", "HCCL_PLAN_CACHE_SIZE=%s is not a number of plans in [1, %d]; using %d", env,
                RT_PLAN_CACHE_MAX, RT_PLAN_CACHE_DEFAULT);
        return RT_PLAN_CACHE_DEFAULT;
    }
    return (uint32_t)v;
}

rt_plan_cache *rt_plan_cache_new(void)
{
    rt_plan_cache *pc = calloc(1, sizeof(rt_plan_cache));
    if (pc)
        pc->limit = limit_from_env();
    return pc;
}

/* Called after every launch was reclaimed: no plan is held any more. */
void rt_plan_cache_free(rt_plan_cache *pc)
{
    if (!pc)
        return;
    rt_plan_entry *e = pc->lru_head;
    while (e) {
        rt_plan_entry *next = e->lru_next;
        algo_plan_free(e->plan);
        free(e);
        e = next;
    }
    free(pc);
}

uint32_t rt_plan_cache_size(const rt_plan_cache *pc)
{
    return pc ? pc->nplans : 0;
}

uint64_t rt_plan_cache_evictions(const rt_plan_cache *pc)
{
    return pc->evictions;
}

static void lru_unlink(rt_plan_cache *pc, rt_plan_entry *e)
{
    if (e->lru_prev)
        e->lru_prev->lru_next = e->lru_next;
    else
        pc->lru_head = e->lru_next;
    if (e->lru_next)
        e->lru_next->lru_prev = e->lru_prev;
    else
        pc->lru_tail = e->lru_prev;
    e->lru_prev = e->lru_next = NULL;
}

static void lru_push_front(rt_plan_cache *pc, rt_plan_entry *e)
{
    e->lru_next = pc->lru_head;
    e->lru_prev = NULL;
    if (pc->lru_head)
        pc->lru_head->lru_prev = e;
    pc->lru_head = e;
    if (!pc->lru_tail)
        pc->lru_tail = e;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h;
}

/* The counts that shape a plan: none for collectives compiled independently of them. */
static uint32_t key_ncounts(const algo_op *op)
{
    return op->counts && !algo_counts_symbolic(op->coll) ? op->ncounts : 0;
}

static uint64_t hash_items(const algo_op *op)
{
    uint64_t h = 0;
    for (uint32_t i = 0; i < key_ncounts(op); i++)
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
    h = mix(h, ((uint64_t)op->root << 3) | ((uint64_t)op->v_eager << 2) | ((uint64_t)op->oneway_run << 1) |
                   op->in_place);
    return mix(h, counts_hash);
}

static bool same_items(const algo_op *a, const algo_op *b)
{
    uint32_t nc = key_ncounts(a);
    if (nc != key_ncounts(b) || a->nitems != b->nitems)
        return false;
    if (nc && memcmp(a->counts, b->counts, nc * sizeof *a->counts))
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
           a->oneway_run == b->oneway_run && a->v_eager == b->v_eager && same_items(a, b);
}

/* Eager plans rely on every plan of the communicator ending full (algos/plan.h, INBOX): a forced
 * algorithm for any collective may not, so forcing anything turns eager off for all of them. */
static uint64_t eager_max(const rt_comm *c)
{
    for (int k = 0; c->algo_spec[0] && k < ALGO_COLL_COUNT; k++) {
        algo_kind forced = ALGO_AUTO;
        if (algo_parse_env(c->algo_spec, (algo_coll)k, &forced) != 0 || forced != ALGO_AUTO)
            return 0;
    }
    return c->eager_max; /* RT_EAGER_AUTO is ALGO_EAGER_AUTO: algo_select applies the default per op */
}

static algo_topo comm_topo(const rt_comm *c)
{
    algo_topo topo = {c->nranks, c->server_of, eager_max(c), c->scratch_budget, c->oneway && !c->net,
                      c->ranks_fit_cpus};
    return topo;
}

/* AllGatherV, ReduceScatterV and AlltoAllVC plans are compiled without counts, so whether this
 * call's blocks fit the eager protocol is decided here, per call, from its tables (equal on every
 * rank, so every rank decides alike: FETCH checks them), and it keys the plan: the op to look up,
 * `op` itself for every other call, else `key` with the choice. */
static const algo_op *with_v_choice(const rt_comm *c, const algo_op *op, algo_op *key)
{
    if (!algo_counts_symbolic(op->coll) || !op->counts || c->net) /* across servers never eager */
        return op;
    *key = *op;
    key->v_eager = false;
    algo_topo topo = comm_topo(c);
    key->v_eager = algo_select(key, &topo, ALGO_AUTO) == ALGO_EAGER; /* eager_max is 0 if anything is forced */
    return key;
}

static HcclResult compile(rt_comm *c, const algo_op *op, algo_plan **plan)
{
    algo_kind forced = ALGO_AUTO;
    char why[256] = "";
    if (c->algo_spec[0] && algo_parse_env_why(c->algo_spec, op->coll, &forced, why, sizeof why) != 0) {
        OH_ERR("algo", "rank %u: %s refused: HCCL_ALGO (or hcclAlgo) \"%s\": %s; expect level0:NA;level1:<algo> "
               "or <op0>=level0:NA;level1:<algo0>/<op1>=level0:NA;level1:<algo1>", c->rank,
               algo_coll_name(op->coll), c->algo_spec, why);
        return HCCL_E_PARA;
    }
    algo_topo topo = comm_topo(c);
    algo_kind kind = algo_select(op, &topo, forced);
    int rc = algo_compile(op, &topo, kind, plan);
    if (rc != 0) {
        OH_ERR("algo", "rank %u: compiling %s with %s for %u ranks failed (%d)", c->rank, algo_coll_name(op->coll),
               algo_kind_name(kind), c->nranks, rc);
        return rt_from_hal(rc);
    }
    if ((*plan)->inbox_bytes > ALGO_EAGER_BOX) { /* a compiler bug: never write past a box */
        OH_ERR("algo", "rank %u: %s/%s uses %llu bytes of an inbox box (max %u)", c->rank, algo_coll_name(op->coll),
               (*plan)->name, (unsigned long long)(*plan)->inbox_bytes, ALGO_EAGER_BOX);
        algo_plan_free(*plan);
        return HCCL_E_INTERNAL;
    }
    if ((*plan)->scratch_bytes > c->scratch_budget) {
        OH_ERR("algo", "rank %u: %s/%s needs %llu bytes of scratch but HCCL_BUFFSIZE gives %llu (the least of all ranks)", c->rank,
               algo_coll_name(op->coll), (*plan)->name, (unsigned long long)(*plan)->scratch_bytes,
               (unsigned long long)c->scratch_budget);
        algo_plan_free(*plan);
        return HCCL_E_MEMORY;
    }
    atomic_fetch_add(&g_compiles, 1);
    OH_DBG("algo", "rank %u: compiled %s with %s", c->rank, algo_coll_name(op->coll), (*plan)->name);
    return HCCL_SUCCESS;
}

static rt_plan_entry **bucket_of(rt_plan_cache *pc, const algo_op *op, uint64_t *counts_hash)
{
    *counts_hash = hash_items(op);
    return &pc->buckets[hash_op(op, *counts_hash) % RT_CACHE_BUCKETS];
}

static void evict(rt_plan_cache *pc, rt_plan_entry *e)
{
    uint64_t ch;
    rt_plan_entry **pp = bucket_of(pc, &e->key, &ch);
    while (*pp != e)
        pp = &(*pp)->next;
    *pp = e->next;
    lru_unlink(pc, e);
    if (pc->last == e)
        pc->last = NULL;
    algo_plan_free(e->plan);
    free(e);
    pc->nplans--;
    pc->evictions++;
}

/* Evicts least recently used plans that no launch holds until the cache is within its limit. */
static void trim(rt_plan_cache *pc)
{
    rt_plan_entry *e = pc->lru_tail;
    while (pc->nplans > pc->limit && e) {
        rt_plan_entry *prev = e->lru_prev;
        if (!e->holds)
            evict(pc, e);
        e = prev;
    }
}

/* A V-op compiled for any counts: the plan's key and copy carry no counts. */
static algo_op compile_key(const algo_op *op)
{
    algo_op k = *op;
    if (algo_counts_symbolic(op->coll)) {
        k.counts = NULL;
        k.ncounts = 0;
    }
    return k;
}

/* A count-independent plan's scratch need for this call's counts (compile checked the fixed
 * part). The need comes from tables identical on every rank, so every rank refuses the same call. */
static HcclResult call_fits(const rt_comm *c, const algo_op *op, const algo_plan *plan)
{
    if (!plan->vscratch)
        return HCCL_SUCCESS;
    uint64_t need = algo_plan_scratch(plan, op);
    if (need <= c->scratch_budget)
        return HCCL_SUCCESS;
    OH_ERR("algo", "rank %u: %s/%s needs %llu bytes of scratch for these counts but HCCL_BUFFSIZE gives %llu (the least of all ranks)",
           c->rank, algo_coll_name(op->coll), plan->name, (unsigned long long)need,
           (unsigned long long)c->scratch_budget);
    return HCCL_E_MEMORY;
}

/* The cached plan for op's shape (held), compiled on a miss. */
static HcclResult lookup(rt_comm *c, const algo_op *op, const algo_plan **out)
{
    rt_plan_cache *pc = c->cache;
    rt_plan_entry *hit = pc->last && same_op(&pc->last->key, op) ? pc->last : NULL;
    uint64_t ch = 0;
    rt_plan_entry **b = NULL;
    if (!hit) {
        b = bucket_of(pc, op, &ch);
        for (rt_plan_entry *e = *b; e && !hit; e = e->next)
            if (e->counts_hash == ch && same_op(&e->key, op))
                hit = e;
    }
    if (hit) {
        if (pc->lru_head != hit) {
            lru_unlink(pc, hit);
            lru_push_front(pc, hit);
        }
        hit->holds++;
        pc->last = hit;
        *out = hit->plan;
        return HCCL_SUCCESS;
    }
    rt_plan_entry *e = calloc(1, sizeof *e);
    if (!e)
        return HCCL_E_MEMORY;
    algo_op key = compile_key(op);
    HcclResult rc = compile(c, &key, &e->plan);
    if (rc != HCCL_SUCCESS) {
        free(e);
        return rc;
    }
    e->key = e->plan->op; /* the plan's copy owns counts/items */
    e->counts_hash = ch;
    e->holds = 1;
    e->next = *b;
    *b = e;
    lru_push_front(pc, e);
    pc->nplans++;
    pc->last = e;
    trim(pc);
    *out = e->plan;
    return HCCL_SUCCESS;
}

HcclResult rt_plan_get(rt_comm *c, const algo_op *op, const algo_plan **out)
{
    const algo_plan *plan = NULL;
    algo_op key;
    CHECK(lookup(c, with_v_choice(c, op, &key), &plan));
    HcclResult rc = call_fits(c, op, plan);
    if (rc != HCCL_SUCCESS) {
        rt_plan_put(c, plan);
        return rc;
    }
    *out = plan;
    return HCCL_SUCCESS;
}

void rt_plan_put(rt_comm *c, const algo_plan *plan)
{
    rt_plan_cache *pc = c->cache;
    uint64_t ch;
    rt_plan_entry *e = pc->last && pc->last->plan == plan ? pc->last : *bucket_of(pc, &plan->op, &ch);
    for (; e; e = e->next) {
        if (e->plan == plan) {
            if (e->holds && --e->holds == 0 && pc->nplans > pc->limit)
                trim(pc);
            return;
        }
    }
    OH_ERR("plan", "rank %u: released a plan the cache does not hold (%s)", c->rank, algo_coll_name(plan->op.coll));
}
