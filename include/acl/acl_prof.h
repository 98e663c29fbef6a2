/*
 * OpenHCCL -- profiling API of the ACL front (library libmsprofiler.so, -lmsprofiler).
 *
 * Names, types, signatures and numeric values follow CANN's public header of the same name
 * (hicann/runtime include/external/acl/acl_prof.h). Only the collection calls are declared: init,
 * config, start/stop, finalize. On OpenHCCL they record a timeline of every device task and every
 * HCCL op and write it as a Chrome trace (JSON) under the path given to aclprofInit:
 * docs/tracing.md describes the file. Error codes are CANN's (acl_base_rt.h).
 */
#ifndef OPENHCCL_ACL_ACL_PROF_H
#define OPENHCCL_ACL_ACL_PROF_H

#include "acl_base.h"

#ifndef MSVP_PROF_API
#  if defined(_MSC_VER)
#    define MSVP_PROF_API __declspec(dllexport)
#  else
#    define MSVP_PROF_API __attribute__((visibility("default")))
#  endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* dataTypeConfig switches (what aclprofCreateConfig asks to collect). */
#define ACL_PROF_ACL_API 0x0001ULL
#define ACL_PROF_TASK_TIME 0x0002ULL
#define ACL_PROF_AICORE_METRICS 0x0004ULL
#define ACL_PROF_AICPU 0x0008ULL
#define ACL_PROF_L2CACHE 0x0010ULL
#define ACL_PROF_HCCL_TRACE 0x0020ULL
#define ACL_PROF_TRAINING_TRACE 0x0040ULL
#define ACL_PROF_MSPROFTX 0x0080ULL
#define ACL_PROF_RUNTIME_API 0x0100ULL
#define ACL_PROF_GE_API_L0 0x0200ULL
#define ACL_PROF_TASK_TIME_L0 0x0800ULL
#define ACL_PROF_TASK_MEMORY 0x1000ULL
#define ACL_PROF_TASK_TIME_L2 0x2000ULL
#define ACL_PROF_OP_ATTR 0x4000ULL
#define ACL_PROF_TASK_TIME_L3 0x8000ULL
#define ACL_PROF_GE_API_L1 0x01000000ULL
#define ACL_PROF_API_STATS 0x400000000ULL

#define ACL_PROF_MAX_OP_NAME_LEN 257
#define ACL_PROF_MAX_OP_TYPE_LEN 65

typedef enum {
    ACL_AICORE_ARITHMETIC_UTILIZATION = 0,
    ACL_AICORE_PIPE_UTILIZATION = 1,
    ACL_AICORE_MEMORY_BANDWIDTH = 2,
    ACL_AICORE_L0B_AND_WIDTH = 3,
    ACL_AICORE_RESOURCE_CONFLICT_RATIO = 4,
    ACL_AICORE_MEMORY_UB = 5,
    ACL_AICORE_L2_CACHE = 6,
    ACL_AICORE_PIPE_EXECUTE_UTILIZATION = 7,
    ACL_AICORE_MEMORY_ACCESS = 8,
    ACL_AICORE_NONE = 0xFF
} aclprofAicoreMetrics;

typedef enum {
    ACL_PROF_ARGS_MIN = 0,
    ACL_PROF_STORAGE_LIMIT = 1,
    ACL_PROF_SYS_HARDWARE_MEM_FREQ = 3,
    ACL_PROF_LLC_MODE = 4,
    ACL_PROF_SYS_IO_FREQ = 5,
    ACL_PROF_SYS_INTERCONNECTION_FREQ = 6,
    ACL_PROF_DVPP_FREQ = 7,
    ACL_PROF_HOST_SYS = 8,
    ACL_PROF_HOST_SYS_USAGE = 9,
    ACL_PROF_HOST_SYS_USAGE_FREQ = 10,
    ACL_PROF_LOW_POWER_FREQ = 11,
    ACL_PROF_SYS_MEM_SERVICEFLOW = 12,
    ACL_PROF_SYS_CPU_FREQ = 13,
    ACL_PROF_OPTYPE = 14,
    ACL_PROF_NTS_METRICS = 15,
    ACL_PROF_PATH = 16,
    ACL_PROF_ARGS_MAX = 17
} aclprofConfigType;

typedef struct aclprofConfig aclprofConfig;
typedef struct aclprofAicoreEvents aclprofAicoreEvents;

/* Sets the folder the trace is written to (created if missing); length = strlen(path), 1..4096. */
MSVP_PROF_API aclError aclprofInit(const char *profilerResultPath, size_t length);
/* Ends profiling; a collection still running is stopped and written first. */
MSVP_PROF_API aclError aclprofFinalize(void);
/* Starts collecting on the config's devices. */
MSVP_PROF_API aclError aclprofStart(const aclprofConfig *profilerConfig);
/* Stops collecting on the config's devices (same config as aclprofStart); when the last device
 * stops, the trace file is written. */
MSVP_PROF_API aclError aclprofStop(const aclprofConfig *profilerConfig);
/* NULL on bad arguments (see docs/tracing.md). aicoreEvents must be NULL. */
MSVP_PROF_API aclprofConfig *aclprofCreateConfig(uint32_t *deviceIdList, uint32_t deviceNums,
                                                 aclprofAicoreMetrics aicoreMetrics,
                                                 const aclprofAicoreEvents *aicoreEvents, uint64_t dataTypeConfig);
MSVP_PROF_API aclError aclprofDestroyConfig(const aclprofConfig *profilerConfig);
/* Accepted and checked; the emulator's trace has no use for these settings. */
MSVP_PROF_API aclError aclprofSetConfig(aclprofConfigType configType, const char *config, size_t configLength);

#ifdef __cplusplus
}
#endif

#endif /* OPENHCCL_ACL_ACL_PROF_H */
