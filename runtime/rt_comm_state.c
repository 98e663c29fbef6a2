/* HcclCommRegCommStateCallback: process-wide callbacks called around HcclCommDestroy.
 *
 * CANN calls them before and after HcclCommDestroy and HcclCommResume; HcclCommResume is not
 * supported here (it fails at once), so only the two destroy phases ever occur. Callbacks run on
 * the thread that called HcclCommDestroy, outside any lock of ours, in registration order. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_internal.h"

#define RT_STATE_NAME_MAX 160 /* CANN: regName is at most 160 bytes */

typedef struct rt_state_cb {
    char name[RT_STATE_NAME_MAX + 1];
    HcclCommStateCallback cb;
    void *args;
    struct rt_state_cb *next;
} rt_state_cb;

static pthread_mutex_t g_state_lock = PTHREAD_MUTEX_INITIALIZER;
static rt_state_cb *g_state_head; /* registration order */

static rt_state_cb **find_slot(const char *name)
{
    rt_state_cb **p = &g_state_head;
    while (*p && strcmp((*p)->name, name) != 0)
        p = &(*p)->next;
    return p;
}

HcclResult HcclCommRegCommStateCallback(const char *regName, HcclCommStateCallback cb, void *args)
{
    CHECK_ARG(regName, HCCL_E_PTR, "comm", "HcclCommRegCommStateCallback: regName is NULL");
    size_t len = strnlen(regName, RT_STATE_NAME_MAX + 1);
    CHECK_ARG(len >= 1 && len <= RT_STATE_NAME_MAX, HCCL_E_PARA, "comm",
              "HcclCommRegCommStateCallback: regName must be 1 to %d bytes", RT_STATE_NAME_MAX);
    HcclResult rc = HCCL_SUCCESS;
    pthread_mutex_lock(&g_state_lock);
    rt_state_cb **slot = find_slot(regName);
    if (!cb) {
        /* A NULL callback removes the registration (as aclrtReg*StateCallback do). */
        if (*slot) {
            rt_state_cb *gone = *slot;
            *slot = gone->next;
            free(gone);
        } else {
            rc = HCCL_E_NOT_FOUND;
        }
    } else if (*slot) {
        (*slot)->cb = cb; /* registering a name again replaces its callback and args */
        (*slot)->args = args;
    } else {
        rt_state_cb *e = calloc(1, sizeof *e);
        if (e) {
            memcpy(e->name, regName, len);
            e->cb = cb;
            e->args = args;
            *slot = e;
        } else {
            rc = HCCL_E_MEMORY;
        }
    }
    pthread_mutex_unlock(&g_state_lock);
    CHECK_ARG(rc != HCCL_E_NOT_FOUND, rc, "comm",
              "HcclCommRegCommStateCallback: \"%s\" is not registered (a NULL cb removes a registration)", regName);
    CHECK_ARG(rc == HCCL_SUCCESS, rc, "comm", "HcclCommRegCommStateCallback(\"%s\"): out of memory", regName);
    return HCCL_SUCCESS;
}

static const char *phase_name(HcclCommStatePhase phase)
{
    switch (phase) {
    case HCCL_COMM_STATE_PHASE_DESTROY_PRE: return "DESTROY_PRE";
    case HCCL_COMM_STATE_PHASE_DESTROY_POST: return "DESTROY_POST";
    case HCCL_COMM_STATE_PHASE_RESUME_PRE: return "RESUME_PRE";
    case HCCL_COMM_STATE_PHASE_RESUME_POST: return "RESUME_POST";
    default: return "INVALID";
    }
}

void rt_comm_state_notify(HcclComm comm, HcclCommStatePhase phase)
{
    /* A snapshot, so a callback may (de)register callbacks without deadlocking. */
    pthread_mutex_lock(&g_state_lock);
    size_t n = 0;
    for (rt_state_cb *e = g_state_head; e; e = e->next)
        n++;
    rt_state_cb *snap = n ? calloc(n, sizeof *snap) : NULL;
    size_t i = 0;
    for (rt_state_cb *e = g_state_head; e && snap; e = e->next)
        snap[i++] = *e;
    pthread_mutex_unlock(&g_state_lock);
    if (n && !snap) {
        OH_ERR("comm", "state callbacks for %s skipped: out of memory", phase_name(phase));
        return;
    }
    for (i = 0; i < n; i++) {
        HcclResult rc = snap[i].cb(comm, phase, snap[i].args);
        /* The destroy goes on whatever a callback returns: it is a notification, not a veto. */
        if (rc != HCCL_SUCCESS)
            OH_WARN("comm", "state callback \"%s\" returned %d at %s (ignored)", snap[i].name, (int)rc,
                    phase_name(phase));
    }
    free(snap);
}
