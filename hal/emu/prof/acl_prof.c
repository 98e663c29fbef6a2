/* libmsprofiler.so: CANN's profiling collection calls (acl/acl_prof.h) over the emulator's trace
 * recorder (hal/hal_trace.h, reached through libascendcl's aclExtGetTrace). Argument checks,
 * call order and error codes follow CANN's msprofiler; what is collected is our timeline trace
 * (docs/tracing.md). */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "acl/acl_prof.h"
#include "common/oh_log.h"
#include "hal/hal_trace.h"

#define PROF_PATH_MAX 4096u
#define PROF_MAX_DEVICES 64u

/* The switches CANN's header defines; anything else is ACL_ERROR_PROF_MODULES_UNSUPPORTED. */
#define PROF_SWITCHES                                                                                   \
    (ACL_PROF_ACL_API | ACL_PROF_TASK_TIME | ACL_PROF_AICORE_METRICS | ACL_PROF_AICPU | ACL_PROF_L2CACHE | \
     ACL_PROF_HCCL_TRACE | ACL_PROF_TRAINING_TRACE | ACL_PROF_MSPROFTX | ACL_PROF_RUNTIME_API |          \
     ACL_PROF_GE_API_L0 | ACL_PROF_TASK_TIME_L0 | ACL_PROF_TASK_MEMORY | ACL_PROF_TASK_TIME_L2 |         \
     ACL_PROF_OP_ATTR | ACL_PROF_TASK_TIME_L3 | ACL_PROF_GE_API_L1 | ACL_PROF_API_STATS)
#define PROF_TASK_SWITCHES (ACL_PROF_TASK_TIME | ACL_PROF_TASK_TIME_L0 | ACL_PROF_TASK_TIME_L2 | ACL_PROF_TASK_TIME_L3)

struct aclprofConfig {
    uint32_t devs[PROF_MAX_DEVICES];
    uint32_t ndevs;
    aclprofAicoreMetrics metrics;
    uint64_t switches;
};

extern const hal_trace_api *aclExtGetTrace(uint32_t abi_version) __attribute__((weak));

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static bool g_inited;
static char g_path[PROF_PATH_MAX + 1];
static uint64_t g_started; /* devices collecting (bit d) */

static const hal_trace_api *recorder(void)
{
    return aclExtGetTrace ? aclExtGetTrace(HAL_TRACE_ABI_VERSION) : NULL;
}

static aclError fail(aclError code, const char *api, const char *why)
{
    OH_ERR("prof", "%s: %s (error %d)", api, why, code);
    return code;
}

/* CANN's order checks: HCCL_TRACE plays the part of command-line profiling. */
static aclError precheck(const hal_trace_api *t, const char *api, bool want_inited)
{
    if (!t)
        return fail(ACL_ERROR_PROFILING_FAILURE, api, "the libascendcl.so loaded has no trace recorder");
    if (t->env_mode())
        return fail(ACL_ERROR_PROF_ALREADY_RUN, api, "HCCL_TRACE is profiling this process already");
    if (want_inited && !g_inited)
        return fail(ACL_ERROR_PROF_NOT_RUN, api, "aclprofInit was not called");
    if (!want_inited && g_inited)
        return fail(ACL_ERROR_REPEAT_INITIALIZE, api, "aclprofInit was already called");
    return ACL_SUCCESS;
}

aclError aclprofInit(const char *profilerResultPath, size_t length)
{
    if (!profilerResultPath || strlen(profilerResultPath) != length)
        return fail(ACL_ERROR_INVALID_PARAM, __func__, "profilerResultPath is NULL or its length is not `length`");
    if (length == 0 || length > PROF_PATH_MAX)
        return fail(ACL_ERROR_INVALID_PARAM, __func__, "the path length must be 1..4096");
    pthread_mutex_lock(&g_mu);
    aclError rc = precheck(recorder(), __func__, false);
    if (rc == ACL_SUCCESS) {
        memcpy(g_path, profilerResultPath, length + 1);
        g_inited = true;
    }
    pthread_mutex_unlock(&g_mu);
    return rc;
}

/* Writes the trace once no device collects any more. */
static aclError stop_devices(const hal_trace_api *t, uint64_t devs, const char *api)
{
    bool was_running = g_started != 0;
    g_started &= ~devs;
    if (!was_running || g_started)
        return ACL_SUCCESS;
    char path[PROF_PATH_MAX + 64];
    if (t->stop(path, sizeof path) != HAL_OK)
        return fail(ACL_ERROR_PROFILING_FAILURE, api, "writing the trace file failed");
    OH_INFO("prof", "%s: wrote %s", api, path);
    return ACL_SUCCESS;
}

aclError aclprofFinalize(void)
{
    pthread_mutex_lock(&g_mu);
    const hal_trace_api *t = recorder();
    aclError rc = precheck(t, __func__, true);
    if (rc == ACL_SUCCESS) {
        rc = stop_devices(t, UINT64_MAX, __func__);
        g_inited = false;
    }
    pthread_mutex_unlock(&g_mu);
    return rc;
}

static bool config_valid(const uint32_t *devs, uint32_t n, const aclprofAicoreEvents *events, uint64_t switches)
{
    uint32_t count = 0;
    if (n && !devs)
        return fail(ACL_ERROR_INVALID_PARAM, "aclprofCreateConfig", "deviceIdList is NULL"), false;
    if (events)
        return fail(ACL_ERROR_INVALID_PARAM, "aclprofCreateConfig", "aicoreEvents must be NULL"), false;
    if (aclrtGetDeviceCount(&count) != ACL_SUCCESS || n > count || n > PROF_MAX_DEVICES)
        return fail(ACL_ERROR_INVALID_PARAM, "aclprofCreateConfig", "deviceNums exceeds the device count"), false;
    uint64_t seen = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (devs[i] >= count || (seen >> devs[i] & 1))
            return fail(ACL_ERROR_INVALID_PARAM, "aclprofCreateConfig", "a device id is out of range or repeated"),
                   false;
        seen |= 1ull << devs[i];
    }
    if (n == 0 && !(switches & ACL_PROF_MSPROFTX))
        return fail(ACL_ERROR_INVALID_PARAM, "aclprofCreateConfig", "no device given"), false;
    return true;
}

aclprofConfig *aclprofCreateConfig(uint32_t *deviceIdList, uint32_t deviceNums, aclprofAicoreMetrics aicoreMetrics,
                                   const aclprofAicoreEvents *aicoreEvents, uint64_t dataTypeConfig)
{
    if (!config_valid(deviceIdList, deviceNums, aicoreEvents, dataTypeConfig))
        return NULL;
    aclprofConfig *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    if (deviceNums)
        memcpy(c->devs, deviceIdList, deviceNums * sizeof *deviceIdList);
    c->ndevs = deviceNums;
    c->metrics = aicoreMetrics;
    c->switches = dataTypeConfig;
    return c;
}

aclError aclprofDestroyConfig(const aclprofConfig *profilerConfig)
{
    if (!profilerConfig)
        return fail(ACL_ERROR_INVALID_PARAM, __func__, "profilerConfig is NULL");
    free((void *)profilerConfig);
    return ACL_SUCCESS;
}

static aclError config_check(const aclprofConfig *c, const char *api)
{
    if (!c)
        return fail(ACL_ERROR_INVALID_PARAM, api, "profilerConfig is NULL");
    if (c->switches == 0)
        return fail(ACL_ERROR_INVALID_PARAM, api, "dataTypeConfig is 0");
    if (c->switches & ~(uint64_t)PROF_SWITCHES)
        return fail(ACL_ERROR_PROF_MODULES_UNSUPPORTED, api, "dataTypeConfig has unknown switches");
    return ACL_SUCCESS;
}

static uint64_t config_devices(const aclprofConfig *c)
{
    uint64_t m = 0;
    for (uint32_t i = 0; i < c->ndevs; i++)
        m |= 1ull << c->devs[i];
    return m;
}

/* The part Start and Stop share: the config is valid, aclprofInit ran and the recorder exists.
 * Takes g_mu (the caller releases it, whatever the result) and gives the config's device mask. */
static aclError begin_locked(const aclprofConfig *config, const char *api, const hal_trace_api **t, uint64_t *devs)
{
    aclError rc = config_check(config, api);
    pthread_mutex_lock(&g_mu);
    if (rc == ACL_SUCCESS) {
        *t = recorder();
        rc = precheck(*t, api, true);
    }
    *devs = rc == ACL_SUCCESS ? config_devices(config) : 0;
    return rc;
}

aclError aclprofStart(const aclprofConfig *profilerConfig)
{
    const hal_trace_api *t = NULL;
    uint64_t devs = 0;
    aclError rc = begin_locked(profilerConfig, __func__, &t, &devs);
    if (rc == ACL_SUCCESS && (g_started & devs))
        rc = fail(ACL_ERROR_PROF_ALREADY_RUN, __func__, "a device of the config is collecting already");
    if (rc == ACL_SUCCESS && devs) {
        uint32_t what = (profilerConfig->switches & PROF_TASK_SWITCHES ? HAL_TRACE_TASKS : 0) |
                        (profilerConfig->switches & ACL_PROF_HCCL_TRACE ? HAL_TRACE_HCCL : 0);
        if (t->start(g_path, devs, what) != HAL_OK)
            rc = fail(ACL_ERROR_INVALID_FILE, __func__, "cannot create the result folder");
        else
            g_started |= devs;
    }
    pthread_mutex_unlock(&g_mu);
    return rc;
}

aclError aclprofStop(const aclprofConfig *profilerConfig)
{
    const hal_trace_api *t = NULL;
    uint64_t devs = 0;
    aclError rc = begin_locked(profilerConfig, __func__, &t, &devs);
    if (rc == ACL_SUCCESS && (g_started & devs) != devs)
        rc = fail(ACL_ERROR_PROF_NOT_RUN, __func__, "a device of the config was not started");
    if (rc == ACL_SUCCESS && devs)
        rc = stop_devices(t, devs, __func__);
    pthread_mutex_unlock(&g_mu);
    return rc;
}

aclError aclprofSetConfig(aclprofConfigType configType, const char *config, size_t configLength)
{
    if (configType <= ACL_PROF_ARGS_MIN || configType >= ACL_PROF_ARGS_MAX)
        return fail(ACL_ERROR_INVALID_PARAM, __func__, "configType is out of range");
    if (!config || configLength == 0 || configLength > 256 || strnlen(config, configLength + 1) != configLength)
        return fail(ACL_ERROR_INVALID_PARAM, __func__, "config is NULL or its length is not 1..256");
    return ACL_SUCCESS;
}
