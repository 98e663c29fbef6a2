/* Live communicators by name (HcclCommGetHandleWithName, HcclCommGetStatus). */
#include <string.h>

#include "runtime/rt_internal.h"

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static rt_comm *g_head;

void rt_registry_add(rt_comm *c)
{
    pthread_mutex_lock(&g_lock);
    c->next = g_head;
    g_head = c;
    pthread_mutex_unlock(&g_lock);
}

void rt_registry_remove(rt_comm *c)
{
    pthread_mutex_lock(&g_lock);
    for (rt_comm **p = &g_head; *p; p = &(*p)->next) {
        if (*p == c) {
            *p = c->next;
            break;
        }
    }
    pthread_mutex_unlock(&g_lock);
}

void rt_registry_each(void (*fn)(rt_comm *c))
{
    pthread_mutex_lock(&g_lock);
    for (rt_comm *c = g_head; c; c = c->next)
        fn(c);
    pthread_mutex_unlock(&g_lock);
}

/* The handle, not the pointer: the caller goes through rt_comm_check like any other user. */
HcclComm rt_registry_find(const char *name)
{
    pthread_mutex_lock(&g_lock);
    rt_comm *c = g_head;
    while (c && strcmp(c->name, name) != 0)
        c = c->next;
    HcclComm h = c ? c->handle : NULL;
    pthread_mutex_unlock(&g_lock);
    return h;
}
