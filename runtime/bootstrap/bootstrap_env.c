/* The bootstrap's environment variables, with CANN's names and meanings. Bad values are reported
 * once, naming the variable, instead of being silently replaced. */
#include "runtime/bootstrap/bootstrap.h"

#include "common/oh_log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define RT_DEFAULT_CONNECT_TIMEOUT_S 120

static int parse_uint(const char *s, unsigned long *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || end == s || *end != '\0' || s[0] == '-')
        return -1;
    *out = v;
    return 0;
}

int rt_bootstrap_timeout_s(void)
{
    const char *env = getenv("HCCL_CONNECT_TIMEOUT");
    unsigned long v;
    if (!env || !*env)
        return RT_DEFAULT_CONNECT_TIMEOUT_S;
    /* CANN enforces [120, 7200]; we accept small values too because tests and single-host runs
     * want fast failures. */
    if (parse_uint(env, &v) < 0 || v < 1 || v > 86400) {
        OH_WARN("bootstrap", "HCCL_CONNECT_TIMEOUT=%s is not a number of seconds in [1, 86400]; using %d",
                env, RT_DEFAULT_CONNECT_TIMEOUT_S);
        return RT_DEFAULT_CONNECT_TIMEOUT_S;
    }
    return (int)v;
}

HcclResult rt_boot_env_family(int *family)
{
    const char *env = getenv("HCCL_SOCKET_FAMILY");
    *family = AF_INET;
    if (!env || !*env || !strcmp(env, "AF_INET"))
        return HCCL_SUCCESS;
    if (!strcmp(env, "AF_INET6")) {
        *family = AF_INET6;
        return HCCL_SUCCESS;
    }
    OH_ERR("bootstrap", "HCCL_SOCKET_FAMILY=%s is invalid: set it to AF_INET or AF_INET6 (or unset it)", env);
    return HCCL_E_PARA;
}

HcclResult rt_boot_env_base_port(uint32_t *port)
{
    const char *env = getenv("HCCL_IF_BASE_PORT");
    unsigned long v;
    *port = 0;
    if (!env || !*env)
        return HCCL_SUCCESS;
    if (parse_uint(env, &v) < 0 || v < 1024 || v > 65520) {
        OH_ERR("bootstrap", "HCCL_IF_BASE_PORT=%s is invalid: it must be a port in [1024, 65520] "
               "(32 ports from it are tried), or unset for an ephemeral port", env);
        return HCCL_E_PARA;
    }
    *port = (uint32_t)v;
    return HCCL_SUCCESS;
}
