/* hccl_test_like (tests/progs): our reproduction of CANN's hccl_test call sequence on 2 and 4
 * ranks, every op, with host result checks; plus its zero-copy (-z 1: VMM ranges activated with
 * HcclCommActivateCommMemory, growing across the 2 MiB granularity) and symmetric-memory (-m 1)
 * paths. A run passes when hcclrun exits 0, every rank prints one "check_result success" line per
 * case, and no line reports an error. */
#include "multirank/mr_run.h"

#define PROG OH_BUILD_DIR "/tests/progs/hccl_test_like"

#define NOPS 11
#define NREDUCING 4 /* allreduce, reduce, reducescatter, reducescatterv */

/* Cases one rank checks: sizes b, b*f, ... <= e; reducing ops once per dtype and reduce op. */
static unsigned cases(unsigned long b, unsigned long e, unsigned long f, unsigned ndt, unsigned nredop)
{
    unsigned sizes = 0;
    for (unsigned long s = b; s <= e; s *= f)
        sizes++;
    return sizes * ndt * (NREDUCING * nredop + (NOPS - NREDUCING));
}

static unsigned count_lines(const char *out, const char *needle)
{
    unsigned k = 0;
    for (const char *p = strstr(out, needle); p; p = strstr(p + 1, needle))
        k++;
    return k;
}

static void expect_clean(unsigned n, const char *args, unsigned per_rank)
{
    mr_result r = mr_run_t("", n, 180, PROG, args);
    cr_expect_eq(r.status, 0, "hccl_test_like %s on %u ranks exited with %d", args, n, r.status);
    unsigned ok = count_lines(r.out, "check_result success");
    cr_expect_eq(ok, per_rank * n, "%u check_result success lines, expected %u", ok, per_rank * n);
    cr_expect_null(strstr(r.out, "error"), "an error line in the output");
    cr_expect_null(strstr(r.out, "check_result fail"), "a failed result check");
    free(r.out);
}

Test(hccl_test_like, every_op_two_ranks)
{
    expect_clean(2, "-t all -b 8 -e 4K -f 8 -d fp32,int8,bfp16 -o sum,max -n 2 -w 1 -c 1", cases(8, 4096, 8, 3, 2));
}

Test(hccl_test_like, every_op_four_ranks)
{
    expect_clean(4, "-t all -b 8 -e 512 -f 8 -d fp16,int32,uint64 -o prod,min -n 2 -w 1 -c 1",
                 cases(8, 512, 8, 3, 2));
}

/* 64 KiB then 4 MiB: the second size maps and activates new chunks beyond the first 2 MiB. */
Test(hccl_test_like, zero_copy_two_ranks)
{
    expect_clean(2, "-t all -b 64K -e 4M -f 64 -d fp32 -o sum -n 1 -w 1 -c 1 -z 1",
                 cases(64 << 10, 4 << 20, 64, 1, 1));
}

Test(hccl_test_like, zero_copy_four_ranks)
{
    expect_clean(4, "-t all -b 8 -e 64K -f 32 -d int32 -o sum,max -n 1 -w 1 -c 1 -z 1", cases(8, 65536, 32, 1, 2));
}

Test(hccl_test_like, symmetric_memory_two_ranks)
{
    expect_clean(2, "-t all -b 64K -e 4M -f 64 -d fp32 -o sum -n 1 -w 1 -c 1 -m 1", cases(64 << 10, 4 << 20, 64, 1, 1));
}

Test(hccl_test_like, symmetric_memory_four_ranks)
{
    expect_clean(4, "-t all -b 8 -e 64K -f 32 -d fp16 -o sum,min -n 1 -w 1 -c 1 -m 1", cases(8, 65536, 32, 1, 2));
}

/* -p 1: aclprofInit at HCCL_TEST_PROFILING_PATH; every rank leaves a trace naming its ops. */
Test(hccl_test_like, profiling_writes_traces)
{
    char dir[] = "/tmp/oh_hccl_test_prof_XXXXXX", env[256], cmd[512];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(env, sizeof env, "HCCL_TEST_PROFILING_PATH=%s", dir);
    unsigned per_rank = cases(8, 64, 8, 1, 1) / NOPS; /* allreduce only */
    mr_result r = mr_run_t(env, 2, 120, PROG, "-t allreduce -b 8 -e 64 -f 8 -n 1 -w 0 -c 1 -p 1");
    cr_expect_eq(r.status, 0);
    cr_expect_eq(count_lines(r.out, "check_result success"), per_rank * 2);
    free(r.out);
    snprintf(cmd, sizeof cmd, "grep -l '\"name\":\"HcclAllReduce\"' %s/*.json | wc -l", dir);
    FILE *p = popen(cmd, "r");
    int traces = 0;
    cr_assert(p && fscanf(p, "%d", &traces) == 1);
    pclose(p);
    cr_expect_eq(traces, 2, "one trace per rank naming HcclAllReduce, found %d", traces);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}
