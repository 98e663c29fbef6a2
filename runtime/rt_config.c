/* Communicator configuration: HcclCommConfig (size/magic/version aware) over env over defaults. */
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

static void apply_defaults(rt_comm *c)
{
    c->buffsize_mb = env_buffsize_mb();
    c->deterministic = env_deterministic();
    c->exec_timeout_s = rt_env_exec_timeout_s();
    const char *entry = getenv("HCCL_ENTRY_LOG_ENABLE");
    c->entry_log = entry && entry[0] == '1';
    const char *algo = getenv("HCCL_ALGO");
    snprintf(c->algo_spec, sizeof c->algo_spec, "%s", algo ? algo : "");
}

/* Copies what the caller's header version holds into a fully defaulted config, so callers
 * compiled against an older (smaller) HcclCommConfig keep working. */
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
    /* Every capability below RESERVED is understood (a caller tests cap < this value). */
    return HCCL_COMM_CONFIG_RESERVED;
}

static int32_t g_deterministic; /* process-wide HcclSetConfig(HCCL_DETERMINISTIC) */

HcclResult HcclSetConfig(HcclConfig config, HcclConfigValue value)
{
    CHECK_ARG(config == HCCL_DETERMINISTIC, HCCL_E_NOT_SUPPORT, "config",
              "HcclSetConfig: config %d is not supported (only HCCL_DETERMINISTIC)", (int)config);
    CHECK_ARG(value.value >= 0 && value.value <= 2, HCCL_E_PARA, "config",
              "HcclSetConfig(HCCL_DETERMINISTIC, %d): expect 0, 1 or 2", value.value);
    g_deterministic = value.value;
    return HCCL_SUCCESS;
}

HcclResult HcclGetConfig(HcclConfig config, HcclConfigValue *value)
{
    CHECK_ARG(value, HCCL_E_PTR, "config", "HcclGetConfig: configValue is NULL");
    CHECK_ARG(config == HCCL_DETERMINISTIC, HCCL_E_NOT_SUPPORT, "config",
              "HcclGetConfig: config %d is not supported (only HCCL_DETERMINISTIC)", (int)config);
    value->value = g_deterministic;
    return HCCL_SUCCESS;
}
