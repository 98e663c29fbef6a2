/* Control blocks come from a per-device pool that only ever holds control blocks, so memory a peer
 * may still reach through a destroyed communicator (its abort or join CAS, its reads of our
 * publication records) is always a control block, never a user buffer. A block's first words
 * carry its epoch; releasing a block bumps the epoch, so a peer's CAS made with the epoch it
 * connected to fails from then on (rt_ctrl.c). Blocks never go back to the heap: the pool keeps
 * its own reference on the device, and its size is bounded by the most communicators alive at
 * once (per size class: powers of two from 64 KiB). Reuse is FIFO, the oldest block first.
 * Eager inboxes (algos/plan.h, INBOX) come from a second list of the same pool for the same
 * reason: a peer's eager call writes into an inbox before it checks the owner's publication, so
 * one that runs after the owner destroyed its communicator (a mismatch it is about to report)
 * must land in library memory, never in a buffer the owner allocated since. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/rt_internal.h"

#define POOL_MIN_SHIFT 16
#define POOL_CLASSES 40
#define POOL_CLAIM_WAIT_MS 1000 /* a peer mid-way through writing its abort message */

typedef struct pool_block {
    struct pool_block *next;
    void *mem;
    uint32_t shm; /* POOL_CTRL_HOST: its segment (rt_ctrl_shm.c) */
} pool_block;

/* Staging mode's control blocks live in host shared memory (rt_ctrl_shm.c): a list of their own. */
enum { POOL_CTRL = 0, POOL_INBOX = 1, POOL_CTRL_HOST = 2, POOL_KINDS };

typedef struct pool_dev {
    uint32_t device_id;
    hal_device *dev; /* the pool's own reference: blocks outlive every communicator */
    pool_block *head[POOL_KINDS][POOL_CLASSES], *tail[POOL_KINDS][POOL_CLASSES];
    struct pool_dev *next;
} pool_dev;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pool_dev *g_pools;

static unsigned size_class(size_t bytes)
{
    unsigned k = 0;
    while (k + 1 < POOL_CLASSES && ((size_t)1 << (POOL_MIN_SHIFT + k)) < bytes)
        k++;
    return k;
}

/* Caller holds g_lock. */
static pool_dev *pool_for(rt_comm *c)
{
    uint32_t id = c->dev_handle.device_id;
    for (pool_dev *p = g_pools; p; p = p->next)
        if (p->device_id == id)
            return p;
    pool_dev *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    hal_result rc = c->hal->device_open((int32_t)id, &p->dev);
    if (rc != HAL_OK) {
        OH_ERR("comm", "rank %u: keeping device %u open for its control blocks failed: %s", c->rank, id,
               hal_result_name(rc));
        free(p);
        return NULL;
    }
    p->device_id = id;
    p->next = g_pools;
    g_pools = p;
    return p;
}

/* Caller holds g_lock. A block of `kind` from the pool or a new one (NULL: logged). */
static void *take_mem(rt_comm *c, pool_dev *p, int kind, unsigned k, size_t bytes)
{
    pool_block *b = p->head[kind][k];
    if (b) {
        p->head[kind][k] = b->next;
        if (!p->head[kind][k])
            p->tail[kind][k] = NULL;
        void *mem = b->mem;
        c->ctrl_shm = kind == POOL_CTRL_HOST ? b->shm : c->ctrl_shm;
        free(b);
        return mem;
    }
    if (kind == POOL_CTRL_HOST)
        return rt_ctrl_shm_create(bytes, &c->ctrl_shm);
    void *mem = NULL;
    hal_result rc = c->hal->mem_alloc(p->dev, bytes, &mem);
    if (rc != HAL_OK) {
        OH_ERR("comm", "rank %u: allocating a %zu-byte %s on device %u failed: %s", c->rank, bytes,
               kind == POOL_CTRL ? "control block" : "eager inbox", p->device_id, hal_result_name(rc));
        return NULL;
    }
    return mem;
}

/* Caller holds g_lock. A block from the pool (epoch already bumped by its release) or a new one. */
static rt_ctrl *take_block(rt_comm *c, pool_dev *p, int kind, unsigned k, size_t bytes)
{
    bool fresh = p->head[kind][k] == NULL;
    rt_ctrl *ctrl = take_mem(c, p, kind, k, bytes);
    if (!ctrl || !fresh)
        return ctrl;
    /* Never a control block before: epoch 1 (0 is never used, so zeroed memory matches nothing). */
    atomic_store(&ctrl->abort_word, (uint64_t)1 << 32);
    atomic_store(&ctrl->join_word, (uint64_t)1 << 32);
    return ctrl;
}

/* A block of `kind` (POOL_CTRL or POOL_INBOX) of at least `need` bytes from this device's pool;
 * its size class in *bytes. NULL when out of memory. */
static void *acquire_mem(rt_comm *c, int kind, size_t need, size_t *bytes)
{
    unsigned k = size_class(need);
    *bytes = (size_t)1 << (POOL_MIN_SHIFT + k);
    if (*bytes < need)
        return NULL;
    pthread_mutex_lock(&g_lock);
    pool_dev *p = pool_for(c);
    void *mem = !p                   ? NULL
                : kind != POOL_INBOX ? (void *)take_block(c, p, kind, k, *bytes)
                                     : take_mem(c, p, kind, k, *bytes);
    pthread_mutex_unlock(&g_lock);
    return mem;
}

HcclResult rt_ctrl_acquire(rt_comm *c)
{
    size_t bytes;
    rt_ctrl *ctrl = acquire_mem(c, c->staging ? POOL_CTRL_HOST : POOL_CTRL, rt_ctrl_size(c->nranks), &bytes);
    if (!ctrl)
        return HCCL_E_MEMORY;
    rt_ctrl_clear(ctrl, c->nranks);
    ctrl->magic = RT_CTRL_MAGIC;
    ctrl->nranks = c->nranks;
    c->ctrl = ctrl;
    c->ctrl_bytes = bytes;
    c->ctrl_epoch = (uint32_t)(atomic_load(&ctrl->abort_word) >> 32);
    return HCCL_SUCCESS;
}

/* The new epoch in both tagged words. A peer that claimed the abort word (state 1) is writing the
 * message into this block right now: let it finish (a peer that died there is waited out). */
static void bump_epoch(rt_ctrl *ctrl, uint32_t epoch)
{
    uint32_t next_epoch = epoch + 1 ? epoch + 1 : 1;
    uint64_t next = (uint64_t)next_epoch << 32;
    struct timespec nap = {0, 1000000};
    uint64_t w = atomic_load(&ctrl->abort_word);
    for (int waited = 0;; w = atomic_load(&ctrl->abort_word)) {
        if ((uint32_t)w == 1 && waited++ < POOL_CLAIM_WAIT_MS) {
            nanosleep(&nap, NULL);
            continue;
        }
        if (atomic_compare_exchange_strong(&ctrl->abort_word, &w, next))
            break;
    }
    atomic_store(&ctrl->join_word, next);
    /* Whoever sees a later write into this block (its next use) sees the new epoch too. */
    atomic_thread_fence(memory_order_release);
}

/* Back to the pool's list of `kind`, FIFO (never to the heap). */
static void put_mem(rt_comm *c, int kind, void *mem, size_t bytes, uint32_t shm)
{
    pool_block *b = malloc(sizeof *b);
    pthread_mutex_lock(&g_lock);
    pool_dev *p = g_pools;
    while (p && p->device_id != c->dev_handle.device_id)
        p = p->next;
    if (b && p) {
        unsigned k = size_class(bytes);
        b->next = NULL;
        b->mem = mem;
        b->shm = shm;
        if (p->tail[kind][k])
            p->tail[kind][k]->next = b;
        else
            p->head[kind][k] = b;
        p->tail[kind][k] = b;
        b = NULL;
    }
    pthread_mutex_unlock(&g_lock);
    if (b) /* no memory for the list node: the block stays out of use, never back to the heap */
        free(b);
}

void rt_ctrl_release(rt_comm *c)
{
    if (!c->ctrl)
        return;
    bump_epoch(c->ctrl, c->ctrl_epoch);
    put_mem(c, c->ctrl_shm ? POOL_CTRL_HOST : POOL_CTRL, c->ctrl, c->ctrl_bytes, c->ctrl_shm);
    c->ctrl = NULL;
}

HcclResult rt_inbox_acquire(rt_comm *c)
{
    size_t bytes;
    c->inbox = acquire_mem(c, POOL_INBOX, rt_inbox_bytes(c), &bytes);
    c->inbox_pool_bytes = bytes;
    if (!c->inbox)
        return HCCL_E_MEMORY;
    /* Boxes are read only after a peer wrote them; headers are read after a peer's signal, which a
     * peer not in header mode sends without writing one: never leave a former owner's there. The
     * one-way headers fill their pages: mapped in one call first (hal_ops.mem_prefault). */
    if (c->eager_hdr && c->hal->mem_prefault)
        (void)c->hal->mem_prefault(rt_inbox_slot(c, c->inbox, ALGO_EAGER_SLOTS),
                                   rt_inbox_bytes(c) - rt_inbox_eager_bytes(c));
    for (uint32_t s = 0; c->eager_hdr && s < rt_inbox_slots(c); s++)
        for (uint32_t r = 0; r < (rt_slot_oneway(s) && !rt_slot_gather(c, s) ? 1 : c->nranks); r++) /* one-way: 1 box */
            memset(rt_inbox_box(c, c->inbox, s, r), 0, sizeof(rt_sig));
    for (uint32_t w = 0; rt_p2p_boxes(c) && w < c->nranks; w++) {
        atomic_store(rt_p2p_read(c, c->inbox, w), 0);
        atomic_store(rt_p2p_posted(c, c->inbox, w), 0);
        for (uint32_t b = 0; w != c->rank && b < RT_P2P_BOXES; b++)
            memset(rt_p2p_box(c, c->inbox, w, b), 0, sizeof(rt_sig));
    }
    return HCCL_SUCCESS;
}

void rt_inbox_release(rt_comm *c)
{
    if (c->inbox)
        put_mem(c, POOL_INBOX, c->inbox, c->inbox_pool_bytes, 0);
    c->inbox = NULL;
}
