/* Which local address the root listens on. CANN's priority: HCCL_IF_IP > HCCL_SOCKET_IFNAME >
 * non-docker, non-loopback interfaces (by name) > docker > loopback, in HCCL_SOCKET_FAMILY. */
#include "runtime/bootstrap/bootstrap.h"

#include "common/oh_log.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define RT_MAX_IFACES 64

/* One comma-separated spec entry against name: prefix match, or exact when exact is set. */
static int entry_match(const char *entry, size_t len, const char *name, int exact)
{
    if (len == 0)
        return 0;
    if (exact)
        return strlen(name) == len && !strncmp(name, entry, len);
    return !strncmp(name, entry, len);
}

/* Spec syntax (as CANN and NCCL): "eth,enp" prefixes; "^eth" excludes prefixes; "=eth0" exact
 * names; "^=eth0" excludes exact names. The leading marks apply to the whole list. */
int rt_iface_match(const char *spec, const char *name)
{
    int exclude = 0, exact = 0;
    if (*spec == '^') {
        exclude = 1;
        spec++;
    }
    if (*spec == '=') {
        exact = 1;
        spec++;
    }
    int hit = 0;
    while (*spec && !hit) {
        size_t len = strcspn(spec, ",");
        hit = entry_match(spec, len, name, exact);
        spec += len;
        if (*spec == ',')
            spec++;
    }
    return exclude ? !hit : hit;
}

/* Rank used when no spec is given: 0 normal NIC, 1 docker bridge, 2 loopback. */
static int iface_class(const rt_iface *f)
{
    if (f->loopback)
        return 2;
    return (!strncmp(f->name, "docker", 6) || !strncmp(f->name, "veth", 4)) ? 1 : 0;
}

static int better(const rt_iface *a, const rt_iface *b)
{
    int ca = iface_class(a), cb = iface_class(b);
    if (ca != cb)
        return ca < cb;
    return strcmp(a->name, b->name) < 0;
}

int rt_iface_pick(const rt_iface *list, size_t n, const char *spec, int family, rt_iface *out)
{
    const rt_iface *best = NULL;
    int exclude = spec && spec[0] == '^';
    for (size_t i = 0; i < n; i++) {
        const rt_iface *f = &list[i];
        if (f->family != family || (spec && *spec && !rt_iface_match(spec, f->name)))
            continue;
        /* An exclude list still prefers real NICs over loopback; an include list names exactly
         * what the user wants, loopback included. */
        if (spec && *spec && !exclude) {
            if (!best || strcmp(f->name, best->name) < 0)
                best = f;
        } else if (!best || better(f, best)) {
            best = f;
        }
    }
    if (!best)
        return -1;
    *out = *best;
    return 0;
}

/* This host's up interfaces with a usable address (IPv6 link-local needs a scope id: skipped). */
static size_t list_ifaces(rt_iface *list, size_t max)
{
    struct ifaddrs *ifs = NULL, *it;
    size_t n = 0;
    if (getifaddrs(&ifs) < 0)
        return 0;
    for (it = ifs; it && n < max; it = it->ifa_next) {
        if (!it->ifa_addr || !(it->ifa_flags & IFF_UP))
            continue;
        int fam = it->ifa_addr->sa_family;
        const void *addr;
        if (fam == AF_INET) {
            addr = &((struct sockaddr_in *)it->ifa_addr)->sin_addr;
        } else if (fam == AF_INET6) {
            const struct in6_addr *a6 = &((struct sockaddr_in6 *)it->ifa_addr)->sin6_addr;
            if (IN6_IS_ADDR_LINKLOCAL(a6))
                continue;
            addr = a6;
        } else {
            continue;
        }
        rt_iface *f = &list[n];
        memset(f, 0, sizeof *f);
        snprintf(f->name, sizeof f->name, "%s", it->ifa_name);
        f->family = fam;
        f->loopback = !!(it->ifa_flags & IFF_LOOPBACK);
        if (inet_ntop(fam, addr, f->ip, sizeof f->ip))
            n++;
    }
    freeifaddrs(ifs);
    return n;
}

static void describe_ifaces(const rt_iface *list, size_t n, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && off < len; i++)
        off += (size_t)snprintf(buf + off, len - off, "%s%s=%s", i ? ", " : "", list[i].name, list[i].ip);
    if (n == 0)
        snprintf(buf, len, "none");
}

static HcclResult pick_if_ip(const char *env, int *family, char ip[RT_IP_LEN])
{
    unsigned char tmp[sizeof(struct in6_addr)];
    if (inet_pton(AF_INET, env, tmp) == 1)
        *family = AF_INET;
    else if (inet_pton(AF_INET6, env, tmp) == 1)
        *family = AF_INET6;
    else {
        OH_ERR("bootstrap", "HCCL_IF_IP=%s is not a numeric IPv4 or IPv6 address: set it to an address "
               "of this host (e.g. 127.0.0.1 for a single host) or unset it", env);
        return HCCL_E_PARA;
    }
    snprintf(ip, RT_IP_LEN, "%s", env);
    return HCCL_SUCCESS;
}

HcclResult rt_boot_pick_iface(int *family, char ip[RT_IP_LEN], char *ifname, size_t len)
{
    snprintf(ifname, len, "%s", "HCCL_IF_IP");
    const char *env = getenv("HCCL_IF_IP");
    if (env && *env)
        return pick_if_ip(env, family, ip);
    HcclResult rc = rt_boot_env_family(family);
    if (rc != HCCL_SUCCESS)
        return rc;
    rt_iface list[RT_MAX_IFACES], got;
    size_t n = list_ifaces(list, RT_MAX_IFACES);
    const char *spec = getenv("HCCL_SOCKET_IFNAME");
    if (spec && *spec) {
        if (rt_iface_pick(list, n, spec, *family, &got) < 0) {
            char avail[512];
            describe_ifaces(list, n, avail, sizeof avail);
            OH_ERR("bootstrap", "HCCL_SOCKET_IFNAME=%s matches no up interface with an %s address "
                   "(this host has: %s); fix HCCL_SOCKET_IFNAME or HCCL_SOCKET_FAMILY, or set HCCL_IF_IP",
                   spec, *family == AF_INET6 ? "AF_INET6" : "AF_INET", avail);
            return HCCL_E_PARA;
        }
    } else if (rt_iface_pick(list, n, NULL, *family, &got) < 0) {
        /* No interface listed at all (odd containers): the loopback address still works locally. */
        snprintf(ip, RT_IP_LEN, "%s", *family == AF_INET6 ? "::1" : "127.0.0.1");
        snprintf(ifname, len, "none");
        OH_INFO("bootstrap", "no interface found; root listens on %s", ip);
        return HCCL_SUCCESS;
    }
    snprintf(ip, RT_IP_LEN, "%s", got.ip);
    snprintf(ifname, len, "%s", got.name);
    OH_INFO("bootstrap", "root listens on interface %s (%s)", got.name, got.ip);
    return HCCL_SUCCESS;
}

HcclResult rt_boot_pick_address(int *family, char ip[RT_IP_LEN])
{
    char name[64];
    return rt_boot_pick_iface(family, ip, name, sizeof name);
}
