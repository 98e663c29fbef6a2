/* A checked op of the coll_misc sequences (coll_eager.c, coll_random.c): one call with its own
 * buffers and every rank's input kept on the host, issued back to back with others and checked
 * element by element after one synchronize against a host reference. */
#ifndef COLL_EOP_H
#define COLL_EOP_H

#include "coll_misc.h"

/* E_NCOLL: the collectives the eager protocol serves (eagerseq cycles through them). The kinds after
 * it: a Send/Recv ring through HcclBatchSendRecv (send to rank + shift, receive from rank - shift),
 * the same ring as HcclSend and HcclRecv between HcclGroupStart and HcclGroupEnd (the receive first
 * when root is odd), a lone HcclSend from root to root + shift with its HcclRecv (the other ranks
 * make no call), HcclBarrier, and the V forms, whose counts and displacements are the call's tables
 * (vt). */
typedef enum {
    E_AR, E_AG, E_RS, E_A2A, E_BC, E_RED, E_SC, E_NCOLL,
    E_SR = E_NCOLL, E_GRP, E_P2P, E_BAR, E_A2AV, E_A2AVC, E_AGV, E_RSV, E_NKINDS
} ecoll;
extern const char *const ecoll_name[E_NKINDS];

typedef struct eop {
    ecoll coll;
    HcclDataType dt;
    HcclReduceOp op;
    uint64_t count;
    uint32_t root;
    uint32_t shift;               /* E_SR, E_GRP, E_P2P: the peer's distance, 1 .. n - 1 */
    bool inplace;
    bool hold;                    /* receivers' streams stall 30 ms before this call (a Reduce's: its root's) */
    aclrtStream stream;           /* NULL: the program's stream */
    prog_env *env;                /* NULL: the program's communicator; else a sub-communicator's
                                     (this rank's rank in it, its size, its handle) */
    uint64_t in_elems, out_elems; /* per rank */
    void *in, *out;               /* device; equal (or overlapping) in place */
    void *host_in;                /* [n][in_elems]: every rank's input, for the reference */
    uint64_t *vt;                 /* V forms: every rank's tables, [EOP_VT][n][n] (malloc'd; eop_vt) */
} eop;

/* A V form's tables of rank r: what HCCL's V calls take, and what the reference reads of every rank.
 * AlltoAllV(C): rank r sends SC[r][j] elements at SD[r][j] to rank j, receives RC[r][j] at RD[r][j]
 * from it (AlltoAllVC: the displacements are the counts' prefix sums, the matrix is SC). AllGatherV:
 * rank r sends SC[r][0], receives RC[r][j] at RD[r][j]. ReduceScatterV: rank r reduces SC[r][j] at
 * SD[r][j] for rank j, receives RC[r][0]. The tables of AllGatherV and ReduceScatterV are the same
 * on every rank, as HCCL requires. */
enum { EOP_SC, EOP_SD, EOP_RC, EOP_RD, EOP_VT };
static inline uint64_t *eop_vt(const eop *o, uint32_t n, int table, uint32_t r)
{
    return o->vt + ((size_t)table * n + r) * n;
}

/* Whether a kind reduces (its inputs are then values whose reduction is exact in any order). */
bool eop_reduces(ecoll c);

/* Sets in_elems and out_elems from coll and count (the V forms: from their tables, the largest of
 * any rank, so every rank's buffers have the same size and the reference indexes them alike). */
void eop_layout(eop *o, uint32_t n);

/* Prepares ops[0, nops) (salts from salt0 up), issues them back to back (no synchronize in
 * between), synchronizes every stream they used once, checks every output and frees ops. */
int eop_run_back_to_back(prog_env *e, eop *ops, int nops, uint32_t salt0, const char *what);

/* The same for ops of which one does not match the other ranks' call, or whose round a peer
 * leaves (`failure` names it: "MISMATCH", "PEER EXIT"): issues them until a call fails,
 * synchronizes every stream, and, when nothing failed yet, calls HcclBarrier (a one-way root learns
 * of its receivers' failure at its next call that waits). Returns 0 when this rank saw the failure
 * (a call or a synchronize failed, and the communicator reports an async error); frees ops. */
int eop_run_failing(prog_env *e, eop *ops, int nops, uint32_t salt0, const char *what, const char *failure);

/* The peer that leaves: issues ops[0, at), synchronizes its streams first when sync is set, and
 * exits (status 0) without HcclCommDestroy. */
_Noreturn void eop_run_exit(prog_env *e, eop *ops, int at, uint32_t salt0, bool sync);

#endif
