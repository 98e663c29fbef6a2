/* Rank table loading (CANN JSON 1.0 / 1.2): valid files, each invalid case with its code, and a
 * rendezvous driven by a rank table. Files are written to a temp dir by each test. */
#include <criterion/criterion.h>

#include "runtime/bootstrap/bootstrap.h"
#include "runtime/ranktable.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static char g_path[64];

static const char *write_table(const char *json)
{
    snprintf(g_path, sizeof g_path, "/tmp/oh_ranktable_XXXXXX");
    int fd = mkstemp(g_path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, json, strlen(json)), (ssize_t)strlen(json));
    close(fd);
    return g_path;
}

static HcclResult load(const char *json, rt_ranktable **t)
{
    HcclResult rc = rt_ranktable_load(write_table(json), t);
    unlink(g_path);
    return rc;
}

#define DEV(d, r, port) "{\"device_id\":\"" d "\",\"device_ip\":\"192.168.1." d "\",\"device_port\":\"16667\"," \
                        "\"host_port\":\"" port "\",\"rank_id\":\"" r "\"}"

static const char *k_v10 =
    "{\"status\":\"completed\",\"version\":\"1.0\",\"server_count\":\"2\",\"server_list\":["
    "{\"server_id\":\"node_0\",\"host_ip\":\"172.16.0.110\",\"device\":[" DEV("0", "0", "16666") "," DEV("1", "1", "16667") "]},"
    "{\"server_id\":\"node_1\",\"host_ip\":\"172.16.0.111\",\"device\":[" DEV("0", "2", "16666") "," DEV("1", "3", "16667") "]}]}";

Test(ranktable, valid_1_0_two_servers)
{
    rt_ranktable *t = NULL;
    cr_assert_eq(load(k_v10, &t), HCCL_SUCCESS);
    cr_assert_str_eq(t->version, "1.0");
    cr_assert_eq(t->nranks, 4);
    cr_assert_eq(t->nservers, 2);
    cr_assert_eq(t->nsuper_pods, 0);
    const rt_rank_entry *e = &t->ranks[3];
    cr_assert_eq(e->rank_id, 3);
    cr_assert_eq(e->server_index, 1);
    cr_assert_str_eq(e->server_id, "node_1");
    cr_assert_eq(e->device_id, 1);
    cr_assert_str_eq(e->host_ip, "172.16.0.111");
    cr_assert_eq(e->host_port, 16667);
    cr_assert_str_eq(e->device_ip, "192.168.1.1");
    cr_assert_eq(e->device_port, 16667);
    cr_assert_eq(e->super_device_id, -1);
    cr_assert(t->server_first[1] == 2 && t->server_ranks[1] == 2);
    rt_ranktable_free(t);
}

#define SDEV(d, r, sd) "{\"device_id\":\"" d "\",\"super_device_id\":\"" sd "\",\"rank_id\":\"" r "\"}"
#define SRV(id, devs) "{\"server_id\":\"" id "\",\"device\":[" devs "]}"
#define POD(id, srvs) "{\"super_pod_id\":\"" id "\",\"server_list\":[" srvs "]}"

static const char *k_v12 =
    "{\"status\":\"completed\",\"version\":\"1.2\",\"server_list\":["
    SRV("a", SDEV("0", "0", "100") "," SDEV("1", "1", "101")) ","
    SRV("b", SDEV("0", "2", "102") "," SDEV("1", "3", "103")) ","
    SRV("c", SDEV("0", "4", "200") "," SDEV("1", "5", "201")) "],"
    "\"super_pod_list\":[" POD("0", "{\"server_id\":\"a\"},{\"server_id\":\"b\"}") ","
    POD("1", "{\"server_id\":\"c\"}") "]}";

Test(ranktable, valid_1_2_superpods)
{
    rt_ranktable *t = NULL;
    cr_assert_eq(load(k_v12, &t), HCCL_SUCCESS);
    cr_assert_eq(t->nranks, 6);
    cr_assert_eq(t->nservers, 3);
    cr_assert_eq(t->nsuper_pods, 2);
    cr_assert_str_eq(rt_ranktable_super_pod_id(t, 1), "1");
    cr_assert_eq(t->ranks[3].super_pod_index, 0);
    cr_assert_eq(t->ranks[4].super_pod_index, 1);
    cr_assert_eq(t->ranks[5].super_device_id, 201);
    cr_assert_str_eq(t->ranks[0].host_ip, "");
    rt_ranktable_free(t);
}

static void expect(const char *json, HcclResult rc)
{
    rt_ranktable *t = (rt_ranktable *)1;
    cr_assert_eq(load(json, &t), rc, "expected %d for %s", rc, json);
    cr_assert_null(t);
}

#define HDR(ver, count) "{\"status\":\"completed\",\"version\":\"" ver "\",\"server_count\":\"" count "\","

Test(ranktable, missing_file)
{
    rt_ranktable *t;
    cr_assert_eq(rt_ranktable_load("/nonexistent/ranktable.json", &t), HCCL_E_OPEN_FILE_FAILURE);
    cr_assert_eq(rt_ranktable_load(NULL, &t), HCCL_E_PTR);
}

Test(ranktable, malformed_json) { expect("{\"status\": \"completed\", \"version\": ", HCCL_E_PARA); }
Test(ranktable, not_completed)
{
    expect("{\"status\":\"initializing\",\"version\":\"1.0\",\"server_count\":\"1\",\"server_list\":["
           SRV("a", SDEV("0", "0", "1")) "]}", HCCL_E_PARA);
}
Test(ranktable, unknown_version) { expect(HDR("9.9", "1") "\"server_list\":[" SRV("a", SDEV("0", "0", "1")) "]}", HCCL_E_PARA); }
Test(ranktable, unsupported_version) { expect(HDR("2.0", "1") "\"server_list\":[" SRV("a", SDEV("0", "0", "1")) "]}", HCCL_E_NOT_SUPPORT); }
Test(ranktable, missing_server_count_in_1_0)
{
    expect("{\"status\":\"completed\",\"version\":\"1.0\",\"server_list\":[" SRV("a", SDEV("0", "0", "1")) "]}",
           HCCL_E_PARA);
}
Test(ranktable, server_count_mismatch) { expect(HDR("1.0", "2") "\"server_list\":[" SRV("a", SDEV("0", "0", "1")) "]}", HCCL_E_PARA); }
Test(ranktable, missing_rank_id)
{
    expect(HDR("1.0", "1") "\"server_list\":[{\"server_id\":\"a\",\"device\":[{\"device_id\":\"0\"}]}]}", HCCL_E_PARA);
}
Test(ranktable, missing_device_id)
{
    expect(HDR("1.0", "1") "\"server_list\":[{\"server_id\":\"a\",\"device\":[{\"rank_id\":\"0\"}]}]}", HCCL_E_PARA);
}
Test(ranktable, missing_server_id)
{
    expect(HDR("1.0", "1") "\"server_list\":[{\"device\":[" SDEV("0", "0", "1") "]}]}", HCCL_E_PARA);
}
Test(ranktable, rank_out_of_range)
{
    expect(HDR("1.0", "1") "\"server_list\":[" SRV("a", SDEV("0", "0", "1") "," SDEV("1", "2", "1")) "]}", HCCL_E_PARA);
}
Test(ranktable, duplicate_rank)
{
    expect(HDR("1.0", "1") "\"server_list\":[" SRV("a", SDEV("0", "0", "1") "," SDEV("1", "0", "1")) "]}", HCCL_E_PARA);
}
Test(ranktable, non_numeric_rank)
{
    expect(HDR("1.0", "1") "\"server_list\":[" SRV("a", SDEV("0", "x", "1")) "]}", HCCL_E_PARA);
}
Test(ranktable, duplicate_server_id)
{
    expect(HDR("1.0", "2") "\"server_list\":[" SRV("a", SDEV("0", "0", "1")) "," SRV("a", SDEV("0", "1", "1")) "]}",
           HCCL_E_PARA);
}
Test(ranktable, ranks_interleaved_across_servers)
{
    expect(HDR("1.0", "2") "\"server_list\":[" SRV("a", SDEV("0", "0", "1") "," SDEV("1", "2", "1")) ","
           SRV("b", SDEV("0", "1", "1") "," SDEV("1", "3", "1")) "]}", HCCL_E_PARA);
}
Test(ranktable, superpod_servers_interleaved)
{
    expect("{\"status\":\"completed\",\"version\":\"1.2\",\"server_list\":["
           SRV("a", SDEV("0", "0", "1")) "," SRV("c", SDEV("0", "1", "2")) "," SRV("b", SDEV("0", "2", "3")) "],"
           "\"super_pod_list\":[" POD("0", "{\"server_id\":\"a\"},{\"server_id\":\"b\"}") ","
           POD("1", "{\"server_id\":\"c\"}") "]}", HCCL_E_PARA);
}
Test(ranktable, superpod_unknown_server)
{
    expect("{\"status\":\"completed\",\"version\":\"1.2\",\"server_list\":[" SRV("a", SDEV("0", "0", "1")) "],"
           "\"super_pod_list\":[" POD("0", "{\"server_id\":\"a\"},{\"server_id\":\"zz\"}") "]}", HCCL_E_PARA);
}
Test(ranktable, superpod_missing_super_device_id)
{
    expect("{\"status\":\"completed\",\"version\":\"1.2\",\"server_list\":["
           "{\"server_id\":\"a\",\"device\":[{\"device_id\":\"0\",\"rank_id\":\"0\"}]}],"
           "\"super_pod_list\":[" POD("0", "{\"server_id\":\"a\"}") "]}", HCCL_E_PARA);
}

/* ---- rendezvous from a rank table ---- */

typedef struct rt_arg {
    const rt_ranktable *t;
    uint32_t rank;
    HcclResult rc;
    uint32_t got[4];
} rt_arg;

static void *rt_rank(void *p)
{
    rt_arg *a = p;
    HcclRootInfo info;
    a->rc = rt_bootstrap_info_from_ranktable(a->t, a->rank, &info);
    if (a->rc == HCCL_SUCCESS)
        a->rc = rt_bootstrap_allgather(&info, a->t->nranks, a->rank, &a->rank, sizeof a->rank, a->got);
    return NULL;
}

Test(ranktable, rendezvous_from_ranktable)
{
    setenv("HCCL_CONNECT_TIMEOUT", "10", 1);
    int fd;
    uint32_t port;
    cr_assert_eq(rt_sock_listen(AF_INET, "127.0.0.1", 0, &fd, &port), 0);
    close(fd); /* a port free a moment ago: rank 0 binds it */
    char json[2048];
    snprintf(json, sizeof json, HDR("1.0", "2") "\"server_list\":["
             "{\"server_id\":\"s0\",\"host_ip\":\"127.0.0.1\",\"device\":[{\"device_id\":\"0\",\"rank_id\":\"0\","
             "\"host_port\":\"%u\"},{\"device_id\":\"1\",\"rank_id\":\"1\"}]},"
             "{\"server_id\":\"s1\",\"host_ip\":\"127.0.0.1\",\"device\":[{\"device_id\":\"0\",\"rank_id\":\"2\"},"
             "{\"device_id\":\"1\",\"rank_id\":\"3\"}]}]}", port);
    rt_ranktable *t;
    cr_assert_eq(load(json, &t), HCCL_SUCCESS);
    pthread_t th[4];
    rt_arg a[4];
    for (uint32_t r = 0; r < 4; r++) {
        a[r] = (rt_arg){t, 3 - r, -1, {0}}; /* rank 0 starts last: the others retry connecting */
        pthread_create(&th[r], NULL, rt_rank, &a[r]);
    }
    for (int r = 0; r < 4; r++)
        pthread_join(th[r], NULL);
    for (int r = 0; r < 4; r++) {
        cr_assert_eq(a[r].rc, HCCL_SUCCESS);
        for (uint32_t q = 0; q < 4; q++)
            cr_assert_eq(a[r].got[q], q);
    }
    rt_ranktable_free(t);
}
