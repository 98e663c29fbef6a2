/* coll_misc twostreams, framework and framework_lean: collectives and the streams around them.
 * twostreams: one communicator's collectives issued alternately on two streams (as
 * torch_npu and CANN allow). They must run in call order, each also after the earlier work of its
 * own stream:
 *   1. 200 independent AllReduces alternating streams A and B (odd ranks use the opposite
 *      pattern, so call order is all the ranks share), every result checked;
 *   2. a chain of in-place AllReduces on one buffer alternating streams: each depends on the one
 *      before, so a reordering or overlap shows as wrong sums (int32 wraps, exact reference);
 *   3. A: op1; B: hold, op2; A: op3. op3 must wait for op2, which waits for the hold: stream A is
 *      not complete while B is held although op1 is. */
#include "coll_misc.h"

#include <string.h>

#define TS_OPS 200
#define TS_COUNT 1031
#define TS_CHAIN 64

static int32_t input_elem(uint32_t rank, uint64_t i, int32_t salt)
{
    return (int32_t)(rank * 7919u + i * 31u) + salt;
}

static void *upload_input(uint32_t rank, uint64_t cnt, int32_t salt)
{
    int32_t *h = xmalloc(cnt * sizeof *h);
    for (uint64_t i = 0; i < cnt; i++)
        h[i] = input_elem(rank, i, salt);
    void *d = dev_alloc(cnt * sizeof *h);
    to_dev(d, h, cnt * sizeof *h);
    free(h);
    return d;
}

/* Sum over ranks with int32 wrap-around, as the device computes it. */
static uint32_t ref_sum(uint32_t n, uint64_t i, int32_t salt)
{
    uint32_t s = 0;
    for (uint32_t r = 0; r < n; r++)
        s += (uint32_t)input_elem(r, i, salt);
    return s;
}

static int check_sum(const char *what, int idx, void *dev, uint64_t cnt, uint32_t n, int32_t salt, uint32_t scale)
{
    int bad = 0;
    uint32_t *got = xmalloc(cnt * sizeof *got);
    to_host(got, dev, cnt * sizeof *got);
    for (uint64_t i = 0; i < cnt && !bad; i++) {
        uint32_t want = ref_sum(n, i, salt) * scale;
        FAILIF(got[i] != want, "%s #%d: element %llu got %u want %u", what, idx, (unsigned long long)i, got[i],
               want);
    }
    free(got);
    return bad;
}

static aclrtStream pick(const prog_env *e, aclrtStream b, int i)
{
    return ((i + (int)e->rank) & 1) ? b : e->stream;
}

static int independent_ops(prog_env *e, aclrtStream b)
{
    int bad = 0;
    void *in[TS_OPS], *out[TS_OPS];
    for (int i = 0; i < TS_OPS; i++) {
        in[i] = upload_input(e->rank, TS_COUNT, i);
        out[i] = dev_alloc(TS_COUNT * 4);
        HCCL_OK(HcclAllReduce(in[i], out[i], TS_COUNT, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, e->comm, pick(e, b, i)));
    }
    ACL_OK(aclrtSynchronizeStream(e->stream));
    ACL_OK(aclrtSynchronizeStream(b));
    for (int i = 0; i < TS_OPS; i++) {
        bad |= check_sum("independent AllReduce", i, out[i], TS_COUNT, e->n, i, 1);
        dev_free(in[i]);
        dev_free(out[i]);
    }
    return bad;
}

static int chained_ops(prog_env *e, aclrtStream b)
{
    int bad = 0;
    void *buf = upload_input(e->rank, TS_COUNT, 5);
    uint32_t scale = 1;
    for (int i = 0; i < TS_CHAIN; i++) {
        HCCL_OK(HcclAllReduce(buf, buf, TS_COUNT, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, e->comm, pick(e, b, i)));
        scale = i == 0 ? 1 : scale * e->n; /* after op k: (sum of inputs) * n^(k-1) */
    }
    ACL_OK(aclrtSynchronizeStream(e->stream));
    ACL_OK(aclrtSynchronizeStream(b));
    bad |= check_sum("chained in-place AllReduce", TS_CHAIN, buf, TS_COUNT, e->n, 5, scale);
    dev_free(buf);
    return bad;
}

static int held_other_stream(prog_env *e, aclrtStream b)
{
    int bad = 0;
    void *in[3], *out[3];
    for (int i = 0; i < 3; i++)
        in[i] = upload_input(e->rank, TS_COUNT, 100 + i), out[i] = dev_alloc(TS_COUNT * 4);
    aclrtEvent op1_done;
    ACL_OK(aclrtCreateEvent(&op1_done));
    hold h;
    hold_init(&h);
    HCCL_OK(HcclAllReduce(in[0], out[0], TS_COUNT, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, e->comm, e->stream));
    ACL_OK(aclrtRecordEvent(op1_done, e->stream));
    ACL_OK(aclrtLaunchHostFunc(b, hold_fn, &h));
    HCCL_OK(HcclAllReduce(in[1], out[1], TS_COUNT, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, e->comm, b));
    HCCL_OK(HcclAllReduce(in[2], out[2], TS_COUNT, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, e->comm, e->stream));
    ACL_OK(aclrtSynchronizeEvent(op1_done));
    hold_wait_entered(&h);
    aclrtStreamStatus st = ACL_STREAM_STATUS_COMPLETE;
    ACL_OK(aclrtStreamQuery(e->stream, &st));
    FAILIF(st != ACL_STREAM_STATUS_NOT_READY, "op3 on stream A completed while op2 on stream B was held");
    hold_release(&h);
    ACL_OK(aclrtSynchronizeStream(e->stream));
    ACL_OK(aclrtSynchronizeStream(b));
    FAILIF(h.timed_out, "the hold timed out (30 s): the program's own release never ran");
    for (int i = 0; i < 3; i++) {
        bad |= check_sum("held-stream AllReduce", i + 1, out[i], TS_COUNT, e->n, 100 + i, 1);
        dev_free(in[i]);
        dev_free(out[i]);
    }
    ACL_OK(aclrtDestroyEvent(op1_done));
    return bad;
}

int misc_twostreams(prog_env *e)
{
    aclrtStream b;
    ACL_OK(aclrtCreateStream(&b));
    int bad = independent_ops(e, b);
    bad |= chained_ops(e, b);
    bad |= held_other_stream(e, b);
    ACL_OK(aclrtDestroyStream(b));
    printf("twostreams: %d independent ops, a chain of %d, a held stream: %s\n", TS_OPS, TS_CHAIN,
           bad ? "FAIL" : "ok");
    return bad;
}

/* framework: a process group's pattern around every collective. The compute stream writes the
 * call's input into one reused send buffer and records an event; the collective stream waits for
 * it, runs the AllReduce (or Broadcast) and records an event, the compute stream waits for that
 * and copies the result out into the call's own slot. A wait that does not hold (the collective
 * reading the input before it is written, the next write overwriting it before the collective
 * read it, the copy reading the result before it is there) shows as a wrong slot. Sizes alternate
 * between one that runs at once (8 B) and one that does not (64 KiB), so calls go both ways. */
#define FW_CALLS 240
#define FW_RING 4

static uint64_t fw_count(int i)
{
    return (i / 3) & 1 ? 16384 : 2; /* int32: 64 KiB or 8 B, in runs of three */
}

static int fw_check(const prog_env *e, void *const *slot, int call, bool bcast)
{
    int bad = 0;
    uint64_t cnt = fw_count(call);
    uint32_t *got = xmalloc(cnt * sizeof *got);
    to_host(got, slot[call], cnt * sizeof *got);
    for (uint64_t i = 0; i < cnt && !bad; i++) {
        uint32_t want = bcast ? (uint32_t)input_elem(0, i, call) : ref_sum(e->n, i, call);
        FAILIF(got[i] != want, "framework call %d (%s, %llu elements): element %llu got %u want %u", call,
               bcast ? "Broadcast" : "AllReduce", (unsigned long long)cnt, (unsigned long long)i, got[i], want);
    }
    free(got);
    return bad;
}

/* What both framework scenarios set up: the compute stream, its events, each call's input and
 * the slot its result is copied into. */
typedef struct fw_setup {
    aclrtStream cs;
    aclrtEvent ready[FW_RING], done[FW_RING];
    void *in[FW_CALLS], *slot[FW_CALLS];
} fw_setup;

static void fw_open(const prog_env *e, fw_setup *f)
{
    ACL_OK(aclrtCreateStream(&f->cs));
    for (int k = 0; k < FW_RING; k++) {
        ACL_OK(aclrtCreateEvent(&f->ready[k]));
        ACL_OK(aclrtCreateEvent(&f->done[k]));
    }
    for (int i = 0; i < FW_CALLS; i++) {
        f->in[i] = upload_input(e->rank, fw_count(i), i);
        f->slot[i] = dev_alloc(fw_count(i) * 4);
    }
}

/* Before call i: the collective stream s waits for the compute stream's record. */
static void fw_before(const fw_setup *f, aclrtStream s, int i)
{
    ACL_OK(aclrtRecordEvent(f->ready[i % FW_RING], f->cs));
    ACL_OK(aclrtStreamWaitEvent(s, f->ready[i % FW_RING]));
}

/* After call i: the compute stream waits for the collective stream's record. */
static void fw_after(const fw_setup *f, aclrtStream s, int i)
{
    ACL_OK(aclrtRecordEvent(f->done[i % FW_RING], s));
    ACL_OK(aclrtStreamWaitEvent(f->cs, f->done[i % FW_RING]));
}

/* Waits for the compute stream, checks every slot (every fifth call a Broadcast where
 * `broadcasts`), and frees it all; nonzero if a slot was wrong. */
static int fw_close(const prog_env *e, fw_setup *f, bool broadcasts)
{
    ACL_OK(aclrtSynchronizeStream(f->cs));
    int bad = 0;
    for (int i = 0; i < FW_CALLS; i++) {
        bad |= fw_check(e, f->slot, i, broadcasts && i % 5 == 4);
        dev_free(f->in[i]);
        dev_free(f->slot[i]);
    }
    for (int k = 0; k < FW_RING; k++) {
        ACL_OK(aclrtDestroyEvent(f->ready[k]));
        ACL_OK(aclrtDestroyEvent(f->done[k]));
    }
    ACL_OK(aclrtDestroyStream(f->cs));
    return bad;
}

int misc_framework(prog_env *e)
{
    static fw_setup f;
    fw_open(e, &f);
    aclrtStream s = e->stream;
    void *send = dev_alloc(16384 * 4), *recv = dev_alloc(16384 * 4);
    for (int i = 0; i < FW_CALLS; i++) {
        size_t bytes = fw_count(i) * 4;
        ACL_OK(aclrtMemcpyAsync(send, bytes, f.in[i], bytes, ACL_MEMCPY_DEVICE_TO_DEVICE, f.cs));
        fw_before(&f, s, i);
        if (i % 5 == 4) /* in place, as a process group broadcasts */
            HCCL_OK(HcclBroadcast(send, fw_count(i), HCCL_DATA_TYPE_INT32, 0, e->comm, s));
        else
            HCCL_OK(HcclAllReduce(send, recv, fw_count(i), HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, e->comm, s));
        fw_after(&f, s, i);
        void *out = i % 5 == 4 ? send : recv;
        ACL_OK(aclrtMemcpyAsync(f.slot[i], bytes, out, bytes, ACL_MEMCPY_DEVICE_TO_DEVICE, f.cs));
    }
    int bad = fw_close(e, &f, true);
    dev_free(send);
    dev_free(recv);
    printf("framework: %d calls between a compute and a collective stream: %s\n", FW_CALLS, bad ? "FAIL" : "ok");
    return bad;
}

/* framework_lean: the same pattern where the compute stream has nothing but its events to do
 * between most calls. Each call reads an input of its own and writes one of FWL_RING receive
 * buffers; after every FWL_RING calls the compute stream copies the ring out (its only work), and
 * the collective stream's wait for the compute stream's next record keeps the ring from being
 * written again before that. The compute stream's waits come while its worker sleeps, so the
 * collective's record runs them where it completes (emu_stream_kick.c). A wait that does not hold
 * shows as a slot copied before its call wrote it, or after the next call overwrote it. */
#define FWL_RING 8

int misc_framework_lean(prog_env *e)
{
    static fw_setup f;
    fw_open(e, &f);
    aclrtStream s = e->stream;
    void *recv[FWL_RING];
    for (int k = 0; k < FWL_RING; k++)
        recv[k] = dev_alloc(16384 * 4);
    for (int i = 0; i < FW_CALLS; i++) {
        fw_before(&f, s, i);
        HCCL_OK(HcclAllReduce(f.in[i], recv[i % FWL_RING], fw_count(i), HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM,
                              e->comm, s));
        fw_after(&f, s, i);
        for (int k = i - FWL_RING + 1; i % FWL_RING == FWL_RING - 1 && k <= i; k++) {
            size_t bytes = fw_count(k) * 4;
            ACL_OK(aclrtMemcpyAsync(f.slot[k], bytes, recv[k % FWL_RING], bytes, ACL_MEMCPY_DEVICE_TO_DEVICE, f.cs));
        }
    }
    int bad = fw_close(e, &f, false);
    for (int k = 0; k < FWL_RING; k++)
        dev_free(recv[k]);
    printf("framework_lean: %d calls, a compute stream with only events between most: %s\n", FW_CALLS,
           bad ? "FAIL" : "ok");
    return bad;
}
