/* HcclCommConfig: what HcclGetCommConfigCapability claims and what each claimed field does, on a
 * one-rank communicator (the fields that change multi-rank behaviour - buffer size, algorithm,
 * execution timeout, determinism - are in test_coll_config and test_coll_determinism). The table
 * of fields is in docs/runtime.md. */
#include <criterion/criterion.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#include "common/acl_fixture.h"
#include "runtime/rt_internal.h"

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

/* ---- config version 11 and older callers ---------------------------------------------------- */

/* CANN's version-11 layout: hcclChannelSqDepth right after hcclSymWinMaxMemSizePerRank. */
Test(comm_config, version_11_layout)
{
    cr_expect_eq(sizeof(HcclCommConfig), 2248);
    cr_expect_eq(offsetof(HcclCommConfig, hcclSymWinMaxMemSizePerRank), 2232);
    cr_expect_eq(offsetof(HcclCommConfig, hcclChannelSqDepth), 2240);
    HcclCommConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    HcclCommConfigInit(&cfg);
    size_t size;
    uint32_t magic, version;
    memcpy(&size, cfg.reserved, sizeof size);
    memcpy(&magic, cfg.reserved + 8, sizeof magic);
    memcpy(&version, cfg.reserved + 12, sizeof version);
    cr_expect_eq(size, sizeof(HcclCommConfig));
    cr_expect_eq(magic, HCCL_COMM_CONFIG_MAGIC_WORD);
    cr_expect_eq(version, 11);
    cr_expect_eq(cfg.hcclChannelSqDepth, HCCL_COMM_SQ_DEPTH_CONFIG_NOT_SET);
}

static uint32_t sq_depth_of(HcclComm comm)
{
    rt_comm *c = rt_comm_check(comm);
    cr_assert_not_null(c);
    return c->sq_depth;
}

/* No send queues here: the value is checked (1-65536), rounded up to a power of two of at least
 * 16 as CANN does, and recorded; it changes nothing else. */
Test(comm_config, channel_sq_depth_is_validated_and_rounded)
{
    const uint32_t asked[] = {HCCL_COMM_SQ_DEPTH_CONFIG_NOT_SET, 1, 16, 100, 1024, 65536};
    const uint32_t kept[] = {HCCL_COMM_SQ_DEPTH_CONFIG_NOT_SET, 16, 16, 128, 1024, 65536};
    for (size_t i = 0; i < sizeof asked / sizeof asked[0]; i++) {
        HcclCommConfig cfg;
        HcclCommConfigInit(&cfg);
        cfg.hcclChannelSqDepth = asked[i];
        HcclComm comm = NULL;
        cr_assert_eq(init_one(&cfg, &comm), HCCL_SUCCESS, "hcclChannelSqDepth=%u", asked[i]);
        cr_expect_eq(sq_depth_of(comm), kept[i], "hcclChannelSqDepth=%u", asked[i]);
        expect_works(comm);
        cr_expect_eq(HcclCommDestroy(comm), HCCL_SUCCESS);
    }
    const uint32_t refused[] = {0, 65537, 0x80000000u};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        HcclCommConfig cfg;
        HcclCommConfigInit(&cfg);
        cfg.hcclChannelSqDepth = refused[i];
        HcclComm comm = NULL;
        cr_expect_eq(init_one(&cfg, &comm), HCCL_E_PARA, "hcclChannelSqDepth=%u", refused[i]);
    }
}

/* A caller built against an older header: its struct is `size` bytes (allocated exactly, so a
 * read past it is caught under ASan) with its version in the header. */
static HcclCommConfig *old_config(size_t size, uint32_t version)
{
    HcclCommConfig full;
    HcclCommConfigInit(&full);
    HcclCommConfig *cfg = malloc(size);
    cr_assert_not_null(cfg);
    memcpy(cfg, &full, size);
    memcpy(cfg->reserved, &size, sizeof size);
    memcpy(cfg->reserved + 12, &version, sizeof version);
    return cfg;
}

Test(comm_config, version_10_caller_is_read_up_to_its_size)
{
    size_t v10_size = offsetof(HcclCommConfig, hcclChannelSqDepth); /* 2240 */
    HcclCommConfig *cfg = old_config(v10_size, 10);
    snprintf(cfg->hcclCommName, sizeof cfg->hcclCommName, "config_v10");
    cfg->hcclQos = 3;
    HcclComm comm = NULL;
    cr_assert_eq(init_one(cfg, &comm), HCCL_SUCCESS);
    char name[COMM_NAME_MAX_LENGTH] = "";
    cr_expect_eq(HcclGetCommName(comm, name), HCCL_SUCCESS);
    cr_expect_str_eq(name, "config_v10");
    cr_expect_eq(sq_depth_of(comm), HCCL_COMM_SQ_DEPTH_CONFIG_NOT_SET);
    expect_works(comm);
    cr_expect_eq(HcclCommDestroy(comm), HCCL_SUCCESS);
    free(cfg);
}

/* A version-10 header with a version-11 size: the bytes where hcclChannelSqDepth would be are
 * not a setting (0 would be refused if they were read). */
Test(comm_config, field_newer_than_callers_version_is_ignored)
{
    HcclCommConfig *cfg = old_config(sizeof(HcclCommConfig), 10);
    cfg->hcclChannelSqDepth = 0;
    HcclComm comm = NULL;
    cr_assert_eq(init_one(cfg, &comm), HCCL_SUCCESS);
    cr_expect_eq(sq_depth_of(comm), HCCL_COMM_SQ_DEPTH_CONFIG_NOT_SET);
    cr_expect_eq(HcclCommDestroy(comm), HCCL_SUCCESS);
    free(cfg);
}

/* An older caller whose struct ended at hcclExecTimeOut (before hcclAlgo was added): what it
 * holds is honoured, everything after keeps its default. */
Test(comm_config, older_caller_without_algo_keeps_defaults)
{
    unsetenv("HCCL_ALGO");
    HcclCommConfig *cfg = old_config(offsetof(HcclCommConfig, hcclAlgo), 6);
    snprintf(cfg->hcclCommName, sizeof cfg->hcclCommName, "config_old");
    cfg->hcclOpExpansionMode = 3;
    HcclComm comm = NULL;
    cr_assert_eq(init_one(cfg, &comm), HCCL_SUCCESS);
    char name[COMM_NAME_MAX_LENGTH] = "";
    cr_expect_eq(HcclGetCommName(comm, name), HCCL_SUCCESS);
    cr_expect_str_eq(name, "config_old");
    HcclConfigTypeOpExpansionMode mode = HCCL_OP_EXPANSION_MODE_INVALID;
    cr_expect_eq(HcclConfigGetInfo(comm, HCCL_CONFIG_TYPE_OP_EXPANSION_MODE, sizeof mode, &mode), HCCL_SUCCESS);
    cr_expect_eq(mode, HCCL_OP_EXPANSION_MODE_AIV);
    char algo[HCCL_COMM_ALGO_MAX_LENGTH];
    cr_expect_eq(HcclConfigGetInfo(comm, HCCL_CONFIG_TYPE_HCCL_ALGO, sizeof algo, algo), HCCL_SUCCESS);
    cr_expect_str_eq(algo, "");
    cr_expect_eq(sq_depth_of(comm), HCCL_COMM_SQ_DEPTH_CONFIG_NOT_SET);
    expect_works(comm);
    cr_expect_eq(HcclCommDestroy(comm), HCCL_SUCCESS);
    free(cfg);
}
