/* Process-wide ACL settings and identity: aclsysGetVersionStr, aclrtDeviceGetBareTgid,
 * aclrtSetOpWaitTimeout, aclrtSetOpExecuteTimeOut.
 *
 * aclsysGetVersionStr (CANN: reads the version.info of an installed package, ACL_ERROR_INVALID_FILE
 * when there is none; versionStr holds ACL_PKG_VERSION_MAX_SIZE bytes): the emulator is the
 * "runtime" and "hccl" packages (and "cann" as a whole), and reports OpenHCCL's version for them;
 * any other package is not installed.
 *
 * The two timeouts are recorded only: the emulator's event waits have no deadline, and task
 * timeouts come from HCCL_EXEC_TIMEOUT and the notify calls' own timeouts.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hal/emu/acl_internal.h"

#define OH_PKG_VERSION "0.1.0" /* OpenHCCL's project version (CMakeLists.txt project()) */

static pthread_mutex_t g_sys_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t g_op_wait_timeout_s, g_op_execute_timeout_s;

aclError aclsysGetVersionStr(char *pkgName, char *versionStr)
{
    if (!versionStr || !pkgName)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "null argument (pkgName %p versionStr %p)", (void *)pkgName,
                        (void *)versionStr);
    static const char *const ours[] = {"runtime", "hccl", "cann"};
    for (size_t i = 0; i < sizeof ours / sizeof ours[0]; i++)
        if (strcmp(pkgName, ours[i]) == 0) {
            snprintf(versionStr, ACL_PKG_VERSION_MAX_SIZE, "%s", OH_PKG_VERSION);
            return ACL_SUCCESS;
        }
    return acl_fail(ACL_ERROR_INVALID_FILE, __func__, "package \"%.64s\" is not installed (the emulator provides "
                    "runtime, hccl and cann)", pkgName);
}

/* The pid other processes put on an IPC whitelist (no containers to translate through here). */
aclError aclrtDeviceGetBareTgid(int32_t *pid)
{
    if (!pid)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "pid is NULL");
    *pid = (int32_t)getpid();
    return ACL_SUCCESS;
}

aclError aclrtSetOpWaitTimeout(uint32_t timeout)
{
    pthread_mutex_lock(&g_sys_lock);
    g_op_wait_timeout_s = timeout;
    pthread_mutex_unlock(&g_sys_lock);
    return ACL_SUCCESS;
}

aclError aclrtSetOpExecuteTimeOut(uint32_t timeout)
{
    pthread_mutex_lock(&g_sys_lock);
    g_op_execute_timeout_s = timeout;
    pthread_mutex_unlock(&g_sys_lock);
    return ACL_SUCCESS;
}
