/* Copy kernels of the emulated DMA (emu_dma.c) and the memcpy_bw reference (tools/bench). */
#ifndef OH_EMU_COPY_H
#define OH_EMU_COPY_H

#include <stdbool.h>
#include <stddef.h>

/* Copies n bytes (no overlap) with non-temporal stores where the CPU has them (x86-64 SSE2):
 * the destination is written around the caches, so a copy larger than the caches costs one read
 * and one write per byte instead of also reading every destination line first. A plain memcpy
 * elsewhere. Ends with a store fence: the bytes are visible before any later store (a notify). */
void emu_copy_nt(void *dst, const void *src, size_t n);

/* Copies n bytes of src to both dst and dst2 (no two of the three ranges overlap), reading src
 * once: streamed to both with nt where the destinations share their alignment in a 16-byte line,
 * else block by block (EMU_COPY2_BLOCK bytes to one, then to the other, the block still cached). */
#define EMU_COPY2_BLOCK (32u << 10)
void emu_copy2(void *dst, void *dst2, const void *src, size_t n, bool nt);

#endif
