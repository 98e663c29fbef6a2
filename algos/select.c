/* Algorithm selection and the HCCL_ALGO parser.
 *
 * Selection (documented in docs/algorithms.md): a forced algorithm wins when it supports the
 * collective; SENDRECV -> p2p; everything on one server with n <= 16 -> mesh (direct, O(1) rounds
 * over HCCS), or eager (algos/eager.c) when the op's per-box bytes are at most the crossover;
 * otherwise ring for reductions/gathers and pairwise for all-to-all. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "algos/algo_build.h"
#include "algos/cost.h"

static bool is_a2a(algo_coll c)
{
    return c == ALGO_COLL_ALLTOALL || c == ALGO_COLL_ALLTOALLV || c == ALGO_COLL_ALLTOALLVC;
}

bool algo_supports(algo_kind kind, const algo_op *op)
{
    if (!op || (unsigned)op->coll >= ALGO_COLL_COUNT)
        return false;
    if (is_a2a(op->coll) && op->in_place)
        return false;
    switch (kind) {
    case ALGO_RING:
    case ALGO_MESH: return op->coll != ALGO_COLL_SENDRECV;
    case ALGO_PAIRWISE: return is_a2a(op->coll);
    case ALGO_P2P: return op->coll == ALGO_COLL_SENDRECV;
    case ALGO_EAGER: return algo_eager_supports(op);
    case ALGO_HIER: return algo_hier_coll_supported(op->coll);
    case ALGO_RING_PUSH:
        return op->coll == ALGO_COLL_ALLREDUCE || op->coll == ALGO_COLL_REDUCE_SCATTER || op->coll == ALGO_COLL_REDUCE ||
               op->coll == ALGO_COLL_REDUCE_SCATTERV;
    default: return false;
    }
}

/* A V-op's largest block, in elements: COUNT[j] (AllGatherV, ReduceScatterV), any entry of the
 * send-count matrix (AlltoAllVC). */
static uint64_t v_max_block(const algo_op *op)
{
    uint32_t n = op->nranks;
    uint32_t entries = op->coll == ALGO_COLL_ALLTOALLVC ? n * n : n;
    uint64_t most = 0;
    for (uint32_t i = 0; i < entries && i < op->ncounts; i++)
        most = op->counts[i] > most ? op->counts[i] : most;
    return most;
}

uint64_t algo_eager_bytes(const algo_op *op)
{
    if (!algo_counts_symbolic(op->coll))
        return op->count * hal_dtype_size(op->dtype);
    if (op->coll == ALGO_COLL_ALLTOALLV) /* blocks past the crossover go straight to OUT (eager.c) */
        return 0;
    if (!op->counts) /* a plan for any count table: only for calls the runtime found to fit */
        return op->v_eager ? 0 : UINT64_MAX;
    return v_max_block(op) * hal_dtype_size(op->dtype);
}

uint64_t algo_eager_default(const algo_op *op, const algo_topo *topo)
{
    /* Broadcast and Scatter keep the full default wherever they may go one-way: the first call of a
     * run is not one-way yet, and were it mesh, no run would start (the runtime counts eager plans
     * that could go one-way: rt_oneway_expect_run). */
    bool may_go_oneway = topo && topo->oneway && algo_coll_rooted_put(op->coll);
    if (!topo)
        return ALGO_EAGER_DEFAULT_BYTES;
    if (!topo->ranks_concurrent) {
        if (algo_coll_oneway(op->coll)) /* rooted: each line crosses once */
            return ALGO_EAGER_SHARED_BYTES;
        uint64_t exchange = ALGO_EAGER_SHARED_TOTAL_BYTES / (op->nranks ? op->nranks : 1);
        return exchange < ALGO_EAGER_SHARED_BYTES ? exchange : ALGO_EAGER_SHARED_BYTES;
    }
    return may_go_oneway ? ALGO_EAGER_DEFAULT_BYTES : ALGO_EAGER_CONCURRENT_BYTES;
}

uint64_t algo_eager_crossover(const algo_op *op, const algo_topo *topo)
{
    uint64_t max = topo ? topo->eager_max : ALGO_EAGER_AUTO;
    if (max == ALGO_EAGER_AUTO)
        max = algo_eager_default(op, topo);
    return max < ALGO_EAGER_BOX ? max : ALGO_EAGER_BOX;
}

/* Collectives whose per-box data fits a box. V-ops whose tables are the same on every rank (or,
 * for AlltoAllVC, the whole matrix is), so that every rank makes the same choice; AlltoAllV, where
 * a rank knows only its own row and column, at any size: its plan chooses per block. */
bool algo_eager_supports(const algo_op *op)
{
    switch (op->coll) {
    case ALGO_COLL_ALLREDUCE:
    case ALGO_COLL_BROADCAST:
    case ALGO_COLL_ALLGATHER:
    case ALGO_COLL_REDUCE_SCATTER:
    case ALGO_COLL_REDUCE:
    case ALGO_COLL_SCATTER:
    case ALGO_COLL_ALLTOALL:
    case ALGO_COLL_ALLGATHERV:
    case ALGO_COLL_REDUCE_SCATTERV:
    case ALGO_COLL_ALLTOALLVC:
    case ALGO_COLL_ALLTOALLV: break;
    default: return false;
    }
    return hal_dtype_size(op->dtype) && algo_eager_bytes(op) <= ALGO_EAGER_BOX;
}

bool algo_topo_one_server(const algo_topo *topo, uint32_t n)
{
    if (!topo || !topo->server_of)
        return true;
    for (uint32_t r = 1; r < n && r < topo->nranks; r++)
        if (topo->server_of[r] != topo->server_of[0])
            return false;
    return true;
}

/* Several servers: a rank may only copy into another server's memory (runtime/net), so
 * reductions take ring_push whatever is forced (ring and mesh reduce into peers' buffers). */
static bool needs_push(const algo_op *op, const algo_topo *topo)
{
    return !algo_topo_one_server(topo, op->nranks) && algo_supports(ALGO_RING_PUSH, op);
}

/* hier's scratch on every rank within the budget (its leaders and agents need more than the flat
 * plans, and only AllReduce's works in rounds). Every rank's plan is compiled, so every rank
 * reaches the same verdict; this runs once per plan-cache miss. */
static bool hier_fits_scratch(const algo_op *op, const algo_topo *topo)
{
    if (!topo || !topo->scratch_max || op->coll == ALGO_COLL_ALLREDUCE)
        return true;
    bool ok = true;
    for (uint32_t r = 0; ok && r < op->nranks; r++) {
        algo_op o = *op;
        algo_plan *p = NULL;
        o.rank = r;
        ok = algo_compile(&o, topo, ALGO_HIER, &p) == 0 && p->scratch_bytes <= topo->scratch_max;
        algo_plan_free(p);
    }
    return ok;
}

/* Several servers: hier when it fits (scratch included) and the cost model says it beats the flat
 * algorithm (AllReduce: whenever it fits, as measured in docs/perf-history.md). */
static bool hier_pays(const algo_op *op, const algo_topo *topo, algo_kind flat)
{
    if (!algo_hier_coll_fits(op, topo))
        return false;
    if (op->coll != ALGO_COLL_ALLREDUCE &&
        algo_cost_estimate(op, topo, ALGO_HIER, NULL) >= algo_cost_estimate(op, topo, flat, NULL))
        return false;
    return hier_fits_scratch(op, topo);
}

algo_kind algo_select(const algo_op *op, const algo_topo *topo, algo_kind forced)
{
    if (forced == ALGO_HIER)
        return algo_hier_coll_fits(op, topo) ? ALGO_HIER : algo_select(op, topo, ALGO_AUTO);
    if (needs_push(op, topo)) { /* ring and mesh would reduce into peers' buffers across servers */
        if (forced == ALGO_RING_PUSH)
            return forced; /* our HCCL_ALGO token, to compare with hier */
        return hier_pays(op, topo, ALGO_RING_PUSH) ? ALGO_HIER : ALGO_RING_PUSH;
    }
    if (forced != ALGO_AUTO && algo_supports(forced, op))
        return forced;
    if (op->coll == ALGO_COLL_SENDRECV)
        return ALGO_P2P;
    if (algo_topo_one_server(topo, op->nranks) && op->nranks <= ALGO_MESH_MAX_RANKS) {
        /* Eager only where every other plan is mesh (all end full, plan.h INBOX) and unforced. */
        uint64_t max = topo ? algo_eager_crossover(op, topo) : 0;
        if (forced == ALGO_AUTO && max && algo_eager_supports(op) && algo_eager_bytes(op) <= max)
            return ALGO_EAGER;
        return ALGO_MESH;
    }
    algo_kind flat = is_a2a(op->coll) ? ALGO_PAIRWISE : ALGO_RING;
    if (!algo_topo_one_server(topo, op->nranks) && hier_pays(op, topo, flat))
        return ALGO_HIER;
    return flat;
}

/* ---- HCCL_ALGO ---------------------------------------------------------------------------- */

/* Copies [s, e) trimmed of blanks into buf; false if it does not fit. */
static bool token(const char *s, const char *e, char *buf, size_t cap)
{
    while (s < e && isspace((unsigned char)*s))
        s++;
    while (e > s && isspace((unsigned char)e[-1]))
        e--;
    if ((size_t)(e - s) >= cap)
        return false;
    memcpy(buf, s, (size_t)(e - s));
    buf[e - s] = 0;
    return true;
}

/* Why a spec was refused (NULL buf: not wanted). */
typedef struct parse_why {
    char *buf;
    size_t len;
} parse_why;

static int refuse(parse_why *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(parse_why *w, const char *fmt, ...)
{
    if (w->buf && w->len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->buf, w->len, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* HCCL's accepted algorithm tokens; the ones we do not implement map to AUTO (HCCL, too, falls
 * back silently when the configured algorithm does not support an op). */
static int algo_token(const char *t, algo_kind *k, parse_why *w)
{
    static const struct { const char *name; algo_kind kind; } map[] = {
        {"ring", ALGO_RING},      {"fullmesh", ALGO_MESH}, {"pairwise", ALGO_PAIRWISE},
        {"null", ALGO_AUTO},      {"NA", ALGO_AUTO},       {"pipeline", ALGO_AUTO},
        {"H-D_R", ALGO_AUTO},     {"NHR", ALGO_AUTO},      {"NHR_V1", ALGO_AUTO},
        {"AHC", ALGO_AUTO},       {"AHC_BROKE", ALGO_AUTO}, {"NB", ALGO_AUTO},
        {"ring_push", ALGO_RING_PUSH}, {"hier", ALGO_HIER}, /* ours: several servers */
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (!strcasecmp(t, map[i].name)) {
            *k = map[i].kind;
            return 0;
        }
    return refuse(w, "unknown algorithm '%s' (ring, fullmesh, pairwise, ring_push, hier; HCCL's null, NA, "
                     "pipeline, H-D_R, NHR, NHR_V1, AHC, AHC_BROKE and NB leave the choice per call)", t);
}

/* "level0:NA;level1:ring[;level2:..]" -> the level1 algorithm (level0/2/3 are accepted and
 * ignored: our algorithms are flat). */
static int parse_levels(const char *s, const char *e, algo_kind *level1, parse_why *w)
{
    bool seen[4] = {false};
    *level1 = ALGO_AUTO;
    if (s == e)
        return refuse(w, "no levels (level0:<algo>;level1:<algo>)");
    while (s < e) {
        const char *semi = memchr(s, ';', (size_t)(e - s));
        const char *end = semi ? semi : e;
        const char *colon = memchr(s, ':', (size_t)(end - s));
        char lv[16], al[16];
        algo_kind k = ALGO_AUTO;
        if (!colon || !token(s, colon, lv, sizeof(lv)) || !token(colon + 1, end, al, sizeof(al)))
            return refuse(w, "'%.*s' is not level<0-3>:<algorithm>", (int)(end - s), s);
        if (strncasecmp(lv, "level", 5) || lv[5] < '0' || lv[5] > '3' || lv[6])
            return refuse(w, "'%s' is not level0, level1, level2 or level3", lv);
        if (seen[lv[5] - '0'])
            return refuse(w, "%s is given twice", lv);
        seen[lv[5] - '0'] = true;
        if (algo_token(al, &k, w))
            return -1;
        if (lv[5] == '1')
            *level1 = k;
        if (semi && semi + 1 == e)
            return refuse(w, "a ';' with no level after it");
        s = semi ? semi + 1 : e;
    }
    return 0;
}

/* HCCL_ALGO op names and the collectives each covers (-1 = unknown name). */
static int op_index(const char *name)
{
    static const char *const names[] = {"allreduce", "allgather", "reducescatter", "broadcast",
                                        "reduce",    "scatter",   "alltoall"};
    for (int i = 0; i < 7; i++)
        if (!strcasecmp(name, names[i]))
            return i;
    return -1;
}

static bool op_covers(int idx, algo_coll c)
{
    static const algo_coll cover[7][3] = {
        {ALGO_COLL_ALLREDUCE, ALGO_COLL_ALLREDUCE, ALGO_COLL_ALLREDUCE},
        {ALGO_COLL_ALLGATHER, ALGO_COLL_ALLGATHERV, ALGO_COLL_ALLGATHER},
        {ALGO_COLL_REDUCE_SCATTER, ALGO_COLL_REDUCE_SCATTERV, ALGO_COLL_REDUCE_SCATTER},
        {ALGO_COLL_BROADCAST, ALGO_COLL_BROADCAST, ALGO_COLL_BROADCAST},
        {ALGO_COLL_REDUCE, ALGO_COLL_REDUCE, ALGO_COLL_REDUCE},
        {ALGO_COLL_SCATTER, ALGO_COLL_SCATTER, ALGO_COLL_SCATTER},
        {ALGO_COLL_ALLTOALL, ALGO_COLL_ALLTOALLV, ALGO_COLL_ALLTOALLVC},
    };
    return c == cover[idx][0] || c == cover[idx][1] || c == cover[idx][2];
}

static int parse_spec(const char *spec, algo_coll coll, algo_kind *forced, parse_why *w);

int algo_parse_env(const char *spec, algo_coll coll, algo_kind *forced)
{
    return algo_parse_env_why(spec, coll, forced, NULL, 0);
}

int algo_parse_env_why(const char *spec, algo_coll coll, algo_kind *forced, char *why, size_t len)
{
    parse_why w = {why, len};
    int rc = parse_spec(spec, coll, forced, &w);
    if (rc)
        *forced = ALGO_AUTO; /* a bad spec forces nothing */
    return rc;
}

static int parse_spec(const char *spec, algo_coll coll, algo_kind *forced, parse_why *w)
{
    *forced = ALGO_AUTO;
    if (!spec || !spec[0] || strspn(spec, " \t") == strlen(spec))
        return 0; /* unset or blank */
    const char *s = spec, *e = spec + strlen(spec);
    if (!memchr(s, '=', (size_t)(e - s)))
        return parse_levels(s, e, forced, w);
    uint32_t seen = 0;
    while (s < e) { /* "<op>=<levels>/<op>=<levels>..." */
        const char *slash = memchr(s, '/', (size_t)(e - s));
        const char *end = slash ? slash : e;
        const char *eq = memchr(s, '=', (size_t)(end - s));
        char name[24];
        algo_kind k = ALGO_AUTO;
        if (!eq || !token(s, eq, name, sizeof(name)))
            return refuse(w, "'%.*s' is not <op>=<levels>", (int)(end - s), s);
        if (parse_levels(eq + 1, end, &k, w))
            return -1;
        int idx = op_index(name);
        if (idx < 0)
            return refuse(w, "unknown op '%s' (allreduce, allgather, reducescatter, broadcast, reduce, scatter, "
                             "alltoall)", name);
        if (seen & (1u << idx))
            return refuse(w, "op '%s' is given twice", name);
        seen |= 1u << idx;
        if (op_covers(idx, coll))
            *forced = k;
        if (slash && slash + 1 == e)
            return refuse(w, "a '/' with no op after it");
        s = slash ? slash + 1 : e;
    }
    return 0;
}
