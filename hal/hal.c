/* Backend selection and result names. */
#include "hal/hal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/oh_log.h"

static const hal_ops *g_hal;
static pthread_once_t g_hal_once = PTHREAD_ONCE_INIT;

static void hal_choose(void)
{
    const char *name = getenv("HCCL_HAL");
    if (!name || !*name || !strcmp(name, "emu")) {
        g_hal = &emu_hal_ops;
    } else if (!strcmp(name, "ascend")) {
        OH_ERR("hal", "HCCL_HAL=ascend: the Ascend backend is not built into this library; "
               "unset HCCL_HAL (or set it to emu) to use the emulator");
        g_hal = NULL;
    } else {
        OH_ERR("hal", "HCCL_HAL=%s is not a known backend (emu, ascend)", name);
        g_hal = NULL;
    }
}

const hal_ops *hal_get(void)
{
    pthread_once(&g_hal_once, hal_choose);
    return g_hal;
}

const char *hal_result_name(hal_result rc)
{
    static const char *names[] = {
        "HAL_OK", "HAL_E_PARAM", "HAL_E_NOMEM", "HAL_E_TIMEOUT", "HAL_E_NOT_SUPPORTED", "HAL_E_SYSCALL",
        "HAL_E_INVALID_DEVICE", "HAL_E_NOT_READY", "HAL_E_ABORTED", "HAL_E_PEER", "HAL_E_FOREIGN",
        "HAL_E_INTERNAL",
    };
    if ((unsigned)rc < sizeof names / sizeof names[0])
        return names[rc];
    return "HAL_E_UNKNOWN";
}
