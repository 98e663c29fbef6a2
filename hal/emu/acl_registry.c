/* Registry of live ACL handles that are plain pointers.
 *
 * CANN hands out events, notifies, host buffers and physical-memory handles as void pointers,
 * and programs pass back whatever they hold: destroyed handles, handles of another kind, stack
 * garbage. Dereferencing those to check a magic number could crash, so every such handle is
 * recorded here at creation and looked up before use. A chained hash keyed by (kind, pointer)
 * under one mutex, and in front of it a small cache per thread of the answers it found: a
 * framework records an event after every collective and makes streams wait for events around it,
 * and each of those calls took the process-wide mutex (docs/emulator.md, "ACL handle checks"). An
 * answer stays true until a handle of its bucket is added or removed: every change bumps its
 * bucket's count, and a cached answer is used only while the count it was found under holds. A
 * count per bucket, not one for the table: a framework that makes and destroys events as it goes
 * would otherwise void every answer of every thread at each of them.
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
static _Atomic uint64_t g_changes[ACL_REG_BUCKETS]; /* adds and removes so far: bumped under g_reg_lock */

/* Answers each thread keeps: sets of two, the one used last first. Two ways, so that handles
 * used in turn whose hashes meet do not evict each other at every call (a perf tool's 16 events of
 * `-R 2` missed once a call in a cache of 16 single slots). */
#define ACL_REG_SETS 32u
#define ACL_REG_WAYS 2u

typedef struct reg_answer {
    const void *key; /* NULL: empty */
    acl_handle_kind kind;
    bool live;
    uintptr_t value;
    uint64_t changes; /* its bucket's count when it was found */
} reg_answer;

/* On the heap: a library that dlopen loads takes its thread-locals from a few hundred bytes of
 * static TLS when any of them is initial-exec (common/oh_tls.h), and 2.5 KiB did not fit. */
typedef struct reg_cache {
    reg_answer sets[ACL_REG_SETS][ACL_REG_WAYS];
    uint64_t misses; /* for tests */
} reg_cache;

static _Thread_local reg_cache *t_cache;
static pthread_key_t g_cache_key; /* frees a thread's cache when it exits */
static pthread_once_t g_cache_once = PTHREAD_ONCE_INIT;
static bool g_cache_keyed;

/* At the thread's exit; a lookup from a later destructor of the thread makes a new one. */
static void cache_free(void *c)
{
    t_cache = NULL;
    free(c);
}

static void cache_key_init(void)
{
    g_cache_keyed = pthread_key_create(&g_cache_key, cache_free) == 0;
}

/* This thread's cache, made at its first lookup; NULL if it cannot be (lookups then take the lock). */
static reg_cache *thread_cache(void)
{
    if (t_cache)
        return t_cache;
    pthread_once(&g_cache_once, cache_key_init);
    if (!g_cache_keyed)
        return NULL;
    reg_cache *c = calloc(1, sizeof *c);
    if (c && pthread_setspecific(g_cache_key, c) != 0) {
        free(c);
        c = NULL;
    }
    return t_cache = c;
}

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

/* g_reg_lock held: the handles of bucket b changed. */
static void changed_locked(unsigned b)
{
    atomic_store_explicit(&g_changes[b], atomic_load_explicit(&g_changes[b], memory_order_relaxed) + 1,
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
        changed_locked(reg_hash(kind, key));
    }
    pthread_mutex_unlock(&g_reg_lock);
    if (dup)
        free(n);
    return dup ? -1 : 0;
}

/* The answer about (kind, key) found under the bucket's count `changes`: the thread's, or NULL. */
static const reg_answer *cached(reg_answer *set, acl_handle_kind kind, const void *key, uint64_t changes)
{
    for (unsigned w = 0; w < ACL_REG_WAYS; w++) {
        if (set[w].key != key || set[w].kind != kind || set[w].changes != changes)
            continue;
        reg_answer a = set[w];
        for (unsigned u = w; u > 0; u--) /* the one used last goes first */
            set[u] = set[u - 1];
        set[0] = a;
        return &set[0];
    }
    return NULL;
}

/* The answer about (kind, key) now, under g_reg_lock, stamped with `changes`. */
static reg_answer lookup(acl_handle_kind kind, const void *key, uint64_t changes)
{
    pthread_mutex_lock(&g_reg_lock);
    acl_reg_node *n = *reg_slot(kind, key);
    reg_answer found = {key, kind, n != NULL, n ? n->value : 0, changes};
    pthread_mutex_unlock(&g_reg_lock);
    return found;
}

int acl_reg_find(acl_handle_kind kind, const void *key, uintptr_t *value)
{
    if (!key)
        return 0;
    unsigned b = reg_hash(kind, key);
    /* acquire: a count read after a change sees the table as that change left it */
    uint64_t changes = atomic_load_explicit(&g_changes[b], memory_order_acquire);
    reg_cache *c = thread_cache();
    reg_answer *set = c ? c->sets[b % ACL_REG_SETS] : NULL;
    const reg_answer *a = set ? cached(set, kind, key, changes) : NULL;
    reg_answer found;
    if (!a) {
        found = lookup(kind, key, changes); /* stamped with the count read before */
        a = &found;
        if (set) { /* first; the one used longest ago leaves */
            c->misses++;
            for (unsigned w = ACL_REG_WAYS - 1; w > 0; w--)
                set[w] = set[w - 1];
            set[0] = found;
        }
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
        changed_locked(reg_hash(kind, key));
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

unsigned acl_reg_test_set(acl_handle_kind kind, const void *key)
{
    return reg_hash(kind, key) % ACL_REG_SETS;
}

uint64_t acl_reg_test_misses(void)
{
    return t_cache ? t_cache->misses : 0;
}
