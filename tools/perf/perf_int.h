/* Internal interface of the perf tools: perf_common.c (flags, sweep, timing, report) and
 * perf_ops.c (per-collective sizes, calls, bandwidth factors, data and check). */
#ifndef PERF_INT_H
#define PERF_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#include "common/oh_clock.h"
#include "perf_common.h"

typedef struct perf_env {
    uint32_t rank, n;
    HcclComm comm;
    aclrtStream stream;
    double *combine; /* device buffer of PERF_COMBINE_MAX values, for combining them over ranks */
} perf_env;
#define PERF_COMBINE_MAX 4

/* How -a combines one time per rank into the printed one: nccl-tests' values, and SPAN (ours):
 * from the first rank's start to the last rank's end, on the one clock of the ranks' machine. */
typedef enum { PERF_AVG_RANK0 = 0, PERF_AVG_MEAN = 1, PERF_AVG_MIN = 2, PERF_AVG_MAX = 3, PERF_AVG_SPAN = 4 } perf_avg;

typedef struct perf_args {
    size_t minb, maxb, stepb;
    double factor;          /* 0: additive step stepb */
    int iters, warmup, check, memcpy_ref;
    perf_avg average;       /* -a, default max (nccl-tests: average) */
    int blocking;           /* -z 1: synchronize after every call */
    int record;             /* -R 1: an event recorded after every timed call; 2: and a compute stream's around it */
    int separate;           /* -s 1 (sendrecv): HcclSend and HcclRecv, not one HcclBatchSendRecv */
    int vary;               /* -v 1 (V forms): the timed calls' tables change every call */
    int percentiles;        /* -P 1: every timed call's host time, as percentiles (perf_pct.c) */
    HcclDataType dts[12];
    int ndts;
    HcclReduceOp ops[4];
    int nops;
    int root;               /* -1 = all */
    int npus;
} perf_args;

/* -P: a rank's host-clock stamp before every timed call (perf_pct.c); t NULL when -P is off. */
typedef struct perf_stamps {
    double *t; /* [n + 1]: the stamps, then the loop's end */
    int n;
} perf_stamps;
#define PERF_PCTS 4 /* p50, p90, p99 and the largest */
/* False if -P is on and the stamps could not be allocated. */
bool perf_stamps_open(perf_stamps *s, int iters, bool on);
static inline void perf_stamp(perf_stamps *s, int i) /* inline: the loop without -P pays one test */
{
    if (s->t)
        s->t[i] = oh_now_s();
}
/* The intervals' percentiles in us (false when -P is off); frees the stamps. */
bool perf_stamps_close(perf_stamps *s, double end, double out_us[PERF_PCTS]);

/* Parses argv into a (defaults as docs/perf.md); prints what is wrong and exits 2 on a bad flag. */
void perf_parse_args(int argc, char **argv, perf_args *a);
const char *perf_avg_name(perf_avg m);

#define PERF_VSETS 4 /* -v 1: table sets taken in turn */

/* One benchmark point: the buffers and parameters of every call of one row half. */
typedef struct perf_point {
    perf_kind kind;
    HcclDataType dt;
    size_t es;
    HcclReduceOp op;
    uint32_t root;
    bool inplace;
    uint64_t count;            /* per-call count as nccl-tests prints it */
    uint64_t send_elems, recv_elems;
    void *base;                /* in place: the one buffer */
    void *send, *recv;
    uint64_t *v;               /* V-op tables (perf_ops.c, v_tables) */
    bool separate;             /* sendrecv: -s 1 */
    bool vary;                 /* V forms, -v 1: calls take vsets in turn, not v */
    uint64_t *vsets[PERF_VSETS]; /* uneven tables of the same total (perf_ops.c, v_tables) */
    uint64_t ncalls;           /* calls so far: which of vsets the next one takes */
} perf_point;

const char *perf_name(perf_kind k);
bool perf_reduces(perf_kind k);
/* AllGatherV, ReduceScatterV, AlltoAllV, AlltoAllVC: calls with count tables. */
bool perf_is_v(perf_kind k);
bool perf_rooted(perf_kind k);
bool perf_has_inplace(perf_kind k);
bool perf_has_outofplace(perf_kind k);
/* Per-call count and buffer sizes for a nominal size in bytes (nccl-tests' rounding). */
void perf_sizes(perf_kind k, size_t bytes, size_t es, uint32_t n, uint64_t *count, uint64_t *send_elems,
                uint64_t *recv_elems);
/* Bytes for algbw (S) and the busbw factor. */
double perf_alg_bytes(perf_kind k, uint64_t count, size_t es, uint32_t n);
double perf_bus_factor(perf_kind k, uint32_t n);

/* Allocates/frees the device buffers of a point (in-place layouts as HCCL defines them). */
void perf_alloc(const perf_env *e, perf_point *p);
void perf_release(perf_point *p);
HcclResult perf_call(const perf_env *e, perf_point *p);
/* Writes this rank's check input into the point's send side. */
void perf_fill(const perf_env *e, perf_point *p);
/* Wrong elements of this rank's output after one perf_call on perf_fill'ed inputs. */
uint64_t perf_check(const perf_env *e, const perf_point *p);

/* Data types: nccl-style names ("float", "half", "bfloat16", ...) and HCCL ones ("fp32"). */
bool perf_dtype_parse(const char *s, HcclDataType *dt);
const char *perf_dtype_name(HcclDataType dt);
size_t perf_dtype_size(HcclDataType dt);
extern const HcclDataType perf_all_dtypes[12];

#endif
