#include "hal/emu/emu_heap.h"

#include <stdlib.h>
#include <string.h>

int emu_heap_init(emu_heap *h, void *base, uint64_t size)
{
    memset(h, 0, sizeof *h);
    pthread_mutex_init(&h->mu, NULL);
    h->base = base;
    h->size = size;
    h->cap = 64;
    h->blocks = malloc(h->cap * sizeof *h->blocks);
    if (!h->blocks)
        return -1;
    h->blocks[0] = (emu_block){0, size, false};
    h->nblocks = 1;
    return 0;
}

void emu_heap_fini(emu_heap *h)
{
    free(h->blocks);
    h->blocks = NULL;
    h->nblocks = 0;
    pthread_mutex_destroy(&h->mu);
}

/* Index of the block containing offset off (blocks cover the whole range). */
static size_t heap_find(const emu_heap *h, uint64_t off)
{
    size_t lo = 0, hi = h->nblocks;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (h->blocks[mid].off <= off)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static int heap_insert(emu_heap *h, size_t at, emu_block b)
{
    if (h->nblocks == h->cap) {
        emu_block *nb = realloc(h->blocks, 2 * h->cap * sizeof *nb);
        if (!nb)
            return -1;
        h->blocks = nb;
        h->cap *= 2;
    }
    memmove(&h->blocks[at + 1], &h->blocks[at], (h->nblocks - at) * sizeof *h->blocks);
    h->blocks[at] = b;
    h->nblocks++;
    return 0;
}

static void heap_remove(emu_heap *h, size_t at)
{
    memmove(&h->blocks[at], &h->blocks[at + 1], (h->nblocks - at - 1) * sizeof *h->blocks);
    h->nblocks--;
}

void *emu_heap_alloc(emu_heap *h, uint64_t bytes)
{
    if (bytes == 0 || bytes > h->size)
        return NULL;
    uint64_t need = (bytes + EMU_HEAP_ALIGN - 1) & ~(uint64_t)(EMU_HEAP_ALIGN - 1);
    void *p = NULL;
    pthread_mutex_lock(&h->mu);
    for (size_t i = 0; i < h->nblocks; i++) {
        emu_block *b = &h->blocks[i];
        if (b->used || b->size < need)
            continue;
        if (b->size > need) {
            emu_block rest = {b->off + need, b->size - need, false};
            if (heap_insert(h, i + 1, rest) != 0)
                break;
            b = &h->blocks[i];
            b->size = need;
        }
        b->used = true;
        h->used_bytes += b->size;
        p = h->base + b->off;
        break;
    }
    pthread_mutex_unlock(&h->mu);
    return p;
}

int emu_heap_free(emu_heap *h, void *p)
{
    if ((char *)p < h->base || (char *)p >= h->base + h->size)
        return -1;
    uint64_t off = (uint64_t)((char *)p - h->base);
    int rc = -1;
    pthread_mutex_lock(&h->mu);
    size_t i = heap_find(h, off);
    if (h->blocks[i].off == off && h->blocks[i].used) {
        h->blocks[i].used = false;
        h->used_bytes -= h->blocks[i].size;
        if (i + 1 < h->nblocks && !h->blocks[i + 1].used) { /* merge right */
            h->blocks[i].size += h->blocks[i + 1].size;
            heap_remove(h, i + 1);
        }
        if (i > 0 && !h->blocks[i - 1].used) { /* merge left */
            h->blocks[i - 1].size += h->blocks[i].size;
            heap_remove(h, i);
        }
        rc = 0;
    }
    pthread_mutex_unlock(&h->mu);
    return rc;
}

/* The live block holding p: 0 with p's offset and the block's offset and size, or -1. */
static int heap_used_block(emu_heap *h, const void *p, uint64_t *off, uint64_t *blk_off, uint64_t *blk_size)
{
    if ((const char *)p < h->base || (const char *)p >= h->base + h->size)
        return -1;
    *off = (uint64_t)((const char *)p - h->base);
    int rc = -1;
    pthread_mutex_lock(&h->mu);
    const emu_block *b = &h->blocks[heap_find(h, *off)];
    if (b->used) {
        *blk_off = b->off;
        *blk_size = b->size;
        rc = 0;
    }
    pthread_mutex_unlock(&h->mu);
    return rc;
}

int emu_heap_lookup(emu_heap *h, const void *p, uint64_t *bytes_after)
{
    uint64_t off, b_off, b_size;
    if (heap_used_block(h, p, &off, &b_off, &b_size))
        return -1;
    if (bytes_after)
        *bytes_after = b_off + b_size - off;
    return 0;
}

int emu_heap_extent(emu_heap *h, const void *p, uint64_t *size)
{
    uint64_t off, b_off, b_size;
    if (heap_used_block(h, p, &off, &b_off, &b_size) || b_off != off)
        return -1;
    *size = b_size;
    return 0;
}

uint64_t emu_heap_free_bytes(emu_heap *h)
{
    pthread_mutex_lock(&h->mu);
    uint64_t f = h->size - h->used_bytes;
    pthread_mutex_unlock(&h->mu);
    return f;
}
