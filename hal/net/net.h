/* Links between servers: one small interface, two implementations (TCP through io_uring, RoCE
 * through rdma-core verbs), chosen by HCCL_NET=auto|roce|tcp.
 *
 * The model is RDMA's: a transport (one per process or device) listens and connects; a link joins
 * it to one peer; memory the peer may write is registered (net_mr, cached per range); a write is
 * one-sided: it lands `len` bytes at an address the target registered and then bumps one of the
 * target's notifies (a counting word + futex wake, the emulator's notify semantics), so a plan
 * step "copy to peer, then signal it" is one net_write and the target's "wait" is a notify wait.
 * Plans cannot tell the links apart.
 *
 * Ordering: the bytes of writes of one link may land in any order (several sockets / QPs per
 * peer), but a write's notify is bumped only after all of its bytes, and (TCP, with any number of
 * sockets; verbs with one QP per link) every earlier write of the link, landed: a zero-byte write
 * with a notify after data is that data's completion at the target. A completion says the source buffer may
 * be reused (verbs: the target acknowledged the data). Every failure is a hal_result; the log line
 * names the transport, the peer's address and the errno (verbs: device, GID and QP). */
#ifndef HAL_NET_H
#define HAL_NET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "hal/hal_types.h"

typedef enum net_kind { NET_KIND_NONE = 0, NET_KIND_TCP = 1, NET_KIND_ROCE = 2 } net_kind;

typedef struct net_transport net_transport;
typedef struct net_link net_link;
typedef struct net_mr net_mr;

/* notify argument of net_write: no notify, data only (verbs: plain RDMA WRITE). */
#define NET_NOTIFY_NONE UINT32_MAX

typedef struct net_config {
    net_kind kind;      /* NET_KIND_NONE: net_choose() (HCCL_NET) decides */
    const char *name;   /* who we are in log lines, e.g. "rank 3"; may be NULL */
    uint32_t nsocks;    /* TCP sockets per peer; 0: HCCL_NSOCKS_PERTHREAD, else 2 */
    int zerocopy;       /* TCP: -1 auto (send_zc when the kernel has it), 0 off, 1 on when possible */
    const char *device; /* verbs device name; NULL: the first with an active port */
    uint32_t nqps;      /* verbs QPs per peer; 0: HCCL_RDMA_QPS_PER_CONNECTION. 1 keeps a link's writes
                           in order (RC: a write-with-imm lands after every earlier write of its QP) */
} net_config;

/* One finished write that carried a non-zero tag. */
typedef struct net_completion {
    uint64_t tag;
    hal_result status;  /* HAL_OK, HAL_E_PEER (peer gone), HAL_E_ABORTED (link closed), ... */
    net_link *link;
} net_completion;

/* A notify of this process: fn(arg) runs (on the transport's progress thread) once per write that
 * named it, after the write's bytes landed. */
typedef void (*net_notify_fn)(void *arg);

/* ---- transport choice (net.c) ---- */
/* HCCL_NET: "auto" (default: roce when a verbs device is present, else tcp), "roce", "tcp".
 * Decided once per process (logged at debug level; communicators log their own choice).
 * HAL_E_PARAM on another value, HAL_E_NOT_SUPPORTED for roce without
 * a device. */
hal_result net_choose(net_kind *kind);
/* Why net_choose decided as it did, e.g. "HCCL_NET=auto; ibv_get_device_list found no RDMA device"
 * (after net_choose; "" before). */
const char *net_choose_reason(void);
/* Pure part of the choice, for tests: env value (NULL = unset) and whether a device exists. */
hal_result net_choose_from(const char *env, int have_device, net_kind *kind);
const char *net_kind_name(net_kind kind);

/* ---- transports and links ---- */
hal_result net_create(const net_config *cfg, net_transport **out);
/* Closes every link (pending writes fail with HAL_E_ABORTED) and frees everything. */
void net_destroy(net_transport *t);
net_kind net_transport_kind(const net_transport *t);
/* Where the transport's links go out, for log lines: "device rxe0 port 1, RoCE v2 GID ... (index 1)"
 * for verbs, "" for tcp (its listening address tells). */
const char *net_transport_where(const net_transport *t);
/* Listens on addr (IPv4 or IPv6; NULL = the wildcard of HCCL_SOCKET_FAMILY). Port 0: the ports
 * of HCCL_HOST_SOCKET_PORT_RANGE in order, or an ephemeral one when it is unset or "auto".
 * *bound (may be NULL) gets the address actually bound. */
hal_result net_listen(net_transport *t, const struct sockaddr *addr, socklen_t alen,
                      struct sockaddr_storage *bound);
/* Next link a peer connected to us; HAL_E_TIMEOUT after timeout_ms (< 0: forever). */
hal_result net_accept(net_transport *t, int timeout_ms, net_link **out);
/* A link to the peer listening at addr; retries refused connections until timeout_ms. */
hal_result net_connect(net_transport *t, const struct sockaddr *addr, socklen_t alen, int timeout_ms,
                       net_link **out);
/* Pending writes of the link fail with HAL_E_ABORTED; returns once nothing refers to it. */
void net_link_close(net_link *l);
/* "10.0.0.2:60051" or "[::1]:60051": the peer, for log lines. */
const char *net_link_peer(const net_link *l);
/* From now on the peer may close the link any time (both sides are leaving): its end fails pending
 * writes as before but logs at INFO, not as an error. */
void net_link_quiet(net_link *l);
/* HAL_OK, or the error that failed the link (sticky). */
hal_result net_link_error(const net_link *l);

/* ---- memory ---- */
/* Registers [addr, addr+len) for remote writes (and, verbs, as a source); a range inside an
 * earlier registration reuses it. The registration stays (cached) until net_mem_invalidate covers
 * it; the handle holds it until net_mr_release (a handle held across an invalidation keeps the
 * verbs MR alive, but TCP peers can no longer write into the range). */
hal_result net_mr_reg(net_transport *t, void *addr, size_t len, net_mr **out);
void net_mr_release(net_mr *mr);
/* What a peer passes as rkey to net_write into this registration. */
uint32_t net_mr_rkey(const net_mr *mr);
/* The range the registration covers: the one asked for, or a wider one it is part of. */
void net_mr_range(const net_mr *mr, void **addr, size_t *len);
/* Call before freeing memory: registrations overlapping the range are dropped (deregistered once
 * no write uses them); later writes into the range are refused. runtime/net calls it from the
 * HAL's free listener (hal_ops.mem_free_listen), so freed device memory is registered anew when
 * it is used again (a verbs MR pins the pages it was made on). */
void net_mem_invalidate(net_transport *t, void *addr, size_t len);
/* Registrations in the cache now; *made / *dropped (may be NULL): registrations made and
 * deregistered since net_create. For stats and tests. */
size_t net_mem_cached(net_transport *t, uint64_t *made, uint64_t *dropped);

/* ---- notifies ---- */
hal_result net_notify_add(net_transport *t, net_notify_fn fn, void *arg, uint32_t *id);
/* A notify that adds 1 to *word (a 64-bit counter) and futex-wakes its waiters. */
hal_result net_notify_add_counter(net_transport *t, uint64_t *word, uint32_t *id);
void net_counter_bump(uint64_t *word);
/* Waits (futex, no spinning) until *word >= target: HAL_E_TIMEOUT after timeout_ms (< 0: forever). */
hal_result net_counter_wait(const uint64_t *word, uint64_t target, int timeout_ms);

/* ---- data ---- */
/* Writes len bytes from src to the peer's raddr (inside a peer registration whose rkey it is),
 * then bumps the peer's notify `notify` (NET_NOTIFY_NONE: none). Returns at once (verbs: waits
 * while the link has a full send queue, 1024 writes, outstanding); src must stay
 * untouched until the write completes. tag != 0: a net_completion is queued for net_poll/net_wait;
 * tag 0: only the link's counters see it (net_link_drain). */
hal_result net_write(net_link *l, const void *src, size_t len, uint64_t raddr, uint32_t rkey,
                     uint32_t notify, uint64_t tag);
/* Up to max queued completions, without waiting; returns how many. */
int net_poll(net_transport *t, net_completion *out, int max);
/* One completion: HAL_E_TIMEOUT when none came within timeout_ms (< 0: forever). */
hal_result net_wait(net_transport *t, net_completion *out, int timeout_ms);
/* Waits until every write posted on l completed: HAL_OK when none failed (even if the link failed
 * since, e.g. the peer closed it after its last write landed), else the link's error; or
 * HAL_E_TIMEOUT. */
hal_result net_link_drain(net_link *l, int timeout_ms);

#endif
