/* Error reporting of the ACL front: the HAL -> aclError mapping, the one-line log of every
 * failing call, and the thread-local "last error" that aclGetRecentErrMsg, aclrtGetLastError
 * and aclrtPeekAtLastError report.
 *
 * CANN keeps the error text per thread by default (aclGetRecentErrMsg doc: "默认线程级别") and
 * clears it when read; the returned pointer stays valid until the next aclGetRecentErrMsg call
 * of the same thread. We keep two buffers per thread for exactly that contract.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "hal/emu/acl_internal.h"

#define ACL_ERRMSG_LEN 512

static __thread aclError t_last_code;             /* aclrtGetLastError / PeekAtLastError */
static __thread char t_pending[ACL_ERRMSG_LEN];    /* newest failure text, "" when read */
static __thread char t_returned[ACL_ERRMSG_LEN];   /* what the last aclGetRecentErrMsg handed out */

aclError acl_fail(aclError code, const char *func, const char *fmt, ...)
{
    char msg[ACL_ERRMSG_LEN - 64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    OH_ERR(ACL_MOD, "%s: %s (error %d)", func, msg, code);
    snprintf(t_pending, sizeof t_pending, "%s: %s (error %d)", func, msg, code);
    t_last_code = code;
    return code;
}

aclError acl_from_hal(hal_result rc)
{
    switch (rc) {
    case HAL_OK:
        return ACL_SUCCESS;
    case HAL_E_PARAM:
    case HAL_E_FOREIGN:
        return ACL_ERROR_RT_PARAM_INVALID;
    case HAL_E_NOMEM:
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    case HAL_E_TIMEOUT:
        /* A task that waited past its deadline (notify wait): the code users of HCCL see when
         * a notify wait times out on the device (cann_facts.md section 2). Host-side sync
         * deadlines are mapped by their callers to the *_SYNC_TIMEOUT codes. */
        return ACL_ERROR_RT_FFTS_PLUS_TIMEOUT;
    case HAL_E_NOT_SUPPORTED:
        return ACL_ERROR_RT_FEATURE_NOT_SUPPORT;
    case HAL_E_SYSCALL:
        return ACL_ERROR_RT_DRV_INTERNAL_ERROR;
    case HAL_E_INVALID_DEVICE:
        return ACL_ERROR_RT_INVALID_DEVICEID;
    case HAL_E_NOT_READY:
        return ACL_ERROR_RT_STREAM_NOT_COMPLETE;
    case HAL_E_ABORTED:
        return ACL_ERROR_RT_STREAM_ABORT;
    case HAL_E_PEER:
        return ACL_ERROR_RT_SUSPECT_REMOTE_ERROR;
    case HAL_E_INTERNAL:
    default:
        return ACL_ERROR_RT_INTERNAL_ERROR;
    }
}

aclError acl_fail_hal(hal_result rc, const char *func, const char *what)
{
    return acl_fail(acl_from_hal(rc), func, "%s failed: %s", what, hal_result_name(rc));
}

/* Returns the newest failure text of this thread and clears it; NULL when there is none (the
 * CANN doc returns nullptr when no message can be obtained). */
const char *aclGetRecentErrMsg(void)
{
    if (t_pending[0] == '\0')
        return NULL;
    memcpy(t_returned, t_pending, sizeof t_returned);
    t_pending[0] = '\0';
    return t_returned;
}

aclError aclrtPeekAtLastError(aclrtLastErrLevel level)
{
    if (level != ACL_RT_THREAD_LEVEL)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "level %d is not ACL_RT_THREAD_LEVEL", (int)level);
    return t_last_code;
}

/* Returns the last error code of this thread and clears it (CUDA's cudaGetLastError model). */
aclError aclrtGetLastError(aclrtLastErrLevel level)
{
    if (level != ACL_RT_THREAD_LEVEL)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "level %d is not ACL_RT_THREAD_LEVEL", (int)level);
    aclError code = t_last_code;
    t_last_code = ACL_SUCCESS;
    return code;
}
