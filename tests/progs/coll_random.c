/* coll_misc random-SEED: RS_ROUNDS rounds of RS_OPS calls drawn from a generator seeded with SEED
 * (the same on every rank, so every rank draws the same calls), issued back to back and checked
 * after one synchronize (coll_eop.h). What the fixed sequences of coll_eager.c do not combine:
 * every collective and V form, Send/Recv rings (HcclBatchSendRecv, or a group), a lone Send/Recv
 * pair the other ranks sit out, and Barriers in one stream of calls; every data type (those the
 * host can reduce, for reductions) and op; zero counts, odd sizes on both sides of every crossover
 * (one-way up to 2 KiB, eager to 16 and 64 KiB, the full exchange past them); in and out of place;
 * runs of one root and kind, which go one-way, broken at random; a second stream for some calls
 * (the communicator orders them); from 4 ranks, a quarter of the calls on sub-communicators (the
 * halves and the parities, as tensor- and data-parallel groups are), between the others; now and
 * then a call whose receivers stall 30 ms first; and, after a third of the rounds, every
 * communicator destroyed and made again while peers may still be finishing the round. A failure
 * names the seed, round and call: `hcclrun -n N coll_misc random-SEED` replays it. With a fault
 * (random-SEED-mismatch, random-SEED-exit; rs_fault below) every rank left must report it. */
#include "coll_eop.h"

#include <stdio.h>
#include <string.h>

enum { RS_ROUNDS = 4, RS_OPS = 40 };
#define RS_HOST_MAX (4u << 20) /* every rank's input of a call on the host, at most */

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t next(rng *g) /* splitmix64 */
{
    uint64_t z = (g->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint32_t below(rng *g, uint32_t n)
{
    return (uint32_t)(next(g) % n);
}

static ecoll draw_kind(rng *g)
{
    static const ecoll weighted[] = {E_AR, E_AR, E_AR, E_AG, E_AG, E_RS, E_RS, E_A2A, E_A2A, E_BC, E_BC, E_BC,
                                     E_RED, E_RED, E_SC, E_SC, E_SR, E_SR, E_GRP, E_GRP, E_P2P, E_P2P, E_BAR,
                                     E_A2AV, E_A2AV, E_A2AVC, E_AGV, E_AGV, E_RSV, E_RSV};
    return weighted[below(g, sizeof weighted / sizeof weighted[0])];
}

/* Bytes of a rank's block: zero now and then, mostly small, the rest around or past the crossovers. */
static uint64_t draw_bytes(rng *g, bool small)
{
    uint32_t c = small ? 1 + below(g, 2) : below(g, 20);
    switch (c) {
    case 0: return 0;
    case 1: case 2: case 3: case 4: case 5: case 6: case 7: return 1 + below(g, 64);
    case 8: case 9: case 10: case 11: case 12: return 65 + below(g, 1984); /* to 2 KiB, one-way's largest */
    case 13: case 14: case 15: return 16384 - 8 + below(g, 17);
    case 16: case 17: return 65536 - 8 + below(g, 17);
    default: return 65544 + below(g, 200000);
    }
}

/* Displacements of counts c[0..n) laid out in order (or in reverse), with gaps of 0-3 elements when
 * gaps is set. */
static void draw_displs(rng *g, const uint64_t *c, uint64_t *d, uint32_t n, bool reverse, bool gaps)
{
    uint64_t at = 0;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t j = reverse ? n - 1 - k : k;
        d[j] = at;
        at += c[j] + (gaps ? below(g, 4) : 0);
    }
}

/* A V form's tables (coll_eop.h, eop_vt): blocks of 0 to 48 elements, some empty, and now and then
 * up to 9000 (past the eager crossovers), as far as RS_HOST_MAX allows; AlltoAllV's receive blocks
 * in reverse rank order, so the displacements matter. */
static void draw_v(rng *g, eop *o, uint32_t n)
{
    o->vt = xmalloc((size_t)EOP_VT * n * n * sizeof(uint64_t));
    uint64_t most = below(g, 6) ? 48 : 9000, fit = RS_HOST_MAX / ((uint64_t)n * n * dt_size(o->dt)) - 4;
    most = most < fit ? most : fit;
    uint64_t *shared[2] = {xmalloc(n * sizeof(uint64_t)), xmalloc(n * sizeof(uint64_t))};
    for (uint32_t j = 0; j < n; j++)
        shared[0][j] = below(g, 5) ? 1 + next(g) % most : 0;
    draw_displs(g, shared[0], shared[1], n, false, true);
    for (uint32_t r = 0; r < n; r++)
        for (uint32_t j = 0; j < n; j++)
            eop_vt(o, n, EOP_SC, r)[j] = o->coll == E_AGV ? shared[0][r] : o->coll == E_RSV ? shared[0][j]
                                         : below(g, 5) ? 1 + next(g) % most : 0;
    for (uint32_t r = 0; r < n; r++) {
        uint64_t *sc = eop_vt(o, n, EOP_SC, r), *rc = eop_vt(o, n, EOP_RC, r);
        for (uint32_t j = 0; j < n; j++)
            rc[j] = o->coll == E_AGV ? shared[0][j] : o->coll == E_RSV ? shared[0][r] : eop_vt(o, n, EOP_SC, j)[r];
        bool vc = o->coll == E_A2AVC;
        draw_displs(g, sc, eop_vt(o, n, EOP_SD, r), n, false, !vc);
        draw_displs(g, rc, eop_vt(o, n, EOP_RD, r), n, o->coll == E_A2AV, !vc);
        if (o->coll == E_AGV || o->coll == E_RSV) /* the same on every rank */
            memcpy(eop_vt(o, n, o->coll == E_AGV ? EOP_RD : EOP_SD, r), shared[1], n * sizeof(uint64_t));
    }
    free(shared[0]);
    free(shared[1]);
}

static void draw_types(rng *g, eop *o)
{
    static const HcclReduceOp ops[] = {HCCL_REDUCE_SUM, HCCL_REDUCE_PROD, HCCL_REDUCE_MAX, HCCL_REDUCE_MIN};
    do
        o->dt = prog_all_dtypes[below(g, PROG_NDTYPES)];
    while (eop_reduces(o->coll) && !dt_reducible(o->dt));
    o->op = ops[below(g, 4)];
}

/* A call's count (of a rank's block), from its size class, within RS_HOST_MAX, and its placement. */
static void draw_size(rng *g, eop *o, uint32_t n, bool run)
{
    uint64_t bytes = draw_bytes(g, run), es = dt_size(o->dt);
    o->count = bytes / es ? bytes / es : bytes != 0;
    eop_layout(o, n);
    while (o->count && n * o->in_elems * es > RS_HOST_MAX) {
        o->count /= 2;
        eop_layout(o, n);
    }
    o->inplace = o->coll < E_NCOLL && o->coll != E_A2A && o->coll != E_SC && below(g, 2);
}

/* Call i: a new draw, or (a run) the kind, communicator and root of the call before with a new
 * small size. A call goes to one of the sub-communicators (groups[0] or [1], when there are) one
 * time in four; every rank draws the same values whatever its sub-communicator: where a group's
 * size decides (root, peer, count), it only scales a value drawn alike. */
static eop draw_op(rng *g, const eop *prev, uint32_t n, aclrtStream second, prog_env *groups)
{
    bool run = prev && (prev->coll == E_BC || prev->coll == E_SC || prev->coll == E_RED || prev->coll == E_P2P) &&
               below(g, 10) < 7;
    eop op = {0}, *o = &op;
    o->coll = run ? prev->coll : draw_kind(g);
    if (n < 2 && (o->coll == E_SR || o->coll == E_GRP || o->coll == E_P2P))
        o->coll = E_AR; /* no peer to send to */
    uint32_t sub = below(g, 8); /* V forms only on the program's communicator: their tables are n x n */
    o->env = run ? prev->env : groups && sub < 2 && o->coll < E_A2AV ? &groups[sub] : NULL;
    uint32_t ne = o->env ? o->env->n : n;
    uint64_t root = next(g), shift = next(g);
    o->root = run ? prev->root : (uint32_t)(root % ne);
    o->shift = run ? prev->shift : ne > 1 ? 1 + (uint32_t)(shift % (ne - 1)) : 0;
    draw_types(g, o);
    if (o->coll >= E_A2AV) {
        draw_v(g, o, n);
        eop_layout(o, n);
    } else {
        draw_size(g, o, ne, run);
    }
    o->hold = below(g, 60) == 0;
    o->stream = below(g, 5) == 0 ? second : NULL;
    return op;
}

/* The sub-communicators of random-SEED at 4 ranks or more (each then has 2 at least): the halves
 * (ranks [0, n/2) and [n/2, n)) and the parities (even and odd ranks), made with
 * HcclCreateSubCommConfig. groups[0] is this rank's half, groups[1] its parity. */
static void make_groups(prog_env *e, prog_env groups[2])
{
    uint32_t h = e->n / 2, *ids = xmalloc(e->n * sizeof *ids);
    for (int k = 0; k < 2; k++) {
        uint32_t m = 0, me = 0;
        for (uint32_t r = 0; r < e->n; r++) {
            bool same = k == 0 ? (r < h) == (e->rank < h) : r % 2 == e->rank % 2;
            if (r == e->rank)
                me = m;
            if (same)
                ids[m++] = r;
        }
        uint64_t id = 1 + 2 * (uint64_t)k + (k == 0 ? e->rank >= h : e->rank % 2);
        HcclCommConfig cfg;
        HcclCommConfigInit(&cfg);
        groups[k] = (prog_env){me, m, e->local_rank, NULL, e->stream};
        HCCL_OK(HcclCreateSubCommConfig(&e->comm, m, ids, id, me, &cfg, &groups[k].comm));
    }
    free(ids);
}

/* random-SEED-mismatch and random-SEED-exit: where rank `rank`'s round goes wrong (the same seed
 * draws it on every rank). A mismatch: its call differs from the others' (`what`: its count, root,
 * reduce op or dtype), as a caller's bug would. An exit: it leaves the job there, without
 * HcclCommDestroy (`what` odd: after synchronizing the calls it made; even: at once, some of
 * them not done), as a crashing rank does. */
typedef enum { RS_NONE, RS_MISMATCH, RS_EXIT } rs_fault_kind;

typedef struct rs_fault {
    rs_fault_kind kind;
    int round, call; /* where; round -1: nowhere */
    uint32_t rank;   /* whose */
    uint32_t what;
} rs_fault;

static rs_fault draw_fault(rng *g, uint32_t n, rs_fault_kind kind)
{
    rs_fault f = {kind, -1, 0, 0, 0};
    if (kind == RS_NONE || n < 2)
        return f;
    f.round = (int)below(g, RS_ROUNDS);
    f.call = (int)below(g, RS_OPS);
    f.rank = below(g, n);
    f.what = below(g, 4);
    return f;
}

static bool collective(ecoll c)
{
    return c < E_NCOLL || c >= E_A2AV;
}

/* Makes call o of rank m->rank differ from the others' (m->what). Returns what it changed. */
static const char *mismatch(eop *o, const rs_fault *m, uint32_t n)
{
    bool rooted = o->coll == E_BC || o->coll == E_RED || o->coll == E_SC;
    if (m->what == 1 && rooted) {
        o->root = (o->root + 1) % n;
        return "root";
    }
    if (m->what == 2 && eop_reduces(o->coll)) {
        o->op = o->op == HCCL_REDUCE_SUM ? HCCL_REDUCE_MAX : HCCL_REDUCE_SUM;
        return "reduce op";
    }
    if (m->what == 3 && !o->vt && dt_size(o->dt) == 4) { /* the same bytes, another type */
        o->dt = o->dt == HCCL_DATA_TYPE_INT32 ? HCCL_DATA_TYPE_FP32 : HCCL_DATA_TYPE_INT32;
        return "dtype";
    }
    if (o->vt) /* one block more to rank 0 (AllGatherV, ReduceScatterV: tables the others do not have) */
        eop_vt(o, n, EOP_SC, m->rank)[0]++;
    else
        o->count++;
    eop_layout(o, n);
    return "count";
}

/* Draws round `round`'s calls (their kinds counted in kinds). In the fault's round, *at is where
 * it strikes (a mismatch: the first collective from the drawn call on, made to differ on the
 * fault's rank); elsewhere -1. */
static eop *draw_round(rng *g, prog_env *e, int round, aclrtStream second, prog_env *groups, int *kinds,
                       const rs_fault *m, int *at)
{
    eop *ops = xmalloc(RS_OPS * sizeof *ops);
    for (int i = 0; i < RS_OPS; i++) {
        ops[i] = draw_op(g, i ? &ops[i - 1] : NULL, e->n, second, groups);
        kinds[ops[i].coll]++;
    }
    *at = m->round == round ? m->call : -1;
    if (*at < 0 || m->kind != RS_MISMATCH)
        return ops;
    int seen = 0;
    while (!collective(ops[*at].coll) && ++seen < RS_OPS) /* the first collective from there on, around */
        *at = (*at + 1) % RS_OPS;
    if (!collective(ops[*at].coll)) { /* none in the round (every rank alike): the call becomes one */
        ops[*at].coll = E_AR, ops[*at].dt = HCCL_DATA_TYPE_INT32, ops[*at].op = HCCL_REDUCE_SUM;
        eop_layout(&ops[*at], e->n);
    }
    if (e->rank == m->rank) {
        const char *what = mismatch(&ops[*at], m, e->n);
        printf("rank %u: round %d call %d, %s: another %s than the other ranks'\n", e->rank, round, *at,
               ecoll_name[ops[*at].coll], what);
    }
    return ops;
}

/* Between rounds, now and then: every rank destroys its communicators and makes new ones (its
 * peers may still be in the round's last calls, a one-way root's receivers reading its inbox). */
static void recreate(prog_env *e, prog_env *sub)
{
    for (int k = 0; sub && k < 2; k++)
        HCCL_OK(HcclCommDestroy(sub[k].comm));
    HCCL_OK(HcclCommDestroy(e->comm));
    HcclRootInfo root;
    HCCL_OK(HcclExtShareRootInfo(e->rank, &root));
    HCCL_OK(HcclCommInitRootInfo(e->n, &root, e->rank, &e->comm));
    if (sub)
        make_groups(e, sub);
}

int misc_randomseq(prog_env *e, const char *seed_text, bool can_recreate)
{
    char *end;
    unsigned long long seed = strtoull(seed_text, &end, 10);
    bool known = !*end || !strcmp(end, "-mismatch") || !strcmp(end, "-exit");
    rs_fault_kind kind = !*end ? RS_NONE : !strcmp(end, "-mismatch") ? RS_MISMATCH : RS_EXIT;
    if (!*seed_text || !known || (kind != RS_NONE && e->n < 2)) {
        fprintf(stderr, "coll_misc random-SEED[-mismatch|-exit] (those on 2 ranks or more): not \"%s\"\n",
                seed_text);
        return 1;
    }
    aclrtStream second;
    ACL_OK(aclrtCreateStream(&second));
    rng g = {seed};
    rs_fault m = draw_fault(&g, e->n, kind);
    /* Not with a fault: a failure of the program's communicator would leave a sub-communicator's
     * peers waiting for calls this rank no longer makes. */
    prog_env groups[2], *sub = e->n >= 4 && kind == RS_NONE ? groups : NULL;
    if (sub)
        make_groups(e, sub);
    int bad = 0, kinds[E_NKINDS] = {0}, on_sub = 0, made = 0;
    for (int round = 0; round < RS_ROUNDS && !bad; round++) {
        int at;
        eop *ops = draw_round(&g, e, round, second, sub, kinds, &m, &at);
        for (int i = 0; i < RS_OPS; i++)
            on_sub += ops[i].env != NULL;
        char what[96];
        snprintf(what, sizeof what, "random calls (seed %llu, round %d)", seed, round);
        uint32_t salt = (uint32_t)(seed * 7919 + (uint64_t)round * RS_OPS);
        if (at >= 0 && kind == RS_EXIT && e->rank == m.rank)
            eop_run_exit(e, ops, at, salt, m.what % 2);
        if (at >= 0) {
            bad = eop_run_failing(e, ops, RS_OPS, salt, what, kind == RS_EXIT ? "PEER EXIT" : "MISMATCH");
            break; /* the communicator has failed */
        }
        bad = eop_run_back_to_back(e, ops, RS_OPS, salt, what);
        if (below(&g, 3) == 0 && can_recreate && !bad && round + 1 < RS_ROUNDS) {
            recreate(e, sub);
            made++;
        }
    }
    for (int k = 0; sub && k < 2; k++)
        HCCL_OK(HcclCommDestroy(sub[k].comm));
    ACL_OK(aclrtDestroyStream(second));
    if (e->rank == 0) { /* what the seed drew: a reader sees what a passing seed covered */
        printf("seed %llu drew", seed);
        for (int k = 0; k < E_NKINDS; k++)
            printf("%s %s %d", k ? "," : "", ecoll_name[k], kinds[k]);
        printf("; %d of them on sub-communicators; communicators made again %d times\n", on_sub, made);
    }
    return bad;
}

/* coll_misc threads-N-random-SEED: misc_randomseq on N ranks that are threads of this process, each
 * with its device and streams, their communicators from HcclCommInitAll: what a program that drives
 * every device of a server from one process does. */
typedef struct rs_thread {
    prog_env e;
    const char *seed;
    int bad;
} rs_thread;

static void *rs_thread_main(void *arg)
{
    rs_thread *t = arg;
    ACL_OK(aclrtSetDevice((int32_t)t->e.rank));
    ACL_OK(aclrtCreateStream(&t->e.stream));
    t->bad = misc_randomseq(&t->e, t->seed, false); /* HcclCommInitAll made them: no re-creation */
    ACL_OK(aclrtDestroyStream(t->e.stream));
    return NULL;
}

int misc_random_threads(const char *spec)
{
    unsigned n = 0;
    int used = 0;
    if (sscanf(spec, "%u-random-%n", &n, &used) != 1 || !used || n < 1 || n > 16 || strstr(spec, "-exit")) {
        /* a rank that exits would take every thread with it */
        fprintf(stderr, "coll_misc threads-N-random-SEED[-mismatch]: N from 1 to 16, not \"%s\"\n", spec);
        return 1;
    }
    ACL_OK(aclInit(NULL));
    int32_t devs[16];
    HcclComm comms[16];
    rs_thread t[16];
    pthread_t tid[16];
    for (unsigned r = 0; r < n; r++)
        devs[r] = (int32_t)r;
    HCCL_OK(HcclCommInitAll(n, devs, comms));
    for (unsigned r = 0; r < n; r++) {
        t[r] = (rs_thread){{r, n, r, comms[r], NULL}, spec + used, 0};
        if (pthread_create(&tid[r], NULL, rs_thread_main, &t[r])) {
            fprintf(stderr, "coll_misc threads: pthread_create failed\n");
            exit(2);
        }
    }
    int bad = 0;
    for (unsigned r = 0; r < n; r++) {
        pthread_join(tid[r], NULL);
        bad |= t[r].bad;
        HCCL_OK(HcclCommDestroy(comms[r]));
    }
    ACL_OK(aclFinalize());
    return bad;
}
