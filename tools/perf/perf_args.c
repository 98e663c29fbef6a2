/* Command-line flags of the perf tools (nccl-tests' names, docs/perf.md "Flags").
 * Every value is parsed strictly: a bad value names the flag, the value and what is accepted,
 * then the tool exits with status 2. */
#include "../common/size_arg.h"
#include "perf_int.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *g_prog = "perf";

static void usage(void)
{
    fprintf(stderr,
            "usage: hcclrun -n N %s [-b minbytes] [-e maxbytes] [-f factor | -i stepbytes] [-n iters]\n"
            "       [-w warmup] [-c checkiters] [-d dtype|all] [-o sum|prod|max|min|all] [-r root|all]\n"
            "       [-a 0|1|2|3|4] [-z 0|1] [-R 0|1|2] [-s 0|1] [-v 0|1] [-P 0|1] [-p npus] [-m 0|1]\n"
            "  -a  time over ranks: 0 rank 0, 1 average, 2 min, 3 max (default 3), 4 span: the first\n"
            "      rank's start to the last rank's end (ranks on one machine: one clock)\n"
            "  -z  1: synchronize the stream after every call (blocking), 0: back to back (default 0)\n"
            "  -R  1: record an event on the stream after every timed call, as a framework's handle of\n"
            "      each call does; 2: also, as a process group, make the stream wait for a compute\n"
            "      stream's event before every call, and the compute stream for the event after (default 0)\n"
            "  -s  sendrecv: 1 HcclSend and HcclRecv as two calls (even ranks send first), 0 one\n"
            "      HcclBatchSendRecv of both (default 0)\n"
            "  -v  V forms: 1 the timed calls' tables change every call (blocks of count +- count/2, four\n"
            "      sets in turn), 0 equal blocks (default 0); checked calls take equal blocks\n"
            "  -P  1: also the host time of every timed call, as percentiles (p50, p90, p99, largest;\n"
            "      each the largest over ranks), a line under each row; 0: not (default 0)\n",
            g_prog);
    exit(2);
}

static void bad(char flag, const char *val, const char *want)
{
    fprintf(stderr, "%s: bad value '%s' for -%c: %s\n", g_prog, val, flag, want);
    exit(2);
}

static int parse_int(char flag, const char *s, long lo, long hi, const char *want)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        bad(flag, s, want);
    return (int)v;
}

/* Bytes with an optional K/M/G suffix (powers of 1024). */
static size_t parse_size(char flag, const char *s)
{
    double v;
    if (!size_arg_parse(s, 0, 1e15, &v))
        bad(flag, s, "a byte count >= 0 with an optional K, M or G suffix");
    return (size_t)v;
}

static double parse_factor(const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v > 1.0) || v > 1e6)
        bad('f', s, "a step factor > 1");
    return v;
}

static void parse_dtypes(const char *s, perf_args *a)
{
    a->ndts = 0;
    if (!strcmp(s, "all")) {
        for (int i = 0; i < 12; i++)
            a->dts[a->ndts++] = perf_all_dtypes[i];
    } else if (!perf_dtype_parse(s, &a->dts[a->ndts++])) {
        bad('d', s, "float|fp32, half|fp16, bfloat16|bf16, double|fp64, int8..uint64, or all");
    }
}

static void parse_ops(const char *s, perf_args *a)
{
    static const char *const opn[] = {"sum", "prod", "max", "min"};
    a->nops = 0;
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, "all") || !strcmp(s, opn[i]))
            a->ops[a->nops++] = (HcclReduceOp)i;
    if (!a->nops)
        bad('o', s, "sum, prod, max, min or all");
}

static void defaults(perf_args *a)
{
    memset(a, 0, sizeof *a);
    a->minb = a->maxb = 32u << 20;
    a->stepb = 1u << 20;
    a->iters = 20, a->warmup = 5, a->check = 1, a->memcpy_ref = 1;
    a->average = PERF_AVG_MAX;
    a->dts[a->ndts++] = HCCL_DATA_TYPE_FP32;
    a->ops[a->nops++] = HCCL_REDUCE_SUM;
}

void perf_parse_args(int argc, char **argv, perf_args *a)
{
    if (argc > 0 && argv[0]) {
        const char *slash = strrchr(argv[0], '/');
        g_prog = slash ? slash + 1 : argv[0];
    }
    defaults(a);
    int c;
    opterr = 0; /* we print our own message */
    while ((c = getopt(argc, argv, "b:e:f:i:n:w:c:d:o:r:p:m:a:z:R:s:v:P:G:h")) != -1) {
        switch (c) {
        case 'b': a->minb = parse_size('b', optarg); break;
        case 'e': a->maxb = parse_size('e', optarg); break;
        case 'f': a->factor = parse_factor(optarg); break;
        case 'i': a->stepb = parse_size('i', optarg); break;
        case 'n': a->iters = parse_int('n', optarg, 1, INT_MAX, "iterations >= 1"); break;
        case 'w': a->warmup = parse_int('w', optarg, 0, INT_MAX, "warm-up iterations >= 0"); break;
        case 'c': a->check = parse_int('c', optarg, 0, INT_MAX, "checked iterations >= 0"); break;
        case 'p': a->npus = parse_int('p', optarg, 1, INT_MAX, "NPUs per node >= 1"); break;
        case 'm': a->memcpy_ref = parse_int('m', optarg, 0, 1, "0 or 1"); break;
        case 'a':
            a->average = (perf_avg)parse_int('a', optarg, 0, 4, "0 (rank 0), 1 (average), 2 (min), 3 (max) or 4 (span)");
            break;
        case 'z': a->blocking = parse_int('z', optarg, 0, 1, "0 (back to back) or 1 (synchronize every call)"); break;
        case 'R':
            a->record = parse_int('R', optarg, 0, 2, "0 (no events), 1 (an event after every call) or 2 (and a compute stream's around it)");
            break;
        case 's': a->separate = parse_int('s', optarg, 0, 1, "0 (HcclBatchSendRecv) or 1 (HcclSend, HcclRecv)"); break;
        case 'v': a->vary = parse_int('v', optarg, 0, 1, "0 (equal blocks) or 1 (other tables every call)"); break;
        case 'P': a->percentiles = parse_int('P', optarg, 0, 1, "0 (no) or 1 (every call's time, as percentiles)"); break;
        case 'r': a->root = !strcmp(optarg, "all") ? -1 : parse_int('r', optarg, 0, INT_MAX, "a rank >= 0 or all");
            break;
        case 'd': parse_dtypes(optarg, a); break;
        case 'o': parse_ops(optarg, a); break;
        case 'G':
            fprintf(stderr, "%s: -G (CUDA graph replay) has no equivalent here; -z 1 times every call with a "
                    "synchronize after it\n", g_prog);
            exit(2);
        case 'h': usage(); break;
        default:
            fprintf(stderr, "%s: unknown flag or missing value: -%c\n", g_prog, optopt);
            usage();
        }
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument '%s'\n", g_prog, argv[optind]);
        usage();
    }
    if (a->minb > a->maxb) {
        fprintf(stderr, "%s: -b %zu is larger than -e %zu\n", g_prog, a->minb, a->maxb);
        exit(2);
    }
    if (!a->factor && !a->stepb && a->minb != a->maxb) {
        fprintf(stderr, "%s: -i 0 without -f never reaches -e\n", g_prog);
        exit(2);
    }
}

const char *perf_avg_name(perf_avg m)
{
    static const char *const names[] = {"rank 0", "average", "min", "max", "span (first start to last end)"};
    return names[m];
}
