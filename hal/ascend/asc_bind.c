/* Binds the ACL calls hal/ascend uses (asc_syms.h) with dlsym, so libhccl runs on whichever
 * libascendcl.so the loader found (CANN's on an Ascend machine, ours on the emulator) and a
 * library without one of them gives one clear error naming it instead of a crash.
 * HCCL_ASCEND_ACL_LIB=path binds to that library instead (tests; a side-by-side CANN). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hal/ascend/asc_internal.h"

asc_api asc_acl;
static char g_err[512];
static char g_ipc_missing[256];

/* Which CANN has the call, as far as we know: our headers follow CANN's acl_rt.h interface 1.17;
 * the CANN release that introduced each call is not recorded in the public headers we used. */
static const char *since(const char *name)
{
    if (!strncmp(name, "aclrtIpcMem", 11) || !strncmp(name, "aclrtNotify", 11) || !strcmp(name, "aclrtReduceAsync") ||
        !strcmp(name, "aclrtWaitAndResetNotify"))
        return "declared by CANN's acl_rt.h interface 1.17";
    return "declared by CANN's public acl_rt.h";
}

/* The handle to bind from; *ok = 0 when there is none (RTLD_DEFAULT is a null pointer in glibc). */
static void *open_lib(int *ok)
{
    *ok = 1;
    const char *path = getenv("HCCL_ASCEND_ACL_LIB");
    if (path && *path) {
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            snprintf(g_err, sizeof g_err, "HCCL_ASCEND_ACL_LIB=%s cannot be loaded: %s", path, dlerror());
            *ok = 0;
        }
        return h;
    }
    if (dlsym(RTLD_DEFAULT, "aclInit"))
        return RTLD_DEFAULT; /* libhccl links libascendcl by name: normally already loaded */
    void *h = dlopen("libascendcl.so", RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        snprintf(g_err, sizeof g_err, "libascendcl.so is not loaded and cannot be loaded: %s", dlerror());
        *ok = 0;
    }
    return h;
}

static hal_result bind_all(void)
{
    int ok;
    void *lib = open_lib(&ok);
    if (!ok)
        return HAL_E_NOT_SUPPORTED;
    size_t ipc_len = 0;
#define ASC_BIND(name, group)                                                                             \
    asc_acl.name = (__typeof__(name) *)dlsym(lib, #name);                                               \
    if (!asc_acl.name && !strcmp(#group, "REQ")) {                                                      \
        snprintf(g_err, sizeof g_err, "the libascendcl.so in use has no %s (%s); hal/ascend needs it", #name, \
                 since(#name));                                                                         \
        return HAL_E_NOT_SUPPORTED;                                                                     \
    }                                                                                                   \
    if (!asc_acl.name && !strcmp(#group, "IPC") && ipc_len < sizeof g_ipc_missing)                      \
        ipc_len += (size_t)snprintf(g_ipc_missing + ipc_len, sizeof g_ipc_missing - ipc_len, "%s%s",        \
                                    ipc_len ? ", " : "", #name);
    ASC_SYMS(ASC_BIND)
#undef ASC_BIND
    /* The application calls aclInit (HCCL never does); a library we loaded ourselves is ours to start. */
    const char *own = getenv("HCCL_ASCEND_ACL_LIB");
    aclError e = own && *own ? ACL(aclInit)(NULL) : ACL_SUCCESS;
    if (e != ACL_SUCCESS && e != ACL_ERROR_REPEAT_INITIALIZE) {
        snprintf(g_err, sizeof g_err, "aclInit failed: %d", e);
        return HAL_E_INTERNAL;
    }
    if (g_ipc_missing[0])
        OH_WARN("hal", "HCCL_HAL=ascend: the libascendcl.so in use lacks %s: processes cannot share device memory "
                "or notifies, so communicators of more than one process will fail", g_ipc_missing);
    return HAL_OK;
}

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static hal_result g_rc;

static void bind_once(void)
{
    g_rc = bind_all();
    if (g_rc != HAL_OK)
        OH_ERR("hal", "HCCL_HAL=ascend: %s", g_err);
}

hal_result asc_bind(void)
{
    pthread_once(&g_once, bind_once);
    return g_rc;
}

const char *asc_bind_error(void)
{
    return g_err;
}

const char *asc_ipc_missing(void)
{
    return g_ipc_missing[0] ? g_ipc_missing : NULL;
}

const char *asc_errmsg(void)
{
    const char *m = ACL(aclGetRecentErrMsg) ? ACL(aclGetRecentErrMsg)() : NULL;
    return m ? m : "";
}

/* ACL codes -> hal_result, by family (acl_base_rt.h, rt_error_codes.h). */
hal_result asc_from_acl(aclError e)
{
    switch (e) {
    case 0: return HAL_OK;
    case 107019: case 107020: case 207020: case 507046: case 507047: case 507048: return HAL_E_TIMEOUT;
    case 107001: case 200002: case 207004: return HAL_E_INVALID_DEVICE;
    case 200000: case 207001: case 207018: return HAL_E_NOMEM;
    case 200001: case 200006: case 207000: return HAL_E_NOT_SUPPORTED;
    case 107022: case 107023: return HAL_E_ABORTED;
    case 507057: return HAL_E_PEER; /* ACL_ERROR_RT_SUSPECT_REMOTE_ERROR */
    case 207006: return HAL_E_DENIED; /* ACL_ERROR_RT_NO_PERMISSION */
    default: break;
    }
    if (e == 100000 || e == 107000 || e == 107017)
        return HAL_E_PARAM;
    return HAL_E_INTERNAL;
}
