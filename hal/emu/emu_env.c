/* The emulator's configuration, read once per process from the environment. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/oh_hash.h"
#include "common/oh_log.h"
#include "hal/emu/emu_internal.h"

static emu_config g_cfg;
static pthread_once_t g_cfg_once = PTHREAD_ONCE_INIT;

/* Unsigned value of env var `name` in [lo, hi], else `def` (with a warning if set but invalid). */
static uint64_t env_u64(const char *name, uint64_t def, uint64_t lo, uint64_t hi)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return def;
    char *end;
    unsigned long long x = strtoull(v, &end, 10);
    if (*end || x < lo || x > hi) {
        /* Error level: the default log level hides warnings, and a setting that is ignored must
         * not be ignored silently. */
        OH_ERR("emu", "%s=%s is not in [%llu, %llu]: ignored, using %llu", name, v, (unsigned long long)lo,
               (unsigned long long)hi, (unsigned long long)def);
        return def;
    }
    return x;
}

static void cfg_init(void)
{
    const char *ns = getenv("HCCL_EMU_NAMESPACE");
    if (ns && *ns)
        snprintf(g_cfg.ns, sizeof g_cfg.ns, "%s", ns);
    else
        snprintf(g_cfg.ns, sizeof g_cfg.ns, "default-%u", (unsigned)getuid());
    g_cfg.server_key = oh_fnv1a(OH_FNV1A_BASIS, g_cfg.ns, strlen(g_cfg.ns));
    g_cfg.server_index = (uint32_t)env_u64("HCCL_EMU_SERVER_INDEX", 0, 0, 1u << 20);
    g_cfg.ndev = (uint32_t)env_u64("HCCL_EMU_DEVICES", 8, 1, EMU_MAX_DEVICES);
    g_cfg.dma_engines = (uint32_t)env_u64("HCCL_EMU_DMA_ENGINES", 2, 0, 64);
    g_cfg.dma_split_bytes = env_u64("HCCL_EMU_DMA_SPLIT_BYTES", 2u << 20, 1, UINT64_MAX);
    /* Copies from where a descriptor outgrows a core's L2 may stream around the caches (docs/emulator.md,
     * "Copy kernel"): unset, the DMA measures which kernel is faster here (emu_copy_pick.h). */
    const char *nt = getenv("HCCL_EMU_COPY_NT_BYTES");
    g_cfg.copy_nt_auto = !nt || !*nt;
    g_cfg.copy_nt_bytes = env_u64("HCCL_EMU_COPY_NT_BYTES", 4u << 20, 0, UINT64_MAX);
    /* Adaptive waits (docs/emulator.md, "Waits"): defaults measured on a 2-core machine with more
     * runnable threads than cores (docs/perf-history.md). Unset, notify waits spin only while this
     * process works with no more devices than there are cores (emu_notify.c). */
    const char *spin = getenv("HCCL_EMU_SPIN_US");
    g_cfg.spin_auto = !spin || !*spin;
    g_cfg.spin_ns = env_u64("HCCL_EMU_SPIN_US", 0, 0, 1000000) * 1000ull;
    long ncpus = sysconf(_SC_NPROCESSORS_ONLN);
    g_cfg.ncpus = ncpus > 0 ? (uint32_t)ncpus : 1;
    g_cfg.yield_ns = env_u64("HCCL_EMU_YIELD_US", 200, 0, 1000000) * 1000ull;
    g_cfg.sync_yield_ns = env_u64("HCCL_EMU_SYNC_YIELD_US", 2000, 0, 1000000) * 1000ull;
    g_cfg.worker_poll_ns = env_u64("HCCL_EMU_WORKER_POLL_US", 100, 0, 1000000) * 1000ull;
    g_cfg.worker_batch = env_u64("HCCL_EMU_WORKER_BATCH", 1, 0, 1) != 0;
    g_cfg.exec_timeout_ms = env_u64("HCCL_EXEC_TIMEOUT", 1836, 0, 2147483647) * 1000ull;
    /* Parsed as the runtime's bootstrap does (>= 1, else 120), which reports bad values itself. */
    const char *ct = getenv("HCCL_CONNECT_TIMEOUT");
    char *end = NULL;
    long long t = ct && *ct ? strtoll(ct, &end, 10) : 0;
    g_cfg.connect_timeout_s = end && !*end && t >= 1 && t <= 86400 ? (uint32_t)t : 120;
}

_Atomic(const emu_config *) emu_cfg_read;

const emu_config *emu_cfg_first(void)
{
    pthread_once(&g_cfg_once, cfg_init);
    atomic_store_explicit(&emu_cfg_read, &g_cfg, memory_order_release);
    return &g_cfg;
}

uint32_t emu_region_id_of(const void *ptr)
{
    uint64_t a = (uint64_t)(uintptr_t)ptr;
    if (a < EMU_REGION_BASE || a >= EMU_REGION_BASE + (uint64_t)EMU_REGION_SLOTS * EMU_REGION_SIZE)
        return UINT32_MAX;
    uint64_t slot = (a - EMU_REGION_BASE) / EMU_REGION_SIZE;
    uint64_t first = (uint64_t)emu_cfg()->server_index * EMU_MAX_DEVICES % EMU_REGION_SLOTS;
    uint64_t id = (slot + EMU_REGION_SLOTS - first) % EMU_REGION_SLOTS;
    return id < EMU_MAX_DEVICES ? (uint32_t)id : UINT32_MAX;
}

void *emu_region_base(uint32_t server_index, uint32_t id)
{
    uint64_t slot = ((uint64_t)server_index * EMU_MAX_DEVICES + id) % EMU_REGION_SLOTS;
    return (void *)(uintptr_t)(EMU_REGION_BASE + slot * EMU_REGION_SIZE);
}
