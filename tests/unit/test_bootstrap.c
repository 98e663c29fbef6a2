/* Bootstrap rendezvous: all-gather among threads and processes, and every way it must fail on all
 * ranks at once (never hang). Loopback only; HCCL_CONNECT_TIMEOUT is small so failures are quick. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>

#include "runtime/bootstrap/bootstrap.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define BLOB 24

static void setup(void)
{
    setenv("HCCL_CONNECT_TIMEOUT", "5", 1);
    setenv("HCCL_IF_IP", "127.0.0.1", 1);
    unsetenv("HCCL_IF_BASE_PORT");
}

typedef struct rank_arg {
    const HcclRootInfo *info;
    uint32_t nranks, rank;
    size_t blob_size;
    char *all;
    HcclResult rc;
} rank_arg;

static void make_blob(char *b, size_t n, uint32_t rank)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (char)(rank * 31 + i);
}

static void *rank_main(void *p)
{
    rank_arg *a = p;
    char blob[256];
    make_blob(blob, a->blob_size, a->rank);
    a->rc = rt_bootstrap_allgather(a->info, a->nranks, a->rank, blob, a->blob_size, a->all);
    return NULL;
}

/* Runs n ranks as threads; ranks[i]/nranks[i]/sizes[i] say what thread i claims. */
static void run_threads(const HcclRootInfo *info, int n, const uint32_t *ranks, const uint32_t *nranks,
                        const size_t *sizes, rank_arg *args)
{
    pthread_t t[16];
    for (int i = 0; i < n; i++) {
        args[i] = (rank_arg){info, nranks[i], ranks[i], sizes ? sizes[i] : BLOB, NULL, -1};
        args[i].all = calloc(nranks[i] + 1, 256);
        cr_assert(pthread_create(&t[i], NULL, rank_main, &args[i]) == 0);
    }
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
}

static void check_all(const char *all, uint32_t n)
{
    char want[BLOB];
    for (uint32_t r = 0; r < n; r++) {
        make_blob(want, BLOB, r);
        cr_assert(memcmp(all + (size_t)r * BLOB, want, BLOB) == 0, "blob of rank %u differs", r);
    }
}

static void free_args(rank_arg *a, int n)
{
    for (int i = 0; i < n; i++)
        free(a[i].all);
}

static void threads_ok(uint32_t n)
{
    HcclRootInfo info;
    cr_assert_eq(rt_bootstrap_root_listen(&info), HCCL_SUCCESS);
    uint32_t ranks[16], nr[16];
    for (uint32_t i = 0; i < n; i++) {
        ranks[i] = n - 1 - i; /* arrival order unrelated to rank order */
        nr[i] = n;
    }
    rank_arg a[16];
    run_threads(&info, (int)n, ranks, nr, NULL, a);
    for (uint32_t i = 0; i < n; i++) {
        cr_assert_eq(a[i].rc, HCCL_SUCCESS, "rank %u failed with %d", a[i].rank, a[i].rc);
        check_all(a[i].all, n);
    }
    free_args(a, (int)n);
}

Test(bootstrap, threads_1, .init = setup) { threads_ok(1); }
Test(bootstrap, threads_2, .init = setup) { threads_ok(2); }
Test(bootstrap, threads_3, .init = setup) { threads_ok(3); }
Test(bootstrap, threads_8, .init = setup) { threads_ok(8); }

/* Ranks as forked processes; the root thread lives in this (parent) process. */
static void procs_ok(uint32_t n)
{
    HcclRootInfo info;
    cr_assert_eq(rt_bootstrap_root_listen(&info), HCCL_SUCCESS);
    pid_t pids[16];
    for (uint32_t r = 0; r < n; r++) {
        pids[r] = fork();
        cr_assert(pids[r] >= 0);
        if (pids[r] == 0) {
            char blob[BLOB], *all = calloc(n, BLOB), want[BLOB];
            make_blob(blob, BLOB, r);
            int bad = rt_bootstrap_allgather(&info, n, r, blob, BLOB, all) != HCCL_SUCCESS;
            for (uint32_t q = 0; q < n && !bad; q++) {
                make_blob(want, BLOB, q);
                bad = memcmp(all + (size_t)q * BLOB, want, BLOB) != 0;
            }
            free(all);
            _exit(bad);
        }
    }
    for (uint32_t r = 0; r < n; r++) {
        int st;
        cr_assert_eq(waitpid(pids[r], &st, 0), pids[r]);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "rank %u process failed", r);
    }
}

Test(bootstrap, procs_1, .init = setup) { procs_ok(1); }
Test(bootstrap, procs_2, .init = setup) { procs_ok(2); }
Test(bootstrap, procs_3, .init = setup) { procs_ok(3); }
Test(bootstrap, procs_8, .init = setup) { procs_ok(8); }

static void expect_all(const rank_arg *a, int n, HcclResult rc)
{
    for (int i = 0; i < n; i++)
        cr_assert_eq(a[i].rc, rc, "thread %d (rank %u) returned %d, expected %d", i, a[i].rank, a[i].rc, rc);
}

/* Reads what the library logged (stderr is redirected) and checks it mentions text. */
static void expect_log(const char *text)
{
    fflush(stderr);
    FILE *f = cr_get_redirected_stderr();
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    cr_assert(strstr(buf, text), "log lacks \"%s\":\n%s", text, buf);
}

Test(bootstrap, nranks_mismatch_fails_everyone, .init = setup)
{
    cr_redirect_stderr();
    HcclRootInfo info;
    cr_assert_eq(rt_bootstrap_root_listen(&info), HCCL_SUCCESS);
    uint32_t ranks[] = {0, 1, 2}, nr[] = {3, 3, 4};
    rank_arg a[3];
    run_threads(&info, 3, ranks, nr, NULL, a);
    expect_all(a, 3, HCCL_E_PARA);
    expect_log("nRanks=4");
    free_args(a, 3);
}

Test(bootstrap, duplicate_rank_fails_everyone, .init = setup)
{
    cr_redirect_stderr();
    HcclRootInfo info;
    cr_assert_eq(rt_bootstrap_root_listen(&info), HCCL_SUCCESS);
    uint32_t ranks[] = {0, 1, 1}, nr[] = {3, 3, 3};
    rank_arg a[3];
    run_threads(&info, 3, ranks, nr, NULL, a);
    expect_all(a, 3, HCCL_E_PARA);
    expect_log("rank 1 joined twice");
    free_args(a, 3);
}

Test(bootstrap, rank_out_of_range_fails_everyone, .init = setup)
{
    HcclRootInfo info;
    cr_assert_eq(rt_bootstrap_root_listen(&info), HCCL_SUCCESS);
    uint32_t ranks[] = {0, 2}, nr[] = {2, 2};
    rank_arg a[2];
    run_threads(&info, 2, ranks, nr, NULL, a);
    expect_all(a, 2, HCCL_E_PARA);
    free_args(a, 2);
}

Test(bootstrap, blob_size_mismatch_fails_everyone, .init = setup)
{
    HcclRootInfo info;
    cr_assert_eq(rt_bootstrap_root_listen(&info), HCCL_SUCCESS);
    uint32_t ranks[] = {0, 1}, nr[] = {2, 2};
    size_t sizes[] = {BLOB, BLOB + 8};
    rank_arg a[2];
    run_threads(&info, 2, ranks, nr, sizes, a);
    expect_all(a, 2, HCCL_E_PARA);
    free_args(a, 2);
}

Test(bootstrap, missing_rank_times_out_naming_it, .init = setup)
{
    setenv("HCCL_CONNECT_TIMEOUT", "2", 1);
    cr_redirect_stderr();
    HcclRootInfo info;
    cr_assert_eq(rt_bootstrap_root_listen(&info), HCCL_SUCCESS);
    uint32_t ranks[] = {0, 2}, nr[] = {4, 4};
    rank_arg a[2];
    run_threads(&info, 2, ranks, nr, NULL, a);
    expect_all(a, 2, HCCL_E_TIMEOUT);
    expect_log("ranks never seen: 1,3");
    free_args(a, 2);
}

Test(bootstrap, no_root_times_out, .init = setup)
{
    setenv("HCCL_CONNECT_TIMEOUT", "1", 1);
    /* A root info naming a port nobody listens on (bound, then closed). */
    int lfd;
    uint32_t port;
    cr_assert_eq(rt_sock_listen(AF_INET, "127.0.0.1", 0, &lfd, &port), 0);
    HcclRootInfo info;
    cr_assert_eq(rt_bootstrap_root_listen(&info), HCCL_SUCCESS);
    rt_root_info ri;
    cr_assert_eq(rt_boot_info_unpack(&info, &ri, 0), HCCL_SUCCESS);
    ri.port = port;
    close(lfd);
    rt_boot_info_pack(&ri, &info);
    char blob[BLOB] = {0}, all[BLOB];
    cr_assert_eq(rt_bootstrap_allgather(&info, 1, 0, blob, BLOB, all), HCCL_E_TIMEOUT);
}

Test(bootstrap, stale_job_is_rejected_alone, .init = setup)
{
    HcclRootInfo info, stale;
    cr_assert_eq(rt_bootstrap_root_listen(&info), HCCL_SUCCESS);
    rt_root_info ri;
    cr_assert_eq(rt_boot_info_unpack(&info, &ri, 0), HCCL_SUCCESS);
    ri.job_id ^= 0x5a5a;
    rt_boot_info_pack(&ri, &stale);
    char blob[BLOB] = {0}, all[2 * BLOB];
    cr_assert_eq(rt_bootstrap_allgather(&stale, 2, 1, blob, BLOB, all), HCCL_E_PARA);
    uint32_t ranks[] = {0, 1}, nr[] = {2, 2};
    rank_arg a[2];
    run_threads(&info, 2, ranks, nr, NULL, a);
    expect_all(a, 2, HCCL_SUCCESS);
    free_args(a, 2);
}

Test(bootstrap, dead_rank_fails_the_others, .init = setup)
{
    cr_redirect_stderr();
    HcclRootInfo info;
    cr_assert_eq(rt_bootstrap_root_listen(&info), HCCL_SUCCESS);
    rt_root_info ri;
    cr_assert_eq(rt_boot_info_unpack(&info, &ri, 0), HCCL_SUCCESS);
    /* A fake rank 1 joins properly, then vanishes before the rendezvous completes. */
    int fd;
    cr_assert_eq(rt_sock_connect(ri.ip, ri.port, rt_now_ms() + 5000, &fd), 0);
    rt_boot_hello h = {.magic = RT_BOOT_WIRE_MAGIC, .version = RT_BOOT_INFO_VERSION, .job_id = ri.job_id,
                       .rank = 1, .nranks = 3, .blob_size = BLOB, .pid = 4242, .host = "fake"};
    char blob[BLOB] = {0};
    cr_assert_eq(rt_sock_send_all(fd, &h, sizeof h, rt_now_ms() + 5000), 0);
    cr_assert_eq(rt_sock_send_all(fd, blob, BLOB, rt_now_ms() + 5000), 0);
    close(fd);
    uint32_t ranks[] = {0}, nr[] = {3};
    rank_arg a[1];
    run_threads(&info, 1, ranks, nr, NULL, a);
    expect_all(a, 1, HCCL_E_TCP_TRANSFER);
    expect_log("rank 1 (pid 4242 on fake) disconnected");
    free_args(a, 1);
}

Test(bootstrap, invalid_root_info, .init = setup)
{
    HcclRootInfo info;
    memset(&info, 0, sizeof info);
    char blob[BLOB] = {0}, all[BLOB];
    cr_assert_eq(rt_bootstrap_allgather(&info, 1, 0, blob, BLOB, all), HCCL_E_PARA);
    cr_assert_eq(rt_bootstrap_allgather(NULL, 1, 0, blob, BLOB, all), HCCL_E_PTR);
}

/* Our magic and version with a damaged body: refused at once with the field named, no connect. */
static void expect_damaged(void (*damage)(rt_root_info *), const char *field)
{
    rt_root_info ri;
    memset(&ri, 0, sizeof ri);
    ri.magic = RT_BOOT_INFO_MAGIC;
    ri.version = RT_BOOT_INFO_VERSION;
    ri.job_id = 7;
    ri.family = AF_INET;
    ri.port = 60000;
    snprintf(ri.ip, sizeof ri.ip, "127.0.0.1");
    snprintf(ri.host, sizeof ri.host, "host");
    damage(&ri);
    HcclRootInfo info;
    rt_boot_info_pack(&ri, &info);
    rt_root_info out;
    cr_expect_eq(rt_boot_info_unpack(&info, &out, 3), HCCL_E_PARA, "a root info with a bad %s was accepted", field);
    char buf[128];
    cr_expect_str_eq(rt_bootstrap_describe(&info, buf, sizeof buf), "<invalid root info>");
    char blob[BLOB] = {0}, all[BLOB];
    cr_expect_eq(rt_bootstrap_allgather(&info, 1, 0, blob, BLOB, all), HCCL_E_PARA);
}

static void binary_host(rt_root_info *ri) { memset(ri->host, 0xfe, sizeof ri->host); }
static void binary_ip(rt_root_info *ri) { memcpy(ri->ip, "\x01\x02garbage", 10); }
static void bad_family(rt_root_info *ri) { ri->family = 12345; }
static void bad_port(rt_root_info *ri) { ri->port = 0; }
static void unterminated_ip(rt_root_info *ri) { memset(ri->ip, '1', sizeof ri->ip); }

Test(bootstrap, damaged_root_info_body, .init = setup)
{
    expect_damaged(binary_host, "host");
    expect_damaged(binary_ip, "ip");
    expect_damaged(bad_family, "family");
    expect_damaged(bad_port, "port");
    expect_damaged(unterminated_ip, "unterminated ip");
}

Test(bootstrap, two_rendezvous_back_to_back, .init = setup)
{
    for (int round = 0; round < 2; round++)
        threads_ok(3);
}

/* The process's exit waits for the connections its roots still owe a verdict, and only for them:
 * a root info fetched and never used holds nothing (it used to hold every exit for 2 s, as did a
 * failed root that listened on for late ranks). */
static unsigned wait_owed(unsigned want)
{
    /* Bounded wait for the root thread to get there (not a timing assertion: it only has to happen). */
    for (int i = 0; i < 10000 && rt_boot_verdicts_owed() != want; i++)
        usleep(1000);
    return rt_boot_verdicts_owed();
}

Test(bootstrap, exit_waits_only_for_owed_verdicts, .init = setup)
{
    HcclRootInfo unused, used;
    cr_assert_eq(rt_bootstrap_root_listen(&unused), HCCL_SUCCESS);
    cr_expect_eq(rt_boot_verdicts_owed(), 0, "a root nobody connected to would hold the exit");
    cr_assert_eq(rt_bootstrap_root_listen(&used), HCCL_SUCCESS);
    rank_arg first = {&used, 2, 0, BLOB, calloc(3, 256), -1};
    pthread_t t;
    cr_assert(pthread_create(&t, NULL, rank_main, &first) == 0);
    cr_expect_eq(wait_owed(1), 1, "rank 0 waiting for its verdict would not hold the exit");
    rank_arg second;
    uint32_t rank = 1, nranks = 2;
    run_threads(&used, 1, &rank, &nranks, NULL, &second);
    pthread_join(t, NULL);
    cr_expect_eq(first.rc, HCCL_SUCCESS);
    cr_expect_eq(second.rc, HCCL_SUCCESS);
    cr_expect_eq(wait_owed(0), 0, "verdicts delivered are still counted");
    free_args(&first, 1);
    free_args(&second, 1);
}

/* A failed rendezvous listens on until HCCL_CONNECT_TIMEOUT to tell late ranks (here a third that
 * nranks=3 announced); once the ranks that came have their verdict, nothing is owed. The timeout is
 * far longer than wait_owed's bound, so a root that owed until its deadline fails the case. */
Test(bootstrap, failed_root_owes_nothing_once_told, .init = setup)
{
    cr_redirect_stderr(); /* the failure's log lines */
    setenv("HCCL_CONNECT_TIMEOUT", "60", 1);
    HcclRootInfo info;
    cr_assert_eq(rt_bootstrap_root_listen(&info), HCCL_SUCCESS);
    uint32_t ranks[2] = {0, 1}, nranks[2] = {2, 3};
    rank_arg a[2];
    run_threads(&info, 2, ranks, nranks, NULL, a);
    expect_all(a, 2, HCCL_E_PARA);
    cr_expect_eq(wait_owed(0), 0, "a failed root's exit wait outlives its told ranks");
    free_args(a, 2);
}
