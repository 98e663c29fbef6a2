/* Links between servers inside communicators (runtime/net): hal/net links to every peer on
 * another server, opened at init, and the device-side tasks that carry plan steps across them.
 *
 * How a plan step crosses servers (docs/runtime.md, "Links in plans"):
 * - COPY from this rank into a remote peer's SCRATCH, OUT or INBOX: one net_write per DMA piece,
 *   issued by an FN instruction in stream order (rt_net_write_task); nothing else may touch
 *   another server's memory (the verifier and algo_select keep plans to that).
 * - SIGNAL to a remote peer: a zero-byte write naming the peer's net notify for (me, slot), on the
 *   same link after the data (one socket per link: writes land in order); the peer's progress
 *   thread then records the HAL notify its WAIT is on (hal_ops.notify_host_record).
 * - SIGNAL{p, PUB} after PUBLISH: this call's record (and V table) is first written into the
 *   remote peer's mirror of this rank's control block, so its FETCH and mismatch detection read
 *   it there unchanged.
 * - the end of a launch waits for the send completions of its writes (rt_net_drain_task): the
 *   user's buffers are the user's again when the stream passes the end. */
#ifndef RT_NET_H
#define RT_NET_H

#include <sys/socket.h>

#include "runtime/rt_internal.h"

/* This rank's part of the init blob (every rank of a communicator of more than one rank). */
typedef struct rt_net_blob {
    struct sockaddr_storage addr; /* where the transport listens */
    uint64_t hello;               /* host address of the hello table peers write into */
    uint32_t alen;
    uint32_t hello_rkey;
    uint32_t kind;                /* net_kind of the transport (HCCL_NET): every rank must agree */
    uint32_t pad;
} rt_net_blob;

/* Before the bootstrap exchange: a transport listening, a hello table registered (nranks > 1). */
HcclResult rt_net_prepare(rt_comm *c, rt_net_blob *mine);
/* After it, once the peers' servers are known: nothing (and the transport goes) when every peer
 * is on this server; else mirrors, notifies, links to every remote peer and the hello exchange. */
HcclResult rt_net_connect(rt_comm *c, const rt_net_blob *const *all);
/* Closes the links (pending writes fail) and frees what init made; before notifies and memory go. */
void rt_net_teardown(rt_comm *c);
/* The link's error for a remote peer (HAL_OK while it is up, or for a local peer). */
hal_result rt_net_peer_error(const rt_comm *c, uint32_t p);
/* rt_abort_all: the reason recorded in this rank's block goes into every remote peer's mirror of
 * it, then its abort notify, whose receive path fails the peer's server the same way. */
void rt_net_abort_push(rt_comm *c);
/* p2p PUBLISH of a receive from remote peer: the record into the peer's mirror of my block (its
 * FETCH reads it there after my PUB signal, which follows on the same link). */
int rt_net_push_p2p(rt_comm *c, uint32_t peer, const rt_pub_record *rec, char *msg, size_t len);
/* Sub-communicator creation: this rank's mailbox (with_info: the root info, then the tag; else
 * the tag only) into every remote peer's mirror of its block; waits for the send completions. */
HcclResult rt_net_push_mailbox(rt_comm *c, bool with_info);
/* p2p FETCH of a remote receiver's record (in my mirror of its block): the taken mark into the
 * receiver's own record, before the data and its signal on the same link, so the receiver tells
 * the data's signal from a destroying sender's (rt_p2p_recv_task). 0 or a hal_result (logged). */
int rt_net_push_taken(rt_comm *c, uint32_t peer, const rt_pub_record *rec, char *msg, size_t len);
/* Registration of a user buffer a remote peer will write into (PUBLISH): its rkey, 0 on failure
 * (rt_net_mem.c: from p to the end of its allocation, cached until the memory is freed). */
uint32_t rt_net_user_rkey(rt_comm *c, void *p);

/* Device-side tasks (hal_task_fn); arg: an rt_net_op of the launch, or the launch (drain). */
int rt_net_write_task(void *arg, char *msg, size_t len);
int rt_net_signal_task(void *arg, char *msg, size_t len);
int rt_net_drain_task(void *arg, char *msg, size_t len);

#endif
