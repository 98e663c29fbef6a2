/* The ACL calls hal/ascend binds at init, one X(name, group) per call. Groups: REQ (the backend
 * cannot work without it: a missing one fails hal_get with its name), IPC (sharing between the
 * processes of one server: missing ones fail the first export/import, hence a multi-rank
 * communicator init, saying which), OPT (used when present). Shared with the test stubs
 * (tests/acl_stub) so they can leave exactly one call out. */
#ifndef ASC_SYMS_H
#define ASC_SYMS_H

#define ASC_SYMS(X)                           \
    X(aclInit, REQ)                           \
    X(aclGetRecentErrMsg, OPT)                \
    X(aclrtSetDevice, REQ)                    \
    X(aclrtResetDevice, REQ)                  \
    X(aclrtGetDevice, REQ)                    \
    X(aclrtGetDeviceCount, REQ)               \
    X(aclrtSynchronizeDeviceWithTimeout, REQ) \
    X(aclrtGetMemInfo, OPT)                   \
    X(aclrtGetSocName, OPT)                   \
    X(aclrtMalloc, REQ)                       \
    X(aclrtFree, REQ)                         \
    X(aclrtMemcpy, REQ)                       \
    X(aclrtMemcpyAsync, REQ)                  \
    X(aclrtMemsetAsync, REQ)                  \
    X(aclrtPointerGetAttributes, OPT)         \
    X(aclrtReduceAsync, REQ)                  \
    X(aclrtCreateStreamWithConfig, REQ)       \
    X(aclrtDestroyStream, REQ)                \
    X(aclrtSynchronizeStreamWithTimeout, REQ) \
    X(aclrtStreamQuery, REQ)                  \
    X(aclrtCreateEventWithFlag, REQ)          \
    X(aclrtDestroyEvent, REQ)                 \
    X(aclrtRecordEvent, REQ)                  \
    X(aclrtResetEvent, REQ)                   \
    X(aclrtQueryEventStatus, REQ)             \
    X(aclrtSynchronizeEventWithTimeout, REQ)  \
    X(aclrtEventElapsedTime, REQ)             \
    X(aclrtStreamWaitEvent, REQ)              \
    X(aclrtCreateNotify, REQ)                 \
    X(aclrtDestroyNotify, REQ)                \
    X(aclrtRecordNotify, REQ)                 \
    X(aclrtWaitAndResetNotify, REQ)           \
    X(aclrtGetNotifyId, REQ)                  \
    X(aclrtSubscribeReport, REQ)              \
    X(aclrtUnSubscribeReport, REQ)            \
    X(aclrtProcessReport, REQ)                \
    X(aclrtLaunchCallback, REQ)               \
    X(aclrtIpcMemGetExportKey, IPC)           \
    X(aclrtIpcMemImportByKey, IPC)            \
    X(aclrtIpcMemSetImportPid, IPC)           \
    X(aclrtIpcMemClose, IPC)                  \
    X(aclrtNotifyGetExportKey, IPC)           \
    X(aclrtNotifyImportByKey, IPC)            \
    X(aclrtNotifySetImportPid, IPC)

#endif
