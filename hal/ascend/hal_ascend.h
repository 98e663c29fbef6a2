/* hal/ascend's entry points (libhccl): the backend over CANN's public ACL runtime. */
#ifndef HAL_ASCEND_H
#define HAL_ASCEND_H

#include "hal/hal.h"

/* Binds the ACL calls (once) and returns the table, or NULL: hal_ascend_error() then says which
 * call the libascendcl.so in use lacks (or why it could not be loaded). */
const hal_ops *hal_ascend_get(void);
const char *hal_ascend_error(void);
/* The IPC calls the bound libascendcl.so lacks ("a, b"), NULL when it has them all. */
const char *hal_ascend_ipc_missing(void);

#endif
