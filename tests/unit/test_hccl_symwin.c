/* Symmetric windows (HcclCommSymWinRegister / SymWinGet / SymWinDeregister) and torch_npu's
 * HcclCommRegister / HcclCommDeregister / HcclCommExchangeMem on a one-rank communicator: success
 * paths, the hcclSymWinMaxMemSizePerRank limit from the config, each misuse's code, and that a
 * communicator's windows and registrations go with HcclCommDestroy. */
#include <criterion/criterion.h>
#include <string.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

static HcclComm comm;
static char *buf; /* 1 MiB of device memory */

static void open_comm(uint64_t max_gb)
{
    HcclRootInfo root;
    cr_assert_eq(HcclGetRootInfo(&root), HCCL_SUCCESS);
    HcclCommConfig cfg;
    HcclCommConfigInit(&cfg);
    cfg.hcclSymWinMaxMemSizePerRank = max_gb;
    cr_assert_eq(HcclCommInitRootInfoConfig(1, &root, 0, &cfg, &comm), HCCL_SUCCESS);
}

static void setup(void)
{
    cr_assert_eq(aclInit(NULL), ACL_SUCCESS);
    cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
    cr_assert_eq(aclrtMalloc((void **)&buf, 1 << 20, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    open_comm(1);
}

static void teardown(void)
{
    if (comm)
        HcclCommDestroy(comm);
    aclrtFree(buf);
    aclrtResetDevice(0);
    aclFinalize();
}

TestSuite(hccl_symwin, .init = setup, .fini = teardown);

Test(hccl_symwin, register_get_deregister)
{
    HcclCommSymWindow win = NULL, got = NULL;
    size_t off = 1;
    cr_assert_eq(HcclCommSymWinRegister(comm, buf, 1 << 20, &win, 1), HCCL_SUCCESS);
    cr_assert_not_null(win);
    cr_expect_eq(HcclCommSymWinGet(comm, buf + 4096, 512, &got, &off), HCCL_SUCCESS);
    cr_expect_eq(got, win);
    cr_expect_eq(off, 4096);
    cr_expect_eq(HcclCommSymWinGet(comm, buf, 1 << 20, &got, &off), HCCL_SUCCESS, "the whole window");
    cr_expect_eq(off, 0);
    cr_expect_eq(HcclCommSymWinDeregister(win), HCCL_SUCCESS);
    cr_expect_eq(HcclCommSymWinGet(comm, buf, 1, &got, &off), HCCL_E_PARA, "gone after deregister");
}

Test(hccl_symwin, misuse_codes)
{
    HcclCommSymWindow win = NULL, got = NULL;
    size_t off;
    int host[16];
    cr_expect_eq(HcclCommSymWinRegister(comm, NULL, 64, &win, 1), HCCL_E_PTR);
    cr_expect_eq(HcclCommSymWinRegister(comm, buf, 64, NULL, 1), HCCL_E_PTR);
    cr_expect_eq(HcclCommSymWinRegister(comm, buf, 0, &win, 1), HCCL_E_PARA, "size 0");
    cr_expect_eq(HcclCommSymWinRegister(comm, buf, 64, &win, 0), HCCL_E_PARA, "flag must be 1");
    cr_expect_eq(HcclCommSymWinRegister(comm, buf, (1ull << 30) + 1, &win, 1), HCCL_E_PARA,
                 "above hcclSymWinMaxMemSizePerRank = 1 GB");
    cr_expect_eq(HcclCommSymWinRegister(comm, host, sizeof host, &win, 1), HCCL_E_PARA, "host memory");
    cr_expect_eq(HcclCommSymWinRegister(comm, buf, 2 << 20, &win, 1), HCCL_E_PARA, "past the allocation");
    cr_assert_eq(HcclCommSymWinRegister(comm, buf, 4096, &win, 1), HCCL_SUCCESS);
    HcclCommSymWindow w2 = NULL;
    cr_expect_eq(HcclCommSymWinRegister(comm, buf + 2048, 4096, &w2, 1), HCCL_E_PARA, "overlapping window");
    cr_expect_eq(HcclCommSymWinGet(comm, buf + 4000, 200, &got, &off), HCCL_E_PARA, "runs past the window");
    cr_expect_eq(HcclCommSymWinGet(comm, buf, 0, &got, &off), HCCL_E_PARA, "size 0");
    cr_expect_eq(HcclCommSymWinGet(comm, buf, 8, NULL, &off), HCCL_E_PTR);
    cr_expect_eq(HcclCommSymWinDeregister(win), HCCL_SUCCESS);
    cr_expect_eq(HcclCommSymWinDeregister(win), HCCL_E_PARA, "double deregister");
    cr_expect_eq(HcclCommSymWinDeregister(NULL), HCCL_E_PTR);
    cr_expect_eq(HcclCommSymWinDeregister((HcclCommSymWindow)host), HCCL_E_PARA, "made-up handle");
}

Test(hccl_symwin, destroy_drops_windows_and_registrations)
{
    HcclCommSymWindow win = NULL;
    void *reg = NULL;
    cr_assert_eq(HcclCommSymWinRegister(comm, buf, 4096, &win, 1), HCCL_SUCCESS);
    cr_assert_eq(HcclCommRegister(comm, buf, 4096, &reg, 0), HCCL_SUCCESS);
    cr_assert_eq(HcclCommDestroy(comm), HCCL_SUCCESS);
    cr_expect_eq(HcclCommSymWinDeregister(win), HCCL_E_PARA, "the window went with its communicator");
    open_comm(2);
    cr_expect_eq(HcclCommDeregister(comm, reg), HCCL_E_PARA, "the registration went with its communicator");
    cr_expect_eq(HcclCommSymWinRegister(comm, buf, 4096, &win, 1), HCCL_SUCCESS, "the memory is free again");
}

Test(hccl_symwin, register_exchange_deregister)
{
    void *h = NULL, *h2 = NULL;
    uint32_t peers[1] = {0}, bad[1] = {1};
    int host[16];
    cr_assert_eq(HcclCommRegister(comm, buf, 1 << 20, &h, 0), HCCL_SUCCESS);
    cr_assert_not_null(h);
    cr_expect_eq(HcclCommExchangeMem(comm, h, peers, 1), HCCL_SUCCESS);
    cr_expect_eq(HcclCommExchangeMem(comm, h, NULL, 0), HCCL_SUCCESS, "no peers");
    cr_expect_eq(HcclCommExchangeMem(comm, h, bad, 1), HCCL_E_PARA, "rank 1 of a one-rank communicator");
    cr_expect_eq(HcclCommExchangeMem(comm, h, NULL, 1), HCCL_E_PTR);
    cr_expect_eq(HcclCommExchangeMem(comm, host, peers, 1), HCCL_E_PARA, "not a registration");
    cr_expect_eq(HcclCommRegister(comm, host, sizeof host, &h2, 0), HCCL_E_PARA, "host memory");
    cr_expect_eq(HcclCommRegister(comm, buf, 0, &h2, 0), HCCL_E_PARA, "size 0");
    cr_expect_eq(HcclCommRegister(comm, buf, 64, NULL, 0), HCCL_E_PTR);
    cr_expect_eq(HcclCommDeregister(comm, h), HCCL_SUCCESS);
    cr_expect_eq(HcclCommDeregister(comm, h), HCCL_E_PARA, "double deregister");
    cr_expect_eq(HcclCommExchangeMem(comm, h, peers, 1), HCCL_E_PARA, "deregistered");
    cr_expect_eq(HcclCommDeregister(comm, NULL), HCCL_E_PTR);
}
