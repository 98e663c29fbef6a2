/*
 * OpenHCCL -- ACL base header.
 *
 * Like CANN's acl_base.h this pulls in the base types / aclError values
 * (acl_base_rt.h) and the runtime error codes (error_codes/rt_error_codes.h).
 */
#ifndef OPENHCCL_ACL_ACL_BASE_H
#define OPENHCCL_ACL_ACL_BASE_H

#include "acl_base_rt.h"
#include "error_codes/rt_error_codes.h"

#endif /* OPENHCCL_ACL_ACL_BASE_H */
