/* A tiny torchrun-style key-value store client. The server is hcclrun (tools/hcclrun/store_server.c),
 * at MASTER_ADDR:MASTER_PORT. Used to pass the root info from rank 0 to the others. */
#ifndef RT_STORE_H
#define RT_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <hccl/hccl_types.h>

/* Stores len bytes under key (overwrites). HCCL_E_PARA if MASTER_ADDR/MASTER_PORT are unset or bad,
 * HCCL_E_TIMEOUT if the store cannot be reached within HCCL_CONNECT_TIMEOUT. */
HcclResult rt_store_set(const char *key, const void *data, size_t len);
/* Waits up to timeout_s seconds for key to be set, then copies its value into data, which must be
 * exactly len bytes (else HCCL_E_PARA). HCCL_E_TIMEOUT if it never appears. */
HcclResult rt_store_get(const char *key, void *data, size_t len, int timeout_s);

/* Wire protocol, shared with the server. One request per connection:
 *   request  = rt_store_req, key (key_len bytes), value (val_len bytes, SET only)
 *   response = rt_store_resp, value (val_len bytes, GET only)
 * A GET is answered when the key exists, however long that takes; the client bounds the wait. */
#define RT_STORE_MAGIC 0x4f485354u /* "OHST" */
#define RT_STORE_SET 1u
#define RT_STORE_GET 2u
#define RT_STORE_MAX_KEY 1024u
#define RT_STORE_MAX_VALUE (16u << 20)

typedef struct rt_store_req {
    uint32_t magic;
    uint32_t op;
    uint32_t key_len;
    uint32_t val_len;
} rt_store_req;

typedef struct rt_store_resp {
    uint32_t magic;
    int32_t status; /* 0, or an HcclResult for a malformed request */
    uint32_t val_len;
    uint32_t pad;
} rt_store_resp;

#endif
