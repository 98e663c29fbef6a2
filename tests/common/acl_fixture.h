/* The ACL suites' fixture: an initialised runtime with device 0 set on the test's thread. */
#ifndef ACL_FIXTURE_H
#define ACL_FIXTURE_H

#include <acl/acl.h>
#include <criterion/criterion.h>

static inline void acl_fixture_setup(void)
{
    cr_assert_eq(aclInit(NULL), ACL_SUCCESS);
    cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
}

static inline void acl_fixture_teardown(void)
{
    aclrtResetDevice(0);
    aclFinalize();
}

#endif
