/* Internal to the verifier: the simulation state shared by verify.c (driver, end checks),
 * verify_exec.c (steps, happens-before, races) and verify_ref.c (symbolic memory, reference). */
#ifndef ALGOS_VERIFY_INT_H
#define ALGOS_VERIFY_INT_H

#include "algos/verify.h"

#define VMAX_ERRORS_SHOWN 6

/* One access to a rank's memory: elements [lo, hi) of its space, by thread tid at its clock clk. */
typedef struct vrec {
    uint64_t lo, hi;
    uint32_t tid, clk, pc;
    uint8_t write;
} vrec;

/* A rank's symbolic memory: IN and OUT (aliased as the collective's in-place rule says), then
 * SCRATCH, then the INBOX (one slot: nranks boxes of box_len elements, as many as the plans use),
 * as one array of 64-bit values. */
typedef struct vspace {
    uint64_t *mem;
    uint64_t len, in_base, in_len, out_base, out_len, scr_base, scr_len, ibx_base, box_len;
    vrec *recs;
    uint32_t nrec, cap;
} vspace;

/* A signal in flight: the sender's clock as of its last join (a shared snapshot, VSNAP_NONE without
 * data), its own entry at the signal, and its time. Sharing the snapshot keeps a burst of signals
 * between two joins (a mesh rank signalling every peer) from copying the clock once per signal. */
#define VSNAP_NONE UINT32_MAX
typedef struct vsig {
    uint32_t snap, tid, clk;
    double t;
} vsig;

/* Signals in flight from one sender to one receiver on one slot (FIFO). */
typedef struct vqueue {
    vsig *sig;
    uint32_t len, cap, head;
    uint32_t preload;        /* signals there before the call (a one-way root's credits): as many stay */
    int8_t sstream, wstream; /* -1 until first use */
} vqueue;

enum { VT_IDLE = 0, VT_RUN, VT_DONE };

typedef struct vthr {
    const algo_step_list *list;
    uint32_t rank, stream, pc, tid;
    uint32_t snap; /* snapshot of its clock taken since its last join, or VSNAP_NONE */
    uint8_t state, forks, joins;
    double t;
} vthr;

typedef struct vfetch {
    uint32_t tid, clk; /* clk 0: not fetched */
} vfetch;

typedef struct vsim {
    uint32_t n, T; /* ranks; threads = sum of the plans' nstreams */
    uint32_t *tbase;    /* n: thread id of each rank's stream 0 */
    algo_plan *const *plans;
    const algo_topo *topo;
    const algo_cost_model *cm;
    algo_verify_report *rep;
    bool data;
    vthr *thr;
    uint32_t *vc;       /* T x T thread clocks (only with data) */
    vspace *sp;         /* n */
    vqueue *q;          /* n x n x ALGO_MAX_SLOTS, index (from * n + to) * SLOTS + slot */
    uint32_t *snaps;    /* snapshot pool, T entries each, counted references */
    uint32_t *snap_refs;
    uint32_t nsnap, capsnap, *freesnap, nfree;
    vfetch *fetch;      /* n x n, (fetcher * n + fetched) */
    uint32_t *pub_clk;  /* n: clock of PUBLISH on the rank's stream 0 */
    uint32_t *endvc;    /* n x T: rank's stream-0 clock at its end */
    uint8_t *ended;
    uint64_t *tx, *rx;  /* n x ALGO_LINK_COUNT */
    uint64_t *nsteps;   /* n */
    size_t esz;
    int oom;
} vsim;

/* verify.c */
void vsim_error(vsim *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Across servers only COPY from self into a peer's SCRATCH/OUT/INBOX (verify_links.c). */
void vsim_check_links(vsim *s);
uint32_t *vsim_vc(vsim *s, uint32_t tid);
/* "rank 3 stream 1 step 7 (COPY)" */
void vsim_where(const vsim *s, const vthr *th, char *buf, size_t cap);
/* vsim_error prefixed with the thread's current step. */
void vsim_step_error(vsim *s, const vthr *th, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline vthr *vsim_thr(vsim *s, uint32_t rank, uint32_t stream)
{
    return &s->thr[s->tbase[rank] + stream];
}

/* verify_exec.c: 1 if the thread's current step ran, 0 if it is blocked, -1 on a fatal error in it
 * (the thread is stopped). */
int vexec_step(vsim *s, vthr *th);
/* One-way plans (plan.h, INBOX): one credit from every receiver waits at the root before the call,
 * ordered after nothing of it (what the runtime gives at init, or a receiver's earlier call). */
int vexec_preload_credits(vsim *s);
const char *vstep_name(uint8_t kind);
algo_link vlink(const vsim *s, uint32_t a, uint32_t b);

/* Deterministic plans (op.deterministic): REDUCE combines as acc * K + x instead of acc + x, which
 * is neither commutative nor associative, so only the rank order ((x0 op x1) op x2) ... gives the
 * reference value. */
static inline uint64_t vdet_fold(uint64_t acc, uint64_t x)
{
    return acc * 0x9fb21c651e98df25ull + x;
}

/* verify_ref.c */
int vref_alloc(vsim *s);   /* layouts and initial values of every rank's space */
void vref_check(vsim *s);  /* compares every rank's IN/OUT with the reference */
uint64_t vref_displ(const vsim *s, uint32_t reader, uint32_t owner, int32_t vdispl, int *ok);

#endif
