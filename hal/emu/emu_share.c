/* Sharing device memory between the processes of an emulated server. The process that opens a
 * device binds an abstract Unix socket named after (namespace, server, device): the bind is the
 * ownership claim (the kernel drops the name when the process dies, so nothing goes stale), and
 * a listener thread answers each connection with the device's memfd over SCM_RIGHTS.
 *
 * Abstract sockets have no file permissions, so both ends check the other's credentials
 * (SO_PEERCRED): device memory goes only to a process of the owner's user or root, and is taken
 * only from one. The hand-over is bounded by HCCL_CONNECT_TIMEOUT: an owner that is stopped or
 * stuck fails the import instead of hanging it. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/oh_log.h"
#include "hal/emu/emu_internal.h"

typedef struct share_msg {
    uint64_t magic;
    uint64_t size;
    uint32_t pid;
    uint32_t device_id;
} share_msg;

static socklen_t share_addr(struct sockaddr_un *a, uint64_t key, uint32_t server, uint32_t id)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    /* sun_path[0] = 0: abstract namespace. */
    int n = snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "openhccl-emu/%016llx/%u/%u",
                     (unsigned long long)key, server, id);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

static void share_send(int c, const emu_region *r)
{
    share_msg m = {EMU_MAGIC, r->size, (uint32_t)getpid(), r->handle.device_id};
    struct iovec iov = {&m, sizeof m};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } u;
    memset(&u, 0, sizeof u);
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &r->fd, sizeof(int));
    if (sendmsg(c, &mh, MSG_NOSIGNAL) < 0)
        OH_WARN("emu", "device %u: sending memory to a peer failed: %s", r->handle.device_id,
                strerror(errno));
}

/* The other end is a process of our user, or root. */
static bool cred_allowed(int fd, struct ucred *cr)
{
    socklen_t len = sizeof *cr;
    memset(cr, 0, sizeof *cr);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cr, &len) != 0)
        return false;
    return cr->uid == geteuid() || cr->uid == 0;
}

static void *listener_main(void *p)
{
    emu_listener *l = p;
    for (;;) {
        int c = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
        if (atomic_load(&l->stop)) {
            if (c >= 0)
                close(c);
            break;
        }
        if (c < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            OH_ERR("emu", "device %u listener: accept: %s", l->region->handle.device_id, strerror(errno));
            break;
        }
        struct ucred cr;
        if (cred_allowed(c, &cr))
            share_send(c, l->region);
        else
            OH_ERR("emu", "device %u: refusing its memory to pid %d (uid %u): only uid %u or root may map it",
                   l->region->handle.device_id, (int)cr.pid, (unsigned)cr.uid, (unsigned)geteuid());
        close(c);
    }
    return NULL;
}

/* Pid of the live process bound to the address (SO_PEERCRED of a connection), 0 if unknown. The
 * owner's listener answers the connection with its memfd; closing unread drops it. */
static int owner_pid_of(const struct sockaddr_un *a, socklen_t len)
{
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct ucred cr = {0};
    socklen_t cl = sizeof cr;
    struct timeval tv = {1, 0};
    if (s >= 0) {
        setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        if (connect(s, (const struct sockaddr *)a, len) != 0 || getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &cl) != 0)
            cr.pid = 0;
        close(s);
    }
    return (int)cr.pid;
}

hal_result emu_listener_claim(emu_listener *l, uint32_t id)
{
    const emu_config *cfg = emu_cfg();
    struct sockaddr_un a;
    socklen_t len = share_addr(&a, cfg->server_key, cfg->server_index, id);
    l->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (l->fd < 0) {
        OH_ERR("emu", "socket: %s", strerror(errno));
        return HAL_E_SYSCALL;
    }
    if (bind(l->fd, (struct sockaddr *)&a, len) != 0) {
        int e = errno;
        close(l->fd);
        l->fd = -1;
        if (e == EADDRINUSE) {
            OH_ERR("emu", "device %u of server %u in namespace \"%s\" is already opened by another live process "
                   "(pid %d): an emulated device belongs to one process at a time; give each process its own "
                   "device (e.g. aclrtSetDevice(rank %% devices)) and share memory with aclrtIpcMem* or HCCL",
                   id, cfg->server_index, cfg->ns, owner_pid_of(&a, len));
            return HAL_E_INVALID_DEVICE;
        }
        OH_ERR("emu", "bind device %u socket: %s", id, strerror(e));
        return HAL_E_SYSCALL;
    }
    if (listen(l->fd, 64) != 0) {
        OH_ERR("emu", "listen on device %u socket: %s", id, strerror(errno));
        close(l->fd);
        l->fd = -1; /* emu_listener_stop must not close it again */
        return HAL_E_SYSCALL;
    }
    return HAL_OK;
}

hal_result emu_listener_run(emu_listener *l, const emu_region *r)
{
    l->region = r;
    atomic_store(&l->stop, false);
    if (pthread_create(&l->thread, NULL, listener_main, l) != 0)
        return HAL_E_SYSCALL;
    l->running = true;
    return HAL_OK;
}

void emu_listener_stop(emu_listener *l)
{
    if (l->running) {
        atomic_store(&l->stop, true);
        shutdown(l->fd, SHUT_RDWR); /* wakes accept() */
        pthread_join(l->thread, NULL);
        l->running = false;
    }
    if (l->fd >= 0)
        close(l->fd);
    l->fd = -1;
}

hal_result emu_share_fetch(const hal_device_handle *peer, int *fd, uint64_t *size, uint32_t *pid)
{
    struct sockaddr_un a;
    socklen_t len = share_addr(&a, peer->server_key, peer->server_index, peer->device_id);
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return HAL_E_SYSCALL;
    /* connect (full backlog) and recvmsg give up after HCCL_CONNECT_TIMEOUT. */
    struct timeval tv = {(time_t)emu_cfg()->connect_timeout_s, 0};
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(s, (struct sockaddr *)&a, len) != 0) {
        OH_ERR("emu", "cannot reach device %u of server %u (pid %u): %s; is it open?", peer->device_id,
               peer->server_index, peer->pid, strerror(errno));
        close(s);
        return HAL_E_PEER;
    }
    struct ucred cr;
    if (!cred_allowed(s, &cr)) {
        OH_ERR("emu", "device %u of server %u is owned by pid %d of uid %u: not mapping another user's memory",
               peer->device_id, peer->server_index, (int)cr.pid, (unsigned)cr.uid);
        close(s);
        return HAL_E_PEER;
    }
    share_msg m;
    struct iovec iov = {&m, sizeof m};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } u;
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
    ssize_t n;
    do
        n = recvmsg(s, &mh, MSG_CMSG_CLOEXEC | MSG_WAITALL);
    while (n < 0 && errno == EINTR);
    int e = errno;
    close(s);
    if (n < 0 && (e == EAGAIN || e == EWOULDBLOCK)) {
        OH_ERR("emu", "device %u of server %u (pid %u) did not hand over its memory within HCCL_CONNECT_TIMEOUT=%u s "
               "(is the owner stopped?)", peer->device_id, peer->server_index, peer->pid,
               (unsigned)emu_cfg()->connect_timeout_s);
        return HAL_E_TIMEOUT;
    }
    if (n == 0) {
        OH_ERR("emu", "device %u of server %u (pid %u) closed the connection without its memory: the owner refuses "
               "processes of other users (it runs as another uid?)", peer->device_id, peer->server_index, peer->pid);
        return HAL_E_PEER;
    }
    struct cmsghdr *cm = n == (ssize_t)sizeof m ? CMSG_FIRSTHDR(&mh) : NULL;
    if (!cm || cm->cmsg_type != SCM_RIGHTS || m.magic != EMU_MAGIC || m.device_id != peer->device_id) {
        OH_ERR("emu", "device %u of server %u: bad memory handshake", peer->device_id, peer->server_index);
        if (cm && cm->cmsg_type == SCM_RIGHTS) {
            int f;
            memcpy(&f, CMSG_DATA(cm), sizeof f);
            close(f);
        }
        return HAL_E_PEER;
    }
    memcpy(fd, CMSG_DATA(cm), sizeof(int));
    *size = m.size;
    *pid = m.pid;
    return HAL_OK;
}
