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

HcclResult HcclExtGetLaunchEnv(uint32_t *rank, uint32_t *worldSize, uint32_t *localRank, uint32_t *localWorldSize)
{
    uint32_t r, w, lr, lw;
    int hr = env_u32("RANK", &r), hw = env_u32("WORLD_SIZE", &w);
    if (hr < 0 || hw < 0)
        return HCCL_E_PARA;
    if (!hr || !hw) {
        OH_ERR("bootstrap", "RANK and WORLD_SIZE are not set: launch this program with hcclrun -n N (or torchrun), "
               "or export RANK and WORLD_SIZE");
        return HCCL_E_PARA;
    }
    int hlr = env_u32("LOCAL_RANK", &lr), hlw = env_u32("LOCAL_WORLD_SIZE", &lw);
    if (hlr < 0 || hlw < 0)
        return HCCL_E_PARA;
    if (!hlr)
        lr = r;
    if (!hlw)
        lw = w;
    if (r >= w || lr >= lw) {
        OH_ERR("bootstrap", "launch env is inconsistent: RANK=%u WORLD_SIZE=%u LOCAL_RANK=%u LOCAL_WORLD_SIZE=%u "
               "(each rank must be below its size)", r, w, lr, lw);
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
