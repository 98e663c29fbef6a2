/* -P 1: the host time of every timed call, as percentiles (docs/perf.md, "Per call: `-P 1`"). A
 * loop's mean hides how its time is spread: a root that runs ahead of its receivers and then
 * waits for them spends its loop in a few long calls, a VM stall puts one call at milliseconds.
 * Each rank stamps the host clock before every timed call; the interval from one stamp to the
 * next is that call's time as the caller sees it (the last one ends with the loop, after its
 * synchronize). The clock read costs about 20 ns a call, so -P is off by default. */
#include "perf_int.h"

#include <stdlib.h>

bool perf_stamps_open(perf_stamps *s, int iters, bool on)
{
    *s = (perf_stamps){NULL, iters};
    if (!on)
        return true;
    s->t = malloc(((size_t)iters + 1) * sizeof *s->t); /* before the loop: not in its time */
    return s->t != NULL;
}

static int by_value(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* Nearest rank: the smallest interval that at least pct percent of them do not exceed. */
static double nearest_rank(const double *sorted, int n, int pct)
{
    long k = ((long)pct * n + 99) / 100;
    return sorted[k > 0 ? k - 1 : 0];
}

bool perf_stamps_close(perf_stamps *s, double end, double out_us[PERF_PCTS])
{
    if (!s->t)
        return false;
    s->t[s->n] = end;
    for (int i = 0; i < s->n; i++) /* in place: interval i from stamps i and i + 1 */
        s->t[i] = (s->t[i + 1] - s->t[i]) * 1e6;
    qsort(s->t, (size_t)s->n, sizeof *s->t, by_value);
    static const int pcts[PERF_PCTS] = {50, 90, 99, 100};
    for (int k = 0; k < PERF_PCTS; k++)
        out_us[k] = nearest_rank(s->t, s->n, pcts[k]);
    free(s->t);
    s->t = NULL;
    return true;
}
