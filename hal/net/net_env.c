/* Socket plumbing shared by the transports: addresses for log lines, CANN's port range and socket
 * count variables, listening within the port range, connecting with retries, and the blocking
 * handshake I/O (poll against deadlines, so nothing waits past its deadline). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/oh_log.h"
#include "hal/net/net_internal.h"

const char *net_addr_str(const struct sockaddr *sa, char *buf, size_t len)
{
    char ip[INET6_ADDRSTRLEN] = "?";
    if (sa && sa->sa_family == AF_INET) {
        const struct sockaddr_in *a = (const void *)sa;
        inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
        snprintf(buf, len, "%s:%u", ip, ntohs(a->sin_port));
    } else if (sa && sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const void *)sa;
        inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
        snprintf(buf, len, "[%s]:%u", ip, ntohs(a->sin6_port));
    } else {
        snprintf(buf, len, "<no address>");
    }
    return buf;
}

int64_t net_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int parse_port(const char *s, const char **end, unsigned *port)
{
    char *e;
    errno = 0;
    unsigned long v = strtoul(s, &e, 10);
    if (e == s || errno || v < 1 || v > 65535 || *s == '-' || *s == '+')
        return -1;
    *port = (unsigned)v;
    *end = e;
    return 0;
}

/* CANN's syntax: "auto", or ports and ranges separated by commas, ranges not overlapping. */
hal_result net_port_list(const char *spec, uint16_t *ports, size_t max, size_t *n)
{
    *n = 0;
    if (!spec || !*spec || !strcmp(spec, "auto"))
        return HAL_OK;
    unsigned lo[64], hi[64];
    size_t nr = 0;
    const char *p = spec;
    while (*p) {
        const char *e;
        if (nr == 64 || parse_port(p, &e, &lo[nr]) < 0)
            goto bad;
        hi[nr] = lo[nr];
        if (*e == '-' && (parse_port(e + 1, &e, &hi[nr]) < 0 || hi[nr] < lo[nr]))
            goto bad;
        for (size_t k = 0; k < nr; k++)
            if (lo[nr] <= hi[k] && lo[k] <= hi[nr]) {
                OH_ERR("net", "HCCL_HOST_SOCKET_PORT_RANGE=%s: %u-%u overlaps %u-%u", spec, lo[nr], hi[nr], lo[k], hi[k]);
                return HAL_E_PARAM;
            }
        nr++;
        if (*e == ',' && e[1])
            e++;
        else if (*e)
            goto bad;
        p = e;
    }
    for (size_t k = 0; k < nr; k++)
        for (unsigned v = lo[k]; v <= hi[k] && *n < max; v++)
            ports[(*n)++] = (uint16_t)v;
    return HAL_OK;
bad:
    OH_ERR("net", "HCCL_HOST_SOCKET_PORT_RANGE=%s is invalid: use \"auto\" or ports and ranges in [1, 65535] "
           "separated by commas, e.g. \"60050-60100\" or \"60000,60050-60100\"", spec);
    return HAL_E_PARAM;
}

uint32_t net_env_nsocks(void)
{
    const char *env = getenv("HCCL_NSOCKS_PERTHREAD");
    if (!env || !*env)
        return 2;
    char *e;
    long v = strtol(env, &e, 10);
    if (*e || v < 1 || v > (long)NET_MAX_SOCKS) {
        OH_WARN("net", "HCCL_NSOCKS_PERTHREAD=%s is not in [1, %u]; using 2", env, NET_MAX_SOCKS);
        return 2;
    }
    return (uint32_t)v;
}

static void set_port(struct sockaddr_storage *ss, uint16_t port)
{
    if (ss->ss_family == AF_INET)
        ((struct sockaddr_in *)ss)->sin_port = htons(port);
    else
        ((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}

static uint16_t get_port(const struct sockaddr_storage *ss)
{
    return ntohs(ss->ss_family == AF_INET ? ((const struct sockaddr_in *)ss)->sin_port
                                          : ((const struct sockaddr_in6 *)ss)->sin6_port);
}

int net_env_family(void)
{
    const char *fam = getenv("HCCL_SOCKET_FAMILY");
    return fam && !strcmp(fam, "AF_INET6") ? AF_INET6 : AF_INET;
}

/* The wildcard address of HCCL_SOCKET_FAMILY. */
static void default_addr(struct sockaddr_storage *ss, socklen_t *alen)
{
    memset(ss, 0, sizeof *ss);
    if (net_env_family() == AF_INET6) {
        ss->ss_family = AF_INET6;
        ((struct sockaddr_in6 *)ss)->sin6_addr = in6addr_any;
        *alen = sizeof(struct sockaddr_in6);
    } else {
        ss->ss_family = AF_INET;
        ((struct sockaddr_in *)ss)->sin_addr.s_addr = htonl(INADDR_ANY);
        *alen = sizeof(struct sockaddr_in);
    }
}

static int try_bind(struct sockaddr_storage *ss, socklen_t alen)
{
    int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (ss->ss_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    /* Every remote peer of a communicator connects its sockets before anyone accepts: a queue as
     * long as the kernel allows (net.core.somaxconn), not 128, keeps large jobs from waiting on
     * SYN retries. */
    if (bind(fd, (struct sockaddr *)ss, alen) < 0 || listen(fd, SOMAXCONN > 4096 ? SOMAXCONN : 4096) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

int net_bind_listen(const struct sockaddr *addr, socklen_t alen, struct sockaddr_storage *bound, const char *who)
{
    struct sockaddr_storage ss;
    char buf[NET_ADDR_LEN];
    if (addr && (addr->sa_family == AF_INET || addr->sa_family == AF_INET6) && alen <= sizeof ss) {
        memset(&ss, 0, sizeof ss);
        memcpy(&ss, addr, alen);
    } else if (!addr) {
        default_addr(&ss, &alen);
    } else {
        OH_ERR("net", "%s: cannot listen on address family %d (IPv4 or IPv6 only)", who, addr->sa_family);
        return -EAFNOSUPPORT;
    }
    uint16_t ports[4096];
    size_t np = 0;
    if (get_port(&ss) == 0 && net_port_list(getenv("HCCL_HOST_SOCKET_PORT_RANGE"), ports, 4096, &np) != HAL_OK)
        return -EINVAL;
    int fd = -EADDRINUSE;
    if (np == 0) {
        fd = try_bind(&ss, alen);
    } else {
        for (size_t i = 0; i < np && fd < 0; i++) {
            set_port(&ss, ports[i]);
            fd = try_bind(&ss, alen);
            if (fd < 0 && fd != -EADDRINUSE)
                break;
        }
    }
    if (fd < 0) {
        OH_ERR("net", "%s: cannot listen on %s%s: %s (errno %d)", who, net_addr_str((void *)&ss, buf, sizeof buf),
               np ? " (every port of HCCL_HOST_SOCKET_PORT_RANGE tried)" : "", strerror(-fd), -fd);
        return fd;
    }
    socklen_t bl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &bl);
    if (bound)
        *bound = ss;
    return fd;
}

int net_tcp_connect(const struct sockaddr *addr, socklen_t alen, int64_t deadline)
{
    for (;;) {
        int fd = socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return -errno;
        if (connect(fd, addr, alen) == 0)
            return fd;
        int e = errno;
        close(fd);
        if ((e != ECONNREFUSED && e != ENETUNREACH && e != EHOSTUNREACH && e != ETIMEDOUT && e != EINTR) ||
            net_now_ms() >= deadline)
            return -e;
        usleep(20000); /* the peer is not listening yet: retry, without spinning */
    }
}

static int wait_fd(int fd, short ev, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - net_now_ms();
        if (left <= 0)
            return -ETIMEDOUT;
        struct pollfd p = {fd, ev, 0};
        int r = poll(&p, 1, left > 1000 ? 1000 : (int)left);
        if (r > 0)
            return 0;
        if (r < 0 && errno != EINTR)
            return -errno;
    }
}

/* Moves exactly len bytes through fd (out: send, else receive) before deadline; 0 or -errno. */
static int io_all(int fd, void *buf, size_t len, int64_t deadline, bool out)
{
    char *p = buf;
    while (len) {
        int r = wait_fd(fd, out ? POLLOUT : POLLIN, deadline);
        if (r < 0)
            return r;
        ssize_t k = out ? send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT) : recv(fd, p, len, MSG_DONTWAIT);
        if (k == 0 && !out)
            return -ECONNRESET;
        if (k < 0 && errno != EAGAIN && errno != EINTR)
            return -errno;
        if (k > 0) {
            p += k;
            len -= (size_t)k;
        }
    }
    return 0;
}

int net_send_all(int fd, const void *buf, size_t len, int64_t deadline)
{
    return io_all(fd, (void *)buf, len, deadline, true); /* only read through: send() takes const */
}

int net_recv_all(int fd, void *buf, size_t len, int64_t deadline)
{
    return io_all(fd, buf, len, deadline, false);
}
