/* Bootstrap configuration: interface choice (HCCL_IF_IP, HCCL_SOCKET_IFNAME, HCCL_SOCKET_FAMILY),
 * ports (HCCL_IF_BASE_PORT), timeouts, and the public entry points' argument checks. */
#include <criterion/criterion.h>

#include <hccl/hccl_comm.h>
#include <hccl/hccl_ext.h>

#include "runtime/bootstrap/bootstrap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void setup(void)
{
    setenv("HCCL_CONNECT_TIMEOUT", "5", 1);
    unsetenv("HCCL_IF_IP");
    unsetenv("HCCL_SOCKET_IFNAME");
    unsetenv("HCCL_SOCKET_FAMILY");
    unsetenv("HCCL_IF_BASE_PORT");
}

Test(bootstrap_env, ifname_spec_syntax)
{
    cr_assert(rt_iface_match("eth,enp", "eth0"));
    cr_assert(rt_iface_match("eth,enp", "enp3s0"));
    cr_assert(!rt_iface_match("eth,enp", "lo"));
    cr_assert(!rt_iface_match("^eth", "eth1"));
    cr_assert(rt_iface_match("^eth", "ib0"));
    cr_assert(rt_iface_match("=eth0", "eth0"));
    cr_assert(!rt_iface_match("=eth0", "eth01"));
    cr_assert(!rt_iface_match("^=eth0", "eth0"));
    cr_assert(rt_iface_match("^=eth0", "eth01"));
}

static const rt_iface k_ifaces[] = {
    {"lo", AF_INET, "127.0.0.1", 1},    {"docker0", AF_INET, "172.17.0.1", 0}, {"eth1", AF_INET, "10.0.1.2", 0},
    {"eth0", AF_INET, "10.0.0.2", 0},   {"ib0", AF_INET, "192.168.0.2", 0},    {"lo", AF_INET6, "::1", 1},
    {"eth0", AF_INET6, "fd00::2", 0},
};
#define NIF (sizeof k_ifaces / sizeof k_ifaces[0])

Test(bootstrap_env, default_pick_prefers_real_nics_by_name)
{
    rt_iface got;
    cr_assert_eq(rt_iface_pick(k_ifaces, NIF, NULL, AF_INET, &got), 0);
    cr_assert_str_eq(got.name, "eth0");
    cr_assert_eq(rt_iface_pick(k_ifaces, NIF, NULL, AF_INET6, &got), 0);
    cr_assert_str_eq(got.ip, "fd00::2");
    /* docker beats loopback when nothing else is up */
    cr_assert_eq(rt_iface_pick(k_ifaces, 2, NULL, AF_INET, &got), 0);
    cr_assert_str_eq(got.name, "docker0");
}

Test(bootstrap_env, spec_pick)
{
    rt_iface got;
    cr_assert_eq(rt_iface_pick(k_ifaces, NIF, "ib", AF_INET, &got), 0);
    cr_assert_str_eq(got.name, "ib0");
    cr_assert_eq(rt_iface_pick(k_ifaces, NIF, "^eth,docker", AF_INET, &got), 0);
    cr_assert_str_eq(got.name, "ib0");
    cr_assert_eq(rt_iface_pick(k_ifaces, NIF, "=lo", AF_INET, &got), 0);
    cr_assert_str_eq(got.ip, "127.0.0.1");
    cr_assert_eq(rt_iface_pick(k_ifaces, NIF, "wlan", AF_INET, &got), -1);
}

Test(bootstrap_env, if_ip_and_family, .init = setup)
{
    int fam;
    char ip[RT_IP_LEN];
    setenv("HCCL_IF_IP", "127.0.0.1", 1);
    cr_assert_eq(rt_boot_pick_address(&fam, ip), HCCL_SUCCESS);
    cr_assert_eq(fam, AF_INET);
    cr_assert_str_eq(ip, "127.0.0.1");
    setenv("HCCL_IF_IP", "::1", 1);
    cr_assert_eq(rt_boot_pick_address(&fam, ip), HCCL_SUCCESS);
    cr_assert_eq(fam, AF_INET6);
    setenv("HCCL_IF_IP", "not-an-ip", 1);
    cr_assert_eq(rt_boot_pick_address(&fam, ip), HCCL_E_PARA);
    unsetenv("HCCL_IF_IP");
    setenv("HCCL_SOCKET_FAMILY", "AF_UNIX", 1);
    cr_assert_eq(rt_boot_pick_address(&fam, ip), HCCL_E_PARA);
    unsetenv("HCCL_SOCKET_FAMILY");
    setenv("HCCL_SOCKET_IFNAME", "=no_such_nic0", 1);
    cr_assert_eq(rt_boot_pick_address(&fam, ip), HCCL_E_PARA);
    setenv("HCCL_SOCKET_IFNAME", "=lo", 1);
    cr_assert_eq(rt_boot_pick_address(&fam, ip), HCCL_SUCCESS);
    cr_assert_str_eq(ip, "127.0.0.1");
}

Test(bootstrap_env, timeout_env, .init = setup)
{
    unsetenv("HCCL_CONNECT_TIMEOUT");
    cr_assert_eq(rt_bootstrap_timeout_s(), 120);
    setenv("HCCL_CONNECT_TIMEOUT", "900", 1);
    cr_assert_eq(rt_bootstrap_timeout_s(), 900);
    setenv("HCCL_CONNECT_TIMEOUT", "soon", 1);
    cr_assert_eq(rt_bootstrap_timeout_s(), 120);
}

Test(bootstrap_env, base_port_skips_busy_ports, .init = setup)
{
    setenv("HCCL_IF_IP", "127.0.0.1", 1);
    /* Hold an ephemeral port and make it the base: the root must move on to another of its 32. */
    uint32_t base;
    int busy;
    cr_assert_eq(rt_sock_listen(AF_INET, "127.0.0.1", 0, &busy, &base), 0);
    if (base > 65520)
        cr_skip_test("ephemeral port %u is above HCCL_IF_BASE_PORT's range", base);
    char env[16];
    snprintf(env, sizeof env, "%u", base);
    setenv("HCCL_IF_BASE_PORT", env, 1);
    HcclRootInfo info;
    cr_assert_eq(rt_bootstrap_root_listen(&info), HCCL_SUCCESS);
    rt_root_info ri;
    cr_assert_eq(rt_boot_info_unpack(&info, &ri, 0), HCCL_SUCCESS);
    cr_assert(ri.port > base && ri.port < base + 32, "port %u outside (%u, %u)", ri.port, base, base + 32);
    close(busy);
    char blob[4] = "abc", all[4];
    cr_assert_eq(rt_bootstrap_allgather(&info, 1, 0, blob, 4, all), HCCL_SUCCESS);
    cr_assert_str_eq(all, "abc");
}

Test(bootstrap_env, bad_base_port, .init = setup)
{
    setenv("HCCL_IF_IP", "127.0.0.1", 1);
    setenv("HCCL_IF_BASE_PORT", "80", 1);
    HcclRootInfo info;
    cr_assert_eq(rt_bootstrap_root_listen(&info), HCCL_E_PARA);
    setenv("HCCL_IF_BASE_PORT", "65530", 1);
    cr_assert_eq(rt_bootstrap_root_listen(&info), HCCL_E_PARA);
}

Test(bootstrap_env, if_ip_not_local, .init = setup)
{
    setenv("HCCL_IF_IP", "198.51.100.77", 1); /* TEST-NET-2: never assigned to this host */
    HcclRootInfo info;
    cr_assert_eq(rt_bootstrap_root_listen(&info), HCCL_E_PARA);
}

Test(bootstrap_env, get_root_info_api, .init = setup)
{
    setenv("HCCL_IF_IP", "127.0.0.1", 1);
    cr_assert_eq(HcclGetRootInfo(NULL), HCCL_E_PTR);
    HcclRootInfo info;
    cr_assert_eq(HcclGetRootInfo(&info), HCCL_SUCCESS);
    char desc[256];
    cr_assert(strstr(rt_bootstrap_describe(&info, desc, sizeof desc), "127.0.0.1:"));
    char blob[8] = "x", all[8];
    cr_assert_eq(rt_bootstrap_allgather(&info, 1, 0, blob, 8, all), HCCL_SUCCESS);
}

Test(bootstrap_env, launch_env, .init = setup)
{
    uint32_t r = 9, w = 9, lr = 9, lw = 9;
    unsetenv("RANK");
    unsetenv("WORLD_SIZE");
    unsetenv("LOCAL_RANK");
    unsetenv("LOCAL_WORLD_SIZE");
    cr_assert_eq(HcclExtGetLaunchEnv(&r, &w, &lr, &lw), HCCL_E_PARA);
    setenv("RANK", "3", 1);
    setenv("WORLD_SIZE", "4", 1);
    cr_assert_eq(HcclExtGetLaunchEnv(&r, &w, &lr, &lw), HCCL_SUCCESS);
    cr_assert(r == 3 && w == 4 && lr == 3 && lw == 4);
    setenv("LOCAL_RANK", "1", 1);
    setenv("LOCAL_WORLD_SIZE", "2", 1);
    cr_assert_eq(HcclExtGetLaunchEnv(&r, NULL, &lr, &lw), HCCL_SUCCESS);
    cr_assert(lr == 1 && lw == 2);
    setenv("RANK", "4", 1);
    cr_assert_eq(HcclExtGetLaunchEnv(&r, &w, &lr, &lw), HCCL_E_PARA);
    setenv("RANK", "x", 1);
    cr_assert_eq(HcclExtGetLaunchEnv(&r, &w, &lr, &lw), HCCL_E_PARA);
}

Test(bootstrap_env, store_needs_master_env, .init = setup)
{
    unsetenv("MASTER_ADDR");
    unsetenv("MASTER_PORT");
    HcclRootInfo info;
    cr_assert_eq(HcclExtShareRootInfo(1, &info), HCCL_E_PARA);
    cr_assert_eq(HcclExtShareRootInfo(1, NULL), HCCL_E_PTR);
}
