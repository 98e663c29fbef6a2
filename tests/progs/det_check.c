/* det_check: deterministic reductions. Run by hcclrun on N ranks:
 *
 *   hcclrun -n 3 det_check --mode env|config|setconfig|off [--algo auto|ring|mesh] [--count 4099]
 *
 * --mode picks how determinism is switched on: HCCL_DETERMINISTIC=true (env), HcclCommConfig's
 * hcclDeterministic = 1 (config), HcclSetConfig(HCCL_DETERMINISTIC, 1) before init (setconfig),
 * or not at all (off). --algo sets HCCL_ALGO's level1 (ring, fullmesh).
 *
 * Inputs are fp32/fp16/bf16 values of mixed sign and magnitude (gen_mixed), where the reduction
 * order changes the rounded sums. AllReduce, Reduce, ReduceScatter (out of place and in place) and
 * ReduceScatterV run; each rank prints one FNV-1a hash per result and a digest of all of them:
 *   det_check: rank R digest XXXXXXXXXXXXXXXX (C cases, M not the rank-ordered sum)
 * With determinism on, every result must equal the host's rank-ordered sum ((x0+x1)+x2)+...
 * bit for bit (M = 0, else exit 1), so digests agree across runs and algorithms; the multirank
 * suite compares them. With it off, M is only reported. */
#include <string.h>

#include "prog_common.h"

typedef struct opts {
    const char *mode, *algo;
    uint64_t count;
} opts;

typedef struct tally {
    uint64_t digest;
    int cases, unordered;
} tally;

static uint64_t fnv(uint64_t h, const void *p, size_t len)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < len; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static void usage(void)
{
    fprintf(stderr, "usage: det_check --mode env|config|setconfig|off [--algo auto|ring|mesh] [--count N]\n");
    exit(2);
}

static opts parse(int argc, char **argv)
{
    opts o = {NULL, "auto", 4099};
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mode")) o.mode = argv[i + 1];
        else if (!strcmp(argv[i], "--algo")) o.algo = argv[i + 1];
        else if (!strcmp(argv[i], "--count")) o.count = strtoull(argv[i + 1], NULL, 0);
        else usage();
    }
    if (!o.mode || argc % 2 == 0)
        usage();
    return o;
}

/* Switches determinism on as --mode says; returns the config to create the communicator with. */
static const HcclCommConfig *setup(const opts *o, HcclCommConfig *cfg)
{
    unsetenv("HCCL_DETERMINISTIC");
    if (!strcmp(o->algo, "ring") || !strcmp(o->algo, "mesh"))
        setenv("HCCL_ALGO", !strcmp(o->algo, "ring") ? "level0:NA;level1:ring" : "level0:NA;level1:fullmesh", 1);
    else if (strcmp(o->algo, "auto"))
        usage();
    if (!strcmp(o->mode, "env")) {
        setenv("HCCL_DETERMINISTIC", "true", 1);
    } else if (!strcmp(o->mode, "setconfig")) {
        HcclConfigValue v = {.value = 1}, got = {.value = -1};
        HCCL_OK(HcclSetConfig(HCCL_DETERMINISTIC, v));
        HCCL_OK(HcclGetConfig(HCCL_DETERMINISTIC, &got));
        if (got.value != 1) {
            fprintf(stderr, "det_check: HcclGetConfig(HCCL_DETERMINISTIC) = %d after setting 1\n", got.value);
            exit(1);
        }
    } else if (!strcmp(o->mode, "config")) {
        HcclCommConfigInit(cfg);
        cfg->hcclDeterministic = 1;
        return cfg;
    } else if (strcmp(o->mode, "off")) {
        usage();
    }
    return NULL;
}

/* want = the rank-ordered sum over all ranks of elements [first, first+n) of their inputs. */
static void ordered_sum(HcclDataType dt, uint32_t seed, uint32_t nranks, uint64_t first, uint64_t n, void *want)
{
    void *x = xmalloc(n * dt_size(dt));
    gen_mixed(dt, seed, 0, first, n, want);
    for (uint32_t r = 1; r < nranks; r++) {
        gen_mixed(dt, seed, r, first, n, x);
        ref_reduce(want, x, dt, HCCL_REDUCE_SUM, n);
    }
    free(x);
}

typedef enum { K_ALLREDUCE, K_REDUCE, K_REDUCESCATTER, K_REDUCESCATTERV, K_COUNT } kind;
static const char *const kind_names[K_COUNT] = {"HcclAllReduce", "HcclReduce", "HcclReduceScatter",
                                                "HcclReduceScatterV"};

/* ReduceScatterV: rank j's block has count + j elements, blocks in reverse order with gaps. */
static void v_layout(uint32_t n, uint64_t count, uint64_t *cnt, uint64_t *dsp, uint64_t *total)
{
    uint64_t off = 0;
    for (uint32_t j = n; j-- > 0;) {
        cnt[j] = count + j;
        dsp[j] = off;
        off += cnt[j] + 3;
    }
    *total = off;
}

/* One case: fills inputs, runs, returns the host copy of this rank's result (NULL if none) and
 * where its elements sit in the logical input (first), their number in *len. */
static void *run_case(prog_env *e, kind k, HcclDataType dt, bool inplace, uint64_t count, uint32_t seed,
                      uint64_t *first, uint64_t *len)
{
    uint32_t me = e->rank, n = e->n, root = n - 1;
    size_t es = dt_size(dt);
    uint64_t cnt[64], dsp[64], in_elems = count, out_off = 0;
    *first = 0;
    *len = count;
    if (k == K_REDUCESCATTER) {
        in_elems = count * n;
        *first = out_off = (uint64_t)me * count;
    } else if (k == K_REDUCESCATTERV) {
        v_layout(n, count, cnt, dsp, &in_elems);
        *first = dsp[me];
        *len = cnt[me];
    }
    void *host = xmalloc(in_elems * es);
    gen_mixed(dt, seed, me, 0, in_elems, host);
    void *send = dev_alloc(in_elems * es), *recv = inplace ? (char *)send + out_off * es : dev_alloc(*len * es);
    to_dev(send, host, in_elems * es);
    HcclComm c = e->comm;
    aclrtStream s = e->stream;
    switch (k) {
    case K_ALLREDUCE: HCCL_OK(HcclAllReduce(send, recv, count, dt, HCCL_REDUCE_SUM, c, s)); break;
    case K_REDUCE: HCCL_OK(HcclReduce(send, recv, count, dt, HCCL_REDUCE_SUM, root, c, s)); break;
    case K_REDUCESCATTER: HCCL_OK(HcclReduceScatter(send, recv, count, dt, HCCL_REDUCE_SUM, c, s)); break;
    default: HCCL_OK(HcclReduceScatterV(send, cnt, dsp, recv, cnt[me], dt, HCCL_REDUCE_SUM, c, s)); break;
    }
    ACL_OK(aclrtSynchronizeStream(s));
    void *got = NULL;
    if (k != K_REDUCE || me == root) {
        got = xmalloc(*len * es);
        to_host(got, recv, *len * es);
    }
    if (!inplace)
        dev_free(recv);
    dev_free(send);
    free(host);
    return got;
}

static void one(prog_env *e, tally *t, bool det, kind k, HcclDataType dt, bool inplace, uint64_t count)
{
    uint32_t seed = 1000 + (uint32_t)dt; /* the same data in every run and for every algorithm */
    uint64_t first, len;
    void *got = run_case(e, k, dt, inplace, count, seed, &first, &len);
    t->cases++;
    const char *place = inplace ? "in-place" : "out-of-place";
    if (!got) {
        printf("det_check: rank %u %s %s %s: no result on this rank\n", e->rank, kind_names[k], dt_name(dt), place);
        return;
    }
    size_t es = dt_size(dt);
    void *want = xmalloc(len * es);
    ordered_sum(dt, seed, e->n, first, len, want);
    uint64_t h = fnv(0xcbf29ce484222325ull, got, len * es), bad = 0, first_bad = 0;
    for (uint64_t i = len; i-- > 0;)
        if (memcmp((char *)got + i * es, (char *)want + i * es, es)) {
            bad++;
            first_bad = i;
        }
    t->digest = fnv(t->digest, &h, sizeof h);
    t->unordered += bad != 0;
    printf("det_check: rank %u %s %s %s hash %016llx, %llu of %llu elements differ from the rank-ordered sum\n",
           e->rank, kind_names[k], dt_name(dt), place, (unsigned long long)h, (unsigned long long)bad,
           (unsigned long long)len);
    if (bad && det) {
        char g[64], w[64];
        dt_format(g, sizeof g, dt, got, first_bad);
        dt_format(w, sizeof w, dt, want, first_bad);
        printf("[FAIL] rank %u %s %s %s [%llu]: got %s want %s (rank-ordered)\n", e->rank, kind_names[k], dt_name(dt),
               place, (unsigned long long)first_bad, g, w);
    }
    free(want);
    free(got);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    opts o = parse(argc, argv);
    HcclCommConfig cfg;
    const HcclCommConfig *config = setup(&o, &cfg);
    bool det = strcmp(o.mode, "off") != 0;
    prog_env e;
    prog_init_config(&e, config);
    if (e.n > 64) {
        fprintf(stderr, "det_check: at most 64 ranks\n");
        return 2;
    }
    tally t = {0xcbf29ce484222325ull, 0, 0};
    const HcclDataType dts[3] = {HCCL_DATA_TYPE_FP32, HCCL_DATA_TYPE_FP16, HCCL_DATA_TYPE_BFP16};
    for (int d = 0; d < 3; d++)
        for (int inp = 0; inp < 2; inp++) {
            one(&e, &t, det, K_ALLREDUCE, dts[d], inp, o.count);
            one(&e, &t, det, K_REDUCE, dts[d], inp, o.count);
            one(&e, &t, det, K_REDUCESCATTER, dts[d], inp, o.count / e.n + 1);
        }
    for (int d = 0; d < 3; d++)
        one(&e, &t, det, K_REDUCESCATTERV, dts[d], false, o.count / e.n + 1);
    prog_fini(&e);
    printf("det_check: rank %u digest %016llx (%d cases, %d not the rank-ordered sum; mode %s, algo %s)\n", e.rank,
           (unsigned long long)t.digest, t.cases, t.unordered, o.mode, o.algo);
    return det && t.unordered ? 1 : 0;
}
