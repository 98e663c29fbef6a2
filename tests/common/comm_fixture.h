/* Ranks as threads of one process: aclInit, then one communicator over devices 0..n-1
 * (HcclCommInitAll), comms[i] for device i. */
#ifndef COMM_FIXTURE_H
#define COMM_FIXTURE_H

#include <acl/acl.h>
#include <criterion/criterion.h>
#include <hccl/hccl.h>

#define COMM_FIXTURE_MAX 16

static inline void comm_fixture_init_all(uint32_t n, HcclComm *comms)
{
    int32_t devs[COMM_FIXTURE_MAX];
    cr_assert(n <= COMM_FIXTURE_MAX, "at most %d ranks", COMM_FIXTURE_MAX);
    for (uint32_t i = 0; i < n; i++)
        devs[i] = (int32_t)i;
    cr_assert_eq(aclInit(NULL), ACL_SUCCESS);
    cr_assert_eq(HcclCommInitAll(n, devs, comms), HCCL_SUCCESS);
}

#endif
