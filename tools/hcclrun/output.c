/* Forwards a rank's output line by line with a "[rank R] " prefix. The complete lines of one read
 * leave in one write(), so lines of different ranks never mix, and a burst of lines wakes whoever
 * reads hcclrun's output once, not once a line (on a 2-core machine that reader and hcclrun ran in
 * the perf tools' timed windows: docs/perf-history.md); a partial line waits for its end (or for EOF). */
#include "hcclrun.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A line longer than this is forwarded in pieces rather than buffered without bound. */
#define HR_MAX_LINE (64 * 1024)

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return; /* our own stdout is gone: nothing sensible left to do with the text */
        p += w;
        n -= (size_t)w;
    }
}

static void flush_lines(hr_stream *s)
{
    if (s->olen)
        write_all(s->out_fd, s->out, s->olen);
    s->olen = 0;
}

/* Queues one prefixed line for flush_lines (written at once, after those queued, if it cannot be
 * queued). */
static void emit(hr_stream *s, const char *line, size_t n)
{
    size_t plen = strlen(s->prefix), need = s->olen + plen + n + 1;
    if (need > s->ocap) {
        size_t cap = s->ocap ? s->ocap : 1024;
        while (cap < need)
            cap *= 2;
        char *b = realloc(s->out, cap);
        if (!b) {
            flush_lines(s);
            write_all(s->out_fd, s->prefix, plen);
            write_all(s->out_fd, line, n);
            write_all(s->out_fd, "\n", 1);
            return;
        }
        s->out = b;
        s->ocap = cap;
    }
    memcpy(s->out + s->olen, s->prefix, plen);
    if (n) /* an empty line: line may be NULL */
        memcpy(s->out + s->olen + plen, line, n);
    s->out[s->olen + plen + n] = '\n';
    s->olen = need;
}

void hr_stream_init(hr_stream *s, int fd, int out_fd, unsigned rank)
{
    memset(s, 0, sizeof *s);
    s->fd = fd;
    s->out_fd = out_fd;
    snprintf(s->prefix, sizeof s->prefix, "[rank %u] ", rank);
}

static void append(hr_stream *s, const char *p, size_t n)
{
    while (n > 0) {
        const char *nl = memchr(p, '\n', n);
        size_t take = nl ? (size_t)(nl - p) : n;
        if (s->len + take > s->cap) {
            size_t cap = s->cap ? s->cap : 256;
            while (cap < s->len + take)
                cap *= 2;
            char *b = realloc(s->buf, cap);
            if (!b)
                return;
            s->buf = b;
            s->cap = cap;
        }
        if (take) /* an empty line before any text: no buffer yet */
            memcpy(s->buf + s->len, p, take);
        s->len += take;
        if (nl || s->len >= HR_MAX_LINE) {
            emit(s, s->buf, s->len);
            s->len = 0;
        }
        take += nl ? 1 : 0;
        p += take;
        n -= take;
    }
}

static void finish(hr_stream *s)
{
    if (s->len)
        emit(s, s->buf, s->len);
    flush_lines(s);
    s->len = 0;
    free(s->buf);
    s->buf = NULL;
    s->cap = 0;
    free(s->out);
    s->out = NULL;
    s->ocap = 0;
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
}

void hr_stream_read(hr_stream *s)
{
    char buf[16384];
    while (s->fd >= 0) {
        ssize_t n = read(s->fd, buf, sizeof buf);
        if (n > 0) {
            append(s, buf, (size_t)n);
            flush_lines(s);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        finish(s); /* EOF or error */
    }
}

void hr_stream_drain(hr_stream *s)
{
    hr_stream_read(s); /* the fd is non-blocking: this stops at "nothing more right now" */
    finish(s);
}
