/* hcclrun: environment, prefixed output, failure propagation (others stopped), --timeout, the
 * store it serves, and HcclExtShareRootInfo across real rank processes. */
#include <criterion/criterion.h>

#include <hccl/hccl_comm.h>
#include <hccl/hccl_ext.h>

#include "runtime/bootstrap/bootstrap.h"
#include "runtime/bootstrap/store.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define HCCLRUN OH_BUILD_DIR "/tools/hcclrun"

/* Runs a shell command line, captures stdout+stderr into out, returns the exit code. */
static int run(const char *cmd, char *out, size_t cap)
{
    char full[4096];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *f = popen(full, "r");
    cr_assert(f, "popen failed");
    size_t n = fread(out, 1, cap - 1, f);
    out[n] = '\0';
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

Test(hcclrun, all_ranks_succeed_with_prefixed_output)
{
    char out[8192];
    int rc = run(HCCLRUN " -n 3 sh -c 'echo hello $RANK; echo oops $RANK >&2'", out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "[rank 0] hello 0\n") && strstr(out, "[rank 1] hello 1\n") &&
              strstr(out, "[rank 2] hello 2\n"), "%s", out);
    cr_assert(strstr(out, "[rank 2] oops 2\n"), "%s", out);
}

Test(hcclrun, env_vars)
{
    char out[8192];
    unsetenv("HCCL_EMU_NAMESPACE");
    int rc = run(HCCLRUN " -n 2 sh -c 'echo env $RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $MASTER_ADDR "
                 "${MASTER_PORT:+port} $HCCL_EMU_SERVER_INDEX $HCCL_EMU_DEVICES ${HCCL_EMU_NAMESPACE%%-*}'",
                 out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "[rank 1] env 1 2 1 2 127.0.0.1 port 0 8 hcclrun\n"), "%s", out);
    setenv("HCCL_EMU_NAMESPACE", "mine", 1);
    rc = run(HCCLRUN " -n 1 sh -c 'echo ns $HCCL_EMU_NAMESPACE'", out, sizeof out);
    cr_assert(rc == 0 && strstr(out, "[rank 0] ns mine\n"), "%s", out);
}

Test(hcclrun, partial_lines_are_joined)
{
    char out[4096];
    int rc = run(HCCLRUN " -n 2 sh -c 'printf abc; sleep 0.2; printf \"def\\nxyz\"'", out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "[rank 0] abcdef\n") && strstr(out, "[rank 1] abcdef\n"), "%s", out);
    cr_assert(strstr(out, "[rank 1] xyz\n"), "unterminated last line must still be printed: %s", out);
}

Test(hcclrun, failing_rank_stops_the_others)
{
    char pidfile[] = "/tmp/oh_hcclrun_pids_XXXXXX", cmd[1024], out[8192];
    int fd = mkstemp(pidfile);
    cr_assert(fd >= 0);
    close(fd);
    /* Ranks 0 and 2 record their pid and sleep; rank 1 waits until both are recorded, then fails. */
    snprintf(cmd, sizeof cmd, HCCLRUN " -n 3 sh -c 'if [ $RANK = 1 ]; then "
             "while [ $(wc -l < %s) -lt 2 ]; do sleep 0.05; done; exit 7; fi; echo $$ >> %s; exec sleep 300'",
             pidfile, pidfile);
    int rc = run(cmd, out, sizeof out);
    cr_assert_eq(rc, 7, "%s", out);
    cr_assert(strstr(out, "rank 1"), "%s", out);
    FILE *f = fopen(pidfile, "r");
    int pid, n = 0;
    while (f && fscanf(f, "%d", &pid) == 1) {
        errno = 0;
        cr_assert(kill(pid, 0) < 0 && errno == ESRCH, "rank pid %d still alive", pid);
        n++;
    }
    if (f)
        fclose(f);
    unlink(pidfile);
    cr_assert_eq(n, 2);
}

Test(hcclrun, timeout_kills_everything)
{
    char out[4096];
    /* The rank ignores SIGTERM, so this also covers the SIGKILL after the grace period. */
    int rc = run(HCCLRUN " -n 2 --timeout 1 sh -c 'trap \"\" TERM; while :; do sleep 0.1; done'", out, sizeof out);
    cr_assert_eq(rc, 124, "%s", out);
    cr_assert(strstr(out, "--timeout"), "%s", out);
}

Test(hcclrun, usage_errors)
{
    char out[4096];
    cr_assert_eq(run(HCCLRUN " -n 17 true", out, sizeof out), 2, "%s", out);
    cr_assert(strstr(out, "16"), "%s", out);
    cr_assert_eq(run(HCCLRUN " --servers 2 -n 3 true", out, sizeof out), 2, "%s", out);
    cr_assert_eq(run(HCCLRUN " --servers 2+1 -n 4 true", out, sizeof out), 2, "%s", out);
    cr_assert_eq(run(HCCLRUN " --servers 2+ true", out, sizeof out), 2, "%s", out);
    cr_assert_eq(run(HCCLRUN " --servers 17+1 true", out, sizeof out), 2, "%s", out);
    cr_assert_eq(run(HCCLRUN " true", out, sizeof out), 2, "%s", out);
    cr_assert_eq(run(HCCLRUN " -n 1 /nonexistent/prog", out, sizeof out), 127, "%s", out);
}

/* --bind: core puts every rank on one CPU (rank r on the r-th allowed one), none leaves them on
 * hcclrun's set, auto binds only when the ranks are at least as many as the CPUs; bad values are
 * refused. The count of allowed CPUs comes from nproc in the ranks (cgroup and taskset aware). */
Test(hcclrun, bind)
{
    char out[8192], mine[64];
    int rc = run("nproc", mine, sizeof mine);
    cr_assert_eq(rc, 0, "%s", mine);
    unsigned ncpu = (unsigned)atoi(mine);
    cr_assert(ncpu >= 1, "%s", mine);
    rc = run(HCCLRUN " -n 2 --bind core sh -c 'echo cpus $(nproc) $(grep Cpus_allowed_list /proc/self/status | "
             "cut -f2)'", out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    char want0[64], want1[64];
    snprintf(want0, sizeof want0, "[rank 0] cpus 1 ");
    snprintf(want1, sizeof want1, "[rank 1] cpus 1 ");
    char *l0 = strstr(out, want0), *l1 = strstr(out, want1);
    cr_assert(l0 && l1, "every rank bound to one CPU: %s", out);
    if (ncpu >= 2) { /* different CPUs for ranks 0 and 1 */
        char c0[32] = "", c1[32] = "";
        sscanf(l0 + strlen(want0), "%31s", c0);
        sscanf(l1 + strlen(want1), "%31s", c1);
        cr_assert(strcmp(c0, c1) != 0, "ranks 0 and 1 on the same CPU: %s", out);
    }
    snprintf(want0, sizeof want0, "[rank 1] cpus %u\n", ncpu);
    rc = run(HCCLRUN " -n 2 --bind none sh -c 'echo cpus $(nproc)'", out, sizeof out);
    cr_assert(rc == 0 && strstr(out, want0), "none keeps hcclrun's CPUs: %s", out);
    rc = run(HCCLRUN " -n 1 sh -c 'echo cpus $(nproc)'", out, sizeof out);
    snprintf(want0, sizeof want0, "[rank 0] cpus %u\n", ncpu);
    cr_assert(rc == 0 && strstr(out, want0), "auto leaves fewer ranks than CPUs unbound: %s", out);
    if (ncpu <= 16) { /* one emulated server holds at most 16 ranks */
        char cmd[256];
        snprintf(cmd, sizeof cmd, HCCLRUN " -n %u sh -c 'echo cpus $(nproc)'", ncpu);
        rc = run(cmd, out, sizeof out);
        cr_assert(rc == 0 && strstr(out, "[rank 0] cpus 1\n"), "auto binds as many ranks as CPUs: %s", out);
    }
    cr_assert_eq(run(HCCLRUN " -n 1 --bind sometimes true", out, sizeof out), 2, "%s", out);
    cr_assert(strstr(out, "--bind"), "%s", out);
}

/* Ranks placed server by server: RANK, LOCAL_RANK, LOCAL_WORLD_SIZE, HCCL_EMU_SERVER_INDEX. */
Test(hcclrun, servers_placement)
{
    char out[4096];
    cr_assert_eq(run(HCCLRUN " --servers 3+2+1 sh -c 'echo \"x $RANK $LOCAL_RANK $LOCAL_WORLD_SIZE "
                             "$HCCL_EMU_SERVER_INDEX $WORLD_SIZE\"'", out, sizeof out), 0, "%s", out);
    static const char *const want[] = {"x 0 0 3 0 6", "x 1 1 3 0 6", "x 2 2 3 0 6",
                                       "x 3 0 2 1 6", "x 4 1 2 1 6", "x 5 0 1 2 6"};
    for (int i = 0; i < 6; i++)
        cr_expect(strstr(out, want[i]), "missing '%s' in:\n%s", want[i], out);
    cr_assert_eq(run(HCCLRUN " -n 4 --servers 2 sh -c 'echo \"x $RANK $LOCAL_RANK $HCCL_EMU_SERVER_INDEX\"'", out,
                     sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "x 3 1 1"), "%s", out);
    cr_expect(strstr(out, "x 1 1 0"), "%s", out);
}

/* ---- the store, from this process, against a live hcclrun ---- */

static pid_t start_hcclrun_store(void)
{
    int p[2];
    cr_assert(pipe(p) == 0);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        dup2(p[1], 1);
        close(p[0]);
        execl(HCCLRUN, "hcclrun", "-n", "1", "sh", "-c", "echo port $MASTER_PORT; exec sleep 300", (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    FILE *f = fdopen(p[0], "r");
    unsigned port = 0;
    cr_assert(fscanf(f, "[rank 0] port %u", &port) == 1 && port, "no port from hcclrun");
    fclose(f);
    char buf[16];
    snprintf(buf, sizeof buf, "%u", port);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    setenv("MASTER_PORT", buf, 1);
    return pid;
}

static void stop_hcclrun(pid_t pid)
{
    int st;
    kill(pid, SIGTERM);
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 128 + SIGTERM, "hcclrun status %d", st);
}

static void *late_setter(void *arg)
{
    (void)arg;
    usleep(200 * 1000);
    rt_store_set("late", "value!", 7);
    return NULL;
}

Test(hcclrun_store, set_get)
{
    setenv("HCCL_CONNECT_TIMEOUT", "10", 1);
    pid_t pid = start_hcclrun_store();
    char buf[64];
    cr_assert_eq(rt_store_set("k1", "hello", 6), HCCL_SUCCESS);
    cr_assert_eq(rt_store_get("k1", buf, 6, 5), HCCL_SUCCESS);
    cr_assert_str_eq(buf, "hello");
    cr_assert_eq(rt_store_set("k1", "bye", 4), HCCL_SUCCESS); /* overwrite */
    cr_assert_eq(rt_store_get("k1", buf, 4, 5), HCCL_SUCCESS);
    cr_assert_str_eq(buf, "bye");
    cr_assert_eq(rt_store_get("k1", buf, 5, 5), HCCL_E_PARA); /* wrong size */
    pthread_t t;
    pthread_create(&t, NULL, late_setter, NULL);
    cr_assert_eq(rt_store_get("late", buf, 7, 10), HCCL_SUCCESS); /* blocks until set */
    pthread_join(t, NULL);
    cr_assert_str_eq(buf, "value!");
    cr_assert_eq(rt_store_get("never", buf, 4, 1), HCCL_E_TIMEOUT);
    cr_assert_eq(rt_store_set("k2", "x", 2), HCCL_SUCCESS); /* the store survived the abandoned get */
    stop_hcclrun(pid);
}

/* ---- HcclExtShareRootInfo across real rank processes: this binary re-run under hcclrun ---- */

Test(hcclrun_child, share_root_info)
{
    if (!getenv("RANK"))
        cr_skip_test("only runs as a rank under hcclrun (see hcclrun_store.share_root_info)");
    uint32_t rank, world, lrank, lworld;
    cr_assert_eq(HcclExtGetLaunchEnv(&rank, &world, &lrank, &lworld), HCCL_SUCCESS);
    for (int comm = 0; comm < 2; comm++) { /* two communicators: two root infos, matched by call order */
        HcclRootInfo info;
        cr_assert_eq(HcclExtShareRootInfo(rank, &info), HCCL_SUCCESS);
        uint32_t mine = rank * 10 + (uint32_t)comm, all[16];
        cr_assert_eq(rt_bootstrap_allgather(&info, world, rank, &mine, sizeof mine, all), HCCL_SUCCESS);
        for (uint32_t r = 0; r < world; r++)
            cr_assert_eq(all[r], r * 10 + (uint32_t)comm);
    }
    printf("rank %u shared ok\n", rank);
    fflush(stdout);
}

Test(hcclrun_store, share_root_info)
{
    char self[1024], cmd[2048], out[16384];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    cr_assert(n > 0);
    self[n] = '\0';
    setenv("HCCL_IF_IP", "127.0.0.1", 1);
    setenv("HCCL_CONNECT_TIMEOUT", "30", 1);
    /* Criterion's sandbox marks its workers through BXFI_MAP; the nested runs must start fresh. */
    unsetenv("BXFI_MAP");
    snprintf(cmd, sizeof cmd, HCCLRUN " -n 3 %s --jobs 1 --filter 'hcclrun_child/*'", self);
    int rc = run(cmd, out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    for (int r = 0; r < 3; r++) {
        char want[64];
        snprintf(want, sizeof want, "[rank %d] rank %d shared ok", r, r);
        cr_assert(strstr(out, want), "missing '%s' in:\n%s", want, out);
    }
}
