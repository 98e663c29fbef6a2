/* HcclCommConfig: what HcclGetCommConfigCapability claims and what each claimed field does, on a
 * one-rank communicator (the fields that change multi-rank behaviour - buffer size, algorithm,
 * execution timeout, determinism - are in test_coll_config and test_coll_determinism). The table
 * of fields is in docs/runtime.md. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#include "common/acl_fixture.h"

TestSuite(comm_config, .init = acl_fixture_setup, .fini = acl_fixture_teardown);

static HcclResult init_one(const HcclCommConfig *cfg, HcclComm *comm)
{
    HcclRootInfo root;
    HcclResult rc = HcclGetRootInfo(&root);
    if (rc != HCCL_SUCCESS)
        return rc;
    return HcclCommInitRootInfoConfig(1, &root, 0, cfg, comm);
}

/* The communicator works: a one-element AllReduce out of place copies. */
static void expect_works(HcclComm comm)
{
    aclrtStream s;
    cr_assert_eq(aclrtCreateStream(&s), ACL_SUCCESS);
    void *in, *out;
    float v = 42.5f, got = 0;
    cr_assert_eq(aclrtMalloc(&in, 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    cr_assert_eq(aclrtMalloc(&out, 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpy(in, 4, &v, 4, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    cr_expect_eq(HcclAllReduce(in, out, 1, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, s), HCCL_SUCCESS);
    cr_expect_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpy(&got, 4, out, 4, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    cr_expect_eq(got, v);
    aclrtFree(in);
    aclrtFree(out);
    aclrtDestroyStream(s);
}

/* Callers test "cap < HcclGetCommConfigCapability()": everything up to RETRY is claimed (each is
 * honoured or a documented no-op), hcclBufferName (shared CCL buffers) is not. */
Test(comm_config, capability_claims_exactly_what_is_defined)
{
    uint32_t cap = HcclGetCommConfigCapability();
    cr_expect_eq(cap, (uint32_t)HCCL_COMM_CONFIG_BUFFER_NAME);
    cr_expect(HCCL_COMM_CONFIG_RETRY < cap);
    cr_expect(HCCL_COMM_CONFIG_ALGO < cap);
    cr_expect(!(HCCL_COMM_CONFIG_BUFFER_NAME < cap));
}

Test(comm_config, comm_name_is_honoured)
{
    HcclCommConfig cfg;
    HcclCommConfigInit(&cfg);
    snprintf(cfg.hcclCommName, sizeof cfg.hcclCommName, "config_test_comm");
    HcclComm comm = NULL, found = NULL;
    cr_assert_eq(init_one(&cfg, &comm), HCCL_SUCCESS);
    char name[COMM_NAME_MAX_LENGTH] = "";
    cr_expect_eq(HcclGetCommName(comm, name), HCCL_SUCCESS);
    cr_expect_str_eq(name, "config_test_comm");
    cr_expect_eq(HcclCommGetHandleWithName("config_test_comm", &found), HCCL_SUCCESS);
    cr_expect_eq(found, comm);
    cr_expect_eq(HcclCommDestroy(comm), HCCL_SUCCESS);
}

/* Fields with nothing to configure on the emulator are accepted in their documented ranges and
 * change nothing: op expansion mode (one executor), world rank id and job id (informational),
 * ACL graph zero copy (plans always bind the user's buffers), retry (no link to retry over). */
Test(comm_config, noop_fields_are_accepted)
{
    for (uint32_t mode = 0; mode <= 6; mode++) {
        HcclCommConfig cfg;
        HcclCommConfigInit(&cfg);
        cfg.hcclOpExpansionMode = mode;
        cfg.hcclWorldRankID = 17;
        cfg.hcclJobID = 0x1234567890ull;
        cfg.aclGraphZeroCopyEnable = (uint8_t)(mode & 1);
        snprintf(cfg.hcclRetryEnable, sizeof cfg.hcclRetryEnable, "L0:0, L1:1, L2:1");
        snprintf(cfg.hcclRetryParams, sizeof cfg.hcclRetryParams, "MaxCnt:3, HoldTime:5000, IntervalTime:1000");
        HcclComm comm = NULL;
        cr_assert_eq(init_one(&cfg, &comm), HCCL_SUCCESS, "hcclOpExpansionMode=%u", mode);
        expect_works(comm);
        cr_expect_eq(HcclCommDestroy(comm), HCCL_SUCCESS);
    }
}

Test(comm_config, out_of_range_values_are_refused)
{
    HcclCommConfig cfg;
    HcclComm comm = NULL;
    HcclCommConfigInit(&cfg);
    cfg.hcclOpExpansionMode = 7;
    cr_expect_eq(init_one(&cfg, &comm), HCCL_E_PARA, "hcclOpExpansionMode=7");
    HcclCommConfigInit(&cfg);
    cfg.aclGraphZeroCopyEnable = 2;
    cr_expect_eq(init_one(&cfg, &comm), HCCL_E_PARA, "aclGraphZeroCopyEnable=2");
    HcclCommConfigInit(&cfg);
    cfg.hcclDeterministic = 3;
    cr_expect_eq(init_one(&cfg, &comm), HCCL_E_PARA, "hcclDeterministic=3");
    HcclCommConfigInit(&cfg);
    cfg.hcclBufferSize = 0;
    cr_expect_eq(init_one(&cfg, &comm), HCCL_E_PARA, "hcclBufferSize=0");
}

Test(comm_config, set_config_deterministic_round_trips)
{
    HcclConfigValue v = {.value = 1}, got = {.value = -1};
    cr_expect_eq(HcclSetConfig(HCCL_DETERMINISTIC, v), HCCL_SUCCESS);
    cr_expect_eq(HcclGetConfig(HCCL_DETERMINISTIC, &got), HCCL_SUCCESS);
    cr_expect_eq(got.value, 1);
    v.value = 3;
    cr_expect_eq(HcclSetConfig(HCCL_DETERMINISTIC, v), HCCL_E_PARA);
    v.value = 0;
    cr_expect_eq(HcclSetConfig(HCCL_DETERMINISTIC, v), HCCL_SUCCESS);
}
