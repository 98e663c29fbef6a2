/* Registry of live ACL handles that are plain pointers.
 *
 * CANN hands out events, notifies, host buffers and physical-memory handles as void pointers,
 * and programs pass back whatever they hold: destroyed handles, handles of another kind, stack
 * garbage. Dereferencing those to check a magic number could crash, so every such handle is
 * recorded here at creation and looked up before use. A chained hash keyed by (kind, pointer)
 * under one mutex, and in front of it a small cache per thread of the answers it found: a
 * framework records an event after every collective and makes streams wait for events around it,
 * and each of those calls took the process-wide mutex (docs/emulator.md, "ACL handle checks"). An answer stays true until a handle is added or
 * removed: every change bumps g_changes, and a cached answer is used only while the count it was
 * found under holds.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "hal/emu/acl_internal.h"

#define ACL_REG_BUCKETS 1024u

typedef struct acl_reg_node {
    struct acl_reg_node *next;
    acl_handle_kind kind;
    const void *key;
    uintptr_t value;
} acl_reg_node;

static acl_reg_node *g_buckets[ACL_REG_BUCKETS];
static pthread_mutex_t g_reg_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t g_changes; /* adds and removes so far: bumped under g_reg_lock */

#define ACL_REG_CACHED 16u /* answers each thread keeps, direct-mapped by hash */

typedef struct reg_answer {
    const void *key; /* NULL: empty */
    acl_handle_kind kind;
    bool live;
    uintptr_t value;
    uint64_t changes; /* g_changes when it was found */
} reg_answer;

static _Thread_local reg_answer t_answers[ACL_REG_CACHED];

static unsigned reg_hash(acl_handle_kind kind, const void *key)
{
    uint64_t h = (uint64_t)(uintptr_t)key * 0x9E3779B97F4A7C15ull;
    h ^= (uint64_t)kind * 0xC2B2AE3D27D4EB4Full;
    return (unsigned)(h >> 40) % ACL_REG_BUCKETS;
}

/* Address of the link that points at the node, or of the bucket's terminating NULL. */
static acl_reg_node **reg_slot(acl_handle_kind kind, const void *key)
{
    acl_reg_node **link = &g_buckets[reg_hash(kind, key)];
    while (*link && ((*link)->kind != kind || (*link)->key != key))
        link = &(*link)->next;
    return link;
}

/* g_reg_lock held: the table changed. */
static void changed_locked(void)
{
    atomic_store_explicit(&g_changes, atomic_load_explicit(&g_changes, memory_order_relaxed) + 1,
                          memory_order_release);
}

int acl_reg_add(acl_handle_kind kind, const void *key, uintptr_t value)
{
    acl_reg_node *n = malloc(sizeof *n);
    if (!n)
        return -1;
    n->kind = kind;
    n->key = key;
    n->value = value;
    pthread_mutex_lock(&g_reg_lock);
    acl_reg_node **link = reg_slot(kind, key);
    int dup = *link != NULL;
    if (!dup) {
        n->next = NULL;
        *link = n;
        changed_locked();
    }
    pthread_mutex_unlock(&g_reg_lock);
    if (dup)
        free(n);
    return dup ? -1 : 0;
}

int acl_reg_find(acl_handle_kind kind, const void *key, uintptr_t *value)
{
    if (!key)
        return 0;
    /* acquire: a count read after a change sees the table as that change left it */
    uint64_t changes = atomic_load_explicit(&g_changes, memory_order_acquire);
    reg_answer *a = &t_answers[reg_hash(kind, key) % ACL_REG_CACHED];
    if (a->key != key || a->kind != kind || a->changes != changes) {
        pthread_mutex_lock(&g_reg_lock);
        acl_reg_node *n = *reg_slot(kind, key);
        *a = (reg_answer){key, kind, n != NULL, n ? n->value : 0, changes}; /* the count read before */
        pthread_mutex_unlock(&g_reg_lock);
    }
    if (a->live && value)
        *value = a->value;
    return a->live;
}

int acl_reg_remove(acl_handle_kind kind, const void *key)
{
    pthread_mutex_lock(&g_reg_lock);
    acl_reg_node **link = reg_slot(kind, key);
    acl_reg_node *n = *link;
    if (n) {
        *link = n->next;
        changed_locked();
    }
    pthread_mutex_unlock(&g_reg_lock);
    free(n);
    return n != NULL;
}

int acl_reg_count_value(acl_handle_kind kind, uintptr_t value)
{
    int count = 0;
    pthread_mutex_lock(&g_reg_lock);
    for (unsigned b = 0; b < ACL_REG_BUCKETS; b++)
        for (acl_reg_node *n = g_buckets[b]; n; n = n->next)
            count += n->kind == kind && n->value == value;
    pthread_mutex_unlock(&g_reg_lock);
    return count;
}
