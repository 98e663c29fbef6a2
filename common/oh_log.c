#include "oh_log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int g_level = -1;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void log_init(void)
{
    int level = OH_LOG_ERROR;
    const char *env = getenv("ASCEND_GLOBAL_LOG_LEVEL");
    if (env && *env >= '0' && *env <= '4')
        level = *env - '0';
    env = getenv("HCCL_DEBUG");
    if (env) {
        if (!strcasecmp(env, "DEBUG") || !strcasecmp(env, "TRACE"))
            level = OH_LOG_DEBUG;
        else if (!strcasecmp(env, "INFO"))
            level = OH_LOG_INFO;
        else if (!strcasecmp(env, "WARN"))
            level = OH_LOG_WARN;
        else if (!strcasecmp(env, "ERROR"))
            level = OH_LOG_ERROR;
    }
    g_level = level;
}

int oh_log_level(void)
{
    pthread_once(&g_once, log_init);
    return g_level;
}

void oh_log(int level, const char *module, const char *fmt, ...)
{
    static const char *names[] = {"DEBUG", "INFO", "WARN", "ERROR"};
    if (level < oh_log_level() || level > OH_LOG_ERROR)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    /* One fprintf per line keeps lines whole when ranks share a terminal. */
    fprintf(stderr, "[OpenHCCL %s] %s: %s\n", names[level], module, line);
}
