/* HcclCommConfig fields that change what collectives do, on 2 ranks (config_check): the buffer
 * size bounds scratch (and beats HCCL_BUFFSIZE), hcclAlgo beats HCCL_ALGO, hcclExecTimeOut fails a
 * wait nobody answers. The one-rank checks (capability, name, no-op fields, bad values) are in
 * tests/unit/test_comm_config.c; determinism in test_coll_determinism. See docs/runtime.md. */
#include "multirank/mr_run.h"

#define MR_CONFIG_CHECK OH_BUILD_DIR "/tests/progs/config_check"

Test(config, buffer_size) { mr_expect_ok(mr_run("", 2, MR_CONFIG_CHECK, "buffsize"), "buffsize", "buffsize: PASS"); }

Test(config, algo)
{
    mr_result r = mr_run("HCCL_DEBUG=DEBUG", 2, MR_CONFIG_CHECK, "algo");
    cr_expect(strstr(r.out, "rank 0: compiled HcclAllReduce with ring") != NULL, "rank 0 did not compile ring");
    cr_expect(strstr(r.out, "rank 1: compiled HcclAllReduce with ring") != NULL, "rank 1 did not compile ring");
    cr_expect(strstr(r.out, "with mesh") == NULL, "a plan was compiled with mesh (HCCL_ALGO won over the config)");
    mr_expect_ok(r, "algo", "algo: PASS");
}

/* hcclrun's 60 s limit is far below CANN's default 1836 s: passing means the 1 s was honoured. */
Test(config, exec_timeout, .timeout = 120)
{
    mr_result r = mr_run_t("", 2, 60, MR_CONFIG_CHECK, "timeout");
    cr_expect(strstr(r.out, "timed out") != NULL, "no wait timed out");
    mr_expect_ok(r, "timeout", "timeout: PASS");
}
