/* Names of hal_result codes (used by every layer's log lines). */
#include "hal/hal.h"

const char *hal_result_name(hal_result rc)
{
    static const char *names[] = {
        "HAL_OK", "HAL_E_PARAM", "HAL_E_NOMEM", "HAL_E_TIMEOUT", "HAL_E_NOT_SUPPORTED", "HAL_E_SYSCALL",
        "HAL_E_INVALID_DEVICE", "HAL_E_NOT_READY", "HAL_E_ABORTED", "HAL_E_PEER", "HAL_E_FOREIGN",
        "HAL_E_INTERNAL", "HAL_E_DENIED",
    };
    if ((unsigned)rc < sizeof names / sizeof names[0])
        return names[rc];
    return "HAL_E_UNKNOWN";
}
