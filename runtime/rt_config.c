/* Communicator configuration: HcclCommConfig (size/magic/version aware) over env over defaults. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "runtime/rt_internal.h"

typedef struct rt_config_header {
    size_t size;
    uint32_t magic;
    uint32_t version;
    uint64_t reserved;
} rt_config_header;

int32_t rt_env_exec_timeout_s(void)
{
    const char *env = getenv("HCCL_EXEC_TIMEOUT");
    if (env && *env) {
        long v = strtol(env, NULL, 10);
        if (v >= 0 && v <= 2147483647L)
            return (int32_t)v;
    }
    return 1836; /* CANN's default */
}

static uint32_t env_buffsize_mb(void)
{
    const char *env = getenv("HCCL_BUFFSIZE");
    if (env && *env) {
        long v = strtol(env, NULL, 10);
        if (v >= 1)
            return (uint32_t)v;
        OH_WARN("config", "HCCL_BUFFSIZE=%s is invalid (expect MB >= 1); using %d", env, HCCL_COMM_DEFAULT_BUFFSIZE);
    }
    return HCCL_COMM_DEFAULT_BUFFSIZE;
}

/* HCCL_EAGER_MAX_BYTES: the eager protocol's crossover (docs/algorithms.md); 0 turns it off.
 * Unset (or invalid): RT_EAGER_AUTO, the per-size default for the communicator's rank count
 * (algo_eager_default), resolved when plans are compiled. */
static uint64_t env_eager_max(void)
{
    const char *env = getenv("HCCL_EAGER_MAX_BYTES");
    if (env && *env) {
        char *end;
        unsigned long long v = strtoull(env, &end, 10);
        if (*end == 0 && env[0] != '-')
            return v > ALGO_EAGER_BOX ? ALGO_EAGER_BOX : (uint64_t)v;
        OH_WARN("config", "HCCL_EAGER_MAX_BYTES=%s is invalid (expect bytes, 0 = off); using the default "
                "(by collective and rank count, docs/algorithms.md)", env);
    }
    return RT_EAGER_AUTO;
}

/* HCCL_EAGER_ONEWAY=0 keeps eager Broadcast and Scatter a full exchange (docs/algorithms.md). */
static bool env_oneway(void)
{
    const char *env = getenv("HCCL_EAGER_ONEWAY");
    return !env || strcmp(env, "0") != 0;
}

/* HCCL_EAGER_P2P=0: this rank's small sends wait for the receiver's record as large ones do. */
static bool env_p2p_eager(void)
{
    const char *env = getenv("HCCL_EAGER_P2P");
    return !env || strcmp(env, "0") != 0;
}

static uint32_t env_deterministic(void)
{
    const char *env = getenv("HCCL_DETERMINISTIC");
    if (!env)
        return 0;
    if (!strcasecmp(env, "true") || !strcmp(env, "1"))
        return 1;
    if (!strcasecmp(env, "strict") || !strcmp(env, "2"))
        return 2;
    return 0;
}

/* HcclSetConfig(HCCL_DETERMINISTIC): process-wide, for communicators created after the call; it
 * overrides HCCL_DETERMINISTIC, a communicator's hcclDeterministic overrides both. */
static _Atomic int32_t g_deterministic = -1; /* -1: never set */

static void apply_defaults(rt_comm *c)
{
    c->buffsize_mb = env_buffsize_mb();
    c->eager_max = env_eager_max();
    c->oneway_wanted = env_oneway();
    c->p2p_eager = env_p2p_eager();
    int32_t set = atomic_load(&g_deterministic);
    c->deterministic = set >= 0 ? (uint32_t)set : env_deterministic();
    c->exec_timeout_s = rt_env_exec_timeout_s();
    const char *entry = getenv("HCCL_ENTRY_LOG_ENABLE");
    c->entry_log = entry && entry[0] == '1';
    const char *algo = getenv("HCCL_ALGO");
    snprintf(c->algo_spec, sizeof c->algo_spec, "%s", algo ? algo : "");
    c->op_expansion_mode = HCCL_COMM_DEFAULT_OP_EXPANSION_MODE;
    c->sq_depth = HCCL_COMM_SQ_DEPTH_CONFIG_NOT_SET;
}

/* The version that added hcclChannelSqDepth. */
#define RT_CONFIG_SQ_DEPTH_VERSION 11u

/* Copies what the caller's header version holds into a fully defaulted config, so callers
 * compiled against an older (smaller) HcclCommConfig keep working. A field newer than the
 * caller's version keeps its default even when size covers it (as CANN does): an old caller's
 * bytes there are not a setting. */
static HcclResult read_config(const HcclCommConfig *in, HcclCommConfig *out)
{
    HcclCommConfigInit(out);
    rt_config_header h;
    memcpy(&h, in->reserved, sizeof h);
    CHECK_ARG(h.magic == HCCL_COMM_CONFIG_MAGIC_WORD, HCCL_E_PARA, "config",
              "HcclCommConfig magic is 0x%x, expected 0x%x: call HcclCommConfigInit() before setting fields",
              h.magic, HCCL_COMM_CONFIG_MAGIC_WORD);
    CHECK_ARG(h.size >= HCCL_COMM_CONFIG_INFO_BYTES, HCCL_E_PARA, "config", "HcclCommConfig size %zu is too small",
              h.size);
    size_t n = h.size < sizeof *out ? h.size : sizeof *out;
    memcpy((char *)out + HCCL_COMM_CONFIG_INFO_BYTES, (const char *)in + HCCL_COMM_CONFIG_INFO_BYTES,
           n - HCCL_COMM_CONFIG_INFO_BYTES);
    if (h.version < RT_CONFIG_SQ_DEPTH_VERSION)
        out->hcclChannelSqDepth = HCCL_COMM_SQ_DEPTH_CONFIG_NOT_SET;
    return HCCL_SUCCESS;
}

/* hcclChannelSqDepth bounds a channel's send queue on CANN (rounded up to a power of two, at
 * least 16, at most the device's queue depth). The emulator has no send queues, so the value is
 * checked against the same rules, with 65536 as the emulated device's maximum, and recorded. */
#define RT_SQ_DEPTH_MIN 16u
#define RT_SQ_DEPTH_MAX 65536u

static HcclResult apply_sq_depth(rt_comm *c, uint32_t depth)
{
    if (depth == HCCL_COMM_SQ_DEPTH_CONFIG_NOT_SET)
        return HCCL_SUCCESS;
    CHECK_ARG(depth >= 1 && depth <= RT_SQ_DEPTH_MAX, HCCL_E_PARA, "config",
              "hcclChannelSqDepth=%u is invalid (1-%u, or HCCL_COMM_SQ_DEPTH_CONFIG_NOT_SET)", depth, RT_SQ_DEPTH_MAX);
    uint32_t rounded = RT_SQ_DEPTH_MIN;
    while (rounded < depth)
        rounded <<= 1;
    c->sq_depth = rounded;
    return HCCL_SUCCESS;
}

HcclResult rt_config_apply(rt_comm *c, const HcclCommConfig *config)
{
    apply_defaults(c);
    if (!config)
        return HCCL_SUCCESS;
    HcclCommConfig cfg;
    CHECK(read_config(config, &cfg));
    if (cfg.hcclBufferSize != HCCL_COMM_BUFFSIZE_CONFIG_NOT_SET) {
        CHECK_ARG(cfg.hcclBufferSize >= 1, HCCL_E_PARA, "config", "hcclBufferSize=%u MB is invalid (>= 1)",
                  cfg.hcclBufferSize);
        c->buffsize_mb = cfg.hcclBufferSize;
    }
    if (cfg.hcclDeterministic != HCCL_COMM_DETERMINISTIC_CONFIG_NOT_SET) {
        CHECK_ARG(cfg.hcclDeterministic <= 2, HCCL_E_PARA, "config", "hcclDeterministic=%u is invalid (0, 1 or 2)",
                  cfg.hcclDeterministic);
        c->deterministic = cfg.hcclDeterministic;
    }
    /* CANN documents 0 default, 1 host, 2 AI CPU, 3 AIV, 4 AIV only; its enum numbers 0-6. The
     * emulator runs every plan on the device's stream worker whatever the mode (docs/runtime.md). */
    CHECK_ARG(cfg.hcclOpExpansionMode <= 6, HCCL_E_PARA, "config", "hcclOpExpansionMode=%u is invalid (0-6)",
              cfg.hcclOpExpansionMode);
    c->op_expansion_mode = cfg.hcclOpExpansionMode;
    CHECK(apply_sq_depth(c, cfg.hcclChannelSqDepth));
    CHECK_ARG(cfg.aclGraphZeroCopyEnable <= 1, HCCL_E_PARA, "config", "aclGraphZeroCopyEnable=%u is invalid (0 or 1)",
              (unsigned)cfg.aclGraphZeroCopyEnable);
    if (cfg.hcclCommName[0])
        snprintf(c->name, sizeof c->name, "%.*s", (int)sizeof cfg.hcclCommName - 1, cfg.hcclCommName);
    if (cfg.hcclExecTimeOut != HCCL_COMM_EXECTIMEOUT_CONFIG_NOT_SET && cfg.hcclExecTimeOut >= 0)
        c->exec_timeout_s = cfg.hcclExecTimeOut;
    if (cfg.hcclAlgo[0])
        snprintf(c->algo_spec, sizeof c->algo_spec, "%.*s", (int)sizeof cfg.hcclAlgo - 1, cfg.hcclAlgo);
    return HCCL_SUCCESS;
}

uint32_t HcclGetCommConfigCapability(void)
{
    /* Callers test cap < this value, so it claims a prefix: buffer size ... retry, each honoured
     * or a documented no-op (docs/runtime.md, "Communicator configuration"). hcclBufferName
     * (sharing one CCL buffer between communicators) is not implemented, so it is not claimed. */
    return HCCL_COMM_CONFIG_BUFFER_NAME;
}

HcclResult HcclSetConfig(HcclConfig config, HcclConfigValue value)
{
    CHECK_ARG(config == HCCL_DETERMINISTIC, HCCL_E_NOT_SUPPORT, "config",
              "HcclSetConfig: config %d is not supported (only HCCL_DETERMINISTIC)", (int)config);
    CHECK_ARG(value.value >= 0 && value.value <= 2, HCCL_E_PARA, "config",
              "HcclSetConfig(HCCL_DETERMINISTIC, %d): expect 0, 1 or 2", value.value);
    atomic_store(&g_deterministic, value.value);
    return HCCL_SUCCESS;
}

HcclResult HcclGetConfig(HcclConfig config, HcclConfigValue *value)
{
    CHECK_ARG(value, HCCL_E_PTR, "config", "HcclGetConfig: configValue is NULL");
    CHECK_ARG(config == HCCL_DETERMINISTIC, HCCL_E_NOT_SUPPORT, "config",
              "HcclGetConfig: config %d is not supported (only HCCL_DETERMINISTIC)", (int)config);
    int32_t set = atomic_load(&g_deterministic);
    value->value = set >= 0 ? set : (int32_t)env_deterministic();
    return HCCL_SUCCESS;
}
