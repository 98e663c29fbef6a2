/* HAL conformance: DMA copies into a peer device's memory, two devices driven by two threads of
 * one process; memset; batches of many descriptors; indirect refs resolved at run time. */
#include <pthread.h>

#include "common/hal_testutil.h"

static const size_t sizes[] = {1, 4096 + 3, 64u << 20};

typedef struct side {
    const hal_ops *h;
    hal_device *self, *peer;
    void *src[3], *dst_at_peer[3]; /* dst_at_peer: allocated on the peer */
    uint32_t seed;
    hal_result rc;
} side;

/* Copies each src buffer into the peer's buffer through this device's stream. */
static void *side_run(void *arg)
{
    side *sd = arg;
    const hal_ops *h = sd->h;
    hal_stream *s;
    sd->rc = h->stream_create(sd->self, &s);
    if (sd->rc != HAL_OK)
        return NULL;
    for (int i = 0; i < 3; i++) {
        hal_dma_desc desc = {.kind = HAL_DMA_COPY, .dst = hal_ref_ptr(sd->dst_at_peer[i]),
                             .src = hal_ref_ptr(sd->src[i]), .bytes = sizes[i]};
        if ((sd->rc = h->dma_batch(s, &desc, 1)) != HAL_OK)
            return NULL;
    }
    sd->rc = h->stream_sync(s, -1);
    if (sd->rc == HAL_OK)
        sd->rc = h->stream_destroy(s);
    return NULL;
}

Test(hal_dma, copy_into_peer_two_threads, .timeout = 120)
{
    const hal_ops *h = ht_hal();
    hal_device *d[2] = {ht_open(h, 0), ht_open(h, 1)};
    hal_device_info info[2];
    HT_OK(h->device_info(d[0], &info[0]));
    HT_OK(h->device_info(d[1], &info[1]));
    HT_OK(h->mem_import(d[0], &info[1].handle));
    HT_OK(h->mem_import(d[1], &info[0].handle));
    side sd[2];
    for (int k = 0; k < 2; k++) {
        sd[k] = (side){.h = h, .self = d[k], .peer = d[1 - k], .seed = 7u + (uint32_t)k};
        for (int i = 0; i < 3; i++) {
            HT_OK(h->mem_alloc(d[k], sizes[i], &sd[k].src[i]));
            HT_OK(h->mem_alloc(d[1 - k], sizes[i] + 64, &sd[k].dst_at_peer[i]));
            ht_fill(sd[k].src[i], sizes[i], sd[k].seed + (uint32_t)i);
            memset(sd[k].dst_at_peer[i], 0xee, sizes[i] + 64);
        }
    }
    pthread_t t[2];
    for (int k = 0; k < 2; k++)
        pthread_create(&t[k], NULL, side_run, &sd[k]);
    for (int k = 0; k < 2; k++)
        pthread_join(t[k], NULL);
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(sd[k].rc, HAL_OK, "side %d: %s", k, hal_result_name(sd[k].rc));
        for (int i = 0; i < 3; i++) {
            cr_assert(memcmp(sd[k].dst_at_peer[i], sd[k].src[i], sizes[i]) == 0, "side %d size %zu differs", k,
                      sizes[i]);
            const unsigned char *tail = (const unsigned char *)sd[k].dst_at_peer[i] + sizes[i];
            for (int j = 0; j < 64; j++)
                cr_assert_eq(tail[j], 0xee, "wrote past the end (side %d size %zu)", k, sizes[i]);
        }
    }
    HT_OK(h->device_close(d[1]));
    HT_OK(h->device_close(d[0]));
}

Test(hal_dma, batch_indirect_and_memset)
{
    const hal_ops *h = ht_hal();
    hal_device *d = ht_open(h, 0);
    hal_stream *s;
    HT_OK(h->stream_create(d, &s));
    enum { N = 37, CH = 100000 };
    char *src, *dst;
    HT_OK(h->mem_alloc(d, (size_t)N * CH, (void **)&src));
    HT_OK(h->mem_alloc(d, (size_t)N * CH, (void **)&dst));
    ht_fill(src, (size_t)N * CH, 3);
    HT_OK(h->memset_async(s, dst, 0, (size_t)N * CH));
    /* The destination is published only after the batch was enqueued. */
    static void *published;
    published = NULL;
    ht_gate g;
    ht_gate_init(&g);
    HT_OK(h->host_func_async(s, ht_gate_fn, &g));
    hal_dma_desc desc[N];
    for (int i = 0; i < N; i++) {
        desc[i] = (hal_dma_desc){.kind = HAL_DMA_COPY, .src = hal_ref_ptr(src + (size_t)i * CH), .bytes = CH};
        desc[i].dst.indirect = &published;
        desc[i].dst.offset = (uint64_t)(N - 1 - i) * CH; /* reversed chunk order */
    }
    HT_OK(h->dma_batch(s, desc, N));
    sem_wait(&g.entered);
    published = dst;
    ht_gate_open(&g);
    HT_OK(h->stream_sync(s, -1));
    for (int i = 0; i < N; i++)
        cr_assert(memcmp(dst + (size_t)(N - 1 - i) * CH, src + (size_t)i * CH, CH) == 0, "chunk %d", i);
    /* Large memset goes through the engines. */
    HT_OK(h->memset_async(s, dst, 0x3c, (size_t)N * CH - 5));
    HT_OK(h->stream_sync(s, -1));
    for (size_t i = 0; i < (size_t)N * CH - 5; i += 4093)
        cr_assert_eq((unsigned char)dst[i], 0x3c);
    cr_assert_eq((unsigned char)dst[(size_t)N * CH - 6], 0x3c);
    cr_assert_neq((unsigned char)dst[(size_t)N * CH - 1], 0x3c);
    HT_OK(h->stream_destroy(s));
    ht_gate_fini(&g);
    HT_OK(h->device_close(d));
}

Test(hal_dma, overlapping_copy_is_a_move)
{
    const hal_ops *h = ht_hal();
    hal_device *d = ht_open(h, 0);
    hal_stream *s;
    HT_OK(h->stream_create(d, &s));
    size_t n = 4u << 20;
    unsigned char *buf, *ref = malloc(n + 4096);
    HT_OK(h->mem_alloc(d, n + 4096, (void **)&buf));
    ht_fill(buf, n + 4096, 9);
    memcpy(ref, buf, n + 4096);
    memmove(ref + 4096, ref, n);
    hal_dma_desc desc = {.kind = HAL_DMA_COPY, .dst = hal_ref_ptr(buf + 4096), .src = hal_ref_ptr(buf), .bytes = n};
    HT_OK(h->dma_batch(s, &desc, 1));
    HT_OK(h->stream_sync(s, -1));
    cr_assert(memcmp(buf, ref, n + 4096) == 0);
    free(ref);
    HT_OK(h->stream_destroy(s));
    HT_OK(h->device_close(d));
}

/* Large copies again and again: on the emulator (HCCL_EMU_COPY_NT_BYTES unset) the first copies
 * of a size take each copy kernel in turn and later ones the faster, with the other re-timed every
 * 32 batches (hal/emu/emu_copy_pick.h): every batch must land whole, whichever kernel copied it. */
Test(hal_dma, large_copies_whichever_kernel, .timeout = 120)
{
    const hal_ops *h = ht_hal();
    hal_device *d = ht_open(h, 0);
    hal_stream *s;
    HT_OK(h->stream_create(d, &s));
    size_t n = (8u << 20) + 40; /* past the 4 MiB threshold, an odd tail */
    void *src, *dst;
    HT_OK(h->mem_alloc(d, n, &src));
    HT_OK(h->mem_alloc(d, n + 64, &dst));
    memset(dst, 0xee, n + 64);
    for (uint32_t b = 0; b < 40; b++) {
        ht_fill(src, n, 1000u + b);
        hal_dma_desc desc = {.kind = HAL_DMA_COPY, .dst = hal_ref_ptr(dst), .src = hal_ref_ptr(src), .bytes = n};
        HT_OK(h->dma_batch(s, &desc, 1));
        HT_OK(h->stream_sync(s, -1));
        cr_assert(memcmp(dst, src, n) == 0, "batch %u: the copy differs", b);
        for (int j = 0; j < 64; j++)
            cr_assert_eq(((const unsigned char *)dst)[n + (size_t)j], 0xee, "batch %u wrote past the end", b);
    }
    HT_OK(h->stream_destroy(s));
    HT_OK(h->device_close(d));
}
