/* Shared pieces of the emulator's ACL front (hal/emu/acl_*.c).
 *
 * The front implements CANN's ACL runtime calls on top of the emulator's HAL table only (emu_hal_ops); it never
 * reaches into emulator internals, so it would run unchanged over any backend that fills
 * hal_ops. Conventions every acl_*.c file follows:
 *   - a failing call returns through acl_fail()/acl_fail_hal(): one OH_ERR line naming the
 *     function and the bad argument, and the text kept as this thread's last error
 *     (aclGetRecentErrMsg, aclrtGetLastError);
 *   - argument checks done here (null pointers, unknown enum values) return
 *     ACL_ERROR_INVALID_PARAM, as CANN's acl layer does before calling its runtime; errors that
 *     come back from the HAL go through acl_from_hal() (the runtime's ACL_ERROR_RT_* codes);
 *   - handles that are plain pointers (events, notifies, host buffers, physical memory, VA
 *     reservations) are looked up in the registry before use, so a foreign or stale handle is an
 *     error code, never a crash.
 */
#ifndef ACL_INTERNAL_H
#define ACL_INTERNAL_H

#include <stdint.h>

#include "acl/acl.h"
#include "common/oh_log.h"
#include "hal/hal.h"

#define ACL_MOD "acl"

/* ---- errors (acl_error.c) ---------------------------------------------------------------- */

/* Logs "<func>: <message>", records it as this thread's last error and returns code. */
aclError acl_fail(aclError code, const char *func, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The aclError CANN's runtime reports for a HAL result (HAL_OK -> ACL_SUCCESS). */
aclError acl_from_hal(hal_result rc);
/* acl_fail with acl_from_hal(rc), adding the HAL result name to the message. */
aclError acl_fail_hal(hal_result rc, const char *func, const char *what);

/* ---- devices (acl_device.c) ---------------------------------------------------------------- */

/* The device this thread selected with aclrtSetDevice; fails (ACL_ERROR_RT_CONTEXT_NULL,
 * logged under func) when none is set or it was reset. */
aclError acl_current_device(const char *func, hal_device **dev, int32_t *id);
/* The opened device with this id, or NULL when this process has not set it. */
hal_device *acl_device_by_id(int32_t id);
/* Device id of an opened device (-1 if unknown). */
int32_t acl_device_id(hal_device *dev);
/* One aclrtSetDevice / aclrtResetDevice reference on a device, without changing any thread's
 * selection (contexts hold one each). Errors are logged under func. */
aclError acl_device_retain(const char *func, int32_t deviceId);
aclError acl_device_release(const char *func, int32_t deviceId);
/* Makes deviceId (already retained) this thread's device; context NULL = its default context. */
void acl_thread_select(int32_t deviceId, void *context);
/* The context this thread selected explicitly (NULL: the default context of its device). */
void *acl_thread_context(void);

/* ---- memory (acl_memory.c) ------------------------------------------------------------------ */

/* ACL_SUCCESS when [p, p+n) lies inside one device allocation, else logs under func and fails
 * with ACL_ERROR_RT_PARAM_INVALID. */
aclError acl_check_dev_range(const char *func, const char *name, const void *p, size_t n);
/* HCCL_EMU_ACL_STRICT_IPC (acl_strict.c, tests): memory of another process's device must lie in an
 * allocation imported by key here. */
void acl_strict_imported(hal_device *dev, const char *key, const void *ptr);
void acl_strict_closed(const char *key);
aclError acl_strict_check(const char *func, const char *name, const void *p, size_t n, const hal_device_handle *owner);

/* ---- streams (acl_stream.c) ---------------------------------------------------------------- */

/* The HAL stream behind an aclrtStream (NULL = default stream of the current device). */
aclError acl_stream(const char *func, aclrtStream stream, hal_stream **s);

/* ---- callbacks (acl_callback.c) ------------------------------------------------------------ */

/* Drops every subscription of a stream that is being destroyed. */
void acl_callback_forget_stream(hal_stream *s);
/* Drops every subscription and pending report (aclFinalize). */
void acl_callback_reset(void);

/* ---- registry of live handles (acl_registry.c) --------------------------------------------- */

typedef enum acl_handle_kind {
    ACL_H_EVENT = 1,     /* acl_event wrapper */
    ACL_H_NOTIFY = 2,    /* hal_notify* */
    ACL_H_HOST_MEM = 3,  /* aclrtMallocHost buffer; value = size */
    ACL_H_PHYS = 4,      /* hal_phys_mem*; value = size */
    ACL_H_VA = 5,        /* aclrtReserveMemAddress start; value = hal_device* */
    ACL_H_MAPPING = 6,   /* aclrtMapMem start; value = hal_phys_mem* */
    ACL_H_PHYS_FREED = 7, /* hal_phys_mem* freed while mapped: released at its last unmap */
    ACL_H_CONTEXT = 8,    /* acl_context (aclrtCreateContext); value = device id */
    ACL_H_STREAM_ID = 9,  /* hal_stream* -> id reported by aclrtStreamGetId */
    ACL_H_NOTIFY_EXPORTED = 10, /* hal_notify* exported by aclrtNotifyGetExportKey */
} acl_handle_kind;

/* Adds key; 0 on success, -1 when out of memory or already present. */
int acl_reg_add(acl_handle_kind kind, const void *key, uintptr_t value);
/* 1 and *value (if not NULL) when key is a live handle of that kind, else 0. */
int acl_reg_find(acl_handle_kind kind, const void *key, uintptr_t *value);
/* Removes key; 1 if it was present. */
int acl_reg_remove(acl_handle_kind kind, const void *key);
/* Counts live handles of a kind whose value equals value (e.g. mappings of one phys chunk). */
int acl_reg_count_value(acl_handle_kind kind, uintptr_t value);
/* For tests: the set of the thread's cached answers (kind, key) goes to, and how many lookups of
 * this thread missed that cache so far. */
unsigned acl_reg_test_set(acl_handle_kind kind, const void *key);
uint64_t acl_reg_test_misses(void);

#endif
