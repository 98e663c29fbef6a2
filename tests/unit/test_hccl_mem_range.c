/* HcclCommSetMemoryRange / UnsetMemoryRange / ActivateCommMemory / DeactivateCommMemory on a
 * one-rank communicator (HcclCommInitAll): a collective on activated VMM memory runs and is right,
 * memory in the range that is reserved but not activated is refused, and each misuse returns
 * CANN's code (HCCL_E_PARA; HCCL_E_PTR for NULL), including deactivate while a launch is in
 * flight (the stream held by a host function gate, no sleeps). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

typedef struct vmm {
    HcclComm comm;
    aclrtStream stream;
    size_t gran;
    char *va;       /* 3 granules reserved */
    aclrtDrvMemHandle chunk[2];
    int nchunks;
} vmm;

static vmm g;

static void setup(void)
{
    memset(&g, 0, sizeof g);
    cr_assert_eq(aclInit(NULL), ACL_SUCCESS);
    cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
    int32_t dev = 0;
    cr_assert_eq(HcclCommInitAll(1, &dev, &g.comm), HCCL_SUCCESS);
    cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
    cr_assert_eq(aclrtCreateStream(&g.stream), ACL_SUCCESS);
    aclrtPhysicalMemProp prop = {.handleType = ACL_MEM_HANDLE_TYPE_NONE, .allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED,
                                 .memAttr = ACL_HBM_MEM_HUGE, .location = {.id = 0, .type = ACL_MEM_LOCATION_TYPE_DEVICE}};
    cr_assert_eq(aclrtMemGetAllocationGranularity(&prop, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, &g.gran), ACL_SUCCESS);
    cr_assert_eq(aclrtReserveMemAddress((void **)&g.va, 3 * g.gran, 0, NULL, 0), ACL_SUCCESS);
    for (int i = 0; i < 2; i++) { /* granules 0 and 1 mapped; 2 stays reserved only */
        cr_assert_eq(aclrtMallocPhysical(&g.chunk[i], g.gran, &prop, 0), ACL_SUCCESS);
        cr_assert_eq(aclrtMapMem(g.va + i * g.gran, g.gran, 0, g.chunk[i], 0), ACL_SUCCESS);
    }
    g.nchunks = 2;
}

static void teardown(void)
{
    for (int i = 0; i < g.nchunks; i++) {
        aclrtUnmapMem(g.va + i * g.gran);
        aclrtFreePhysical(g.chunk[i]);
    }
    aclrtReleaseMemAddress(g.va);
    aclrtDestroyStream(g.stream);
    HcclCommDestroy(g.comm);
    aclrtResetDevice(0);
    aclFinalize();
}

TestSuite(hccl_mem_range, .init = setup, .fini = teardown);

static HcclResult allreduce(void *send, void *recv, uint64_t count)
{
    return HcclAllReduce(send, recv, count, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, g.comm, g.stream);
}

Test(hccl_mem_range, collective_on_activated_memory)
{
    cr_assert_eq(HcclCommSetMemoryRange(g.comm, g.va, 3 * g.gran, 0, 0), HCCL_SUCCESS);
    cr_assert_eq(HcclCommActivateCommMemory(g.comm, g.va, g.gran, 0, g.chunk[0], 0), HCCL_SUCCESS);
    cr_assert_eq(HcclCommActivateCommMemory(g.comm, g.va + g.gran, g.gran, 0, g.chunk[1], 0), HCCL_SUCCESS);
    /* send in the first activation, recv straddling both (adjacent activations are one buffer) */
    uint64_t count = 1024;
    float in[1024], out[1024];
    for (int i = 0; i < 1024; i++)
        in[i] = (float)(i % 97);
    char *send = g.va, *recv = g.va + g.gran - 2048;
    cr_assert_eq(aclrtMemcpy(send, sizeof in, in, sizeof in, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    cr_assert_eq(allreduce(send, recv, count), HCCL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeStream(g.stream), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpy(out, sizeof out, recv, sizeof out, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    cr_expect_eq(memcmp(in, out, sizeof in), 0, "one-rank allreduce on activated memory copies its input");
    cr_expect_eq(HcclCommDeactivateCommMemory(g.comm, g.va), HCCL_SUCCESS);
    cr_expect_eq(HcclCommDeactivateCommMemory(g.comm, g.va + g.gran), HCCL_SUCCESS);
    cr_expect_eq(HcclCommUnsetMemoryRange(g.comm, g.va), HCCL_SUCCESS);
}

Test(hccl_mem_range, unactivated_part_is_refused)
{
    cr_assert_eq(HcclCommSetMemoryRange(g.comm, g.va, 3 * g.gran, 0, 0), HCCL_SUCCESS);
    cr_assert_eq(HcclCommActivateCommMemory(g.comm, g.va, g.gran, 0, g.chunk[0], 0), HCCL_SUCCESS);
    cr_expect_eq(allreduce(g.va, g.va + 2 * g.gran, 16), HCCL_E_PARA, "recv in the reserved-only granule");
    cr_expect_eq(allreduce(g.va, g.va + g.gran, 16), HCCL_E_PARA, "recv in mapped but not activated memory");
    cr_expect_eq(allreduce(g.va + g.gran - 32, g.va, 16), HCCL_E_PARA, "send running past the activation");
    cr_expect_eq(allreduce(g.va, g.va + 4096, 16), HCCL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeStream(g.stream), ACL_SUCCESS);
    /* deactivated memory is refused again */
    cr_assert_eq(HcclCommDeactivateCommMemory(g.comm, g.va), HCCL_SUCCESS);
    cr_expect_eq(allreduce(g.va, g.va + 4096, 16), HCCL_E_PARA);
    cr_expect_eq(HcclCommUnsetMemoryRange(g.comm, g.va), HCCL_SUCCESS);
    /* once unset, the reservation is plain device address space again */
    cr_expect_eq(allreduce(g.va, g.va + 4096, 16), HCCL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeStream(g.stream), ACL_SUCCESS);
}

Test(hccl_mem_range, misuse_codes)
{
    cr_expect_eq(HcclCommSetMemoryRange(g.comm, NULL, g.gran, 0, 0), HCCL_E_PTR);
    cr_expect_eq(HcclCommSetMemoryRange(g.comm, g.va, 0, 0, 0), HCCL_E_PARA);
    cr_expect_eq(HcclCommSetMemoryRange(g.comm, g.va, g.gran, 4096, 0), HCCL_E_PARA, "alignment is reserved");
    cr_expect_eq(HcclCommSetMemoryRange(g.comm, g.va, g.gran, 0, 1), HCCL_E_PARA, "flags are reserved");
    int host;
    cr_expect_eq(HcclCommSetMemoryRange(g.comm, &host, g.gran, 0, 0), HCCL_E_PARA, "not device address space");
    cr_expect_eq(HcclCommSetMemoryRange(g.comm, g.va, 64 * g.gran, 0, 0), HCCL_E_PARA, "beyond the reservation");
    cr_expect_eq(HcclCommActivateCommMemory(g.comm, g.va, g.gran, 0, g.chunk[0], 0), HCCL_E_PARA, "no range set");
    cr_assert_eq(HcclCommSetMemoryRange(g.comm, g.va, 2 * g.gran, 0, 0), HCCL_SUCCESS);
    cr_expect_eq(HcclCommSetMemoryRange(g.comm, g.va + g.gran, g.gran, 0, 0), HCCL_E_PARA, "overlapping range");
    cr_expect_eq(HcclCommActivateCommMemory(g.comm, g.va, g.gran, 0, NULL, 0), HCCL_E_PTR);
    cr_expect_eq(HcclCommActivateCommMemory(g.comm, g.va, g.gran, 1, g.chunk[0], 0), HCCL_E_PARA, "offset reserved");
    cr_expect_eq(HcclCommActivateCommMemory(g.comm, g.va + g.gran, 2 * g.gran, 0, g.chunk[1], 0), HCCL_E_PARA,
                 "runs past the range");
    cr_assert_eq(HcclCommActivateCommMemory(g.comm, g.va, g.gran, 0, g.chunk[0], 0), HCCL_SUCCESS);
    cr_expect_eq(HcclCommActivateCommMemory(g.comm, g.va, g.gran, 0, g.chunk[0], 0), HCCL_E_PARA, "double activate");
    cr_expect_eq(HcclCommActivateCommMemory(g.comm, g.va + 4096, 4096, 0, g.chunk[0], 0), HCCL_E_PARA, "overlap");
    cr_expect_eq(HcclCommUnsetMemoryRange(g.comm, g.va), HCCL_E_PARA, "unset with active memory");
    cr_expect_eq(HcclCommUnsetMemoryRange(g.comm, g.va + g.gran), HCCL_E_PARA, "not a range base");
    cr_expect_eq(HcclCommDeactivateCommMemory(g.comm, g.va + 4096), HCCL_E_PARA, "not the activation's start");
    cr_expect_eq(HcclCommDeactivateCommMemory(g.comm, g.va + g.gran), HCCL_E_PARA, "not activated");
    cr_expect_eq(HcclCommDeactivateCommMemory(g.comm, NULL), HCCL_E_PTR);
    cr_expect_eq(HcclCommDeactivateCommMemory(g.comm, g.va), HCCL_SUCCESS);
    cr_expect_eq(HcclCommDeactivateCommMemory(g.comm, g.va), HCCL_E_PARA, "double deactivate");
    cr_expect_eq(HcclCommUnsetMemoryRange(g.comm, g.va), HCCL_SUCCESS);
    cr_expect_eq(HcclCommUnsetMemoryRange(g.comm, g.va), HCCL_E_PARA, "double unset");
    cr_expect_eq(HcclCommSetMemoryRange(NULL, g.va, g.gran, 0, 0), HCCL_E_PTR, "NULL communicator");
}

/* A gate the stream runs into: the host function blocks until released. */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int gate_open;

static void gate(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&gate_mu);
    while (!gate_open)
        pthread_cond_wait(&gate_cv, &gate_mu);
    pthread_mutex_unlock(&gate_mu);
}

Test(hccl_mem_range, deactivate_while_in_flight)
{
    cr_assert_eq(HcclCommSetMemoryRange(g.comm, g.va, 3 * g.gran, 0, 0), HCCL_SUCCESS);
    cr_assert_eq(HcclCommActivateCommMemory(g.comm, g.va, g.gran, 0, g.chunk[0], 0), HCCL_SUCCESS);
    gate_open = 0;
    cr_assert_eq(aclrtLaunchHostFunc(g.stream, gate, NULL), ACL_SUCCESS);
    cr_assert_eq(allreduce(g.va, g.va + 4096, 16), HCCL_SUCCESS);
    cr_expect_eq(HcclCommDeactivateCommMemory(g.comm, g.va), HCCL_E_PARA, "the allreduce has not run yet");
    pthread_mutex_lock(&gate_mu);
    gate_open = 1;
    pthread_cond_broadcast(&gate_cv);
    pthread_mutex_unlock(&gate_mu);
    cr_assert_eq(aclrtSynchronizeStream(g.stream), ACL_SUCCESS);
    cr_expect_eq(HcclCommDeactivateCommMemory(g.comm, g.va), HCCL_SUCCESS);
    cr_expect_eq(HcclCommUnsetMemoryRange(g.comm, g.va), HCCL_SUCCESS);
}

/* As CANN's address manager: a range lives while the process has a communicator on its device. */
Test(hccl_mem_range, ranges_go_with_the_last_communicator)
{
    int32_t dev = 0;
    HcclComm other = NULL;
    cr_assert_eq(HcclCommSetMemoryRange(g.comm, g.va, 3 * g.gran, 0, 0), HCCL_SUCCESS);
    cr_assert_eq(HcclCommInitAll(1, &dev, &other), HCCL_SUCCESS);
    cr_expect_eq(HcclCommActivateCommMemory(other, g.va, g.gran, 0, g.chunk[0], 0), HCCL_SUCCESS,
                 "a range set through one communicator serves the others");
    cr_assert_eq(HcclCommDestroy(other), HCCL_SUCCESS);
    cr_expect_eq(HcclCommDeactivateCommMemory(g.comm, g.va), HCCL_SUCCESS, "still there with g.comm alive");
    cr_assert_eq(HcclCommActivateCommMemory(g.comm, g.va, g.gran, 0, g.chunk[0], 0), HCCL_SUCCESS);
    cr_assert_eq(HcclCommDestroy(g.comm), HCCL_SUCCESS);
    cr_assert_eq(HcclCommInitAll(1, &dev, &g.comm), HCCL_SUCCESS);
    cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
    cr_expect_eq(HcclCommUnsetMemoryRange(g.comm, g.va), HCCL_E_PARA, "dropped with the last communicator");
    cr_expect_eq(allreduce(g.va + g.gran, g.va + 2 * g.gran, 16), HCCL_SUCCESS, "plain address space again");
    cr_assert_eq(aclrtSynchronizeStream(g.stream), ACL_SUCCESS);
}
