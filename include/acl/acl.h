/*
 * OpenHCCL -- umbrella ACL header (the emulator implements the runtime part
 * only; CANN's acl.h also pulls in operator/model headers we do not provide).
 */
#ifndef OPENHCCL_ACL_ACL_H
#define OPENHCCL_ACL_ACL_H

#include "acl_base.h"
#include "acl_rt.h"

#endif /* OPENHCCL_ACL_ACL_H */
