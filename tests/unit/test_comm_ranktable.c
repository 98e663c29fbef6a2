/* HcclCommInitClusterInfo from a CANN rank table file: 4 ranks as threads of one process. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#define N 4

static char g_path[64];

/* A port nobody listens on now (the rank table names it for the rendezvous root). */
static unsigned free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    cr_assert(bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    close(fd);
    return ntohs(a.sin_port);
}

static void write_ranktable(void)
{
    snprintf(g_path, sizeof g_path, "/tmp/oh_comm_ranktable_XXXXXX");
    int fd = mkstemp(g_path);
    cr_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "{\"status\": \"completed\", \"version\": \"1.0\", \"server_count\": \"1\", \"server_list\": [\n"
               " {\"server_id\": \"node_0\", \"host_ip\": \"127.0.0.1\", \"device\": [\n");
    unsigned port = free_port();
    for (int i = 0; i < N; i++)
        fprintf(f, "  {\"device_id\": \"%d\", \"device_ip\": \"192.0.2.%d\", \"host_port\": \"%u\", \"rank_id\": \"%d\"}%s\n",
                i, i + 1, port, i, i + 1 < N ? "," : "");
    fprintf(f, " ]}]}\n");
    fclose(f);
}

typedef struct rank_arg {
    uint32_t rank;
    HcclResult init, op;
    aclError sync;
    float got;
} rank_arg;

/* Each rank: set its device, init from the table, AllReduce its rank id. */
static void *rank_main(void *p)
{
    rank_arg *a = p;
    cr_assert_eq(aclrtSetDevice((int32_t)a->rank), ACL_SUCCESS);
    HcclComm comm = NULL;
    a->init = HcclCommInitClusterInfo(g_path, a->rank, &comm);
    if (a->init != HCCL_SUCCESS)
        return NULL;
    aclrtStream s;
    void *buf;
    float v = (float)a->rank;
    cr_assert_eq(aclrtCreateStream(&s), ACL_SUCCESS);
    cr_assert_eq(aclrtMalloc(&buf, sizeof v, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpy(buf, sizeof v, &v, sizeof v, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    a->op = HcclAllReduce(buf, buf, 1, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, s);
    a->sync = aclrtSynchronizeStream(s);
    aclrtMemcpy(&a->got, sizeof a->got, buf, sizeof a->got, ACL_MEMCPY_DEVICE_TO_HOST);
    aclrtFree(buf);
    aclrtDestroyStream(s);
    HcclCommDestroy(comm);
    return NULL;
}

Test(comm_ranktable, four_ranks_from_file)
{
    write_ranktable();
    rank_arg a[N];
    pthread_t th[N];
    for (uint32_t i = 0; i < N; i++) {
        a[i] = (rank_arg){.rank = i};
        pthread_create(&th[i], NULL, rank_main, &a[i]);
    }
    for (uint32_t i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        cr_expect_eq(a[i].init, HCCL_SUCCESS, "rank %u: init returned %d", i, a[i].init);
        cr_expect_eq(a[i].op, HCCL_SUCCESS, "rank %u: AllReduce returned %d", i, a[i].op);
        cr_expect_eq(a[i].sync, ACL_SUCCESS, "rank %u: sync returned %d", i, a[i].sync);
        cr_expect_eq(a[i].got, 6.0f, "rank %u: got %g, want 0+1+2+3", i, a[i].got);
    }
    unlink(g_path);
}

Test(comm_ranktable, rank_outside_the_table)
{
    write_ranktable();
    cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
    HcclComm comm = NULL;
    cr_expect_eq(HcclCommInitClusterInfo(g_path, N, &comm), HCCL_E_PARA);
    cr_expect_eq(HcclCommInitClusterInfo("/nonexistent/ranktable.json", 0, &comm), HCCL_E_OPEN_FILE_FAILURE);
    /* Device 0 is selected, the table gives rank 1 device 1. */
    cr_expect_eq(HcclCommInitClusterInfo(g_path, 1, &comm), HCCL_E_PARA);
    unlink(g_path);
}
