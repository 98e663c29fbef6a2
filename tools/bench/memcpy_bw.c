/* memcpy_bw: the machine's host memcpy bandwidth with T threads, the reference of issue #8's
 * "copy-bound collectives at >= 0.7x of the 2-thread memcpy bandwidth" (tools/bench/compare.sh).
 * The threads copy disjoint halves (T slices) of one S-byte buffer into another; bandwidth is
 * S / wall time from the first thread's start to the last thread's end; the median of R repetitions.
 *
 * -k nt copies with the emulated DMA's non-temporal kernel (hal/emu/emu_copy.c) instead of the C
 * library's memcpy: the reference stays memcpy, -k nt shows what the kernel gains on this machine.
 *
 *   memcpy_bw [-t threads (2)] [-s bytes, K/M/G suffix (64M)] [-r repetitions (7)] [-k memcpy|nt]
 *
 * Output: "memcpy threads T size S GB/s X" (one line; "nt-copy" instead of "memcpy" with -k nt). */
#include "../common/size_arg.h"
#include "hal/emu/emu_copy.h"
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/oh_clock.h"

#define MAX_THREADS 64

typedef struct slice {
    char *dst;
    const char *src;
    size_t bytes;
    pthread_barrier_t *start;
    double start_s, end_s;
} slice;

static void die(const char *what, const char *val)
{
    fprintf(stderr, "memcpy_bw: bad value '%s' for %s\n", val, what);
    exit(2);
}

static long parse_long(const char *what, const char *s, long lo, long hi)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        die(what, s);
    return v;
}

static size_t parse_size(const char *s)
{
    double v;
    if (!size_arg_parse(s, 4096, 1e12, &v))
        die("-s (bytes >= 4096, K/M/G suffix)", s);
    return (size_t)v;
}

static void plain_copy(void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n);
}

static void (*g_copy)(void *, const void *, size_t) = plain_copy;

static void *copy_slice(void *arg)
{
    slice *sl = arg;
    pthread_barrier_wait(sl->start);
    sl->start_s = oh_now_s();
    g_copy(sl->dst, sl->src, sl->bytes);
    sl->end_s = oh_now_s();
    return NULL;
}

/* Seconds for T threads to copy `bytes` from src to dst. */
static double timed_copy(char *dst, const char *src, size_t bytes, int threads)
{
    pthread_t tid[MAX_THREADS];
    slice sl[MAX_THREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
    size_t per = (bytes / (size_t)threads + 63) & ~(size_t)63; /* cache-line aligned slices */
    for (int t = 0; t < threads; t++) {
        size_t off = per * (size_t)t < bytes ? per * (size_t)t : bytes;
        size_t len = off + per <= bytes ? per : bytes - off;
        sl[t] = (slice){dst + off, src + off, len, &start, 0, 0};
        if (pthread_create(&tid[t], NULL, copy_slice, &sl[t]) != 0) {
            fprintf(stderr, "memcpy_bw: pthread_create failed for thread %d of %d\n", t, threads);
            exit(2);
        }
    }
    pthread_barrier_wait(&start);
    /* The window runs from the first copier's start, not from this thread's return from the
     * barrier: with as many copiers as cores, this thread may next run when they are done. */
    double t0 = 0, t1 = 0;
    for (int t = 0; t < threads; t++) {
        pthread_join(tid[t], NULL);
        t0 = t == 0 || sl[t].start_s < t0 ? sl[t].start_s : t0;
        t1 = sl[t].end_s > t1 ? sl[t].end_s : t1;
    }
    pthread_barrier_destroy(&start);
    return t1 - t0;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int threads = 2, reps = 7, c;
    size_t bytes = 64u << 20;
    opterr = 0;
    while ((c = getopt(argc, argv, "t:s:r:k:")) != -1) {
        switch (c) {
        case 't': threads = (int)parse_long("-t (1..64)", optarg, 1, MAX_THREADS); break;
        case 's': bytes = parse_size(optarg); break;
        case 'r': reps = (int)parse_long("-r (1..1000)", optarg, 1, 1000); break;
        case 'k':
            if (!strcmp(optarg, "nt"))
                g_copy = emu_copy_nt;
            else if (strcmp(optarg, "memcpy"))
                die("-k (memcpy or nt)", optarg);
            break;
        default: die("a flag (-t threads, -s bytes, -r repetitions)", argv[optind - 1]);
        }
    }
    /* dst 2 KiB + 64 B off a 4 KiB multiple from src: no 4K aliasing between the streams. */
    char *src = malloc(2 * bytes + 8192);
    if (!src) {
        fprintf(stderr, "memcpy_bw: cannot allocate 2 x %zu bytes\n", bytes);
        return 2;
    }
    char *dst = src + ((bytes + 4095) & ~(size_t)4095) + 2112;
    memset(src, 1, bytes);
    memset(dst, 2, bytes); /* pages faulted in: we time copies, not page faults */
    double sec[1000];
    timed_copy(dst, src, bytes, threads); /* warm-up */
    for (int r = 0; r < reps; r++)
        sec[r] = timed_copy(dst, src, bytes, threads);
    qsort(sec, (size_t)reps, sizeof sec[0], cmp_d);
    printf("%s threads %d size %zu GB/s %.2f\n", g_copy == emu_copy_nt ? "nt-copy" : "memcpy", threads, bytes,
           (double)bytes / 1e9 / sec[reps / 2]);
    free(src);
    return 0;
}
