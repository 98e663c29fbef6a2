/* hal/ascend's binding to libascendcl.so: a library that lacks a call hal/ascend needs gives one
 * clear error naming it (not a crash); one without CANN's IPC calls binds, and sharing with another
 * process then fails saying what is missing. The libraries are stubs (tests/acl_stub). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "hal/ascend/hal_ascend.h"
#include "hal/hal.h"

#define STUB_DIR OH_BUILD_DIR "/tests/"

static void use(const char *lib)
{
    setenv("HCCL_HAL", "ascend", 1);
    setenv("HCCL_ASCEND_ACL_LIB", lib, 1);
}

Test(ascend_bind, missing_call_is_named)
{
    use(STUB_DIR "libacl_stub_noreduce.so");
    cr_assert_null(hal_get(), "HCCL_HAL=ascend must refuse a libascendcl.so without aclrtReduceAsync");
    const char *err = hal_ascend_error();
    cr_assert_not_null(err);
    cr_assert(strstr(err, "has no aclrtReduceAsync") != NULL, "error: %s", err);
    cr_assert(strstr(err, "CANN") != NULL, "the error says which CANN has it: %s", err);
}

Test(ascend_bind, unloadable_library_is_named)
{
    use(STUB_DIR "no_such_libascendcl.so");
    cr_assert_null(hal_get());
    cr_assert(strstr(hal_ascend_error(), "no_such_libascendcl.so") != NULL, "error: %s", hal_ascend_error());
}

Test(ascend_bind, without_ipc_sharing_fails_clearly)
{
    use(STUB_DIR "libacl_stub_noipc.so");
    const hal_ops *h = hal_get();
    cr_assert_not_null(h, "the IPC calls are needed only to share with other processes: %s", hal_ascend_error());
    cr_assert_str_eq(h->name, "ascend");
    const char *missing = hal_ascend_ipc_missing();
    cr_assert_not_null(missing);
    cr_assert(strstr(missing, "aclrtIpcMemGetExportKey") && strstr(missing, "aclrtNotifyImportByKey"), "%s", missing);
    /* What communicator init does for each peer: map its memory, export and import notifies. */
    hal_device_handle peer = {.server_key = 1, .device_id = 1, .pid = 1};
    cr_assert_eq(h->mem_import(NULL, &peer), HAL_E_NOT_SUPPORTED);
    hal_notify_handle nh = {.owner = peer};
    hal_notify *n = NULL;
    cr_assert_eq(h->notify_import(NULL, &nh, &n), HAL_E_NOT_SUPPORTED);
    char key[HAL_IPC_KEY_LEN];
    cr_assert_eq(h->ipc_mem_export(NULL, key, 64, 0, key), HAL_E_NOT_SUPPORTED);
}
