/* Copy kernel choice by measurement (emu_copy_pick.h). Several streams may pick and record at
 * once: the counters are atomics, and an estimate that loses a concurrent update still follows
 * recent samples. */
#include "hal/emu/emu_copy_pick.h"

bool emu_copy_pick_next(emu_copy_pick *p, bool *timed)
{
    uint64_t i = atomic_fetch_add_explicit(&p->batches, 1, memory_order_relaxed);
    uint64_t mem = atomic_load_explicit(&p->rate[0], memory_order_relaxed);
    uint64_t nt = atomic_load_explicit(&p->rate[1], memory_order_relaxed);
    *timed = i > 0;
    if (i == 0)
        return false;
    if (i <= 2 * EMU_COPY_PICK_SAMPLES) /* each kernel in turn: streaming stores first */
        return i % 2 == 1;
    if (!nt || !mem) /* a sample that copied nothing measured nothing */
        return !nt;
    bool best = nt * 10 > mem * 11; /* streaming stores only when clearly faster: memcpy keeps the
                                       destination in cache for the step that reads it next */
    return i % EMU_COPY_PICK_REPROBE == 0 ? !best : best;
}

void emu_copy_pick_record(emu_copy_pick *p, bool nt, uint64_t bytes, uint64_t ns)
{
    if (!bytes)
        return;
    uint64_t rate = bytes * 1000u / (ns ? ns : 1);
    rate = rate ? rate : 1; /* 0 means unmeasured */
    _Atomic uint64_t *slot = &p->rate[nt];
    uint64_t old = atomic_load_explicit(slot, memory_order_relaxed);
    uint64_t kept = old - old / 32; /* the best rate seen, decaying by 1/32 a sample */
    atomic_store_explicit(slot, rate > kept ? rate : kept, memory_order_relaxed);
}
