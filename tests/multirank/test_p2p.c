/* Point to point as HCCL/NCCL users expect (tests/progs/p2p_check.c): items match in issue order
 * per (peer, direction) whatever each side grouped; several sends to one peer and mixed dtypes in
 * a group; plans cached by shape; eager sends; a disagreement fails both ranks naming both; HcclCommDestroy
 * wakes a peer blocked in p2p with a message naming the destroy. HCCL_EXEC_TIMEOUT=60 turns a
 * detection bug into a failure instead of a hang (the assertions are on messages, never times). */
#include "multirank/mr_run.h"

#define MR_P2P_CHECK OH_BUILD_DIR "/tests/progs/p2p_check"

static void p2p_ok(unsigned n, const char *scen)
{
    char what[96], needle[96];
    snprintf(what, sizeof what, "p2p_check %s on %u ranks", scen, n);
    snprintf(needle, sizeof needle, "p2p_check %s: PASS", scen);
    mr_result r = mr_run_t("HCCL_EXEC_TIMEOUT=60", n, 120, MR_P2P_CHECK, scen);
    cr_expect(strstr(r.out, "FAIL") == NULL, "%s: a rank failed", what);
    mr_expect_ok(r, what, needle);
}

/* Both ranks must report the failure, and the line must name what the brief asks for. */
static void p2p_fails(const char *scen, const char *const *needles)
{
    mr_result r = mr_run_t("HCCL_EXEC_TIMEOUT=60", 2, 120, MR_P2P_CHECK, scen);
    cr_expect_eq(r.status, 0, "%s: hcclrun exited with %d", scen, r.status);
    cr_expect(strstr(r.out, "FAIL") == NULL, "%s: a rank did not see the failure", scen);
    for (const char *const *s = needles; *s; s++)
        cr_expect(strstr(r.out, *s) != NULL, "%s: the output does not mention \"%s\"", scen, *s);
    free(r.out);
}

Test(p2p, match_n2, .timeout = 150) { p2p_ok(2, "match"); }
Test(p2p, match_n4, .timeout = 150) { p2p_ok(4, "match"); }
Test(p2p, crossdeps_n3, .timeout = 150) { p2p_ok(3, "crossdeps"); }
Test(p2p, batch_many_items_n4, .timeout = 150) { p2p_ok(4, "batch"); }
Test(p2p, plan_reuse_n2, .timeout = 150) { p2p_ok(2, "planreuse"); }
/* Eager sends (docs/runtime.md, "Point to point"): over before their receive is posted, more in
 * flight than boxes, and a relay whose sends read what the receive before wrote. With every send
 * direct (HCCL_EAGER_P2P=0) the first part never gets past its barrier. */
Test(p2p, eager_n2, .timeout = 150) { p2p_ok(2, "eager"); }
Test(p2p, eager_n3, .timeout = 150) { p2p_ok(3, "eager"); }
Test(p2p, eager_n4, .timeout = 150) { p2p_ok(4, "eager"); }

static const char *const count_w[] = {
    "[rank 0] rank 0: DETECTED", "[rank 1] rank 1: DETECTED",
    "p2p mismatch: rank 0 calls HcclSend(count=256, fp32) to rank 1 (send #1 to rank 1) but rank 1 calls "
    "HcclRecv(count=512, fp32) from rank 0 (receive #1 from rank 0)",
    NULL};
static const char *const dtype_w[] = {
    "[rank 0] rank 0: DETECTED", "[rank 1] rank 1: DETECTED",
    "p2p mismatch: rank 0 calls HcclSend(count=256, fp32) to rank 1 (send #1 to rank 1) but rank 1 calls "
    "HcclRecv(count=256, int32) from rank 0 (receive #1 from rank 0)",
    NULL};
static const char *const destroy_recv_w[] = {
    "[rank 1] rank 1: DETECTED", "rank 0 called HcclCommDestroy while rank 1 waits in HcclRecv(count=256, fp32) "
    "from rank 0 (receive #1 from rank 0)", NULL};
static const char *const direct_w[] = {
    "[rank 0] rank 0: DETECTED", "[rank 1] rank 1: DETECTED",
    "p2p mismatch: rank 0 calls HcclSend(count=65536, fp32) to rank 1 (send #1 to rank 1) but rank 1 calls "
    "HcclRecv(count=131072, fp32) from rank 0 (receive #1 from rank 0)",
    NULL};
static const char *const destroy_send_w[] = {
    "[rank 1] rank 1: DETECTED", "rank 0 called HcclCommDestroy while rank 1 waits in HcclSend(count=16384, fp32) "
    "to rank 0 (send #1 to rank 0)", NULL};
/* Its 65th send waits for a box; or, where rank 0 destroyed first, the first fails. */
static const char *const destroy_eager_w[] = {
    "[rank 1] rank 1: DETECTED", "rank 0 called HcclCommDestroy while rank 1 waits in HcclSend(count=256, fp32) "
    "to rank 0 (send #", NULL};

Test(p2p, count_mismatch_fails_both, .timeout = 150) { p2p_fails("mismatch-count", count_w); }
Test(p2p, dtype_mismatch_fails_both, .timeout = 150) { p2p_fails("mismatch-dtype", dtype_w); }
Test(p2p, destroy_wakes_receiver, .timeout = 150) { p2p_fails("destroy-recv", destroy_recv_w); }
Test(p2p, direct_mismatch_fails_both, .timeout = 150) { p2p_fails("mismatch-direct", direct_w); }
Test(p2p, destroy_wakes_sender, .timeout = 150) { p2p_fails("destroy-send", destroy_send_w); }
Test(p2p, destroy_wakes_eager_sender, .timeout = 150) { p2p_fails("destroy-eager", destroy_eager_w); }
