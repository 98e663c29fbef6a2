/* Public entry points of the bootstrap: HcclGetRootInfo and the OpenHCCL launch helpers. */
#include <hccl/hccl_comm.h>
#include <hccl/hccl_ext.h>

#include "common/oh_log.h"
#include "runtime/bootstrap/bootstrap.h"
#include "runtime/bootstrap/store.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

HcclResult HcclGetRootInfo(HcclRootInfo *rootInfo)
{
    if (!rootInfo) {
        OH_ERR("bootstrap", "HcclGetRootInfo: rootInfo is NULL");
        return HCCL_E_PTR;
    }
    return rt_bootstrap_root_listen(rootInfo);
}

HcclResult HcclExtShareRootInfo(uint32_t rank, HcclRootInfo *rootInfo)
{
    /* Per-process call counter: the n-th call on every rank meets under the n-th key. */
    static atomic_uint calls;
    if (!rootInfo) {
        OH_ERR("bootstrap", "HcclExtShareRootInfo: rootInfo is NULL (rank %u)", rank);
        return HCCL_E_PTR;
    }
    char key[64];
    snprintf(key, sizeof key, "openhccl/rootinfo/%u", atomic_fetch_add(&calls, 1));
    if (rank == 0) {
        HcclResult rc = HcclGetRootInfo(rootInfo);
        if (rc != HCCL_SUCCESS) {
            /* Publish a zeroed root info so the other ranks fail now instead of at the timeout. */
            memset(rootInfo, 0, sizeof *rootInfo);
            rt_store_set(key, rootInfo, sizeof *rootInfo);
            return rc;
        }
        return rt_store_set(key, rootInfo, sizeof *rootInfo);
    }
    HcclResult rc = rt_store_get(key, rootInfo, sizeof *rootInfo, rt_bootstrap_timeout_s());
    uint32_t magic;
    memcpy(&magic, rootInfo->internal, sizeof magic);
    if (rc == HCCL_SUCCESS && magic != RT_BOOT_INFO_MAGIC) {
        OH_ERR("bootstrap", "rank %u: rank 0 failed in HcclGetRootInfo (see rank 0's log), so there is no root "
               "to join", rank);
        return HCCL_E_PARA;
    }
    return rc;
}

/* Reads a non-negative integer env var; 1 found, 0 unset, -1 malformed (logged). */
static int env_u32(const char *name, uint32_t *out)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return 0;
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *end || s[0] == '-' || v > UINT32_MAX) {
        OH_ERR("bootstrap", "%s=%s is not a non-negative integer", name, s);
        return -1;
    }
    *out = (uint32_t)v;
    return 1;
}

/* One launcher's names for rank, size, local rank and local size (local ones may be NULL). */
typedef struct launch_names {
    const char *who, *rank, *size, *local_rank, *local_size;
} launch_names;

static const launch_names g_launchers[] = {
    {"torchrun/hcclrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
    {"Open MPI (mpirun)", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"MPICH/Intel MPI", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    {"Slurm (srun)", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"},
};

/* SLURM_TASKS_PER_NODE ("4(x2)" or "4"): the tasks of every node when they are equal, else 0. */
static uint32_t slurm_tasks_per_node(void)
{
    const char *s = getenv("SLURM_TASKS_PER_NODE");
    char *end;
    if (!s || !*s)
        return 0;
    unsigned long v = strtoul(s, &end, 10);
    return (end != s && (!*end || (end[0] == '(' && end[1] == 'x' && !strchr(end, ','))) && v <= UINT32_MAX) ?
               (uint32_t)v : 0;
}

/* The first launcher whose rank and size are both set; -1 (logged) when one is malformed. */
static int launch_lookup(uint32_t *r, uint32_t *w, uint32_t *lr, uint32_t *lw, const char **who)
{
    for (size_t i = 0; i < sizeof g_launchers / sizeof *g_launchers; i++) {
        const launch_names *l = &g_launchers[i];
        int hr = env_u32(l->rank, r), hw = env_u32(l->size, w);
        if (hr < 0 || hw < 0)
            return -1;
        if (!hr || !hw)
            continue;
        int hlr = env_u32(l->local_rank, lr), hlw = env_u32(l->local_size, lw);
        if (hlr < 0 || hlw < 0)
            return -1;
        if (!hlr)
            *lr = *r;
        if (!hlw && !(i == 3 && (*lw = slurm_tasks_per_node()) != 0))
            *lw = *w; /* unknown: as if the whole job were on one host */
        *who = l->who;
        return 1;
    }
    return 0;
}

HcclResult HcclExtGetLaunchEnv(uint32_t *rank, uint32_t *worldSize, uint32_t *localRank, uint32_t *localWorldSize)
{
    uint32_t r = 0, w = 0, lr = 0, lw = 0;
    const char *who = "";
    int found = launch_lookup(&r, &w, &lr, &lw, &who);
    if (found < 0)
        return HCCL_E_PARA;
    if (!found) {
        OH_ERR("bootstrap", "no launcher environment: set RANK and WORLD_SIZE (hcclrun -n N, torchrun), or run under "
               "mpirun (OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/SIZE) or srun (SLURM_PROCID, SLURM_NTASKS)");
        return HCCL_E_PARA;
    }
    OH_DBG("bootstrap", "launch env from %s: rank %u of %u, local %u of %u", who, r, w, lr, lw);
    if (r >= w || lr >= lw) {
        OH_ERR("bootstrap", "launch env of %s is inconsistent: rank %u, world size %u, local rank %u, local world "
               "size %u (each rank must be below its size)", who, r, w, lr, lw);
        return HCCL_E_PARA;
    }
    if (rank)
        *rank = r;
    if (worldSize)
        *worldSize = w;
    if (localRank)
        *localRank = lr;
    if (localWorldSize)
        *localWorldSize = lw;
    return HCCL_SUCCESS;
}
