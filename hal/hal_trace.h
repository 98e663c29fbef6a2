/* Timeline tracing: the table through which libhccl (op-level events) and libmsprofiler (the
 * aclprof* calls) drive the trace recorder that lives in the emulator (libascendcl.so, which knows
 * when each device task starts and ends). libascendcl exports one versioned entry point,
 * aclExtGetTrace; its users refer to it weakly, so they still load against a libascendcl without
 * it (the trace is then simply off). docs/tracing.md describes the events and the file.
 *
 * Cost when no session records: callers test *active (one load and a predictable branch). */
#ifndef HAL_TRACE_H
#define HAL_TRACE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "hal/hal.h"

#define HAL_TRACE_ABI_VERSION 1u

/* What a session writes (bit mask). */
#define HAL_TRACE_TASKS 0x1u /* every device task of the traced devices */
#define HAL_TRACE_HCCL 0x2u  /* HCCL ops, and the tasks of their steps */

/* One HCCL op as launched by one rank. Strings are copied (bounded) when recorded. */
typedef struct hal_trace_op {
    const char *name;      /* HCCL API, e.g. "HcclAllReduce" */
    const char *algorithm; /* plan name, e.g. "ring" */
    const char *comm;      /* communicator name */
    const char *dtype;     /* e.g. "fp32" */
    const char *redop;     /* e.g. "sum"; NULL when the op does not reduce */
    uint64_t count;        /* elements, as the API call counts them */
    uint64_t bytes;        /* count x element size (p2p: bytes this rank sends) */
    uint64_t seq;          /* the communicator's op sequence number (0 for p2p) */
    uint32_t rank, nranks;
    int32_t root;          /* -1 when the op has no root */
} hal_trace_op;

typedef struct hal_trace_api {
    uint32_t abi_version;
    /* Nonzero while a session records. */
    const _Atomic uint32_t *active;
    /* Records op, launched on stream s by this thread; the tasks this thread enqueues until
     * op_end belong to it. Returns the op's id (0: not recorded). */
    uint32_t (*op_begin)(const hal_trace_op *op, hal_stream *s);
    /* The tasks this thread enqueues next are step `index` of plan stream `stream` of op `op`:
     * `kind` (COPY, WAIT, ...; copied, at most 11 characters) with peer `peer` (-1: none). */
    void (*step)(uint32_t op, const char *kind, int32_t peer, uint32_t stream, uint32_t index);
    void (*op_end)(void);
    /* Starts a session writing to folder dir: devices in device_mask (bit d = device d), `what`
     * from HAL_TRACE_*. While one runs, the call extends it to these devices and switches (dir
     * stays). HAL_E_SYSCALL if dir cannot be created. */
    hal_result (*start)(const char *dir, uint64_t device_mask, uint32_t what);
    /* Stops the running session and writes its file; its path into path (may be NULL). */
    hal_result (*stop)(char *path, size_t len);
    /* 1 while HCCL_TRACE drives the recorder (aclprof* then refuse, as CANN's API refuses while
     * the command line profiles). */
    int (*env_mode)(void);
} hal_trace_api;

#endif
