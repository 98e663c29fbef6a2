/* Communicators across emulated servers and the transport HCCL_NET chooses (issue #9):
 * - HCCL_NET=roce without an RDMA device fails init with a message naming what is missing (no
 *   silent fallback); an invalid HCCL_NET fails naming the value; auto picks tcp here and every
 *   communicator logs its choice, interface and name once (HCCL_DEBUG=INFO);
 * - with a device (Soft-RoCE, docs/launching.md) the collectives run over roce links; here they skip;
 * - the payload bytes the links send: hierarchical AllReduce on 2 servers x 2 sends exactly
 *   2(S-1)/S x data per server, less than the flat ring_push;
 * - a CANN rank table (1.0 and 1.2) with two server_list entries places the ranks on two emulated
 *   servers (hcclrun --ranktable), so HcclCommInitClusterInfo runs over hal/net;
 * - hcclrun on two "hosts" (--nnodes 2, one store served by node 0);
 * - buffers freed and allocated anew (at the same addresses) between collectives: values right,
 *   and the links' registration cache does not keep the freed buffers (issue #9). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hal/net/verbs_internal.h"
#include "multirank/mr_run.h"

#define NET_COMM OH_BUILD_DIR "/tests/progs/net_comm"

static int have_device(char *why, size_t len)
{
    return verbs_device_count(why, len) > 0;
}

static unsigned count_of(const char *hay, const char *needle)
{
    unsigned n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

Test(net_comm, roce_without_device_fails_init, .timeout = 120)
{
    char why[160] = "";
    if (have_device(why, sizeof why))
        cr_skip_test("an RDMA device exists here: HCCL_NET=roce is expected to work (see roce_collectives)");
    mr_result r = mr_run_t("HCCL_NET=roce HCCL_CONNECT_TIMEOUT=20", 2, 60, "--servers 2 " NET_COMM, "init-fails");
    cr_expect_eq(count_of(r.out, "net_comm init-fails: PASS"), 2, "both ranks' init must fail");
    cr_expect(strstr(r.out, "HCCL_NET=roce but no RDMA device is usable") != NULL, "no message naming the cause");
    cr_expect(strstr(r.out, "peer(s) are on other servers but links cannot be made") != NULL,
              "the init failure does not say links were needed");
    mr_expect_ok(r, "HCCL_NET=roce without a device", "init-fails: PASS");
}

Test(net_comm, invalid_hccl_net_fails_init, .timeout = 120)
{
    mr_result r = mr_run_t("HCCL_NET=infiniband HCCL_CONNECT_TIMEOUT=20", 2, 60, "--servers 2 " NET_COMM, "init-fails");
    cr_expect_eq(count_of(r.out, "net_comm init-fails: PASS"), 2, "both ranks' init must fail");
    mr_expect_ok(r, "HCCL_NET=infiniband", "HCCL_NET=infiniband is invalid: use auto, roce or tcp");
}

/* Two communicators on each of 2 ranks: four lines, each naming tcp, auto's reason and the comm. */
Test(net_comm, auto_picks_tcp_logged_per_comm, .timeout = 120)
{
    char why[160] = "";
    if (have_device(why, sizeof why))
        cr_skip_test("an RDMA device exists here: auto picks roce");
    mr_result r = mr_run_t("HCCL_NET=auto HCCL_DEBUG=INFO", 2, 60, "--servers 2 " NET_COMM, "twocomms");
    cr_expect_eq(count_of(r.out, "peer(s) on other servers use tcp (HCCL_NET=auto; "), 4,
                 "expected one line per communicator and rank");
    cr_expect(strstr(r.out, why) != NULL, "the reason (%s) is not named", why);
    cr_expect(strstr(r.out, "), interface ") != NULL, "the interface is not named");
    cr_expect_eq(count_of(r.out, "net: comm hccl_comm_"), 4 + 4, "the lines must name the communicator");
    mr_expect_ok(r, "two communicators", "net_comm twocomms: PASS");
}

/* Runs where a device exists (Soft-RoCE: docs/launching.md); skips here with the reason. */
Test(net_comm, roce_collectives, .timeout = 300)
{
    char why[160] = "";
    if (!have_device(why, sizeof why))
        cr_skip_test("no RDMA device: %s (Soft-RoCE: rdma link add rxe0 type rxe netdev eth0)", why);
    mr_result r = mr_run_t("HCCL_NET=roce HCCL_DEBUG=INFO", 4, 240, "--servers 2 " MR_COLL_CHECK,
                           "--colls allreduce,broadcast,allgather,reducescatter,alltoall,sendrecv --dtypes fp32,int8 "
                           "--counts 0,1,7,1048579");
    cr_expect_eq(count_of(r.out, "peer(s) on other servers use roce"), 4, "the links must be roce");
    mr_expect_ok(r, "collectives over roce", " 0 failed");
}

/* Sum of "links sent B payload bytes" over the ranks of each server (rank r on server r / per). */
static void bytes_per_server(const char *out, unsigned per, unsigned long long *srv, unsigned nsrv)
{
    memset(srv, 0, nsrv * sizeof *srv);
    for (const char *p = strstr(out, "links sent "); p; p = strstr(p + 1, "links sent ")) {
        const char *line = p;
        while (line > out && line[-1] != '\n')
            line--;
        unsigned rank;
        unsigned long long b;
        cr_assert_eq(sscanf(line, "[rank %u]", &rank), 1, "no rank prefix on %.80s", line);
        cr_assert_eq(sscanf(p, "links sent %llu", &b), 1);
        cr_assert_lt(rank / per, nsrv);
        srv[rank / per] += b;
    }
}

/* 1 Mi fp32 = 4 MiB per rank: hier sends its inter-server AllReduce of the 2 MiB shard of each
 * rank, 2(S-1)/S x 4 MiB = 4 MiB per server; the flat ring crosses servers on two of its four
 * edges, 2(N-1)/N x 4 MiB = 6 MiB each. */
Test(net_comm, hier_allreduce_bytes_across_servers, .timeout = 300)
{
    const unsigned long long data = 4ull << 20, S = 2;
    unsigned long long hier[2], flat[2];
    mr_result r = mr_run_t("HCCL_DEBUG=INFO", 4, 240, "--servers 2 " NET_COMM, "allreduce 1048576");
    cr_expect_eq(count_of(r.out, "links sent "), 4, "every rank logs its bytes at destroy");
    bytes_per_server(r.out, 2, hier, 2);
    mr_expect_ok(r, "hier AllReduce", "net_comm allreduce: PASS");
    r = mr_run_t("HCCL_DEBUG=INFO HCCL_ALGO='level0:NA;level1:ring_push'", 4, 240, "--servers 2 " NET_COMM,
                 "allreduce 1048576");
    bytes_per_server(r.out, 2, flat, 2);
    mr_expect_ok(r, "flat ring_push AllReduce", "net_comm allreduce: PASS");
    for (unsigned s = 0; s < 2; s++) {
        cr_expect_eq(hier[s], 2 * (S - 1) * data / S, "server %u: hier sent %llu bytes, expected 2(S-1)/S x %llu", s,
                     hier[s], data);
        cr_expect_lt(hier[s], flat[s], "server %u: hier sent %llu bytes, flat %llu", s, hier[s], flat[s]);
    }
}

/* "N memory registrations cached" of each rank's destroy line, into cached[rank]. */
static void cached_per_rank(const char *out, unsigned long long *cached, unsigned n)
{
    unsigned seen = 0;
    for (const char *p = strstr(out, "memory registrations cached"); p;
         p = strstr(p + 1, "memory registrations cached")) {
        const char *line = p, *num = p;
        while (line > out && line[-1] != '\n')
            line--;
        while (num > line && num[-1] == ' ')
            num--;
        while (num > line && num[-1] >= '0' && num[-1] <= '9')
            num--;
        unsigned rank;
        cr_assert_eq(sscanf(line, "[rank %u]", &rank), 1, "no rank prefix on %.80s", line);
        cr_assert_lt(rank, n);
        cr_assert_eq(sscanf(num, "%llu", &cached[rank]), 1);
        seen++;
    }
    cr_assert_eq(seen, n, "every rank logs its registrations at destroy");
}

/* 100 cycles of allocate, AllReduce (checked), free on 2 servers: the new buffers land where the
 * freed ones were, the values are right, and at destroy each rank's cache holds exactly what a
 * communicator that ran no collective holds: the freed buffers' registrations went with them. */
Test(net_comm, realloc_cycles_keep_the_cache_small, .timeout = 300)
{
    unsigned long long base[2], after[2];
    mr_result r = mr_run_t("HCCL_DEBUG=INFO", 2, 240, "--servers 2 " NET_COMM, "realloc 0");
    cached_per_rank(r.out, base, 2);
    mr_expect_ok(r, "no collective", "net_comm realloc: PASS");
    r = mr_run_t("HCCL_DEBUG=INFO", 2, 240, "--servers 2 " NET_COMM, "realloc 100");
    cached_per_rank(r.out, after, 2);
    cr_expect_eq(count_of(r.out, "99 of 100 cycles reused an address"), 2,
                 "every cycle after the first must put its input where the first was");
    mr_expect_ok(r, "100 realloc cycles", "net_comm realloc: PASS");
    for (unsigned k = 0; k < 2; k++)
        cr_expect_eq(after[k], base[k], "rank %u: %llu registrations cached after 100 cycles, %llu without any", k,
                     after[k], base[k]);
}

/* A port nobody listens on now (the rank table names it for the rendezvous root). */
static unsigned free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    cr_assert(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
              getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* Writes a 2 servers x 2 devices rank table of the version into path (a mkstemp template). */
static void write_table(char *path, const char *version)
{
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    bool v12 = !strcmp(version, "1.2");
    unsigned port = free_port();
    fprintf(f, "{\"status\": \"completed\", \"version\": \"%s\", \"server_count\": \"2\", \"server_list\": [\n", version);
    for (int s = 0; s < 2; s++) {
        fprintf(f, " {\"server_id\": \"node_%d\", \"host_ip\": \"127.0.0.1\", \"device\": [\n", s);
        for (int d = 0; d < 2; d++) {
            fprintf(f, "  {\"device_id\": \"%d\", \"rank_id\": \"%d\"", d, 2 * s + d);
            if (v12)
                fprintf(f, ", \"super_device_id\": \"%d\"", 2 * s + d);
            if (s == 0 && d == 0)
                fprintf(f, ", \"host_port\": \"%u\"", port);
            fprintf(f, "}%s\n", d ? "" : ",");
        }
        fprintf(f, " ]}%s\n", s ? "" : ",");
    }
    fprintf(f, "]%s}\n", v12 ? ", \"super_pod_list\": [{\"super_pod_id\": \"0\", \"server_list\": "
                              "[{\"server_id\": \"node_0\"}, {\"server_id\": \"node_1\"}]}]" : "");
    fclose(f);
}

/* Runs cmd (sh), returns its exit status (-1 if killed); the output goes into out and the log. */
static int run_sh(const char *cmd, char *out, size_t cap)
{
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t len = fread(out, 1, cap - 1, p);
    out[len] = 0;
    int st = pclose(p);
    fprintf(stderr, "$ %s\n%s(exit status %d)\n", cmd, out, st);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void ranktable_job(const char *version)
{
    char path[] = "/tmp/oh_rt_servers_XXXXXX";
    write_table(path, version);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "HCCL_DEBUG=INFO %s --timeout 120 --ranktable %s %s ranktable 2>&1", MR_HCCLRUN, path,
             NET_COMM);
    static char out[1 << 18];
    int st = run_sh(cmd, out, sizeof out);
    unlink(path);
    cr_expect_eq(st, 0, "rank table %s job failed", version);
    cr_expect_eq(count_of(out, "net_comm ranktable: PASS"), 4, "every rank checks its collectives");
    cr_expect_eq(count_of(out, "links to 2 peer(s) on other servers use tcp"), 4,
                 "every rank must see the other server's two ranks over links");
}

Test(net_comm, ranktable_two_servers_v1_0, .timeout = 200) { ranktable_job("1.0"); }
Test(net_comm, ranktable_two_servers_v1_2, .timeout = 200) { ranktable_job("1.2"); }

/* hcclrun on each of two hosts (here twice on this one): node 0 serves the store at a fixed port. */
Test(net_comm, hcclrun_on_two_hosts, .timeout = 200)
{
    unsigned port = free_port();
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s -n 2 --timeout 120 --nnodes 2 --node-rank 1 --store-addr 127.0.0.1 --master-port %u "
             "%s --colls allreduce,allgather,sendrecv --dtypes fp32 --counts 1,65537 & "
             "%s -n 2 --timeout 120 --nnodes 2 --node-rank 0 --store-addr 127.0.0.1 --master-port %u "
             "%s --colls allreduce,allgather,sendrecv --dtypes fp32 --counts 1,65537; a=$?; wait $!; b=$?; "
             "exit $((a | b))", MR_HCCLRUN, port, MR_COLL_CHECK, MR_HCCLRUN, port, MR_COLL_CHECK);
    char full[2300];
    snprintf(full, sizeof full, "sh -c '%s' 2>&1", cmd);
    static char out[1 << 18];
    cr_expect_eq(run_sh(full, out, sizeof out), 0, "the two-host job failed");
    cr_expect_eq(count_of(out, "passed, 0 failed (4 ranks"), 4, "each of the 4 ranks reports its cases");
    for (unsigned k = 0; k < 4; k++) {
        char tag[32];
        snprintf(tag, sizeof tag, "[rank %u] coll_check:", k);
        cr_expect(strstr(out, tag) != NULL, "no line of global rank %u", k);
    }
}

/* As mpirun or srun on two hosts would start them: 4 processes with only the launcher's variables
 * (no RANK/WORLD_SIZE), each host's emulated server from the launcher's numbers, meeting through a
 * rank table. `vars` is a printf format of the launcher's variables for (rank, local rank). */
static void launcher_job(const char *vars)
{
    char path[] = "/tmp/oh_rt_launch_XXXXXX";
    write_table(path, "1.0");
    char cmd[4096] = "", one[512], env[256];
    size_t off = 0;
    for (unsigned r = 0; r < 4; r++) {
        snprintf(env, sizeof env, vars, r, r % 2);
        snprintf(one, sizeof one, "env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u LOCAL_WORLD_SIZE %s "
                 "HCCL_EMU_SERVER_INDEX=%u RANK_TABLE_FILE=%s HCCL_DEBUG=INFO timeout 120 %s ranktable & p%u=$!; ",
                 env, r / 2, path, NET_COMM, r);
        off += (size_t)snprintf(cmd + off, sizeof cmd - off, "%s", one);
    }
    snprintf(cmd + off, sizeof cmd - off, "s=0; for p in $p0 $p1 $p2 $p3; do wait $p || s=1; done; exit $s");
    char full[4200];
    snprintf(full, sizeof full, "sh -c '%s' 2>&1", cmd);
    static char out[1 << 18];
    int st = run_sh(full, out, sizeof out);
    unlink(path);
    cr_expect_eq(st, 0, "a rank failed");
    cr_expect_eq(count_of(out, "net_comm ranktable: PASS"), 4, "every rank checks its collectives");
    cr_expect_eq(count_of(out, "links to 2 peer(s) on other servers use tcp"), 4, "the two servers must use links");
}

Test(net_comm, mpirun_env_ranktable, .timeout = 200)
{
    launcher_job("OMPI_COMM_WORLD_RANK=%u OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_LOCAL_RANK=%u "
                 "OMPI_COMM_WORLD_LOCAL_SIZE=2");
}

Test(net_comm, srun_env_ranktable, .timeout = 200)
{
    launcher_job("SLURM_PROCID=%u SLURM_NTASKS=4 SLURM_LOCALID=%u SLURM_TASKS_PER_NODE=\"2(x2)\"");
}
