/* Destroy and re-create: no signal or write of a destroyed communicator reaches the next one, in
 * any interleaving of ranks, and a destroyed handle is refused without being read. The rank
 * program (tests/progs/comm_cycle.c) checks every AllReduce and that RSS, fds and threads stay
 * flat after warm-up; the 1,000-cycle run is a benchmark by hand (docs/testing.md). */
#include "multirank/mr_run.h"

#define MR_COMM_CYCLE OH_BUILD_DIR "/tests/progs/comm_cycle"

static void cycles(unsigned n, const char *args)
{
    mr_result r = mr_run_t("", n, 120, MR_COMM_CYCLE, args);
    cr_expect_eq(r.status, 0, "comm_cycle %s on %u ranks: hcclrun exited with %d", args, n, r.status);
    cr_expect(strstr(r.out, "FAIL") == NULL, "comm_cycle %s on %u ranks: a rank failed", args, n);
    for (unsigned rank = 0; rank < n; rank++) {
        char pass[64];
        snprintf(pass, sizeof pass, "comm_cycle rank %u: PASS", rank);
        cr_expect(strstr(r.out, pass) != NULL, "comm_cycle %s: rank %u did not pass", args, rank);
    }
    free(r.out);
}

Test(comm_lifecycle, cycles_n2, .timeout = 150) { cycles(2, "--cycles 200"); }
Test(comm_lifecycle, cycles_n4, .timeout = 150) { cycles(4, "--cycles 150"); }
/* Seeded random delays before destroy (odd ranks) and before init (even ranks). */
Test(comm_lifecycle, cycles_staggered_n2, .timeout = 150) { cycles(2, "--cycles 200 --stagger 1"); }
Test(comm_lifecycle, cycles_staggered_n4, .timeout = 150) { cycles(4, "--cycles 150 --stagger 2"); }
Test(comm_lifecycle, stale_handles_n2, .timeout = 150) { cycles(2, "--stale"); }
Test(comm_lifecycle, stale_handles_n4, .timeout = 150) { cycles(4, "--stale"); }
