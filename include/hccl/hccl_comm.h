/* Communicator management, with CANN's names and signatures (hccl_comm.h). */
#ifndef HCCL_COMM_H_
#define HCCL_COMM_H_

#include <stdbool.h>
#include <stddef.h>
#include <hccl/hccl_types.h>
#include <acl/acl.h>

#ifdef __cplusplus
extern "C" {
#endif

HcclResult HcclCommInitClusterInfo(const char *clusterInfo, uint32_t rank, HcclComm *comm);
HcclResult HcclCommInitClusterInfoConfig(const char *clusterInfo, uint32_t rank, HcclCommConfig *config,
                                         HcclComm *comm);
HcclResult HcclCreateSubCommConfig(HcclComm *comm, uint32_t rankNum, uint32_t *rankIds, uint64_t subCommId,
                                   uint32_t subCommRankId, HcclCommConfig *config, HcclComm *subComm);
HcclResult HcclGetRootInfo(HcclRootInfo *rootInfo);
HcclResult HcclCommInitRootInfo(uint32_t nRanks, const HcclRootInfo *rootInfo, uint32_t rank, HcclComm *comm);
HcclResult HcclCommInitRootInfoConfig(uint32_t nRanks, const HcclRootInfo *rootInfo, uint32_t rank,
                                      const HcclCommConfig *config, HcclComm *comm);
HcclResult HcclSetConfig(HcclConfig config, HcclConfigValue configValue);
HcclResult HcclGetConfig(HcclConfig config, HcclConfigValue *configValue);
HcclResult HcclGetCommName(HcclComm comm, char *commName);
HcclResult HcclCommGetHandleWithName(const char *commName, HcclComm *comm);
HcclResult HcclGetRankSize(HcclComm comm, uint32_t *rankSize);
HcclResult HcclGetRankId(HcclComm comm, uint32_t *rank);
HcclResult HcclBarrier(HcclComm comm, aclrtStream stream);
HcclResult HcclCommDestroy(HcclComm comm);
HcclResult HcclCommInitAll(uint32_t ndev, int32_t *devices, HcclComm *comms);
HcclResult HcclGetCommAsyncError(HcclComm comm, HcclResult *asyncError);
const char *HcclGetErrorString(HcclResult code);
uint32_t HcclGetCommConfigCapability(void);

/* Fills the ABI header {size, magic, version} and every "not set" sentinel. The library reads
 * only the fields that existed in the caller's header version (size/version). */
static inline void HcclCommConfigInit(HcclCommConfig *config)
{
    typedef struct {
        size_t size;
        uint32_t magicWord;
        uint32_t version;
        uint64_t reserved;
    } HcclCommConfigHeader;
    if (config == NULL) {
        return;
    }
    HcclCommConfigHeader *info = (HcclCommConfigHeader *)(void *)config;
    info->size = sizeof(HcclCommConfig);
    info->magicWord = HCCL_COMM_CONFIG_MAGIC_WORD;
    info->version = HCCL_COMM_CONFIG_VERSION;
    info->reserved = 0;
    config->hcclBufferSize = HCCL_COMM_BUFFSIZE_CONFIG_NOT_SET;
    config->hcclDeterministic = HCCL_COMM_DETERMINISTIC_CONFIG_NOT_SET;
    config->hcclCommName[0] = '\0';
    config->hcclUdi[0] = '\0';
    config->hcclOpExpansionMode = HCCL_COMM_DEFAULT_OP_EXPANSION_MODE;
    config->hcclRdmaTrafficClass = HCCL_COMM_TRAFFIC_CLASS_CONFIG_NOT_SET;
    config->hcclRdmaServiceLevel = HCCL_COMM_SERVICE_LEVEL_CONFIG_NOT_SET;
    config->hcclWorldRankID = 0;
    config->hcclJobID = 0;
    config->aclGraphZeroCopyEnable = 0;
    config->hcclExecTimeOut = HCCL_COMM_EXECTIMEOUT_CONFIG_NOT_SET;
    config->hcclAlgo[0] = '\0';
    config->hcclRetryEnable[0] = '\0';
    config->hcclRetryParams[0] = '\0';
    config->hcclBufferName[0] = '\0';
    config->hcclQos = HCCL_COMM_QOS_CONFIG_NOT_SET;
    config->hcclSymWinMaxMemSizePerRank = HCCL_DEFAULT_SYMMETRIC_MEMORY_STRIDE;
    config->hcclChannelSqDepth = HCCL_COMM_SQ_DEPTH_CONFIG_NOT_SET;
}

HcclResult HcclCommSuspend(HcclComm comm);
HcclResult HcclCommResume(HcclComm comm);
HcclResult HcclCommGetStatus(const char *commId, HcclCommStatus *status);

/* Process-wide communicator state callbacks, called around HcclCommDestroy (and HcclCommResume,
 * which the emulator does not support): docs/runtime.md, "State callbacks". A NULL cb removes
 * regName's registration. */
typedef HcclResult (*HcclCommStateCallback)(HcclComm comm, HcclCommStatePhase state, void *args);
HcclResult HcclCommRegCommStateCallback(const char *regName, HcclCommStateCallback cb, void *args);

/* Chooses each listed rank's device NIC (primary or backup die). The emulator has no NICs: the
 * choice is validated and recorded, nothing switches (docs/runtime.md). */
HcclResult HcclCommWorkingDevNicSet(HcclComm comm, uint32_t *ranks, bool *useBackup, uint32_t nRanks);

typedef enum {
    HCCL_OP_EXPANSION_MODE_INVALID = -1,
    HCCL_OP_EXPANSION_MODE_AI_CPU = 0,
    HCCL_OP_EXPANSION_MODE_AIV = 1,
    HCCL_OP_EXPANSION_MODE_HOST = 2,
    HCCL_OP_EXPANSION_MODE_HOST_TS = 3,
    HCCL_OP_EXPANSION_MODE_CCU_MS = 4,
    HCCL_OP_EXPANSION_MODE_CCU_SCHED = 5,
    HCCL_OP_EXPANSION_AIV_ONLY = 6 /* CANN's spelling (no _MODE_) */
} HcclOpExpansionMode;

typedef enum {
    HCCL_CONFIG_TYPE_INVALID = -1,
    HCCL_CONFIG_TYPE_OP_EXPANSION_MODE = 0, /* info: HcclConfigTypeOpExpansionMode, infoLen == its size */
    HCCL_CONFIG_TYPE_HCCL_ALGO = 1          /* info: char[infoLen], infoLen >= HCCL_COMM_ALGO_MAX_LENGTH */
} HcclConfigType;

typedef HcclOpExpansionMode HcclConfigTypeOpExpansionMode;

HcclResult HcclConfigGetInfo(HcclComm comm, HcclConfigType cfgType, uint32_t infoLen, void *info);
HcclResult HcclGroupStart(void);
HcclResult HcclGroupEnd(void);
HcclResult HcclGroupStatusGet(bool *isGroupEnabled);

/* --- Registered memory (zero copy on VMM memory) and symmetric windows: CANN's hccl_comm.h.
 * HcclCommRegister, HcclCommDeregister and HcclCommExchangeMem are CANN's hccl_ex.h calls that
 * torch_npu resolves with dlsym. docs/runtime.md, "Registered memory and symmetric windows". */
HcclResult HcclCommSetMemoryRange(HcclComm comm, void *baseVirPtr, size_t size, size_t alignment, uint64_t flags);
HcclResult HcclCommUnsetMemoryRange(HcclComm comm, void *baseVirPtr);
HcclResult HcclCommActivateCommMemory(HcclComm comm, void *virPtr, size_t size, size_t offset,
                                      aclrtDrvMemHandle handle, uint64_t flags);
HcclResult HcclCommDeactivateCommMemory(HcclComm comm, void *virPtr);
HcclResult HcclCommSymWinRegister(HcclComm comm, void *addr, uint64_t size, HcclCommSymWindow *winHandle,
                                  uint32_t flag);
HcclResult HcclCommSymWinDeregister(HcclCommSymWindow winHandle);
HcclResult HcclCommSymWinGet(HcclComm comm, void *ptr, size_t size, HcclCommSymWindow *winHandle, size_t *offset);
HcclResult HcclCommRegister(HcclComm comm, void *addr, uint64_t size, void **handle, uint32_t flag);
HcclResult HcclCommDeregister(HcclComm comm, void *handle);
HcclResult HcclCommExchangeMem(HcclComm comm, void *windowHandle, uint32_t *peerRanks, uint32_t peerRankNum);
/* --- end of registered memory */

#ifdef __cplusplus
}
#endif
#endif
