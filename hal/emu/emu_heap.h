/* A device heap allocator: first fit with coalescing over one address range, 512 B alignment.
 * Metadata lives in process memory (a sorted array of blocks); thread-safe. */
#ifndef EMU_HEAP_H
#define EMU_HEAP_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EMU_HEAP_ALIGN 512u

typedef struct emu_block {
    uint64_t off;
    uint64_t size;
    bool used;
} emu_block;

typedef struct emu_heap {
    pthread_mutex_t mu;
    char *base;
    uint64_t size;
    uint64_t used_bytes;
    emu_block *blocks; /* sorted by off, covering [0, size), no two adjacent free blocks */
    size_t nblocks, cap;
} emu_heap;

int emu_heap_init(emu_heap *h, void *base, uint64_t size);
void emu_heap_fini(emu_heap *h);
/* NULL if no block fits. */
void *emu_heap_alloc(emu_heap *h, uint64_t bytes);
/* 0 on success, -1 if p is not the start of a live allocation. */
int emu_heap_free(emu_heap *h, void *p);
/* 0 and the bytes of p's allocation from p on if p lies inside a live allocation, else -1. */
int emu_heap_lookup(emu_heap *h, const void *p, uint64_t *bytes_after);
/* 0 and the allocation's size if p is the start of a live allocation, else -1. */
int emu_heap_extent(emu_heap *h, const void *p, uint64_t *size);
uint64_t emu_heap_free_bytes(emu_heap *h);

#endif
