/* Socket helpers for the bootstrap and the store client: every fd is non-blocking and every wait is
 * a poll() bounded by an absolute deadline, so a dead or silent peer costs at most the timeout and
 * an idle wait never burns a core. */
#include "runtime/bootstrap/bootstrap.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int64_t rt_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *rt_sock_strerror(int err)
{
    if (err == RT_SOCK_EOF)
        return "connection closed by peer";
    if (err == ETIMEDOUT)
        return "timed out";
    return strerror(err);
}

/* Waits for events on fd until deadline; 0 when ready, ETIMEDOUT or an errno otherwise. */
static int wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - rt_now_ms();
        if (left <= 0)
            return ETIMEDOUT;
        struct pollfd p = {.fd = fd, .events = events};
        int n = poll(&p, 1, left > 1000000 ? 1000000 : (int)left);
        if (n > 0)
            return 0; /* errors and hangups surface from the following send/recv */
        if (n < 0 && errno != EINTR)
            return errno;
    }
}

static int fill_addr(int family, const char *ip, uint32_t port, struct sockaddr_storage *ss, socklen_t *len)
{
    memset(ss, 0, sizeof *ss);
    if (family == AF_INET6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)port);
        *len = sizeof *a;
        return (ip && *ip) ? (inet_pton(AF_INET6, ip, &a->sin6_addr) == 1 ? 0 : EINVAL) : 0;
    }
    struct sockaddr_in *a = (struct sockaddr_in *)ss;
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)port);
    *len = sizeof *a;
    if (!ip || !*ip) {
        a->sin_addr.s_addr = htonl(INADDR_ANY);
        return 0;
    }
    return inet_pton(AF_INET, ip, &a->sin_addr) == 1 ? 0 : EINVAL;
}

int rt_sock_listen(int family, const char *ip, uint32_t port, int *lfd, uint32_t *bound)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int err = fill_addr(family, ip, port, &ss, &len);
    if (err)
        return err;
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return errno;
    /* SO_REUSEADDR only lets us rebind a port whose old connections linger in TIME_WAIT (a fixed
     * rank-table port reused by the next communicator); two live listeners still conflict. */
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, SOMAXCONN) < 0) {
        err = errno;
        close(fd);
        return err;
    }
    len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
        err = errno;
        close(fd);
        return err;
    }
    *bound = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                            : ((struct sockaddr_in *)&ss)->sin_port);
    *lfd = fd;
    return 0;
}

/* One connect attempt to one resolved address, bounded by deadline. */
static int connect_once(const struct addrinfo *ai, int64_t deadline, int *out)
{
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return errno;
    int err = 0;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
        err = errno;
        if (err == EINPROGRESS || err == EINTR) {
            err = wait_fd(fd, POLLOUT, deadline);
            socklen_t l = sizeof err;
            if (!err && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l) < 0)
                err = errno;
        }
    }
    if (err) {
        close(fd);
        return err;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    *out = fd;
    return 0;
}

int rt_sock_connect(const char *host, uint32_t port, int64_t deadline, int *fd)
{
    char serv[16];
    snprintf(serv, sizeof serv, "%u", port);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    int64_t backoff = 20;
    int err = ETIMEDOUT, real_err = 0;
    for (;;) {
        struct addrinfo *res = NULL;
        int gai = getaddrinfo(host, serv, &hints, &res);
        if (gai != 0) {
            err = (gai == EAI_SYSTEM) ? errno : EHOSTUNREACH;
        } else {
            for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
                err = connect_once(ai, deadline, fd);
                if (!err)
                    break;
            }
            freeaddrinfo(res);
            if (!err)
                return 0;
        }
        if (err != ETIMEDOUT)
            real_err = err; /* report "refused" rather than the final attempt's cut-off */
        /* The peer may simply not be listening yet: retry with backoff until the deadline. */
        int64_t left = deadline - rt_now_ms();
        if (left <= 0)
            return real_err ? real_err : err;
        int64_t nap = backoff < left ? backoff : left;
        struct timespec ts = {.tv_sec = nap / 1000, .tv_nsec = (nap % 1000) * 1000000};
        nanosleep(&ts, NULL);
        backoff = backoff * 2 > 500 ? 500 : backoff * 2;
    }
}

int rt_sock_send_all(int fd, const void *buf, size_t len, int64_t deadline)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            return errno == EPIPE ? RT_SOCK_EOF : errno;
        int err = wait_fd(fd, POLLOUT, deadline);
        if (err)
            return err;
    }
    return 0;
}

int rt_sock_recv_all(int fd, void *buf, size_t len, int64_t deadline)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = recv(fd, p, len, 0);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n == 0)
            return RT_SOCK_EOF;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return errno == ECONNRESET ? RT_SOCK_EOF : errno;
        int err = wait_fd(fd, POLLIN, deadline);
        if (err)
            return err;
    }
    return 0;
}
