/* CANN rank table files (JSON, versions "1.0" and "1.2"), as read by HcclCommInitClusterInfo.
 * Every number in the file is a JSON string (plain JSON integers are accepted too). */
#ifndef RT_RANKTABLE_H
#define RT_RANKTABLE_H

#include <stdint.h>
#include <hccl/hccl_types.h>

#define RT_RANKTABLE_ID_LEN 65 /* server_id / super_pod_id: <= 64 chars + NUL */

typedef struct rt_rank_entry {
    uint32_t rank_id;
    uint32_t server_index;    /* index into server_list, in file order */
    char server_id[RT_RANKTABLE_ID_LEN];
    int32_t device_id;
    char host_ip[64];         /* the server's host_ip, "" if absent */
    uint32_t host_port;       /* 0 if absent */
    char device_ip[64];       /* "" if absent (optional on a single server / the emulator) */
    uint32_t device_port;     /* 0 if absent */
    int32_t super_device_id;  /* -1 if absent (1.0, or 1.2 without super_pod_list) */
    uint32_t super_pod_index; /* index into super_pod_ids; 0 when there are no superpods */
} rt_rank_entry;

typedef struct rt_ranktable {
    char version[8];          /* "1.0" or "1.2" */
    uint32_t nranks;
    uint32_t nservers;
    rt_rank_entry *ranks;     /* nranks entries, indexed by rank_id */
    uint32_t nsuper_pods;     /* 0 unless version 1.2 with super_pod_list */
    char *super_pod_ids;      /* nsuper_pods ids, RT_RANKTABLE_ID_LEN bytes apart */
    uint32_t *server_ranks;   /* per server: how many ranks it holds */
    uint32_t *server_first;   /* per server: its lowest rank_id (ranks of a server are contiguous) */
} rt_ranktable;

/* The i-th superpod id. */
static inline const char *rt_ranktable_super_pod_id(const rt_ranktable *t, uint32_t i)
{
    return t->super_pod_ids + (uint64_t)i * RT_RANKTABLE_ID_LEN;
}

/* Loads and validates path. Missing/unreadable file -> HCCL_E_OPEN_FILE_FAILURE; malformed JSON,
 * missing fields, bad or duplicate rank_id, server_count mismatch, status not "completed",
 * interleaved superpod servers, unknown version -> HCCL_E_PARA; known but unsupported versions
 * ("1.1", "2.0") -> HCCL_E_NOT_SUPPORT. Each problem is one OH_ERR line naming the entry. */
HcclResult rt_ranktable_load(const char *path, rt_ranktable **out);
void rt_ranktable_free(rt_ranktable *t);

#endif
