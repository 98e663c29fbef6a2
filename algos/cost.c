/* Alpha-beta cost model: defaults, nccl-tests size/busbw conventions, prediction. */
#include "algos/cost.h"
#include "algos/verify.h"

static const algo_cost_model g_default = {
    .alpha_us = {1.0, 2.0, 10.0},
    .gbps = {200.0, 56.0, 25.0},
    .sync_us = {0.2, 1.0, 5.0},
};

const algo_cost_model *algo_cost_default(void)
{
    return &g_default;
}

const char *algo_link_name(algo_link l)
{
    static const char *const names[ALGO_LINK_COUNT] = {"self", "intra", "net"};
    return (unsigned)l < ALGO_LINK_COUNT ? names[l] : "?";
}

uint64_t algo_cost_size_bytes(const algo_op *op)
{
    uint64_t esz = hal_dtype_size(op->dtype), n = op->nranks, c = 0;
    switch (op->coll) {
    case ALGO_COLL_ALLREDUCE:
    case ALGO_COLL_BROADCAST:
    case ALGO_COLL_REDUCE: c = op->count; break;
    case ALGO_COLL_ALLGATHER:
    case ALGO_COLL_REDUCE_SCATTER:
    case ALGO_COLL_SCATTER:
    case ALGO_COLL_ALLTOALL: c = op->count * n; break;
    case ALGO_COLL_ALLTOALLVC:
        for (uint64_t i = 0; i < n * n && op->counts; i++)
            c += op->counts[i];
        c /= n ? n : 1; /* per-rank average, like alltoall's n*count */
        break;
    default: {
        uint64_t in, out;
        algo_buffer_elems(op, &in, &out);
        c = in > out ? in : out;
    }
    }
    return c * esz;
}

double algo_cost_busbw_factor(algo_coll coll, uint32_t nranks)
{
    double n = nranks;
    switch (coll) {
    case ALGO_COLL_ALLREDUCE: return 2.0 * (n - 1) / n;
    case ALGO_COLL_BROADCAST:
    case ALGO_COLL_REDUCE:
    case ALGO_COLL_SENDRECV: return 1.0;
    default: return (n - 1) / n;
    }
}

void algo_cost_predict(const algo_op *op, const algo_verify_report *rep, const algo_cost_model *cm,
                       algo_cost_result *res)
{
    if (!cm)
        cm = algo_cost_default();
    res->crit_us = rep->crit_us;
    uint64_t net = rep->max_rank_tx[ALGO_LINK_NET] > rep->max_rank_rx[ALGO_LINK_NET] ? rep->max_rank_tx[ALGO_LINK_NET]
                                                                                      : rep->max_rank_rx[ALGO_LINK_NET];
    res->nic_us = (double)net / (cm->gbps[ALGO_LINK_NET] * 1e3);
    res->time_us = res->crit_us > res->nic_us ? res->crit_us : res->nic_us;
    double size = (double)algo_cost_size_bytes(op);
    res->algbw_gbps = res->time_us > 0 ? size / (res->time_us * 1e3) : 0;
    res->busbw_gbps = res->algbw_gbps * algo_cost_busbw_factor(op->coll, op->nranks);
}

double algo_cost_xfer_us(const algo_cost_model *cm, algo_link l, double bytes)
{
    return cm->alpha_us[l] + bytes / (cm->gbps[l] * 1e3);
}

uint32_t algo_cost_hier_chunks(const algo_cost_model *cm, uint64_t bytes, uint32_t S, uint32_t m)
{
    if (!cm)
        cm = algo_cost_default();
    if (S < 2 || m < 2 || bytes == 0)
        return 1;
    uint32_t best = 1;
    double best_t = 0;
    for (uint32_t C = 1; C <= ALGO_PIPE_MAX; C++) {
        double xl = (double)bytes / C / m; /* one rank's slice */
        double a = (m - 1) * algo_cost_xfer_us(cm, ALGO_LINK_INTRA, xl) +
                   2.0 * (S - 1) * (algo_cost_xfer_us(cm, ALGO_LINK_NET, xl / S) + cm->sync_us[ALGO_LINK_NET]);
        double bb = (m - 1) * (algo_cost_xfer_us(cm, ALGO_LINK_INTRA, xl) + cm->sync_us[ALGO_LINK_INTRA]);
        double t = C == 1 ? a + bb : a + bb + (C - 1) * (a > bb ? a : bb) + 2 * cm->alpha_us[ALGO_LINK_SELF];
        if (C == 1 || t < best_t) {
            best = C;
            best_t = t;
        }
    }
    return best;
}

bool algo_cost_inter_hd(const algo_cost_model *cm, uint64_t hd_bytes, uint32_t S, uint64_t C_hd, uint64_t ring_bytes,
                        uint64_t C_ring)
{
    if (!cm)
        cm = algo_cost_default();
    if (S < 3)
        return false;
    uint32_t P = 1, K = 0;
    while (P * 2 <= S) {
        P *= 2;
        K++;
    }
    double lat = cm->alpha_us[ALGO_LINK_NET] + cm->sync_us[ALGO_LINK_NET], bw = cm->gbps[ALGO_LINK_NET] * 1e3;
    double xr = (double)ring_bytes, xh = (double)hd_bytes;
    double ring = C_ring * (2.0 * (S - 1) * lat + 2.0 * (S - 1) / S * xr / bw);
    double extra = P < S ? 1.0 : 0.0; /* a partner receives the extra's slice and sends it the result */
    double hd = C_hd * ((2.0 * K + 2 * extra) * lat + (2.0 * (P - 1) / P * xh + 2 * extra * xh) / bw);
    return hd < ring;
}
