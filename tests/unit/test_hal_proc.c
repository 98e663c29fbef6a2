/* HAL conformance across processes: two processes of one emulated server each open one device,
 * import the other's memory and notifies, DMA into each other's buffers and signal; device
 * ownership is exclusive to one live process. The processes fork before opening any device and
 * exchange plain-data handles through pipes. */
#include <sys/wait.h>

#include "common/hal_testutil.h"

static const size_t sizes[] = {1, 4096 + 3, 64u << 20};

typedef struct hello {
    hal_device_handle dev;
    hal_notify_handle notify;
    void *recv[3];
} hello;

#define SIDE_CHECK(cond, ...)                                                                        \
    do {                                                                                             \
        if (!(cond)) {                                                                               \
            fprintf(stderr, "side %d: ", id);                                                        \
            fprintf(stderr, __VA_ARGS__);                                                            \
            fprintf(stderr, "\n");                                                                   \
            return 1;                                                                                \
        }                                                                                            \
    } while (0)

/* One side of the exchange; returns 0 on success. */
static int side(const hal_ops *h, int id, int rfd, int wfd)
{
    hal_device *d;
    SIDE_CHECK(h->device_open(id, &d) == HAL_OK, "device_open");
    hal_device_info info;
    h->device_info(d, &info);
    hello me = {.dev = info.handle}, peer;
    void *src[3];
    hal_notify *mine, *theirs;
    SIDE_CHECK(h->notify_create(d, &mine) == HAL_OK, "notify_create");
    h->notify_export(mine, &me.notify);
    for (int i = 0; i < 3; i++) {
        SIDE_CHECK(h->mem_alloc(d, sizes[i], &src[i]) == HAL_OK, "alloc");
        SIDE_CHECK(h->mem_alloc(d, sizes[i], &me.recv[i]) == HAL_OK, "alloc");
        ht_fill(src[i], sizes[i], 100u * (uint32_t)id + (uint32_t)i);
        memset(me.recv[i], 0, sizes[i]);
    }
    SIDE_CHECK(ht_xfer(wfd, &me, sizeof me, 1) == 0 && ht_xfer(rfd, &peer, sizeof peer, 0) == 0, "pipe");
    SIDE_CHECK(h->link_class(d, &peer.dev) == HAL_LINK_INTRA, "link class");
    SIDE_CHECK(h->mem_import(d, &peer.dev) == HAL_OK, "mem_import");
    SIDE_CHECK(h->mem_import(d, &peer.dev) == HAL_OK, "mem_import is idempotent");
    hal_device_handle owner;
    SIDE_CHECK(h->mem_lookup(peer.recv[2], &owner, NULL) == HAL_OK && owner.device_id == peer.dev.device_id,
               "lookup of imported memory");
    SIDE_CHECK(h->notify_import(d, &peer.notify, &theirs) == HAL_OK, "notify_import");
    hal_stream *s;
    SIDE_CHECK(h->stream_create(d, &s) == HAL_OK, "stream");
    hal_dma_desc desc[3];
    for (int i = 0; i < 3; i++)
        desc[i] = (hal_dma_desc){.kind = HAL_DMA_COPY, .dst = hal_ref_ptr(peer.recv[i]), .src = hal_ref_ptr(src[i]),
                                 .bytes = sizes[i]};
    SIDE_CHECK(h->dma_batch(s, desc, 3) == HAL_OK, "dma_batch");
    SIDE_CHECK(h->notify_record(theirs, s) == HAL_OK, "record");
    SIDE_CHECK(h->notify_wait(mine, s, 60000, NULL) == HAL_OK, "wait");
    hal_result rc = h->stream_sync(s, -1);
    SIDE_CHECK(rc == HAL_OK, "sync: %s: %s", hal_result_name(rc), h->stream_error_msg(s));
    for (int i = 0; i < 3; i++) {
        unsigned char *want = malloc(sizes[i]);
        ht_fill(want, sizes[i], 100u * (uint32_t)(1 - id) + (uint32_t)i);
        int same = memcmp(want, me.recv[i], sizes[i]) == 0;
        free(want);
        SIDE_CHECK(same, "data of size %zu from the peer differs", sizes[i]);
    }
    /* Both sides are done reading before either closes. */
    char byte = 1;
    SIDE_CHECK(ht_xfer(wfd, &byte, 1, 1) == 0 && ht_xfer(rfd, &byte, 1, 0) == 0, "pipe");
    SIDE_CHECK(h->device_close(d) == HAL_OK, "close");
    return 0;
}

Test(hal_proc, dma_and_notify_between_processes, .timeout = 120)
{
    const hal_ops *h = ht_hal();
    int p2c[2], c2p[2];
    cr_assert(pipe(p2c) == 0 && pipe(c2p) == 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0)
        _exit(side(h, 1, p2c[0], c2p[1]));
    int rc = side(h, 0, c2p[0], p2c[1]);
    int status = 0;
    waitpid(pid, &status, 0);
    cr_assert_eq(rc, 0, "parent side failed");
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child side failed (status %d)", status);
}

Test(hal_proc, device_owned_by_one_process)
{
    const hal_ops *h = ht_hal();
    int p2c[2], c2p[2];
    cr_assert(pipe(p2c) == 0 && pipe(c2p) == 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        char b;
        hal_device *d = NULL;
        if (read(p2c[0], &b, 1) != 1)
            _exit(2);
        int ok = h->device_open(0, &d) == HAL_E_INVALID_DEVICE; /* the parent owns it */
        ok = ok && h->device_open(1, &d) == HAL_OK && h->device_close(d) == HAL_OK;
        if (write(c2p[1], &b, 1) != 1)
            _exit(2);
        if (read(p2c[0], &b, 1) != 1) /* parent closed device 0 */
            _exit(2);
        ok = ok && h->device_open(0, &d) == HAL_OK && h->device_close(d) == HAL_OK;
        _exit(ok ? 0 : 1);
    }
    hal_device *d = ht_open(h, 0);
    char b = 1;
    cr_assert_eq(write(p2c[1], &b, 1), 1);
    cr_assert_eq(read(c2p[0], &b, 1), 1);
    HT_OK(h->device_close(d));
    cr_assert_eq(write(p2c[1], &b, 1), 1);
    int status = 0;
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child saw wrong ownership (status %d)", status);
}

/* The VMM owner's side of vmm_remap_seen_by_a_peer: maps chunk A, then B, at one address, and
 * tells the peer after each (as the runtime publishes a buffer only after mapping it). */
static int vmm_owner(const hal_ops *h, int rfd, int wfd)
{
    const int id = 0;
    hal_device *d;
    SIDE_CHECK(h->device_open(0, &d) == HAL_OK, "device_open");
    size_t g = h->vmm_granularity(d);
    void *va;
    hal_phys_mem *chunk[2];
    SIDE_CHECK(h->vmm_reserve(d, g, &va) == HAL_OK, "vmm_reserve");
    SIDE_CHECK(ht_xfer(wfd, &g, sizeof g, 1) == 0, "pipe");
    hal_device_info info;
    h->device_info(d, &info);
    for (uint32_t k = 0; k < 2; k++) {
        SIDE_CHECK(h->vmm_phys_alloc(d, g, &chunk[k]) == HAL_OK, "vmm_phys_alloc");
        if (k)
            SIDE_CHECK(h->vmm_unmap(va) == HAL_OK, "vmm_unmap");
        SIDE_CHECK(h->vmm_map(va, g, 0, chunk[k]) == HAL_OK, "vmm_map");
        ht_fill(va, g, 700u + k);
        char read_it;
        SIDE_CHECK(ht_xfer(wfd, &info.handle, sizeof info.handle, 1) == 0 && ht_xfer(wfd, &va, sizeof va, 1) == 0 &&
                       ht_xfer(rfd, &read_it, 1, 0) == 0,
                   "pipe");
    }
    SIDE_CHECK(h->vmm_unmap(va) == HAL_OK && h->vmm_phys_free(chunk[0]) == HAL_OK &&
                   h->vmm_phys_free(chunk[1]) == HAL_OK && h->vmm_release(d, va) == HAL_OK,
               "vmm cleanup");
    SIDE_CHECK(h->device_close(d) == HAL_OK, "close");
    return 0;
}

/* The peer's side: a DMA out of the owner's mapped address reads the chunk mapped there now. */
static int vmm_peer(const hal_ops *h, int rfd, int wfd)
{
    const int id = 1;
    hal_device *d;
    size_t g;
    SIDE_CHECK(h->device_open(1, &d) == HAL_OK, "device_open");
    SIDE_CHECK(ht_xfer(rfd, &g, sizeof g, 0) == 0, "pipe");
    hal_stream *s;
    void *copy;
    SIDE_CHECK(h->stream_create(d, &s) == HAL_OK && h->mem_alloc(d, g, &copy) == HAL_OK, "stream, alloc");
    unsigned char *want = malloc(g);
    SIDE_CHECK(want != NULL, "malloc");
    for (uint32_t k = 0; k < 2; k++) {
        hal_device_handle owner;
        void *va;
        SIDE_CHECK(ht_xfer(rfd, &owner, sizeof owner, 0) == 0 && ht_xfer(rfd, &va, sizeof va, 0) == 0, "pipe");
        SIDE_CHECK(h->mem_import(d, &owner) == HAL_OK, "mem_import");
        hal_dma_desc desc = {.kind = HAL_DMA_COPY, .dst = hal_ref_ptr(copy), .src = hal_ref_ptr(va), .bytes = g};
        SIDE_CHECK(h->dma_batch(s, &desc, 1) == HAL_OK && h->stream_sync(s, -1) == HAL_OK, "dma");
        ht_fill(want, g, 700u + k);
        SIDE_CHECK(memcmp(want, copy, g) == 0, "the DMA read other data than chunk %u mapped at %p", k, va);
        char read_it = 1;
        SIDE_CHECK(ht_xfer(wfd, &read_it, 1, 1) == 0, "pipe");
    }
    free(want);
    SIDE_CHECK(h->stream_destroy(s) == HAL_OK && h->device_close(d) == HAL_OK, "close");
    return 0;
}

/* A mapping the owner changes after a peer's DMA already read the address is what the peer's next
 * DMA reads (emu_vmm_share.c: the peer mirrors the owner's table when its counter moved). */
Test(hal_proc, vmm_remap_seen_by_a_peer, .timeout = 120)
{
    const hal_ops *h = ht_hal();
    if (!strcmp(h->name, "ascend"))
        cr_skip_test("hal/ascend does not map the HAL's VMM calls (HAL_E_NOT_SUPPORTED): nothing to share");
    int p2c[2], c2p[2];
    cr_assert(pipe(p2c) == 0 && pipe(c2p) == 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(p2c[1]);
        close(c2p[0]);
        _exit(vmm_peer(h, p2c[0], c2p[1]));
    }
    close(p2c[0]); /* a side that fails and exits ends the other's reads */
    close(c2p[1]);
    int rc = vmm_owner(h, c2p[0], p2c[1]);
    int status = 0;
    waitpid(pid, &status, 0);
    cr_assert_eq(rc, 0, "owner side failed");
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "peer side failed (status %d)", status);
}
