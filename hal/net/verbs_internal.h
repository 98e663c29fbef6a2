/* RoCE links through rdma-core verbs (verbs_*.c).
 *
 * RC queue pairs set up with raw verbs; the QP numbers, PSNs and GIDs are exchanged over a TCP
 * socket of the transport's listener (the same port range as the TCP links). A write is an
 * RDMA WRITE WITH IMM whose immediate is the target's notify id (plain RDMA WRITE without a
 * notify); the target's progress thread sees the receive completion and fires the notify.
 * With HCCL_RDMA_QPS_PER_CONNECTION > 1 writes go round robin over the link's QPs (a write is
 * never split, so its notify needs no reassembly). One CQ per transport, one progress thread
 * blocked on its completion channel (no polling loop). Sources and targets are registered
 * through the registration cache (ibv_reg_mr once per range). */
#ifndef VERBS_INTERNAL_H
#define VERBS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "hal/net/net_internal.h"

/* CANN's RDMA variables (ranges and defaults from CANN's environment variable reference, see
 * hal/net/README.md). */
typedef struct verbs_env {
    uint32_t tc;        /* HCCL_RDMA_TC: [0, 255], a multiple of 4 (DSCP * 4), default 132 */
    uint32_t sl;        /* HCCL_RDMA_SL: [0, 7], default 4 */
    uint32_t timeout;   /* HCCL_RDMA_TIMEOUT: [5, 24], default 20 (4.096 us * 2^timeout) */
    uint32_t retry_cnt; /* HCCL_RDMA_RETRY_CNT: [1, 7], default 7 */
    uint32_t nqps;      /* HCCL_RDMA_QPS_PER_CONNECTION: [1, 32], default 1 */
} verbs_env;

/* Reads the variables; a value out of range is refused with HAL_E_PARAM and a log line naming
 * the variable and its range. getenv_fn lets tests feed values (NULL: getenv). */
hal_result verbs_env_read(verbs_env *e, const char *(*getenv_fn)(const char *));

/* One GID table entry as the chooser sees it. */
typedef struct verbs_gid_info {
    uint8_t raw[16];
    int roce_v2;        /* the entry's type is RoCE v2 */
} verbs_gid_info;

/* RoCE v2 GID choice: among RoCE v2 entries prefer an IPv4-mapped one (::ffff:a.b.c.d) when
 * family is AF_INET, a global IPv6 one when AF_INET6; link-local (fe80::/10) and zero GIDs last.
 * Returns the index, or -1 when no RoCE v2 entry exists. Pure, for tests. */
int verbs_pick_gid(const verbs_gid_info *g, int n, int family);

/* Maps a work completion status (enum ibv_wc_status) to a HAL code and a short reason. */
hal_result verbs_wc_result(int status, const char **reason);

/* Number of RDMA devices ibv_get_device_list finds (0 with why filled in when none). */
int verbs_device_count(char *why, size_t len);

hal_result verbs_create(const net_config *cfg, net_transport **out);

#endif
