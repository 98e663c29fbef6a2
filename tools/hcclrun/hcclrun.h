/* hcclrun internals: the key-value store server and the per-rank output forwarding, both driven by
 * the one poll() loop in tools/hcclrun.c. */
#ifndef HCCLRUN_H
#define HCCLRUN_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

/* ---- store server (store_server.c): protocol in runtime/bootstrap/store.h ---- */
typedef struct hr_store hr_store;
/* Listens on addr (IPv4, e.g. 127.0.0.1) on *port (0: an ephemeral one, written back); NULL (after
 * printing why) on failure. The other functions take NULL as a store with nothing to do (a job
 * whose store another host's hcclrun serves). */
hr_store *hr_store_open(const char *addr, uint32_t *port);
/* How many pollfds hr_store_fill writes. */
size_t hr_store_npoll(const hr_store *s);
void hr_store_fill(const hr_store *s, struct pollfd *p);
/* Handles the events of the pollfds hr_store_fill wrote (same count and order). */
void hr_store_handle(hr_store *s, const struct pollfd *p, size_t n);
void hr_store_close(hr_store *s);

/* ---- rank table placement (ranktable_place.c) ---- */
/* Fills n, nservers, server_size[0..nservers) and *device_id (malloc'ed, [n]) from a CANN rank
 * table; -1 (after printing why) when it cannot be read or does not fit the limits. */
int hr_table_place(const char *path, unsigned max_servers, unsigned max_per_server, unsigned *n, unsigned *nservers,
                   unsigned *server_size, int32_t **device_id);

/* ---- CPU binding (bind.c) ---- */
typedef enum { HR_BIND_AUTO, HR_BIND_NONE, HR_BIND_CORE } hr_bind;
/* "auto", "none" or "core" -> *out; -1 for anything else. */
int hr_bind_parse(const char *s, hr_bind *out);
/* In a rank's child before exec: binds the process (and so every thread it will start) to one
 * allowed CPU, the local_index-th modulo their count: always for CORE, for AUTO only when this
 * hcclrun starts at least as many ranks (nlocal) as there are allowed CPUs; never for NONE. */
void hr_bind_self(hr_bind mode, unsigned local_index, unsigned nlocal);

/* ---- output forwarding (output.c) ---- */
typedef struct hr_stream {
    int fd;          /* read end of the rank's stdout or stderr pipe; -1 once closed */
    int out_fd;      /* where lines go: 1 or 2 */
    char prefix[32]; /* "[rank R] " */
    char *buf;       /* the current partial line */
    size_t len, cap;
    char *out;       /* prefixed complete lines of the current read, written together */
    size_t olen, ocap;
} hr_stream;

void hr_stream_init(hr_stream *s, int fd, int out_fd, unsigned rank);
/* Reads what is available; writes the complete lines of each read with their prefix in one write;
 * on EOF flushes and closes. */
void hr_stream_read(hr_stream *s);
/* Reads whatever is still buffered in the pipe without waiting, flushes, closes. */
void hr_stream_drain(hr_stream *s);

#endif
