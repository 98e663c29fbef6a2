/* Calls that act on a communicator after init: HcclCommRegCommStateCallback (observed around
 * HcclCommDestroy), HcclCommWorkingDevNicSet (validated and recorded: the emulator has no NICs)
 * and HcclConfigGetInfo (both config types). One process: a one-rank communicator, or two ranks
 * on two threads through HcclCommInitAll. Semantics: docs/runtime.md. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#include "common/acl_fixture.h"
#include "runtime/rt_internal.h"

TestSuite(comm_state, .init = acl_fixture_setup, .fini = acl_fixture_teardown);

static HcclComm init_one(const HcclCommConfig *cfg)
{
    HcclRootInfo root;
    HcclComm comm = NULL;
    cr_assert_eq(HcclGetRootInfo(&root), HCCL_SUCCESS);
    cr_assert_eq(HcclCommInitRootInfoConfig(1, &root, 0, cfg, &comm), HCCL_SUCCESS);
    return comm;
}

/* ---- state callbacks ------------------------------------------------------------------------ */

#define MAX_EVENTS 16
typedef struct {
    int n;
    HcclComm comm[MAX_EVENTS];
    HcclCommStatePhase phase[MAX_EVENTS];
    int tag[MAX_EVENTS];      /* which callback saw it */
    uint32_t rank[MAX_EVENTS]; /* HcclGetRankId at the call; UINT32_MAX if it failed */
} event_log;

static void log_event(event_log *log, int tag, HcclComm comm, HcclCommStatePhase phase)
{
    if (log->n >= MAX_EVENTS)
        return;
    uint32_t rank = UINT32_MAX;
    if (HcclGetRankId(comm, &rank) != HCCL_SUCCESS)
        rank = UINT32_MAX;
    log->comm[log->n] = comm;
    log->phase[log->n] = phase;
    log->tag[log->n] = tag;
    log->rank[log->n] = rank;
    log->n++;
}

static HcclResult cb_a(HcclComm comm, HcclCommStatePhase phase, void *args)
{
    log_event(args, 1, comm, phase);
    return HCCL_SUCCESS;
}

static HcclResult cb_b(HcclComm comm, HcclCommStatePhase phase, void *args)
{
    log_event(args, 2, comm, phase);
    return HCCL_E_INTERNAL; /* a failing callback does not stop the destroy */
}

Test(comm_state, callbacks_see_destroy_pre_and_post_in_order)
{
    event_log log = {0};
    cr_assert_eq(HcclCommRegCommStateCallback("test_a", cb_a, &log), HCCL_SUCCESS);
    cr_assert_eq(HcclCommRegCommStateCallback("test_b", cb_b, &log), HCCL_SUCCESS);
    HcclComm comm = init_one(NULL);
    cr_expect_eq(log.n, 0, "no phase before destroy (CANN defines none for init)");
    cr_expect_eq(HcclCommDestroy(comm), HCCL_SUCCESS);
    cr_assert_eq(log.n, 4);
    const int tags[4] = {1, 2, 1, 2};
    const HcclCommStatePhase phases[4] = {HCCL_COMM_STATE_PHASE_DESTROY_PRE, HCCL_COMM_STATE_PHASE_DESTROY_PRE,
                                          HCCL_COMM_STATE_PHASE_DESTROY_POST, HCCL_COMM_STATE_PHASE_DESTROY_POST};
    for (int i = 0; i < 4; i++) {
        cr_expect_eq(log.comm[i], comm, "event %d", i);
        cr_expect_eq(log.tag[i], tags[i], "event %d", i);
        cr_expect_eq(log.phase[i], phases[i], "event %d", i);
    }
    /* PRE: the communicator is still usable; POST: its handle is stale. */
    cr_expect_eq(log.rank[0], 0);
    cr_expect_eq(log.rank[2], UINT32_MAX);
    /* Removing both: a later destroy calls nothing. */
    cr_expect_eq(HcclCommRegCommStateCallback("test_a", NULL, NULL), HCCL_SUCCESS);
    cr_expect_eq(HcclCommRegCommStateCallback("test_b", NULL, NULL), HCCL_SUCCESS);
    comm = init_one(NULL);
    cr_expect_eq(HcclCommDestroy(comm), HCCL_SUCCESS);
    cr_expect_eq(log.n, 4);
}

Test(comm_state, callback_registered_again_is_replaced)
{
    event_log first = {0}, second = {0};
    cr_assert_eq(HcclCommRegCommStateCallback("test_again", cb_a, &first), HCCL_SUCCESS);
    cr_assert_eq(HcclCommRegCommStateCallback("test_again", cb_a, &second), HCCL_SUCCESS);
    HcclComm comm = init_one(NULL);
    cr_expect_eq(HcclCommDestroy(comm), HCCL_SUCCESS);
    cr_expect_eq(first.n, 0);
    cr_expect_eq(second.n, 2);
    cr_expect_eq(HcclCommRegCommStateCallback("test_again", NULL, NULL), HCCL_SUCCESS);
}

/* HcclCommResume is not supported here, so RESUME_PRE/POST never occur. */
Test(comm_state, resume_is_refused_without_phases)
{
    event_log log = {0};
    cr_assert_eq(HcclCommRegCommStateCallback("test_resume", cb_a, &log), HCCL_SUCCESS);
    HcclComm comm = init_one(NULL);
    cr_expect_eq(HcclCommResume(comm), HCCL_E_NOT_SUPPORT);
    cr_expect_eq(log.n, 0);
    cr_expect_eq(HcclCommRegCommStateCallback("test_resume", NULL, NULL), HCCL_SUCCESS);
    cr_expect_eq(HcclCommDestroy(comm), HCCL_SUCCESS);
}

Test(comm_state, callback_bad_arguments)
{
    char name[170];
    memset(name, 'x', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    cr_expect_eq(HcclCommRegCommStateCallback(NULL, cb_a, NULL), HCCL_E_PTR);
    cr_expect_eq(HcclCommRegCommStateCallback("", cb_a, NULL), HCCL_E_PARA);
    cr_expect_eq(HcclCommRegCommStateCallback(name, cb_a, NULL), HCCL_E_PARA, "161+ bytes");
    name[160] = '\0';
    cr_expect_eq(HcclCommRegCommStateCallback(name, cb_a, NULL), HCCL_SUCCESS, "160 bytes");
    cr_expect_eq(HcclCommRegCommStateCallback(name, NULL, NULL), HCCL_SUCCESS);
    cr_expect_eq(HcclCommRegCommStateCallback("never_registered", NULL, NULL), HCCL_E_NOT_FOUND);
}

/* ---- NIC selection -------------------------------------------------------------------------- */

static void init_two(HcclComm comms[2])
{
    int32_t devs[2] = {0, 1};
    cr_assert_eq(HcclCommInitAll(2, devs, comms), HCCL_SUCCESS);
}

static bool recorded_backup(HcclComm comm, uint32_t rank)
{
    rt_comm *c = rt_comm_check(comm);
    cr_assert_not_null(c);
    return c->nic_backup && c->nic_backup[rank];
}

Test(comm_state, nic_set_records_each_rank)
{
    HcclComm comms[2];
    init_two(comms);
    for (int i = 0; i < 2; i++) {
        uint32_t ranks[2] = {1, 0};
        bool backup[2] = {true, false};
        cr_expect_eq(HcclCommWorkingDevNicSet(comms[i], ranks, backup, 2), HCCL_SUCCESS);
        cr_expect(recorded_backup(comms[i], 1));
        cr_expect(!recorded_backup(comms[i], 0));
        /* A later call changes only the ranks it lists. */
        uint32_t one = 0;
        bool yes = true;
        cr_expect_eq(HcclCommWorkingDevNicSet(comms[i], &one, &yes, 1), HCCL_SUCCESS);
        cr_expect(recorded_backup(comms[i], 0));
        cr_expect(recorded_backup(comms[i], 1));
    }
    for (int i = 0; i < 2; i++)
        cr_expect_eq(HcclCommDestroy(comms[i]), HCCL_SUCCESS);
}

Test(comm_state, nic_set_bad_arguments_change_nothing)
{
    HcclComm comms[2];
    init_two(comms);
    uint32_t ranks[3] = {0, 1, 1};
    bool backup[3] = {true, true, true};
    cr_expect_eq(HcclCommWorkingDevNicSet(NULL, ranks, backup, 1), HCCL_E_PTR);
    cr_expect_eq(HcclCommWorkingDevNicSet(comms[0], NULL, backup, 1), HCCL_E_PTR);
    cr_expect_eq(HcclCommWorkingDevNicSet(comms[0], ranks, NULL, 1), HCCL_E_PTR);
    cr_expect_eq(HcclCommWorkingDevNicSet(comms[0], ranks, backup, 0), HCCL_E_PARA, "nRanks 0");
    cr_expect_eq(HcclCommWorkingDevNicSet(comms[0], ranks, backup, 3), HCCL_E_PARA, "nRanks > rank count");
    cr_expect_eq(HcclCommWorkingDevNicSet(comms[0], &ranks[1], backup, 2), HCCL_E_PARA, "rank 1 twice");
    uint32_t outside[2] = {0, 2};
    cr_expect_eq(HcclCommWorkingDevNicSet(comms[0], outside, backup, 2), HCCL_E_PARA, "rank 2 of 2");
    cr_expect(!recorded_backup(comms[0], 0), "a refused call records nothing");
    for (int i = 0; i < 2; i++)
        cr_expect_eq(HcclCommDestroy(comms[i]), HCCL_SUCCESS);
    cr_expect_eq(HcclCommWorkingDevNicSet(comms[0], ranks, backup, 1), HCCL_E_PARA, "destroyed comm");
}

/* ---- HcclConfigGetInfo ---------------------------------------------------------------------- */

Test(comm_state, config_get_info_op_expansion_mode)
{
    /* Config numbering -> HcclOpExpansionMode numbering; 0 (default) is what runs here: HOST. */
    const HcclOpExpansionMode expect[7] = {
        HCCL_OP_EXPANSION_MODE_HOST, HCCL_OP_EXPANSION_MODE_HOST,   HCCL_OP_EXPANSION_MODE_AI_CPU,
        HCCL_OP_EXPANSION_MODE_AIV,  HCCL_OP_EXPANSION_AIV_ONLY,    HCCL_OP_EXPANSION_MODE_CCU_MS,
        HCCL_OP_EXPANSION_MODE_CCU_SCHED,
    };
    for (uint32_t mode = 0; mode <= 6; mode++) {
        HcclCommConfig cfg;
        HcclCommConfigInit(&cfg);
        cfg.hcclOpExpansionMode = mode;
        HcclComm comm = init_one(&cfg);
        HcclConfigTypeOpExpansionMode got = HCCL_OP_EXPANSION_MODE_INVALID;
        cr_expect_eq(HcclConfigGetInfo(comm, HCCL_CONFIG_TYPE_OP_EXPANSION_MODE, sizeof got, &got), HCCL_SUCCESS);
        cr_expect_eq(got, expect[mode], "hcclOpExpansionMode=%u -> %d", mode, (int)got);
        cr_expect_eq(HcclCommDestroy(comm), HCCL_SUCCESS);
    }
}

Test(comm_state, config_get_info_algo)
{
    unsetenv("HCCL_ALGO");
    char algo[HCCL_COMM_ALGO_MAX_LENGTH];
    HcclComm comm = init_one(NULL);
    memset(algo, 'x', sizeof algo);
    cr_expect_eq(HcclConfigGetInfo(comm, HCCL_CONFIG_TYPE_HCCL_ALGO, sizeof algo, algo), HCCL_SUCCESS);
    cr_expect_str_eq(algo, "", "no hcclAlgo, no HCCL_ALGO: chosen per call");
    cr_expect_eq(HcclCommDestroy(comm), HCCL_SUCCESS);

    HcclCommConfig cfg;
    HcclCommConfigInit(&cfg);
    snprintf(cfg.hcclAlgo, sizeof cfg.hcclAlgo, "level0:NA;level1:ring");
    comm = init_one(&cfg);
    cr_expect_eq(HcclConfigGetInfo(comm, HCCL_CONFIG_TYPE_HCCL_ALGO, sizeof algo, algo), HCCL_SUCCESS);
    cr_expect_str_eq(algo, "level0:NA;level1:ring");
    cr_expect_eq(HcclCommDestroy(comm), HCCL_SUCCESS);

    setenv("HCCL_ALGO", "level0:NA;level1:H-D_R", 1);
    comm = init_one(NULL);
    unsetenv("HCCL_ALGO");
    cr_expect_eq(HcclConfigGetInfo(comm, HCCL_CONFIG_TYPE_HCCL_ALGO, sizeof algo, algo), HCCL_SUCCESS);
    cr_expect_str_eq(algo, "level0:NA;level1:H-D_R", "the env var when the config has none");
    cr_expect_eq(HcclCommDestroy(comm), HCCL_SUCCESS);
}

Test(comm_state, config_get_info_bad_arguments)
{
    HcclComm comm = init_one(NULL);
    HcclConfigTypeOpExpansionMode mode;
    char algo[HCCL_COMM_ALGO_MAX_LENGTH];
    cr_expect_eq(HcclConfigGetInfo(NULL, HCCL_CONFIG_TYPE_OP_EXPANSION_MODE, sizeof mode, &mode), HCCL_E_PTR);
    cr_expect_eq(HcclConfigGetInfo(comm, HCCL_CONFIG_TYPE_OP_EXPANSION_MODE, sizeof mode, NULL), HCCL_E_PTR);
    cr_expect_eq(HcclConfigGetInfo(comm, HCCL_CONFIG_TYPE_OP_EXPANSION_MODE, sizeof mode + 1, &mode), HCCL_E_PARA);
    cr_expect_eq(HcclConfigGetInfo(comm, HCCL_CONFIG_TYPE_OP_EXPANSION_MODE, 2, &mode), HCCL_E_PARA);
    cr_expect_eq(HcclConfigGetInfo(comm, HCCL_CONFIG_TYPE_HCCL_ALGO, sizeof algo - 1, algo), HCCL_E_PARA);
    cr_expect_eq(HcclConfigGetInfo(comm, HCCL_CONFIG_TYPE_INVALID, sizeof mode, &mode), HCCL_E_PARA);
    cr_expect_eq(HcclConfigGetInfo(comm, (HcclConfigType)2, sizeof(uint32_t), &mode), HCCL_E_NOT_SUPPORT);
    cr_expect_eq(HcclCommDestroy(comm), HCCL_SUCCESS);
    cr_expect_eq(HcclConfigGetInfo(comm, HCCL_CONFIG_TYPE_OP_EXPANSION_MODE, sizeof mode, &mode), HCCL_E_PARA,
                 "destroyed comm");
}
