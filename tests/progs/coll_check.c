/* coll_check: run by hcclrun on N ranks. Every collective x data type x reduce op x placement x
 * count x root, every element checked against a host reference (see prog_data.c for why the
 * values are exact whatever the reduction order).
 *
 *   hcclrun -n 4 coll_check [--algo auto|ring|mesh|pairwise|hier|ring_push] [--colls allreduce,broadcast,...]
 *                           [--dtypes fp32,bf16,...|all] [--ops sum,prod,max,min]
 *                           [--counts 0,1,7,1048579] [--roots 0,last] [--place out,in]
 *                           [--big-limit 4096] [--big-all] [--quiet]
 *
 * --algo sets HCCL_ALGO (level1) before the communicator is created, so every collective that
 * algorithm serves runs with it (the others fall back to the selector, as HCCL does).
 * HCCL_E_NOT_SUPPORT fails a case unless (algorithm, collective, placement) is in the table of
 * known unsupported combinations below, which rank 0 prints.
 *
 * Counts above --big-limit run only a representative subset (fp32 sum, bf16 max, int8 sum,
 * int64 prod; copy collectives fp32, bf16, int8, int64) unless --big-all.
 * Prints one summary line per collective (rank 0, or any rank with failures) and a final
 * "coll_check: N passed, M failed" on every rank; exits non-zero on any failure. */
#include "coll_check.h"

#include <string.h>

const cc_coll cc_colls[] = {
    {"AllReduce", "allreduce", true, false, true, false, false, cc_allreduce},
    {"Broadcast", "broadcast", false, true, false, false, false, cc_broadcast},
    {"AllGather", "allgather", false, false, true, false, false, cc_allgather},
    {"ReduceScatter", "reducescatter", true, false, true, false, false, cc_reducescatter},
    {"Reduce", "reduce", true, true, true, false, false, cc_reduce},
    {"Scatter", "scatter", false, true, false, false, false, cc_scatter},
    {"AlltoAll", "alltoall", false, false, true, false, false, cc_alltoall},
    {"AlltoAllV", "alltoallv", false, false, false, false, false, cc_alltoallv},
    {"AlltoAllVC", "alltoallvc", false, false, false, false, false, cc_alltoallvc},
    {"AllGatherV", "allgatherv", false, false, true, false, false, cc_allgatherv},
    {"ReduceScatterV", "reducescatterv", true, false, true, false, false, cc_reducescatterv},
    {"SendRecv", "sendrecv", false, false, false, true, false, cc_sendrecv},
    {"BatchSendRecv", "batchsendrecv", false, false, false, true, false, cc_batchsendrecv},
    {"GroupSendRecv", "group", false, false, false, true, false, cc_group},
    {"Barrier", "barrier", false, false, false, false, true, cc_barrier},
};
const int cc_ncolls = (int)(sizeof cc_colls / sizeof cc_colls[0]);

/* Combinations the library answers with HCCL_E_NOT_SUPPORT on purpose ("*" = any algorithm;
 * place: 0 out of place, 1 in place, -1 both). Anything else returning it is a failure. */
static const struct {
    const char *algo, *coll;
    int place;
    const char *why;
} cc_unsupported[] = {
    {"*", "AlltoAll", 1, "AlltoAll in place: no algorithm implements it yet (docs/algorithms.md, Known gaps)"},
};
#define CC_NUNSUPPORTED (int)(sizeof cc_unsupported / sizeof cc_unsupported[0])

bool cc_known_unsupported(const cc_ctx *c, const cc_case *k)
{
    for (int i = 0; i < CC_NUNSUPPORTED; i++)
        if ((!strcmp(cc_unsupported[i].algo, "*") || !strcmp(cc_unsupported[i].algo, c->algo)) &&
            !strcmp(cc_unsupported[i].coll, k->coll) && (cc_unsupported[i].place < 0 || cc_unsupported[i].place == k->inplace))
            return true;
    return false;
}

static void print_unsupported(void)
{
    printf("unsupported table (HCCL_E_NOT_SUPPORT expected; anything else returning it fails):\n");
    for (int i = 0; i < CC_NUNSUPPORTED; i++)
        printf("  algo %-8s Hccl%-14s %-12s %s\n", cc_unsupported[i].algo, cc_unsupported[i].coll,
               cc_unsupported[i].place < 0 ? "any place" : cc_unsupported[i].place ? "in place" : "out of place",
               cc_unsupported[i].why);
}

/* --algo NAME -> HCCL_ALGO's level1 token. */
static const char *algo_token(const char *name)
{
    static const char *const map[][2] = {{"auto", "NA"}, {"ring", "ring"}, {"mesh", "fullmesh"},
                                         {"pairwise", "pairwise"}, {"hier", "hier"}, {"ring_push", "ring_push"}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(name, map[i][0]))
            return map[i][1];
    return NULL;
}

#define MAX_LIST 32

typedef struct opts {
    bool coll_on[32];
    HcclDataType dts[MAX_LIST];
    int ndts;
    HcclReduceOp ops[4];
    int nops;
    uint64_t counts[MAX_LIST];
    int ncounts;
    int64_t roots[MAX_LIST]; /* -1 = last rank */
    int nroots;
    bool place[2]; /* [0] out of place, [1] in place */
    uint64_t big_limit;
    bool big_all, quiet;
    const char *algo;
} opts;

typedef struct tally {
    int pass, fail, unsup;
    char unsup_list[1024];
} tally;

static void usage(void)
{
    fprintf(stderr, "usage: coll_check [--algo auto|ring|mesh|pairwise|hier|ring_push] [--colls LIST] [--dtypes LIST|all] [--ops LIST] [--counts LIST] "
            "[--roots LIST (numbers or 'last')] [--place out,in] [--big-limit N] [--big-all] [--quiet]\n");
    exit(2);
}

/* Splits a comma list, calling item() for each token; item returns false on a bad token. */
static void each_token(const char *list, bool (*item)(opts *, const char *), opts *o)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
        if (!item(o, t)) {
            fprintf(stderr, "coll_check: bad list item '%s'\n", t);
            usage();
        }
}

static bool add_coll(opts *o, const char *t)
{
    for (int i = 0; i < cc_ncolls; i++)
        if (!strcmp(t, cc_colls[i].flag) || !strcmp(t, "all")) {
            o->coll_on[i] = true;
            if (strcmp(t, "all"))
                return true;
        }
    return !strcmp(t, "all");
}

static bool add_dt(opts *o, const char *t)
{
    if (!strcmp(t, "all")) {
        for (int i = 0; i < PROG_NDTYPES; i++)
            o->dts[o->ndts++] = prog_all_dtypes[i];
        return true;
    }
    return o->ndts < MAX_LIST && dt_parse(t, &o->dts[o->ndts++]);
}

static bool add_op(opts *o, const char *t)
{
    return o->nops < 4 && op_parse(t, &o->ops[o->nops++]);
}

static bool add_count(opts *o, const char *t)
{
    char *end;
    o->counts[o->ncounts] = strtoull(t, &end, 0);
    return o->ncounts++ < MAX_LIST && !*end;
}

static bool add_root(opts *o, const char *t)
{
    char *end;
    o->roots[o->nroots] = !strcmp(t, "last") ? -1 : strtoll(t, &end, 0);
    return o->nroots++ < MAX_LIST && (!strcmp(t, "last") || !*end);
}

static bool add_place(opts *o, const char *t)
{
    if (!strcmp(t, "out") || !strcmp(t, "in")) {
        o->place[!strcmp(t, "in")] = true;
        return true;
    }
    return false;
}

static void parse(int argc, char **argv, opts *o)
{
    memset(o, 0, sizeof *o);
    o->big_limit = 4096;
    o->algo = "auto";
    const char *colls = "all", *dts = "all", *ops = "sum,prod,max,min", *counts = "0,1,7,1048579";
    const char *roots = "0,last", *place = "out,in";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--big-all")) {
            o->big_all = true;
            continue;
        }
        if (!strcmp(a, "--quiet")) {
            o->quiet = true;
            continue;
        }
        if (!v)
            usage();
        i++;
        if (!strcmp(a, "--algo")) o->algo = v;
        else if (!strcmp(a, "--colls")) colls = v;
        else if (!strcmp(a, "--dtypes")) dts = v;
        else if (!strcmp(a, "--ops")) ops = v;
        else if (!strcmp(a, "--counts")) counts = v;
        else if (!strcmp(a, "--roots")) roots = v;
        else if (!strcmp(a, "--place")) place = v;
        else if (!strcmp(a, "--big-limit")) o->big_limit = strtoull(v, NULL, 0);
        else usage();
    }
    each_token(colls, add_coll, o);
    each_token(dts, add_dt, o);
    each_token(ops, add_op, o);
    each_token(counts, add_count, o);
    each_token(roots, add_root, o);
    each_token(place, add_place, o);
    if (!algo_token(o->algo)) {
        fprintf(stderr, "coll_check: unknown --algo '%s'\n", o->algo);
        usage();
    }
}

/* Whether a big count runs for this combination (the representative subset). */
static bool big_ok(const opts *o, const cc_coll *cl, HcclDataType dt, HcclReduceOp op)
{
    if (o->big_all)
        return true;
    if (!cl->reduces)
        return dt == HCCL_DATA_TYPE_FP32 || dt == HCCL_DATA_TYPE_BFP16 || dt == HCCL_DATA_TYPE_INT8 ||
               dt == HCCL_DATA_TYPE_INT64;
    return (dt == HCCL_DATA_TYPE_FP32 && op == HCCL_REDUCE_SUM) || (dt == HCCL_DATA_TYPE_BFP16 && op == HCCL_REDUCE_MAX) ||
           (dt == HCCL_DATA_TYPE_INT8 && op == HCCL_REDUCE_SUM) || (dt == HCCL_DATA_TYPE_INT64 && op == HCCL_REDUCE_PROD);
}

static void record(tally *t, cc_result r, const cc_case *k, bool reduces)
{
    if (r == CC_PASS) {
        t->pass++;
    } else if (r == CC_FAIL) {
        t->fail++;
    } else {
        char item[64];
        snprintf(item, sizeof item, "%s%s%s", dt_name(k->dt), reduces ? "/" : "", reduces ? op_name(k->op) : "");
        if (t->unsup == 0 || !strstr(t->unsup_list, item)) /* one mention per dtype/op */
            if (strlen(t->unsup_list) + strlen(item) + 2 < sizeof t->unsup_list)
                strcat(strcat(t->unsup_list, " "), item);
        t->unsup++;
    }
}

/* All cases of one collective; returns its tally. */
static tally run_coll(cc_ctx *c, const opts *o, const cc_coll *cl, uint32_t *salt)
{
    tally t;
    memset(&t, 0, sizeof t);
    uint32_t n = c->e->n;
    if (cl->p2p && n < 2)
        return t;
    cc_case k = {HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, 0, 0, false, 0, cl->name};
    if (cl->shapeless) {
        k.salt = (*salt)++;
        record(&t, cl->run(c, &k), &k, false);
        return t;
    }
    for (int d = 0; d < o->ndts; d++) {
        k.dt = o->dts[d];
        if (cl->reduces && !dt_reducible(k.dt))
            continue;
        for (int p = 0; p < (cl->reduces ? o->nops : 1); p++) {
            k.op = cl->reduces ? o->ops[p] : HCCL_REDUCE_SUM;
            for (int ci = 0; ci < o->ncounts; ci++) {
                k.count = o->counts[ci];
                if (k.count > o->big_limit && !big_ok(o, cl, k.dt, k.op))
                    continue;
                for (int ri = 0; ri < (cl->rooted ? o->nroots : 1); ri++) {
                    int64_t root = cl->rooted ? o->roots[ri] : 0;
                    k.root = root < 0 ? n - 1 : (uint32_t)root % n;
                    if (ri > 0 && k.root == (o->roots[0] < 0 ? n - 1 : (uint32_t)o->roots[0] % n))
                        continue; /* N=1: roots 0 and last coincide */
                    for (int ip = 0; ip < 2; ip++) {
                        /* without an in-place form, one run whatever --place says */
                        bool want = cl->has_inplace ? o->place[ip] : ip == 0;
                        if (!want)
                            continue;
                        k.inplace = ip == 1;
                        k.salt = (*salt)++;
                        record(&t, cl->run(c, &k), &k, cl->reduces);
                    }
                }
            }
        }
    }
    return t;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    opts o;
    parse(argc, argv, &o);
    if (strcmp(o.algo, "auto")) {
        char spec[64];
        snprintf(spec, sizeof spec, "level0:NA;level1:%s", algo_token(o.algo));
        setenv("HCCL_ALGO", spec, 1); /* read when the communicator is created */
    }
    prog_env e;
    prog_init(&e);
    cc_ctx c = {&e, 4, 0, o.algo};
    if (e.rank == 0 && !o.quiet) {
        printf("coll_check: %u ranks, algo %s (HCCL_ALGO=\"%s\")\n", e.n, o.algo,
               getenv("HCCL_ALGO") ? getenv("HCCL_ALGO") : "");
        print_unsupported();
    }
    int pass = 0, fail = 0;
    uint32_t salt = 1;
    double t0 = prog_now_s();
    for (int i = 0; i < cc_ncolls; i++) {
        if (!o.coll_on[i])
            continue;
        const cc_coll *cl = &cc_colls[i];
        double ts = prog_now_s();
        tally t = run_coll(&c, &o, cl, &salt);
        pass += t.pass;
        fail += t.fail;
        if (cl->p2p && e.n < 2) {
            if (e.rank == 0 && !o.quiet)
                printf("%-15s skipped: needs at least 2 ranks\n", cl->name);
            continue;
        }
        if ((e.rank == 0 && !o.quiet) || t.fail)
            printf("%-15s %4d passed, %d failed, %d unsupported (in the table)%s%s (%.2f s)\n", cl->name, t.pass, t.fail, t.unsup,
                   t.unsup ? " [HCCL_E_NOT_SUPPORT:" : "", t.unsup ? strcat(t.unsup_list, "]") : "",
                   prog_now_s() - ts);
    }
    prog_fini(&e);
    printf("coll_check: %d passed, %d failed (%u ranks, %.1f s)\n", pass, fail, e.n, prog_now_s() - t0);
    return fail ? 1 : 0;
}
