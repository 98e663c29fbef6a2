/* hcclrun: starts N ranks of a program on this host with torchrun-style environment, serves their
 * key-value store, prefixes their output with "[rank R] ", and stops them all when one fails.
 *
 *   hcclrun -n N [--servers S | --servers A+B+...] [--timeout SEC] PROGRAM [ARGS...]
 *   hcclrun --ranktable FILE PROGRAM [ARGS...]
 *   hcclrun -n N --nnodes K --node-rank I --store-addr A --master-port P PROGRAM [ARGS...]  (on each host)
 *
 * --servers emulates several servers on this host: ranks are placed in blocks (S equal ones, or
 * A ranks on server 0, B on server 1, ...), each rank gets HCCL_EMU_SERVER_INDEX of its server and
 * LOCAL_RANK / LOCAL_WORLD_SIZE within it; devices of different servers never map each other's
 * memory (the emulator keys its sharing by namespace and server index), so every byte between
 * them crosses a hal/net link. --ranktable takes the servers and devices from a CANN rank table
 * (and sets CANN's RANK_TABLE_FILE, RANK_ID, RANK_SIZE, DEVICE_ID). --nnodes runs one hcclrun per
 * host: node I's ranks are I*N..I*N+N-1 of K*N, node 0 serves the store at A:P, the others use it.
 * --bind (tools/hcclrun/bind.c) binds each rank to a CPU when there are at least as many ranks as CPUs.
 *
 * One thread, one poll() loop: the ranks' output pipes, the store's sockets and a self-pipe woken
 * by SIGCHLD/SIGINT/SIGTERM. Only the processes it started are ever signalled, by pid. */
#define _GNU_SOURCE /* pipe2 */
#include "hcclrun/hcclrun.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HR_MAX_DEVICES_PER_SERVER 16
#define HR_MAX_SERVERS 64
#define HR_KILL_GRACE_MS 3000
#define HR_EXIT_TIMEOUT 124 /* like timeout(1) */

typedef struct rank_proc {
    pid_t pid;
    int running;
    int status;
    hr_stream out, err;
} rank_proc;

typedef struct job {
    unsigned n;
    int timeout_s;
    char **argv;
    rank_proc *ranks;
    unsigned running;
    int first_fail;        /* exit code to return, 0 while every rank is fine */
    int stopping;          /* SIGTERM sent */
    int64_t kill_at;       /* when stragglers get SIGKILL */
    int64_t deadline;      /* --timeout, or 0 */
    hr_store *store;
    const char *store_addr; /* --store-addr: where the store listens (MASTER_ADDR) */
    unsigned nservers;
    unsigned *server_of;   /* [n] */
    unsigned *local_rank;  /* [n] */
    unsigned server_size[HR_MAX_SERVERS];
    const char *ranktable;  /* --ranktable: its absolute path, or NULL */
    int32_t *device_id;     /* [n] from the rank table, or NULL */
    unsigned nnodes, node_rank; /* --nnodes / --node-rank: hosts of the job, this one's index */
    unsigned master_port;   /* --master-port: the store's fixed port (0: ephemeral) */
    hr_bind bind;           /* --bind (bind.c) */
} job;

static int g_sigpipe[2] = {-1, -1};
static volatile sig_atomic_t g_stop_signal;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void on_signal(int sig)
{
    int saved = errno;
    if (sig != SIGCHLD)
        g_stop_signal = sig;
    char b = 0;
    if (write(g_sigpipe[1], &b, 1) < 0) {
        /* pipe full: a wakeup is already pending */
    }
    errno = saved;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: hcclrun -n N [--servers S | --servers A+B+...] [--timeout SEC] [--store-addr IPV4] PROGRAM "
               "[ARGS...]\n"
               "  Starts N ranks of PROGRAM with RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,\n"
               "  MASTER_PORT and HCCL_EMU_* set; prefixes their output with \"[rank R] \"; exits with the first\n"
               "  failing rank's status after stopping the others (124 on --timeout).\n"
               "  --servers S splits the N ranks into S emulated servers of N/S ranks (in rank order);\n"
               "  --servers 3+2+3 gives the ranks of each server (their sum is N; -n may then be omitted).\n"
               "  --store-addr: the address the store listens on and MASTER_ADDR (default 127.0.0.1).\n"
               "  --ranktable FILE: ranks, emulated servers and devices from a CANN rank table (1.0 or 1.2).\n"
               "  --nnodes K --node-rank I --master-port P: one hcclrun per host; node I starts ranks I*N..;\n"
               "  node 0 serves the store on --store-addr:P, the other nodes' ranks use it.\n"
               "  --bind auto|none|core: rank r's threads on the r-th allowed CPU (modulo their count); auto\n"
               "  (the default) binds when this hcclrun starts at least as many ranks as there are CPUs.\n");
}

static int parse_uint_arg(const char *s, const char *what, unsigned max, unsigned *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *end || s[0] == '-' || v == 0 || v > max) {
        fprintf(stderr, "[hcclrun] %s must be an integer in [1, %u], got '%s'\n", what, max, s);
        return -1;
    }
    *out = (unsigned)v;
    return 0;
}

/* "S" (equal split of -n) or "A+B+..." (ranks per server); fills nservers and server_size. */
static int parse_servers(const char *spec, job *j)
{
    j->nservers = 1;
    if (!spec) {
        j->server_size[0] = j->n;
        return 0;
    }
    if (!strchr(spec, '+')) {
        unsigned s;
        if (parse_uint_arg(spec, "--servers", HR_MAX_SERVERS, &s) < 0)
            return -1;
        if (!j->n || j->n % s) {
            fprintf(stderr, "[hcclrun] --servers %u: -n (%u) must be a multiple of it; use --servers A+B+... for an "
                            "unequal split\n", s, j->n);
            return -1;
        }
        j->nservers = s;
        for (unsigned i = 0; i < s; i++)
            j->server_size[i] = j->n / s;
        return 0;
    }
    unsigned total = 0, k = 0;
    for (const char *p = spec; *p; k++) {
        char buf[16];
        size_t len = strcspn(p, "+");
        if (k >= HR_MAX_SERVERS || len == 0 || len >= sizeof buf) {
            fprintf(stderr, "[hcclrun] --servers '%s': expected ranks per server like 3+2+3 (at most %d servers)\n",
                    spec, HR_MAX_SERVERS);
            return -1;
        }
        memcpy(buf, p, len);
        buf[len] = 0;
        if (parse_uint_arg(buf, "ranks of a server in --servers", HR_MAX_DEVICES_PER_SERVER, &j->server_size[k]) < 0)
            return -1;
        total += j->server_size[k];
        p += len;
        if (*p == '+' && !*++p) {
            fprintf(stderr, "[hcclrun] --servers '%s': trailing '+'\n", spec);
            return -1;
        }
    }
    if (j->n && j->n != total) {
        fprintf(stderr, "[hcclrun] --servers %s places %u ranks but -n is %u\n", spec, total, j->n);
        return -1;
    }
    j->n = total;
    j->nservers = k;
    return 0;
}

/* Ranks in blocks, server by server: server_of and local_rank of every rank. */
static int place_ranks(job *j)
{
    for (unsigned s = 0; s < j->nservers; s++)
        if (j->server_size[s] > HR_MAX_DEVICES_PER_SERVER) {
            fprintf(stderr, "[hcclrun] -n %u: one emulated server holds at most %d devices; use -n %d or fewer per "
                            "server (--servers)\n", j->server_size[s], HR_MAX_DEVICES_PER_SERVER,
                    HR_MAX_DEVICES_PER_SERVER);
            return -1;
        }
    j->server_of = calloc(j->n, sizeof *j->server_of);
    j->local_rank = calloc(j->n, sizeof *j->local_rank);
    if (!j->server_of || !j->local_rank) {
        fprintf(stderr, "[hcclrun] out of memory\n");
        return -1;
    }
    unsigned r = 0;
    for (unsigned s = 0; s < j->nservers; s++)
        for (unsigned l = 0; l < j->server_size[s]; l++, r++) {
            j->server_of[r] = s;
            j->local_rank[r] = l;
        }
    return 0;
}

static int parse_node_rank(const char *s, unsigned *out)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (*end || !*s || s[0] == '-' || v >= HR_MAX_SERVERS) {
        fprintf(stderr, "[hcclrun] --node-rank must be an integer in [0, %d), got '%s'\n", HR_MAX_SERVERS, s);
        return -1;
    }
    *out = (unsigned)v;
    return 0;
}

/* --ranktable: the table gives the ranks, servers and devices (not with --servers or -n). */
static int table_servers(job *j, const char *servers)
{
    static char path[4096];
    if (servers || j->n || j->nnodes > 1) {
        fprintf(stderr, "[hcclrun] --ranktable gives the ranks and servers: leave out -n, --servers and --nnodes\n");
        return -1;
    }
    if (!realpath(j->ranktable, path)) {
        fprintf(stderr, "[hcclrun] --ranktable %s: %s\n", j->ranktable, strerror(errno));
        return -1;
    }
    j->ranktable = path;
    return hr_table_place(path, HR_MAX_SERVERS, HR_MAX_DEVICES_PER_SERVER, &j->n, &j->nservers, j->server_size,
                          &j->device_id);
}

/* Several hosts: each needs its place, and all need one store at a port known in advance. */
static int check_nodes(job *j)
{
    if (!j->nnodes)
        j->nnodes = 1;
    if (j->node_rank >= j->nnodes) {
        fprintf(stderr, "[hcclrun] --node-rank %u must be below --nnodes %u\n", j->node_rank, j->nnodes);
        return -1;
    }
    if (j->nnodes > 1 && !j->master_port) {
        fprintf(stderr, "[hcclrun] --nnodes %u needs --master-port (the same on every host) and --store-addr (node "
                        "0's address, reachable from every host)\n", j->nnodes);
        return -1;
    }
    return 0;
}

static int parse_args(int argc, char **argv, job *j)
{
    static const struct option opts[] = {{"nproc", required_argument, 0, 'n'}, {"servers", required_argument, 0, 's'},
                                         {"timeout", required_argument, 0, 't'}, {"help", no_argument, 0, 'h'},
                                         {"store-addr", required_argument, 0, 'a'},
                                         {"ranktable", required_argument, 0, 'r'}, {"nnodes", required_argument, 0, 'N'},
                                         {"node-rank", required_argument, 0, 'I'},
                                         {"master-port", required_argument, 0, 'P'},
                                         {"bind", required_argument, 0, 'B'}, {0, 0, 0, 0}};
    unsigned t = 0;
    const char *servers = NULL;
    int c;
    j->n = 0;
    j->store_addr = "127.0.0.1";
    while ((c = getopt_long(argc, argv, "+n:h", opts, NULL)) != -1) {
        if (c == 'n' && parse_uint_arg(optarg, "-n", 4096, &j->n) < 0)
            return -1;
        if (c == 's')
            servers = optarg;
        if (c == 'a')
            j->store_addr = optarg;
        if (c == 't' && parse_uint_arg(optarg, "--timeout", 7 * 86400, &t) < 0)
            return -1;
        if (c == 'r')
            j->ranktable = optarg;
        if (c == 'N' && parse_uint_arg(optarg, "--nnodes", HR_MAX_SERVERS, &j->nnodes) < 0)
            return -1;
        if (c == 'I' && parse_node_rank(optarg, &j->node_rank) < 0)
            return -1;
        if (c == 'P' && parse_uint_arg(optarg, "--master-port", 65535, &j->master_port) < 0)
            return -1;
        if (c == 'B' && hr_bind_parse(optarg, &j->bind) < 0) {
            fprintf(stderr, "[hcclrun] --bind must be auto, none or core, not '%s'\n", optarg);
            return -1;
        }
        if (c == 'h') {
            usage(stdout);
            exit(0);
        }
        if (c == '?') {
            usage(stderr);
            return -1;
        }
    }
    if (j->ranktable ? table_servers(j, servers) < 0 : parse_servers(servers, j) < 0)
        return -1;
    if (check_nodes(j) < 0)
        return -1;
    if (!j->n || optind >= argc) {
        fprintf(stderr, "[hcclrun] %s\n", !j->n ? "-n N is required" : "no PROGRAM given");
        usage(stderr);
        return -1;
    }
    j->timeout_s = (int)t;
    j->argv = argv + optind;
    return place_ranks(j);
}

/* Job-wide environment, set once in hcclrun itself so every child inherits it. */
static void set_job_env(const job *j, uint32_t store_port)
{
    char buf[64];
    setenv("MASTER_ADDR", j->store_addr, 1);
    snprintf(buf, sizeof buf, "%u", store_port);
    setenv("MASTER_PORT", buf, 1);
    snprintf(buf, sizeof buf, "%u", j->n * j->nnodes);
    setenv("WORLD_SIZE", buf, 1);
    snprintf(buf, sizeof buf, "%u", j->nnodes);
    setenv("NNODES", buf, 1);
    unsigned most = 8;
    for (unsigned s = 0; s < j->nservers; s++)
        most = j->server_size[s] > most ? j->server_size[s] : most;
    for (unsigned r = 0; j->device_id && r < j->n; r++)
        most = (unsigned)j->device_id[r] + 1 > most ? (unsigned)j->device_id[r] + 1 : most;
    if (j->ranktable) { /* CANN's variables of rank table jobs */
        setenv("RANK_TABLE_FILE", j->ranktable, 1);
        snprintf(buf, sizeof buf, "%u", j->n);
        setenv("RANK_SIZE", buf, 1);
    }
    snprintf(buf, sizeof buf, "%u", most);
    setenv("HCCL_EMU_DEVICES", buf, 1);
    const char *ns = getenv("HCCL_EMU_NAMESPACE");
    if (!ns || !*ns) {
        /* Unique per job so two jobs on one host never share emulated devices. */
        uint32_t r = 0;
        if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
            r = (uint32_t)now_ms();
        snprintf(buf, sizeof buf, "hcclrun-%d-%08x", (int)getpid(), r);
        setenv("HCCL_EMU_NAMESPACE", buf, 1);
    }
}

static int make_pipe(int p[2])
{
    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    /* Only our read end is non-blocking: the rank's stdout must stay an ordinary blocking pipe. */
    return fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK);
}

static void child_exec(const job *j, unsigned r, int out[2], int err[2])
{
    char buf[32];
    signal(SIGPIPE, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGCHLD, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0)
        _exit(127);
    snprintf(buf, sizeof buf, "%u", j->node_rank * j->n + r);
    setenv("RANK", buf, 1);
    if (j->ranktable) {
        setenv("RANK_ID", buf, 1);
        snprintf(buf, sizeof buf, "%d", (int)j->device_id[r]);
        setenv("DEVICE_ID", buf, 1);
    }
    snprintf(buf, sizeof buf, "%u", j->local_rank[r]);
    setenv("LOCAL_RANK", buf, 1);
    snprintf(buf, sizeof buf, "%u", j->server_size[j->server_of[r]]);
    setenv("LOCAL_WORLD_SIZE", buf, 1);
    snprintf(buf, sizeof buf, "%u", j->node_rank * j->nservers + j->server_of[r]);
    setenv("HCCL_EMU_SERVER_INDEX", buf, 1);
    setenv("GROUP_RANK", buf, 1); /* torchrun's name for the node index */
    hr_bind_self(j->bind, r, j->n);
    execvp(j->argv[0], j->argv);
    fprintf(stderr, "[hcclrun] cannot run '%s': %s\n", j->argv[0], strerror(errno));
    _exit(127);
}

static int spawn(job *j, unsigned r)
{
    int out[2], err[2];
    if (make_pipe(out) < 0 || make_pipe(err) < 0) {
        fprintf(stderr, "[hcclrun] cannot create pipes for rank %u: %s\n", r, strerror(errno));
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "[hcclrun] cannot start rank %u: fork: %s\n", r, strerror(errno));
        return -1;
    }
    if (pid == 0)
        child_exec(j, r, out, err);
    close(out[1]);
    close(err[1]);
    rank_proc *p = &j->ranks[r];
    p->pid = pid;
    p->running = 1;
    hr_stream_init(&p->out, out[0], 1, j->node_rank * j->n + r);
    hr_stream_init(&p->err, err[0], 2, j->node_rank * j->n + r);
    j->running++;
    return 0;
}

static void signal_all(job *j, int sig)
{
    for (unsigned r = 0; r < j->n; r++)
        if (j->ranks[r].running)
            kill(j->ranks[r].pid, sig);
}

static void stop_all(job *j, int code)
{
    if (!j->first_fail)
        j->first_fail = code;
    if (j->stopping)
        return;
    j->stopping = 1;
    j->kill_at = now_ms() + HR_KILL_GRACE_MS;
    signal_all(j, SIGTERM);
}

static int exit_code(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

static void reap(job *j)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        for (unsigned r = 0; r < j->n; r++) {
            rank_proc *p = &j->ranks[r];
            if (p->pid != pid || !p->running)
                continue;
            p->running = 0;
            p->status = status;
            j->running--;
            int code = exit_code(status);
            if (code && !j->stopping) {
                fprintf(stderr, "[hcclrun] rank %u (pid %d) %s %d; stopping the other ranks\n",
                        j->node_rank * j->n + r, (int)pid, WIFSIGNALED(status) ? "was killed by signal" : "exited with status",
                        WIFSIGNALED(status) ? WTERMSIG(status) : code);
                stop_all(j, code);
            }
        }
    }
}

/* Deadlines: --timeout, then SIGKILL for ranks that ignore SIGTERM. */
static int poll_timeout(job *j)
{
    int64_t now = now_ms(), until = -1;
    if (j->deadline && !j->stopping && now >= j->deadline) {
        fprintf(stderr, "[hcclrun] --timeout %d s expired with %u rank(s) still running; stopping them\n",
                j->timeout_s, j->running);
        stop_all(j, HR_EXIT_TIMEOUT);
    }
    if (j->stopping && now >= j->kill_at) {
        signal_all(j, SIGKILL);
        j->kill_at = now + 3600 * 1000; /* once; SIGKILL cannot be ignored */
    }
    if (j->deadline && !j->stopping)
        until = j->deadline;
    if (j->stopping)
        until = j->kill_at;
    return until < 0 ? -1 : (int)(until > now ? until - now : 0);
}

static void handle_wakeup(job *j)
{
    char buf[64];
    while (read(g_sigpipe[0], buf, sizeof buf) > 0) {
    }
    reap(j);
    if (g_stop_signal && !j->stopping) {
        fprintf(stderr, "[hcclrun] got signal %d; stopping all ranks\n", (int)g_stop_signal);
        stop_all(j, 128 + g_stop_signal);
    }
}

static void event_loop(job *j)
{
    size_t cap = 1 + 2 * j->n + hr_store_npoll(j->store) + 16;
    struct pollfd *p = malloc(cap * sizeof *p);
    while (p && j->running > 0) {
        size_t need = 1 + 2 * j->n + hr_store_npoll(j->store);
        if (need > cap) {
            struct pollfd *q = realloc(p, need * 2 * sizeof *q);
            if (!q)
                break;
            p = q;
            cap = need * 2;
        }
        p[0] = (struct pollfd){.fd = g_sigpipe[0], .events = POLLIN};
        for (unsigned r = 0; r < j->n; r++) {
            p[1 + 2 * r] = (struct pollfd){.fd = j->ranks[r].out.fd, .events = POLLIN};
            p[2 + 2 * r] = (struct pollfd){.fd = j->ranks[r].err.fd, .events = POLLIN};
        }
        size_t ns = hr_store_npoll(j->store), base = 1 + 2 * (size_t)j->n;
        hr_store_fill(j->store, p + base);
        int n = poll(p, base + ns, poll_timeout(j));
        if (n < 0 && errno != EINTR)
            break;
        for (unsigned r = 0; n > 0 && r < j->n; r++) {
            if (p[1 + 2 * r].revents)
                hr_stream_read(&j->ranks[r].out);
            if (p[2 + 2 * r].revents)
                hr_stream_read(&j->ranks[r].err);
        }
        if (n > 0)
            hr_store_handle(j->store, p + base, ns);
        if (n > 0 && p[0].revents)
            handle_wakeup(j);
    }
    free(p);
}

static int install_signals(void)
{
    if (pipe2(g_sigpipe, O_CLOEXEC | O_NONBLOCK) < 0)
        return -1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigemptyset(&sa.sa_mask);
    signal(SIGPIPE, SIG_IGN);
    return (sigaction(SIGCHLD, &sa, NULL) || sigaction(SIGINT, &sa, NULL) || sigaction(SIGTERM, &sa, NULL)) ? -1 : 0;
}

int main(int argc, char **argv)
{
    job j;
    memset(&j, 0, sizeof j);
    if (parse_args(argc, argv, &j) < 0)
        return 2;
    uint32_t port = j.master_port;
    j.ranks = calloc(j.n, sizeof *j.ranks);
    /* Several hosts: node 0 serves the store, the others' ranks reach it at --store-addr. */
    if (!j.ranks || install_signals() < 0 ||
        (j.node_rank == 0 && !(j.store = hr_store_open(j.store_addr, &port)))) {
        fprintf(stderr, "[hcclrun] setup failed: %s\n", strerror(errno));
        return 1;
    }
    set_job_env(&j, port);
    if (j.timeout_s)
        j.deadline = now_ms() + (int64_t)j.timeout_s * 1000;
    for (unsigned r = 0; r < j.n; r++) {
        if (spawn(&j, r) < 0) {
            stop_all(&j, 1);
            break;
        }
    }
    event_loop(&j);
    for (unsigned r = 0; r < j.n; r++) {
        hr_stream_drain(&j.ranks[r].out);
        hr_stream_drain(&j.ranks[r].err);
    }
    hr_store_close(j.store);
    free(j.ranks);
    free(j.server_of);
    free(j.local_rank);
    free(j.device_id);
    return j.first_fail;
}
