/* Dead peers: a rank whose process exits without HcclCommDestroy would leave its peers waiting
 * until HCCL_EXEC_TIMEOUT (30 minutes by default). Once a second a watchdog thread checks the
 * processes behind every communicator's peers and fails the communicator on every rank, naming
 * the rank that died, so pending waits end within about a second. It sleeps between checks. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "runtime/net/rt_net.h"
#include "runtime/rt_internal.h"

static bool process_gone(uint32_t pid)
{
    return pid && (pid_t)pid != getpid() && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

static void check_comm(rt_comm *c)
{
    if (atomic_load(&c->ctrl->abort))
        return;
    for (uint32_t p = 0; p < c->nranks; p++) {
        const rt_peer *peer = &c->peers[p];
        char msg[RT_MSG_LEN];
        if (p != c->rank && peer->remote) { /* another host's pid means nothing here: its link tells */
            hal_result rc = rt_net_peer_error(c, p); /* first: a leave's word landed before the link ended */
            if (rc == HAL_OK || rt_ctrl_peer_left(c, p))
                continue;
            snprintf(msg, sizeof msg, "comm %s: the link to rank %u (server %u) failed: %s", c->name, p,
                     c->server_of[p], hal_result_name(rc));
            OH_ERR("watchdog", "rank %u: %s", c->rank, msg);
            rt_abort_all(c, HCCL_E_REMOTE, msg);
            return;
        }
        if (p == c->rank || rt_ctrl_peer_left(c, p) || !process_gone(peer->dev.pid))
            continue;
        snprintf(msg, sizeof msg, "comm %s: rank %u (pid %u, device %u) exited without HcclCommDestroy", c->name, p,
                 peer->dev.pid, peer->dev.device_id);
        OH_ERR("watchdog", "rank %u: %s", c->rank, msg);
        rt_abort_all(c, HCCL_E_REMOTE, msg);
        return;
    }
}

static void *watchdog_main(void *arg)
{
    (void)arg;
    for (;;) {
        sleep(1);
        rt_registry_each(check_comm);
    }
    return NULL;
}

static void watchdog_spawn(void)
{
    pthread_t th;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&th, &attr, watchdog_main, NULL) != 0)
        OH_WARN("watchdog", "could not start the dead-peer watchdog: peers that die are noticed only by timeout");
    pthread_attr_destroy(&attr);
}

void rt_watchdog_start(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, watchdog_spawn);
}
