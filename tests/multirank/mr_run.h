/* Helpers for the multirank suites: run a rank program under hcclrun and capture its combined
 * output. Paths come from OH_BUILD_DIR (a compile definition of every suite). */
#ifndef MR_RUN_H
#define MR_RUN_H

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define MR_HCCLRUN OH_BUILD_DIR "/tools/hcclrun"
#define MR_COLL_CHECK OH_BUILD_DIR "/tests/progs/coll_check"
#define MR_COLL_MISC OH_BUILD_DIR "/tests/progs/coll_misc"

typedef struct mr_result {
    int status; /* exit status of the command (hcclrun), or -1 if it did not exit normally */
    char *out;  /* stdout + stderr of every rank, "[rank R] "-prefixed by hcclrun */
} mr_result;

/* Runs the shell command cmd (its stderr should go to its stdout) and captures its output. */
static inline mr_result mr_run_cmd(const char *cmd)
{
    mr_result r = {-1, NULL};
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p, "popen(%s) failed", cmd);
    size_t cap = 1 << 16, len = 0;
    r.out = malloc(cap);
    cr_assert_not_null(r.out);
    size_t got;
    while ((got = fread(r.out + len, 1, cap - len - 1, p)) > 0) {
        len += got;
        if (cap - len < 4096) {
            cap *= 2;
            r.out = realloc(r.out, cap);
            cr_assert_not_null(r.out);
        }
    }
    r.out[len] = '\0';
    int st = pclose(p);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    /* Keep the whole log with the test's output, so ctest --output-on-failure shows it. */
    fprintf(stderr, "$ %s\n%s(exit status %d)\n", cmd, r.out, r.status);
    return r;
}

/* Runs "ENV hcclrun -n N --timeout T PROGRAM ARGS 2>&1" (env may be ""): hcclrun stops every rank
 * after T seconds, so a hang fails the test instead of the ctest timeout. */
static inline mr_result mr_run_t(const char *env, unsigned n, int timeout_s, const char *prog, const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s -n %u --timeout %d %s %s 2>&1", env, MR_HCCLRUN, n, timeout_s, prog, args);
    return mr_run_cmd(cmd);
}

static inline mr_result mr_run(const char *env, unsigned n, const char *prog, const char *args)
{
    return mr_run_t(env, n, 240, prog, args);
}

/* Asserts a clean run whose output contains the success line `needle`. */
static inline void mr_expect_ok(mr_result r, const char *what, const char *needle)
{
    cr_expect_eq(r.status, 0, "%s: hcclrun exited with %d", what, r.status);
    cr_expect(strstr(r.out, needle) != NULL, "%s: no \"%s\" in the output", what, needle);
    free(r.out);
}

#endif
