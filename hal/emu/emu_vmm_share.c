/* VMM mappings seen by the other processes of the emulated server.
 *
 * aclrtMapMem remaps a reserved range onto a physical chunk's pages only in the process that
 * maps it (emu_vmm.c). A peer process that imported the device sees the region through its own
 * mapping of the memfd, where the range still shows the reservation's own pages, so a peer's DMA
 * into a mapped range (zero-copy collectives on VMM buffers: HcclCommActivateCommMemory,
 * symmetric windows) would miss the chunk. So the owner lists its mappings {va, size, memfd
 * offset} in a table of its control area under a sequence counter (odd while it changes), and a
 * process applies the table of a device it imported to its own view (MAP_FIXED remaps of the
 * same memfd) before a DMA touches that device's region, whenever the counter moved: a few loads
 * per address when nothing changed. The owner changes a mapping only between uses (the program
 * unmaps memory no launch uses), and the change happens before the owner publishes the buffer to
 * peers, so every peer DMA that follows the publication sees it. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/oh_log.h"
#include "hal/emu/emu_internal.h"

#define EMU_VMM_OFFSET (4u << 20) /* in the control area, after the IPC table */
#define EMU_VMM_ENTRIES 256u

typedef struct vmm_share_entry {
    uint64_t va, size, file_off;
} vmm_share_entry;

typedef struct vmm_share_table {
    _Atomic uint64_t gen; /* odd while the owner writes */
    uint32_t n;
    uint32_t pad;
    vmm_share_entry e[EMU_VMM_ENTRIES];
} vmm_share_table;

struct emu_vmm_mirror {
    uint32_t n;
    vmm_share_entry e[EMU_VMM_ENTRIES];
};

_Static_assert(EMU_VMM_OFFSET + sizeof(vmm_share_table) <= EMU_CTRL_SIZE, "VMM table outside the control area");
_Static_assert(EMU_VMM_OFFSET >= EMU_IPC_OFFSET + (uint64_t)EMU_IPC_ENTRIES * sizeof(emu_ipc_entry),
               "VMM table overlaps the IPC table");

static vmm_share_table *table_of(const void *base)
{
    return (vmm_share_table *)((char *)base + EMU_VMM_OFFSET);
}

static void write_begin(vmm_share_table *t)
{
    atomic_store_explicit(&t->gen, atomic_load_explicit(&t->gen, memory_order_relaxed) + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
}

static void write_end(vmm_share_table *t)
{
    atomic_store_explicit(&t->gen, atomic_load_explicit(&t->gen, memory_order_relaxed) + 1, memory_order_release);
}

/* Owner, under the VMM lock of emu_vmm.c. */
void emu_vmm_share_add(const emu_region *r, const void *va, size_t size, uint64_t file_off)
{
    vmm_share_table *t = table_of(r->base);
    if (t->n >= EMU_VMM_ENTRIES) {
        OH_WARN("emu", "vmm: more than %u mappings on device %u: the mapping at %p is not visible to other processes",
                EMU_VMM_ENTRIES, r->handle.device_id, va);
        return;
    }
    write_begin(t);
    t->e[t->n++] = (vmm_share_entry){(uint64_t)(uintptr_t)va, size, file_off};
    write_end(t);
}

void emu_vmm_share_remove(const emu_region *r, const void *va)
{
    vmm_share_table *t = table_of(r->base);
    for (uint32_t i = 0; i < t->n; i++) {
        if (t->e[i].va != (uint64_t)(uintptr_t)va)
            continue;
        write_begin(t);
        t->e[i] = t->e[t->n - 1];
        t->n--;
        write_end(t);
        return;
    }
}

static bool has_entry(const vmm_share_entry *e, uint32_t n, const vmm_share_entry *x)
{
    for (uint32_t i = 0; i < n; i++)
        if (e[i].va == x->va && e[i].size == x->size && e[i].file_off == x->file_off)
            return true;
    return false;
}

/* Maps [va, va + size) of r onto memfd offset off, if both lie in the region. */
static void remap(const emu_region *r, uint64_t va, uint64_t size, uint64_t off)
{
    uint64_t base = (uint64_t)(uintptr_t)r->base;
    if (va < base || va + size > base + r->size || off + size > r->size || size == 0) {
        OH_ERR("emu", "vmm: device %u lists a mapping %#llx+%llu outside its region", r->handle.device_id,
               (unsigned long long)va, (unsigned long long)size);
        return;
    }
    void *p = mmap((void *)(uintptr_t)va, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, r->fd, (off_t)off);
    if (p == MAP_FAILED)
        OH_ERR("emu", "vmm: mirroring device %u mapping %#llx+%llu failed", r->handle.device_id,
               (unsigned long long)va, (unsigned long long)size);
}

/* Applies the owner's current table to this process's view of r (regions lock held). */
static void mirror_sync(emu_region *r, uint64_t gen)
{
    vmm_share_table *t = table_of(r->base);
    struct emu_vmm_mirror *old = r->vmm_mirror, *snap = calloc(1, sizeof *snap);
    if (!snap)
        return;
    for (;;) {
        gen = atomic_load_explicit(&t->gen, memory_order_acquire);
        if (gen & 1) {
            sched_yield();
            continue;
        }
        snap->n = t->n < EMU_VMM_ENTRIES ? t->n : EMU_VMM_ENTRIES;
        memcpy(snap->e, t->e, snap->n * sizeof snap->e[0]);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&t->gen, memory_order_relaxed) == gen)
            break;
    }
    uint64_t base = (uint64_t)(uintptr_t)r->base;
    for (uint32_t i = 0; old && i < old->n; i++) /* gone: the range's own pages back */
        if (!has_entry(snap->e, snap->n, &old->e[i]))
            remap(r, old->e[i].va, old->e[i].size, old->e[i].va - base);
    for (uint32_t i = 0; i < snap->n; i++)
        if (!old || !has_entry(old->e, old->n, &snap->e[i]))
            remap(r, snap->e[i].va, snap->e[i].size, snap->e[i].file_off);
    free(old);
    r->vmm_mirror = snap;
    atomic_store_explicit(&r->vmm_seen, gen, memory_order_release);
}

/* Per region slot (EMU_REGION_SLOTS), what this process knows of the VMM table there: 0 unknown
 * (ask under the lock: a slot just mapped or changed hands starts so), SLOT_NONE (no device of
 * this server: nothing to mirror), else the generation last found applied, plus one. Indexed by
 * slot rather than device id, the fast path needs neither the configuration (which server this
 * is) nor the region table: a subtraction, a shift and two loads (39 instructions an address by
 * device id, 2 to 4 addresses a small launch; docs/perf-history.md, forty-sixth pass). */
#define SLOT_NONE UINT64_MAX
static _Atomic uint64_t g_known[EMU_REGION_SLOTS];

static uint64_t slot_of(const void *region_base)
{
    return ((uint64_t)(uintptr_t)region_base - EMU_REGION_BASE) / EMU_REGION_SIZE;
}

void emu_vmm_slot_changed(uint32_t id)
{
    atomic_store_explicit(&g_known[slot_of(emu_region_base(emu_cfg()->server_index, id))], 0, memory_order_relaxed);
}

/* Slow path (regions lock): mirror the import's table if it moved, and remember the generation.
 * Out of line: inlined, its registers made every DMA address's check save and restore them. */
static __attribute__((noinline)) void sync_slot(uint64_t slot, const void *p)
{
    uint32_t id = emu_region_id_of(p);
    if (id == UINT32_MAX) { /* another server's slot: never mapped here */
        atomic_store_explicit(&g_known[slot], SLOT_NONE, memory_order_relaxed);
        return;
    }
    if (!emu_region_peek(id)) /* not mapped here: the DMA will say so */
        return;
    emu_regions_lock();
    emu_region *r = emu_region_find_locked(id);
    if (r) {
        uint64_t gen = atomic_load_explicit(&table_of(r->base)->gen, memory_order_acquire);
        if (!r->owned && gen != atomic_load_explicit(&r->vmm_seen, memory_order_relaxed))
            mirror_sync(r, gen);
        uint64_t seen = r->owned ? gen : atomic_load(&r->vmm_seen);
        atomic_store_explicit(&g_known[slot], seen + 1, memory_order_release);
    }
    emu_regions_unlock();
}

/* A DMA is about to touch p, so p's region is mapped (were it not, the DMA would fault alike; a
 * slot is known only while its region is mapped, set_slot forgets it under the regions lock): its
 * table can be read without a read section. A few loads of lines a loop keeps cached: the scan of
 * every region it replaced took 7% of an 8 B Broadcast at 8 ranks on 2 CPUs (docs/perf-history.md). */
void emu_vmm_sync_at(const void *p)
{
    uint64_t at = (uint64_t)(uintptr_t)p - EMU_REGION_BASE; /* below the base: wraps, out of range */
    if (at >= (uint64_t)EMU_REGION_SLOTS * EMU_REGION_SIZE)
        return;
    uint64_t slot = at / EMU_REGION_SIZE;
    uint64_t known = atomic_load_explicit(&g_known[slot], memory_order_acquire);
    if (known == SLOT_NONE)
        return;
    if (known) {
        vmm_share_table *t = table_of((const char *)(uintptr_t)EMU_REGION_BASE + slot * EMU_REGION_SIZE);
        if (atomic_load_explicit(&t->gen, memory_order_acquire) + 1 == known)
            return;
    }
    sync_slot(slot, p);
}

void emu_vmm_mirror_free(emu_region *r)
{
    free(r->vmm_mirror);
    r->vmm_mirror = NULL;
}
