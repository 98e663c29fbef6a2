/* Stream semantics and communicator scenarios (coll_misc), bad input, and the basics sample. */
#include "multirank/mr_run.h"

static void misc(unsigned n, const char *scenario)
{
    char what[96];
    snprintf(what, sizeof what, "coll_misc %s on %u ranks", scenario, n);
    mr_expect_ok(mr_run("HCCL_EXEC_TIMEOUT=60", n, MR_COLL_MISC, scenario), what, ": PASS");
}

Test(ordering, n2) { misc(2, "ordering"); }
Test(ordering, n3) { misc(3, "ordering"); }
Test(overlap, n2) { misc(2, "overlap"); }
Test(planreuse, n1) { misc(1, "planreuse"); }
Test(planreuse, n4) { misc(4, "planreuse"); }
Test(twocomms, n2) { misc(2, "twocomms"); }
Test(twocomms, n4) { misc(4, "twocomms"); }
Test(twocomms, n8) { misc(8, "twocomms"); }
Test(barrier, n2) { misc(2, "barrier"); }
Test(barrier, n4) { misc(4, "barrier"); }
Test(twostreams, n2) { misc(2, "twostreams"); }
Test(twostreams, n4) { misc(4, "twostreams"); }
Test(framework, n2) { misc(2, "framework"); }
Test(framework, n3) { misc(3, "framework"); }
Test(framework, n4) { misc(4, "framework"); } /* more ranks than CI's CPUs: calls go to the queue */
Test(framework_lean, n2) { misc(2, "framework_lean"); }
Test(framework_lean, n4) { misc(4, "framework_lean"); }
Test(badinput, n1) { misc(1, "badinput"); }
Test(badinput, n2) { misc(2, "badinput"); }

Test(sample, basics_n8)
{
    mr_result r = mr_run("", 8, OH_BUILD_DIR "/samples/basics/basics", "");
    cr_expect_eq(r.status, 0, "basics on 8 ranks exited with %d", r.status);
    for (int i = 0; i < 8; i++) {
        char line[32];
        snprintf(line, sizeof line, "[rank %d] OK\n", i);
        cr_expect(strstr(r.out, line) != NULL, "rank %d did not print OK", i);
    }
    free(r.out);
}
