/* HcclCommWorkingDevNicSet and HcclConfigGetInfo: per-communicator settings a caller sets or
 * reads after init (docs/runtime.md, "NIC selection" and "Reading the configuration"). */
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_internal.h"

/* Every rank listed once and inside the communicator; nothing is recorded unless all are. */
static HcclResult check_nic_ranks(const rt_comm *c, const uint32_t *ranks, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        CHECK_ARG(ranks[i] < c->nranks, HCCL_E_PARA, "comm",
                  "HcclCommWorkingDevNicSet: comm %s: ranks[%u]=%u is not a rank of this %u-rank communicator",
                  c->name, i, ranks[i], c->nranks);
        for (uint32_t j = 0; j < i; j++)
            CHECK_ARG(ranks[j] != ranks[i], HCCL_E_PARA, "comm",
                      "HcclCommWorkingDevNicSet: comm %s: rank %u is listed twice (ranks[%u] and ranks[%u])", c->name,
                      ranks[i], j, i);
    }
    return HCCL_SUCCESS;
}

HcclResult HcclCommWorkingDevNicSet(HcclComm comm, uint32_t *ranks, bool *useBackup, uint32_t nRanks)
{
    rt_comm *c = NULL;
    CHECK(rt_comm_get(comm, "HcclCommWorkingDevNicSet", &c));
    CHECK_ARG(ranks && useBackup, HCCL_E_PTR, "comm", "HcclCommWorkingDevNicSet: ranks=%p useBackup=%p must not be NULL",
              (void *)ranks, (void *)useBackup);
    CHECK_ARG(nRanks >= 1 && nRanks <= c->nranks, HCCL_E_PARA, "comm",
              "HcclCommWorkingDevNicSet: comm %s: nRanks=%u is invalid (1-%u)", c->name, nRanks, c->nranks);
    CHECK(check_nic_ranks(c, ranks, nRanks));
    pthread_mutex_lock(&c->lock);
    if (!c->nic_backup)
        c->nic_backup = calloc(c->nranks, sizeof *c->nic_backup);
    bool ok = c->nic_backup != NULL;
    for (uint32_t i = 0; ok && i < nRanks; i++)
        c->nic_backup[ranks[i]] = useBackup[i];
    pthread_mutex_unlock(&c->lock);
    CHECK_ARG(ok, HCCL_E_MEMORY, "comm", "HcclCommWorkingDevNicSet: comm %s: out of memory", c->name);
    /* CANN answers the same way where no RDMA link exists: success, a warning, no switch. */
    OH_WARN("comm",
            "HcclCommWorkingDevNicSet: comm %s rank %u: %u rank(s) recorded; the emulator's links are shared memory "
            "without NICs, so no link changes",
            c->name, c->rank, nRanks);
    return HCCL_SUCCESS;
}

/* hcclOpExpansionMode (config numbering: 0 default, 1 host, 2 AI CPU, 3 AIV, 4 AIV only, 5 CCU
 * MS, 6 CCU scheduling) -> HcclOpExpansionMode (its own numbering). The default is HOST: here the
 * host expands every op into tasks on the device's streams, as CANN's host mode does. */
static HcclOpExpansionMode expansion_mode(uint32_t configured)
{
    static const HcclOpExpansionMode from_config[] = {
        HCCL_OP_EXPANSION_MODE_HOST,   HCCL_OP_EXPANSION_MODE_HOST,   HCCL_OP_EXPANSION_MODE_AI_CPU,
        HCCL_OP_EXPANSION_MODE_AIV,    HCCL_OP_EXPANSION_AIV_ONLY,    HCCL_OP_EXPANSION_MODE_CCU_MS,
        HCCL_OP_EXPANSION_MODE_CCU_SCHED,
    };
    if (configured >= sizeof from_config / sizeof from_config[0])
        return HCCL_OP_EXPANSION_MODE_INVALID; /* rt_config_apply refuses these */
    return from_config[configured];
}

HcclResult HcclConfigGetInfo(HcclComm comm, HcclConfigType cfgType, uint32_t infoLen, void *info)
{
    rt_comm *c = NULL;
    CHECK(rt_comm_get(comm, "HcclConfigGetInfo", &c));
    CHECK_ARG(info, HCCL_E_PTR, "config", "HcclConfigGetInfo: info is NULL");
    switch (cfgType) {
    case HCCL_CONFIG_TYPE_OP_EXPANSION_MODE: {
        CHECK_ARG(infoLen == sizeof(HcclConfigTypeOpExpansionMode), HCCL_E_PARA, "config",
                  "HcclConfigGetInfo(OP_EXPANSION_MODE): infoLen=%u, expected %zu", infoLen,
                  sizeof(HcclConfigTypeOpExpansionMode));
        HcclConfigTypeOpExpansionMode mode = expansion_mode(c->op_expansion_mode);
        memcpy(info, &mode, sizeof mode);
        return HCCL_SUCCESS;
    }
    case HCCL_CONFIG_TYPE_HCCL_ALGO:
        CHECK_ARG(infoLen >= HCCL_COMM_ALGO_MAX_LENGTH, HCCL_E_PARA, "config",
                  "HcclConfigGetInfo(HCCL_ALGO): infoLen=%u, expected at least %d", infoLen, HCCL_COMM_ALGO_MAX_LENGTH);
        /* hcclAlgo, else HCCL_ALGO as read at init; "" when the algorithm is chosen per call. */
        pthread_mutex_lock(&c->lock);
        memcpy(info, c->algo_spec, HCCL_COMM_ALGO_MAX_LENGTH);
        pthread_mutex_unlock(&c->lock);
        ((char *)info)[HCCL_COMM_ALGO_MAX_LENGTH - 1] = '\0';
        return HCCL_SUCCESS;
    case HCCL_CONFIG_TYPE_INVALID:
        break;
    default:
        OH_ERR("config", "HcclConfigGetInfo: cfgType %d is not supported (OP_EXPANSION_MODE, HCCL_ALGO)", (int)cfgType);
        return HCCL_E_NOT_SUPPORT;
    }
    OH_ERR("config", "HcclConfigGetInfo: cfgType HCCL_CONFIG_TYPE_INVALID");
    return HCCL_E_PARA;
}
