/* Backend selection for libhccl. The emulator lives in our libascendcl.so, which hands its HAL table
 * over through one exported, versioned entry point (aclExtGetEmuHal). The reference is weak so that
 * libhccl still loads against a libascendcl that lacks it (CANN's): HCCL_HAL=auto then picks hal/ascend,
 * and an explicit HCCL_HAL=emu reports that the emulator is not there instead of the loader failing. */
#include "hal/hal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/oh_log.h"
#include "hal/ascend/hal_ascend.h"

static const hal_ops *g_hal;
static pthread_once_t g_hal_once = PTHREAD_ONCE_INIT;
static hal_ops g_emu_unrolled; /* the emulator's table without stream programs (HCCL_EMU_NO_PROG) */

extern const hal_ops *aclExtGetEmuHal(uint32_t abi_version) __attribute__((weak));

static const hal_ops *emu_backend(void)
{
    if (!aclExtGetEmuHal) {
        OH_ERR("hal", "HCCL_HAL=emu: the libascendcl.so loaded is not OpenHCCL's emulator (no aclExtGetEmuHal)");
        return NULL;
    }
    const hal_ops *ops = aclExtGetEmuHal(HAL_ABI_VERSION);
    if (!ops)
        OH_ERR("hal", "HCCL_HAL=emu: the emulator in the loaded libascendcl.so does not offer HAL version %u: "
               "libhccl.so and libascendcl.so come from different builds", HAL_ABI_VERSION);
    /* HCCL_EMU_NO_PROG=1: the emulator as a backend without a program executor (prog_launch NULL),
     * so the runtime submits one task per instruction, as it must on such a backend: tests run
     * that path on the emulator, and it is a fallback when chasing a suspected executor bug. */
    const char *no_prog = getenv("HCCL_EMU_NO_PROG");
    if (ops && no_prog && *no_prog && strcmp(no_prog, "0") != 0) {
        g_emu_unrolled = *ops;
        g_emu_unrolled.prog_launch = NULL;
        g_emu_unrolled.prog_launch_record = NULL;
        g_emu_unrolled.prog_run_now = NULL;
        g_emu_unrolled.prog_check = NULL;
        g_emu_unrolled.prog_launch_checked = NULL;
        g_emu_unrolled.prog_fans_out_copies = false; /* a property of the program executor */
        ops = &g_emu_unrolled;
    }
    return ops;
}

/* HCCL_HAL=auto (default) | emu | ascend. auto: the emulator when the loaded libascendcl.so is ours
 * (it exports aclExtGetEmuHal), else hal/ascend over whatever libascendcl.so is loaded (CANN's). */
static void hal_choose(void)
{
    const char *name = getenv("HCCL_HAL");
    int is_auto = !name || !*name || !strcmp(name, "auto");
    if (is_auto)
        name = aclExtGetEmuHal ? "emu" : "ascend";
    if (!strcmp(name, "emu")) {
        g_hal = emu_backend();
    } else if (!strcmp(name, "ascend")) {
        g_hal = hal_ascend_get(); /* logs which ACL call is missing when it fails */
    } else {
        OH_ERR("hal", "HCCL_HAL=%s is not a known backend (auto, emu, ascend)", name);
        g_hal = NULL;
    }
    if (g_hal)
        OH_INFO("hal", "device backend: %s (HCCL_HAL=%s)", g_hal->name, is_auto ? "auto" : name);
}

bool hal_acl_is_emulator(void)
{
    return aclExtGetEmuHal != NULL;
}

const hal_ops *hal_get(void)
{
    pthread_once(&g_hal_once, hal_choose);
    return g_hal;
}

