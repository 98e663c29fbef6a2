/* Which kernel the emulated DMA copies large descriptors with when HCCL_EMU_COPY_NT_BYTES is
 * unset: the C library's memcpy or the non-temporal kernel (emu_copy_nt). Neither wins everywhere:
 * on one VM host the streaming stores made 16-64 MiB collectives 1.2-2x faster, on another they
 * made them 1.25-1.45x slower (the host's caches, shared with its other guests, decide;
 * docs/perf-history.md). So the DMA measures instead of guessing: it times whole batches with each kernel
 * (a whole batch rather than a chunk, so that the chunks of one kernel do not pay for the
 * write-backs the other's left in the caches) and copies with the faster one (streaming stores
 * only when more than 10% faster: samples taken while other ranks copy are noisy), timing the
 * other again every EMU_COPY_PICK_REPROBE batches as the machine changes. Each kernel is first
 * timed EMU_COPY_PICK_SAMPLES times, in turn. A kernel's rate is the best it reached, decaying by
 * 1/32 at each of its samples: samples that ran beside other ranks' copies, or into a fresh buffer
 * (its first-touch faults: the first batches of an AlltoAll write N blocks never touched), are
 * slow for reasons that are not the kernel's, and a mean of them used to keep streaming stores
 * off where they copy 1.2-1.4x faster. */
#ifndef OH_EMU_COPY_PICK_H
#define OH_EMU_COPY_PICK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define EMU_COPY_PICK_REPROBE 16u
#define EMU_COPY_PICK_SAMPLES 2u

typedef struct emu_copy_pick {
    _Atomic uint64_t batches; /* large batches seen */
    _Atomic uint64_t rate[2]; /* [0] memcpy, [1] non-temporal: bytes per us, the decaying best;
                                 0 = unmeasured */
} emu_copy_pick;

/* The kernel for the next large batch (true: non-temporal); *timed: whether to time it and report
 * it to emu_copy_pick_record. The first batch is not timed: it pays first-touch faults. */
bool emu_copy_pick_next(emu_copy_pick *p, bool *timed);

/* A timed batch copied `bytes` in `ns` with the kernel `nt` chose. */
void emu_copy_pick_record(emu_copy_pick *p, bool nt, uint64_t bytes, uint64_t ns);

#endif
