/* Setup and device-buffer helpers for the rank programs. */
#include "prog_common.h"

#include <string.h>
#include <sys/mman.h>
#include <time.h>

void prog_init(prog_env *e)
{
    prog_init_config(e, NULL);
}

void prog_init_config(prog_env *e, const HcclCommConfig *config)
{
    memset(e, 0, sizeof *e);
    uint32_t local_n;
    HCCL_OK(HcclExtGetLaunchEnv(&e->rank, &e->n, &e->local_rank, &local_n));
    ACL_OK(aclInit(NULL));
    ACL_OK(aclrtSetDevice((int32_t)e->local_rank));
    ACL_OK(aclrtCreateStream(&e->stream));
    HcclRootInfo root;
    HCCL_OK(HcclExtShareRootInfo(e->rank, &root));
    if (config)
        HCCL_OK(HcclCommInitRootInfoConfig(e->n, &root, e->rank, config, &e->comm));
    else
        HCCL_OK(HcclCommInitRootInfo(e->n, &root, e->rank, &e->comm));
}

void prog_fini(prog_env *e)
{
    if (e->comm)
        HCCL_OK(HcclCommDestroy(e->comm));
    ACL_OK(aclrtDestroyStream(e->stream));
    ACL_OK(aclrtResetDevice((int32_t)e->local_rank));
    ACL_OK(aclFinalize());
}

bool prog_saw_failure(prog_env *e, HcclResult enq, const char *what)
{
    aclError se = aclrtSynchronizeStream(e->stream);
    HcclResult async = HCCL_SUCCESS;
    HcclResult ar = HcclGetCommAsyncError(e->comm, &async);
    char msg[1024] = "";
    HcclExtGetCommErrorMessage(e->comm, msg, sizeof msg);
    printf("rank %u: %s: enqueue=%d synchronize=%d asyncError=%d: %s\n", e->rank, what, (int)enq, (int)se,
           (int)async, msg[0] ? msg : "(no error message)");
    return (enq != HCCL_SUCCESS || se != ACL_SUCCESS) && ar == HCCL_SUCCESS && async != HCCL_SUCCESS;
}

double prog_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Host buffers of the large cases (tens of MB, one set per case) are backed by huge pages: with
 * 4 KiB pages, faulting each fresh buffer in took ~40% of an 8-rank coll_check on a VM. */
#define XMALLOC_HUGE (2u << 20)

void *xmalloc(size_t bytes)
{
    void *p;
    if (bytes >= 4 * (size_t)XMALLOC_HUGE) {
        p = aligned_alloc(XMALLOC_HUGE, (bytes + XMALLOC_HUGE - 1) / XMALLOC_HUGE * XMALLOC_HUGE);
        if (p)
            (void)madvise(p, bytes / XMALLOC_HUGE * XMALLOC_HUGE, MADV_HUGEPAGE); /* advice only */
    } else {
        p = malloc(bytes ? bytes : 1);
    }
    if (!p) {
        fprintf(stderr, "out of host memory (%zu bytes)\n", bytes);
        exit(2);
    }
    return p;
}

void *dev_alloc(size_t bytes)
{
    void *p = NULL;
    ACL_OK(aclrtMalloc(&p, bytes ? bytes : 1, ACL_MEM_MALLOC_HUGE_FIRST));
    return p;
}

void dev_free(void *p)
{
    if (p)
        ACL_OK(aclrtFree(p));
}

void to_dev(void *dev, const void *host, size_t bytes)
{
    if (bytes)
        ACL_OK(aclrtMemcpy(dev, bytes, host, bytes, ACL_MEMCPY_HOST_TO_DEVICE));
}

void to_host(void *host, const void *dev, size_t bytes)
{
    if (bytes)
        ACL_OK(aclrtMemcpy(host, bytes, dev, bytes, ACL_MEMCPY_DEVICE_TO_HOST));
}

/* ---- data types ---------------------------------------------------------------------------- */

const HcclDataType prog_all_dtypes[PROG_NDTYPES] = {
    HCCL_DATA_TYPE_INT8,    HCCL_DATA_TYPE_INT16,   HCCL_DATA_TYPE_INT32,   HCCL_DATA_TYPE_INT64,
    HCCL_DATA_TYPE_UINT8,   HCCL_DATA_TYPE_UINT16,  HCCL_DATA_TYPE_UINT32,  HCCL_DATA_TYPE_UINT64,
    HCCL_DATA_TYPE_FP16,    HCCL_DATA_TYPE_BFP16,   HCCL_DATA_TYPE_FP32,    HCCL_DATA_TYPE_FP64,
    HCCL_DATA_TYPE_INT128,  HCCL_DATA_TYPE_HIF8,    HCCL_DATA_TYPE_FP8E4M3, HCCL_DATA_TYPE_FP8E5M2,
    HCCL_DATA_TYPE_FP8E8M0,
};

static const struct {
    HcclDataType dt;
    size_t size;
    const char *name;
} dt_table[] = {
    {HCCL_DATA_TYPE_INT8, 1, "int8"},      {HCCL_DATA_TYPE_INT16, 2, "int16"},
    {HCCL_DATA_TYPE_INT32, 4, "int32"},    {HCCL_DATA_TYPE_INT64, 8, "int64"},
    {HCCL_DATA_TYPE_UINT8, 1, "uint8"},    {HCCL_DATA_TYPE_UINT16, 2, "uint16"},
    {HCCL_DATA_TYPE_UINT32, 4, "uint32"},  {HCCL_DATA_TYPE_UINT64, 8, "uint64"},
    {HCCL_DATA_TYPE_FP16, 2, "fp16"},      {HCCL_DATA_TYPE_BFP16, 2, "bf16"},
    {HCCL_DATA_TYPE_FP32, 4, "fp32"},      {HCCL_DATA_TYPE_FP64, 8, "fp64"},
    {HCCL_DATA_TYPE_INT128, 16, "int128"}, {HCCL_DATA_TYPE_HIF8, 1, "hif8"},
    {HCCL_DATA_TYPE_FP8E4M3, 1, "fp8e4m3"}, {HCCL_DATA_TYPE_FP8E5M2, 1, "fp8e5m2"},
    {HCCL_DATA_TYPE_FP8E8M0, 1, "fp8e8m0"},
};
#define DT_TABLE_N (sizeof dt_table / sizeof dt_table[0])

size_t dt_size(HcclDataType dt)
{
    for (size_t i = 0; i < DT_TABLE_N; i++)
        if (dt_table[i].dt == dt)
            return dt_table[i].size;
    return 0;
}

const char *dt_name(HcclDataType dt)
{
    for (size_t i = 0; i < DT_TABLE_N; i++)
        if (dt_table[i].dt == dt)
            return dt_table[i].name;
    return "?";
}

bool dt_parse(const char *s, HcclDataType *dt)
{
    for (size_t i = 0; i < DT_TABLE_N; i++)
        if (!strcmp(s, dt_table[i].name) || (!strcmp(s, "bfp16") && dt_table[i].dt == HCCL_DATA_TYPE_BFP16)) {
            *dt = dt_table[i].dt;
            return true;
        }
    return false;
}

bool dt_reducible(HcclDataType dt)
{
    return dt_size(dt) != 0 && dt != HCCL_DATA_TYPE_HIF8 && dt != HCCL_DATA_TYPE_FP8E4M3 &&
           dt != HCCL_DATA_TYPE_FP8E5M2 && dt != HCCL_DATA_TYPE_FP8E8M0;
}

static const char *const op_names[] = {"sum", "prod", "max", "min"};

const char *op_name(HcclReduceOp op)
{
    return (unsigned)op < 4 ? op_names[op] : "?";
}

bool op_parse(const char *s, HcclReduceOp *op)
{
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, op_names[i])) {
            *op = (HcclReduceOp)i;
            return true;
        }
    return false;
}
