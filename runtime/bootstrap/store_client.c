/* Client of hcclrun's key-value store (see store.h): one short connection per request. */
#include "runtime/bootstrap/store.h"

#include "common/oh_log.h"
#include "runtime/bootstrap/bootstrap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static HcclResult store_addr(const char **host, uint32_t *port)
{
    const char *a = getenv("MASTER_ADDR"), *p = getenv("MASTER_PORT");
    if (!a || !*a || !p || !*p) {
        OH_ERR("bootstrap", "store: MASTER_ADDR and MASTER_PORT must be set (MASTER_ADDR=%s MASTER_PORT=%s); launch "
               "the ranks with hcclrun -n N (or torchrun), or export both", a ? a : "<unset>", p ? p : "<unset>");
        return HCCL_E_PARA;
    }
    char *end;
    unsigned long v = strtoul(p, &end, 10);
    if (*end || v == 0 || v > 65535) {
        OH_ERR("bootstrap", "store: MASTER_PORT=%s is not a TCP port", p);
        return HCCL_E_PARA;
    }
    *host = a;
    *port = (uint32_t)v;
    return HCCL_SUCCESS;
}

/* Sends one request and reads the response header; *fd stays open for the value. */
static HcclResult store_call(uint32_t op, const char *key, const void *val, size_t len, int timeout_s,
                             rt_store_resp *resp, int *fd)
{
    const char *host;
    uint32_t port;
    HcclResult rc = store_addr(&host, &port);
    if (rc != HCCL_SUCCESS)
        return rc;
    size_t klen = strlen(key);
    if (klen == 0 || klen > RT_STORE_MAX_KEY || len > RT_STORE_MAX_VALUE) {
        OH_ERR("bootstrap", "store: key '%.64s' (%zu bytes) or value (%zu bytes) too large", key, klen, len);
        return HCCL_E_PARA;
    }
    int64_t deadline = rt_now_ms() + (int64_t)timeout_s * 1000;
    int err = rt_sock_connect(host, port, deadline, fd);
    if (err) {
        OH_ERR("bootstrap", "store: cannot reach the store at MASTER_ADDR=%s MASTER_PORT=%u within %d s: %s (is "
               "hcclrun still running? raise HCCL_CONNECT_TIMEOUT if ranks start late)", host, port, timeout_s,
               rt_sock_strerror(err));
        return HCCL_E_TIMEOUT;
    }
    rt_store_req req = {RT_STORE_MAGIC, op, (uint32_t)klen, op == RT_STORE_SET ? (uint32_t)len : 0};
    err = rt_sock_send_all(*fd, &req, sizeof req, deadline);
    if (!err)
        err = rt_sock_send_all(*fd, key, klen, deadline);
    if (!err && op == RT_STORE_SET)
        err = rt_sock_send_all(*fd, val, len, deadline);
    if (!err)
        err = rt_sock_recv_all(*fd, resp, sizeof *resp, deadline);
    if (!err && resp->magic != RT_STORE_MAGIC)
        err = EPROTO;
    if (err) {
        OH_ERR("bootstrap", "store: %s of key '%s' at %s:%u failed: %s%s", op == RT_STORE_SET ? "set" : "get", key,
               host, port, rt_sock_strerror(err),
               err == ETIMEDOUT ? " (no rank ever set it; did rank 0 fail earlier?)" : "");
        close(*fd);
        *fd = -1;
        return err == ETIMEDOUT ? HCCL_E_TIMEOUT : HCCL_E_TCP_TRANSFER;
    }
    return HCCL_SUCCESS;
}

HcclResult rt_store_set(const char *key, const void *data, size_t len)
{
    if (!key || (!data && len)) {
        OH_ERR("bootstrap", "store: rt_store_set got a NULL %s", !key ? "key" : "value");
        return HCCL_E_PTR;
    }
    rt_store_resp resp;
    int fd = -1;
    HcclResult rc = store_call(RT_STORE_SET, key, data, len, rt_bootstrap_timeout_s(), &resp, &fd);
    if (rc != HCCL_SUCCESS)
        return rc;
    close(fd);
    if (resp.status) {
        OH_ERR("bootstrap", "store: the store refused to set key '%s' (%d)", key, resp.status);
        return (HcclResult)resp.status;
    }
    return HCCL_SUCCESS;
}

HcclResult rt_store_get(const char *key, void *data, size_t len, int timeout_s)
{
    if (!key || (!data && len) || timeout_s <= 0) {
        OH_ERR("bootstrap", "store: rt_store_get needs a key, a buffer and a timeout > 0 (timeout %d)", timeout_s);
        return HCCL_E_PARA;
    }
    rt_store_resp resp;
    int fd = -1;
    HcclResult rc = store_call(RT_STORE_GET, key, NULL, 0, timeout_s, &resp, &fd);
    if (rc != HCCL_SUCCESS)
        return rc;
    if (resp.status || resp.val_len != len) {
        if (resp.status)
            OH_ERR("bootstrap", "store: the store refused to get key '%s' (%d)", key, resp.status);
        else
            OH_ERR("bootstrap", "store: key '%s' holds %u bytes but the caller expects %zu", key, resp.val_len, len);
        close(fd);
        return resp.status ? (HcclResult)resp.status : HCCL_E_PARA;
    }
    int err = rt_sock_recv_all(fd, data, len, rt_now_ms() + (int64_t)timeout_s * 1000);
    close(fd);
    if (err) {
        OH_ERR("bootstrap", "store: reading key '%s' failed: %s", key, rt_sock_strerror(err));
        return HCCL_E_TCP_TRANSFER;
    }
    return HCCL_SUCCESS;
}
