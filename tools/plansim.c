/* plansim: compiles and simulates every rank's plan of a collective (algos/ verifier, without
 * symbolic data unless --check) and prints per size the algorithm, steps, bytes per link class
 * and the alpha-beta predicted time and nccl-tests busbw; --dump RANK prints one rank's plan. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "algos/verify.h"

typedef struct cfg {
    algo_coll coll;
    uint32_t n, per_server;
    algo_kind kind;
    uint64_t minb, maxb;
    double factor;
    hal_dtype dt;
    int dump, check;
} cfg;

static const struct { const char *name; algo_coll c; } g_colls[] = {
    {"allreduce", ALGO_COLL_ALLREDUCE},   {"broadcast", ALGO_COLL_BROADCAST},
    {"allgather", ALGO_COLL_ALLGATHER},   {"reducescatter", ALGO_COLL_REDUCE_SCATTER},
    {"reduce", ALGO_COLL_REDUCE},         {"scatter", ALGO_COLL_SCATTER},
    {"alltoall", ALGO_COLL_ALLTOALL},     {"alltoallv", ALGO_COLL_ALLTOALLV},
    {"alltoallvc", ALGO_COLL_ALLTOALLVC}, {"allgatherv", ALGO_COLL_ALLGATHERV},
    {"reducescatterv", ALGO_COLL_REDUCE_SCATTERV}, {"sendrecv", ALGO_COLL_SENDRECV},
};

static uint64_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    switch (*end) {
    case 'K': case 'k': v *= 1024; break;
    case 'M': case 'm': v *= 1024 * 1024; break;
    case 'G': case 'g': v *= 1024.0 * 1024 * 1024; break;
    default: break;
    }
    return (uint64_t)v;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: plansim -c COLL -n RANKS [-p RANKS_PER_SERVER | -s SERVERS] [-a ring|mesh|pairwise|p2p|eager|ring_push|hier|auto]\n"
            "               [-b MINBYTES] [-e MAXBYTES] [-f FACTOR] [-d fp32|fp16|bf16|int8|int32|int64|fp64]\n"
            "               [--dump RANK] [--check]\n"
            "COLL: allreduce broadcast allgather reducescatter reduce scatter alltoall alltoallv alltoallvc\n"
            "      allgatherv reducescatterv sendrecv (each rank sends to rank+1)\n"
            "sizes follow nccl-tests: the whole buffer (allreduce/broadcast/reduce) or all n blocks.\n"
            "--check also runs the symbolic data and race checks (slow for large sizes).\n");
    exit(2);
}

static int parse_args(int argc, char **argv, cfg *c)
{
    static const struct option lo[] = {{"dump", required_argument, 0, 'D'}, {"check", no_argument, 0, 'C'}, {0}};
    static const char *const dts[] = {"int8", "int16", "int32", "fp16", "fp32", "int64", "uint64", "uint8",
                                      "uint16", "uint32", "fp64", "bf16"};
    uint32_t servers = 0;
    int o, found = 0;
    *c = (cfg){.n = 8, .kind = ALGO_AUTO, .minb = 8, .maxb = 8, .factor = 2, .dt = HAL_DT_FP32, .dump = -1};
    while ((o = getopt_long(argc, argv, "c:n:p:s:a:b:e:f:d:h", lo, NULL)) != -1) {
        switch (o) {
        case 'c':
            for (size_t i = 0; i < sizeof(g_colls) / sizeof(g_colls[0]); i++)
                if (!strcasecmp(optarg, g_colls[i].name))
                    c->coll = g_colls[i].c, found = 1;
            break;
        case 'n': c->n = (uint32_t)atoi(optarg); break;
        case 'p': c->per_server = (uint32_t)atoi(optarg); break;
        case 's': servers = (uint32_t)atoi(optarg); break;
        case 'a':
            for (int k = 0; k < ALGO_KIND_COUNT; k++)
                if (!strcasecmp(optarg, algo_kind_name((algo_kind)k)))
                    c->kind = (algo_kind)k;
            break;
        case 'b': c->minb = parse_size(optarg); break;
        case 'e': c->maxb = parse_size(optarg); break;
        case 'f': c->factor = atof(optarg); break;
        case 'd':
            for (int i = 0; i < 12; i++)
                if (!strcasecmp(optarg, dts[i]))
                    c->dt = (hal_dtype)i;
            break;
        case 'D': c->dump = atoi(optarg); break;
        case 'C': c->check = 1; break;
        default: usage();
        }
    }
    if (c->maxb < c->minb)
        c->maxb = c->minb;
    if (!found || c->n < 1 || c->factor <= 1)
        usage();
    if (servers)
        c->per_server = (c->n + servers - 1) / servers;
    if (!c->per_server)
        c->per_server = c->n;
    return 0;
}

/* Per-rank ops for a size in bytes (nccl-tests meaning); counts/items point into bufs. */
static void make_ops(const cfg *c, uint64_t bytes, algo_op *ops, uint64_t *mat, algo_p2p_item *items)
{
    uint32_t n = c->n;
    uint64_t esz = hal_dtype_size(c->dt), total = bytes / esz;
    bool whole = c->coll == ALGO_COLL_ALLREDUCE || c->coll == ALGO_COLL_BROADCAST || c->coll == ALGO_COLL_REDUCE ||
                 c->coll == ALGO_COLL_SENDRECV;
    uint64_t count = whole ? total : total / n;
    for (uint32_t r = 0; r < n; r++) {
        ops[r] = (algo_op){.coll = c->coll, .nranks = n, .rank = r, .count = count, .dtype = c->dt};
        uint64_t *m = mat + (size_t)r * 4 * n;
        switch (c->coll) {
        case ALGO_COLL_ALLTOALLV:
            for (uint32_t j = 0; j < n; j++)
                m[j] = m[2 * n + j] = count, m[n + j] = m[3 * n + j] = j * count;
            ops[r].counts = m, ops[r].ncounts = 4 * n;
            break;
        case ALGO_COLL_ALLTOALLVC:
            for (uint64_t i = 0; i < (uint64_t)n * n; i++)
                mat[i] = count;
            ops[r].counts = mat, ops[r].ncounts = n * n;
            break;
        case ALGO_COLL_ALLGATHERV:
        case ALGO_COLL_REDUCE_SCATTERV:
            for (uint32_t j = 0; j < n; j++)
                m[j] = count, m[n + j] = j * count;
            ops[r].counts = m, ops[r].ncounts = 2 * n;
            break;
        case ALGO_COLL_SENDRECV:
            items[2 * r] = (algo_p2p_item){.is_send = 1, .peer = (r + 1) % n, .count = count};
            items[2 * r + 1] = (algo_p2p_item){.is_send = 0, .peer = (r + n - 1) % n, .count = count};
            ops[r].items = &items[2 * r], ops[r].nitems = n > 1 ? 2 : 0;
            break;
        default: break;
        }
    }
}

/* The per-call V tables a count-independent plan refers to (algo_vtab). */
static const char *vtab_name(uint8_t tab)
{
    static const char *const n[] = {"", "count", "displ", "rcount", "rdispl"};
    return tab < sizeof n / sizeof n[0] ? n[tab] : "?";
}

static void print_ref(const algo_ref *x)
{
    static const char *const b[] = {"IN", "OUT", "SCR", "INBOX"};
    if (x->owner == ALGO_SELF)
        printf("%s", b[x->buf % 4]);
    else
        printf("r%d.%s", x->owner, b[x->buf % 4]);
    printf("+%llu", (unsigned long long)x->offset);
    if (x->vdispl >= 0)
        printf("+displ[%d]", x->vdispl);
    if (x->vsym.tab)
        printf("+my.%s[%u]", vtab_name(x->vsym.tab), x->vsym.idx);
}

static void dump_plan(const algo_plan *p)
{
    printf("# rank %u plan: %s %s, %u stream(s), %u slots, scratch %llu B\n", p->op.rank, p->name,
           algo_coll_name(p->op.coll), p->nstreams, p->nslots, (unsigned long long)algo_plan_scratch(p, &p->op));
    for (uint32_t s = 0; s < p->nstreams; s++)
        for (uint32_t i = 0; i < p->streams[s].nsteps; i++) {
            const algo_step *st = &p->streams[s].steps[i];
            printf("s%u %4u  ", s, i);
            switch (st->kind) {
            case ALGO_STEP_COPY:
            case ALGO_STEP_REDUCE:
                printf(st->kind == ALGO_STEP_COPY ? "COPY    " : "REDUCE  ");
                print_ref(&st->u.copy.dst);
                printf(" <- ");
                print_ref(&st->u.copy.src);
                if (st->kind == ALGO_STEP_REDUCE && st->u.reduce.has_src2) {
                    printf(" op ");
                    print_ref(&st->u.reduce.src2);
                }
                algo_vsym vc = st->kind == ALGO_STEP_COPY ? st->u.copy.vcount : st->u.reduce.vcount;
                if (vc.tab)
                    printf("  my.%s[%u] elements\n", vtab_name(vc.tab), vc.idx);
                else if (st->kind == ALGO_STEP_COPY)
                    printf("  %llu B\n", (unsigned long long)st->u.copy.bytes);
                else
                    printf("  %llu elems\n", (unsigned long long)st->u.reduce.count);
                break;
            case ALGO_STEP_SIGNAL: printf("SIGNAL  r%u slot %u\n", st->u.sync.peer, st->u.sync.slot); break;
            case ALGO_STEP_WAIT: printf("WAIT    r%u slot %u\n", st->u.sync.peer, st->u.sync.slot); break;
            case ALGO_STEP_FORK: printf("FORK    s%u\n", st->u.fork.stream); break;
            case ALGO_STEP_JOIN: printf("JOIN    s%u\n", st->u.fork.stream); break;
            case ALGO_STEP_PUBLISH: printf("PUBLISH\n"); break;
            case ALGO_STEP_FETCH: printf("FETCH   r%u\n", st->u.fetch.peer); break;
            default: printf("?\n");
            }
        }
}

static int run_size(const cfg *c, const algo_topo *topo, uint64_t bytes, algo_op *ops, uint64_t *mat,
                    algo_p2p_item *items)
{
    make_ops(c, bytes, ops, mat, items);
    if (c->dump >= 0) {
        algo_plan *p;
        algo_kind k = c->kind == ALGO_AUTO ? algo_select(&ops[c->dump], topo, ALGO_AUTO) : c->kind;
        int rc = algo_compile(&ops[c->dump], topo, k, &p);
        if (rc)
            return fprintf(stderr, "compile failed: %d\n", rc), 1;
        dump_plan(p);
        algo_plan_free(p);
        return 0;
    }
    algo_verify_opts o = {.skip_data = !c->check};
    algo_verify_report rep;
    int rc = algo_verify_ops(ops, topo, c->kind, &o, &rep);
    if (rc) {
        printf("%12llu  %-8s  FAILED (%d)\n%s", (unsigned long long)bytes, rep.name, rc, rep.msg);
        return 1;
    }
    algo_cost_result res;
    algo_cost_predict(&ops[0], &rep, NULL, &res);
    printf("%12llu %12llu  %-8s %7llu %14llu %14llu %14llu %11.1f %9.2f %9.2f\n", (unsigned long long)bytes,
           (unsigned long long)ops[0].count, rep.name, (unsigned long long)rep.max_rank_steps,
           (unsigned long long)rep.link_bytes[ALGO_LINK_INTRA], (unsigned long long)rep.link_bytes[ALGO_LINK_NET],
           (unsigned long long)rep.max_rank_sent, res.time_us, res.algbw_gbps, res.busbw_gbps);
    return 0;
}

int main(int argc, char **argv)
{
    cfg c;
    parse_args(argc, argv, &c);
    if (c.dump >= (int)c.n)
        usage();
    uint32_t *so = calloc(c.n, sizeof(*so));
    algo_op *ops = calloc(c.n, sizeof(*ops));
    uint64_t *mat = calloc((size_t)c.n * c.n * 4 + 4, sizeof(*mat));
    algo_p2p_item *items = calloc((size_t)c.n * 2, sizeof(*items));
    if (!so || !ops || !mat || !items)
        return 1;
    for (uint32_t r = 0; r < c.n; r++)
        so[r] = r / c.per_server;
    algo_topo topo = {.nranks = c.n, .server_of = so, .eager_max = ALGO_EAGER_AUTO};
    int fails = 0;
    if (c.dump < 0) {
        printf("# %s, %u ranks, %u per server, %s, algo %s (cost model: intra %.0f GB/s %.0f us, net %.0f GB/s %.0f us)\n",
               algo_coll_name(c.coll), c.n, c.per_server, hal_dtype_name(c.dt), algo_kind_name(c.kind),
               algo_cost_default()->gbps[ALGO_LINK_INTRA], algo_cost_default()->alpha_us[ALGO_LINK_INTRA],
               algo_cost_default()->gbps[ALGO_LINK_NET], algo_cost_default()->alpha_us[ALGO_LINK_NET]);
        printf("%12s %12s  %-8s %7s %14s %14s %14s %11s %9s %9s\n", "size(B)", "count", "algo", "steps",
               "intra(B)", "net(B)", "max sent(B)", "time(us)", "algbw", "busbw");
    }
    for (double b = (double)c.minb; b <= (double)c.maxb * 1.000001; b *= c.factor) {
        fails += run_size(&c, &topo, (uint64_t)b, ops, mat, items);
        if (c.dump >= 0)
            break;
    }
    free(so);
    free(ops);
    free(mat);
    free(items);
    return fails ? 1 : 0;
}
