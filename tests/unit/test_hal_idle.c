/* HAL conformance: idle devices do not burn CPU (workers, engines and listeners block). */
#include <sys/resource.h>
#include <time.h>

#include "common/hal_testutil.h"

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

Test(hal_idle, eight_idle_devices_use_no_cpu, .timeout = 60)
{
    const hal_ops *h = ht_hal();
    uint32_t n = 0;
    HT_OK(h->device_count(&n));
    if (n > 8)
        n = 8;
    hal_device *d[8];
    hal_stream *s[8][2];
    hal_notify *nt[8];
    for (uint32_t i = 0; i < n; i++) {
        d[i] = ht_open(h, (int32_t)i);
        HT_OK(h->stream_create(d[i], &s[i][0]));
        HT_OK(h->stream_create(d[i], &s[i][1]));
        HT_OK(h->notify_create(d[i], &nt[i]));
        HT_OK(h->stream_sync(s[i][0], -1));
    }
    /* One stream per device parked in a notify wait, which must block too. */
    for (uint32_t i = 0; i < n; i++)
        HT_OK(h->notify_wait(nt[i], s[i][1], 0, NULL));
    struct timespec one_s = {1, 0};
    nanosleep(&(struct timespec){0, 300000000}, NULL); /* let the waits pass any spin phase */
    double before = cpu_seconds();
    nanosleep(&one_s, NULL);
    double used = cpu_seconds() - before;
    cr_assert_lt(used, 0.2, "idle devices used %.3f s of CPU in 1 s", used);
    for (uint32_t i = 0; i < n; i++)
        HT_OK(h->notify_record(nt[i], s[i][0]));
    for (uint32_t i = 0; i < n; i++) {
        HT_OK(h->stream_sync(s[i][1], -1));
        HT_OK(h->device_close(d[i]));
    }
}
