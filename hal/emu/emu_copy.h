/* Copy kernels of the emulated DMA (emu_dma.c) and the memcpy_bw reference (tools/bench). */
#ifndef OH_EMU_COPY_H
#define OH_EMU_COPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Copies n bytes (no overlap) with non-temporal stores where the CPU has them (x86-64 SSE2):
 * the destination is written around the caches, so a copy larger than the caches costs one read
 * and one write per byte instead of also reading every destination line first. A plain memcpy
 * elsewhere. Ends with a store fence: the bytes are visible before any later store (a notify). */
void emu_copy_nt(void *dst, const void *src, size_t n);

/* Copies n bytes of src to each of the k destinations dst[0..k) (no two of the k + 1 ranges
 * overlap), reading src once: streamed to all with nt where the destinations share dst[0]'s phase
 * in a 16-byte line, else block by block (EMU_COPY_FANOUT_BLOCK bytes to each in turn, the block
 * still cached). */
#define EMU_COPY_FANOUT_MAX 8u
#define EMU_COPY_FANOUT_BLOCK (32u << 10)
void emu_copy_fanout(char *const *dst, uint32_t k, const void *src, size_t n, bool nt);

#endif
