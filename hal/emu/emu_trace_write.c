/* Writes a stopped session's records as Chrome trace event JSON (opens in Perfetto and
 * chrome://tracing): one process ("pid") per device, one track ("tid") per device stream, every
 * task a complete event ("ph":"X"), every HCCL op one complete event on the stream it was launched
 * on spanning its tasks there (plus one per slave stream it used). Times are microseconds of
 * CLOCK_MONOTONIC, so the files of several processes of one host line up. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/oh_log.h"
#include "hal/emu/emu_internal.h"
#include "hal/emu/emu_trace.h"

#define MAX_TRACKS 1024u
#define OP_SPANS 8u /* streams per op (a plan has at most 8) */

typedef struct track {
    uint16_t device;
    uint8_t is_default;
    uint64_t stream;
    uint32_t tid;
} track;

typedef struct span {
    uint64_t stream, t0, t1;
    uint32_t ntasks;
} span;

typedef struct op_info {
    const emu_trace_rec *rec; /* the op's record, NULL if it was dropped */
    span spans[OP_SPANS];
} op_info;

typedef struct writer {
    const emu_trace_session *ses;
    FILE *f;
    bool first;
    track *tracks;
    uint32_t ntracks;
    uint32_t next_tid[EMU_MAX_DEVICES];
    op_info *ops;
    uint32_t nops;
    int32_t rank_of[EMU_MAX_DEVICES]; /* from op records, -1 unknown */
} writer;

static bool device_traced(const writer *w, uint32_t dev)
{
    return dev < 64 && (w->ses->device_mask >> dev & 1);
}

static op_info *op_of(const writer *w, uint32_t id)
{
    if (id < w->ses->first_op || id >= w->ses->first_op + w->nops)
        return NULL;
    return &w->ops[id - w->ses->first_op];
}

static uint32_t track_of(writer *w, const emu_trace_rec *r)
{
    for (uint32_t i = 0; i < w->ntracks; i++)
        if (w->tracks[i].stream == r->stream && w->tracks[i].device == r->device)
            return w->tracks[i].tid;
    if (w->ntracks == MAX_TRACKS)
        return UINT32_MAX - 1; /* an "other streams" track */
    track *t = &w->tracks[w->ntracks++];
    uint32_t d = r->device < EMU_MAX_DEVICES ? r->device : 0;
    *t = (track){.device = r->device, .is_default = r->is_default, .stream = r->stream, .tid = ++w->next_tid[d]};
    if (r->is_default)
        t->tid = 0;
    return t->tid;
}

/* Pass 1: op records, tracks, per-(op, stream) spans of their tasks. */
static void collect(const emu_trace_rec *r, void *arg)
{
    writer *w = arg;
    if (!device_traced(w, r->device))
        return;
    track_of(w, r);
    if (r->kind == EMU_TR_OP) {
        op_info *o = op_of(w, r->u.op.id);
        if (o)
            o->rec = r;
        if (r->device < EMU_MAX_DEVICES)
            w->rank_of[r->device] = (int32_t)r->u.op.rank;
        return;
    }
    op_info *o = op_of(w, r->u.task.tag.op);
    if (!o)
        return;
    for (uint32_t i = 0; i < OP_SPANS; i++) {
        span *s = &o->spans[i];
        if (s->ntasks == 0 || s->stream == r->stream) {
            if (s->ntasks == 0 || r->t0 < s->t0)
                s->t0 = r->t0;
            if (s->ntasks == 0 || r->t1 > s->t1)
                s->t1 = r->t1;
            s->stream = r->stream;
            s->ntasks++;
            return;
        }
    }
}

static void sep(writer *w)
{
    fputs(w->first ? "\n" : ",\n", w->f);
    w->first = false;
}

/* JSON string body: quotes, backslashes and control characters escaped. */
static void put_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

static void put_times(writer *w, uint64_t t0, uint64_t t1)
{
    fprintf(w->f, "\"ts\":%" PRIu64 ".%03u,\"dur\":%" PRIu64 ".%03u", t0 / 1000, (unsigned)(t0 % 1000),
            (t1 - t0) / 1000, (unsigned)((t1 - t0) % 1000));
}

static const char *task_name(uint8_t kind)
{
    static const char *const names[] = {
        [EMU_T_DMA] = "dma", [EMU_T_MEMSET] = "memset", [EMU_T_FN] = "device_func",
        [EMU_T_HOST] = "host_func", [EMU_T_EVENT_RECORD] = "event_record", [EMU_T_EVENT_WAIT] = "event_wait",
        [EMU_T_NOTIFY_RECORD] = "notify_record", [EMU_T_NOTIFY_WAIT] = "notify_wait", [EMU_T_PROG] = "program",
        [EMU_T_FLAG_WAIT] = "flag_wait", [EMU_T_NOTIFY_WAKE] = "notify_wake",
    };
    return kind < sizeof names / sizeof names[0] && names[kind] ? names[kind] : "task";
}

static void put_task_args(writer *w, const emu_trace_rec *r)
{
    FILE *f = w->f;
    fprintf(f, ",\"args\":{\"task\":\"%s\"", task_name(r->task));
    if (r->task == EMU_T_DMA || r->task == EMU_T_MEMSET)
        fprintf(f, ",\"bytes\":%" PRIu64, r->u.task.bytes);
    if (r->task == EMU_T_DMA)
        fprintf(f, ",\"descriptors\":%u", r->u.task.ndesc);
    if (r->u.task.dtype >= 0)
        fprintf(f, ",\"dtype\":\"%s\",\"reduce_op\":\"%s\"", hal_dtype_name((hal_dtype)r->u.task.dtype),
                hal_redop_name((hal_redop)r->u.task.redop));
    if (r->task == EMU_T_NOTIFY_RECORD || r->task == EMU_T_NOTIFY_WAIT || r->task == EMU_T_FLAG_WAIT ||
        r->task == EMU_T_NOTIFY_WAKE)
        fprintf(f, ",\"notify\":%" PRIu64, r->u.task.aux);
    else if (r->task == EMU_T_EVENT_RECORD || r->task == EMU_T_EVENT_WAIT)
        fprintf(f, ",\"event\":\"0x%" PRIx64 "\"", r->u.task.aux);
    else if (r->task == EMU_T_PROG)
        fprintf(f, ",\"instructions\":%" PRIu64, r->u.task.aux);
    const emu_trace_tag *g = &r->u.task.tag;
    if (g->op) {
        fprintf(f, ",\"op\":%u,\"step\":", g->op);
        put_str(f, g->step);
        fprintf(f, ",\"plan_stream\":%u,\"step_index\":%u", g->stream, g->index);
        if (g->peer >= 0)
            fprintf(f, ",\"peer\":%d", g->peer);
    }
    if (r->skipped)
        fputs(",\"skipped\":true", f);
    fputs("}}", f);
}

/* Pass 2: task events. */
static void put_task(const emu_trace_rec *r, void *arg)
{
    writer *w = arg;
    if (r->kind != EMU_TR_TASK || !device_traced(w, r->device))
        return;
    bool of_op = op_of(w, r->u.task.tag.op) != NULL;
    if (!(w->ses->what & HAL_TRACE_TASKS) && !(of_op && (w->ses->what & HAL_TRACE_HCCL)))
        return;
    sep(w);
    fprintf(w->f, "{\"ph\":\"X\",\"cat\":\"%s\",\"name\":", of_op ? "hccl_step" : "task");
    put_str(w->f, of_op ? r->u.task.tag.step : task_name(r->task));
    fprintf(w->f, ",\"pid\":%u,\"tid\":%u,", r->device, track_of(w, r));
    put_times(w, r->t0, r->t1);
    put_task_args(w, r);
}

static void put_op(writer *w, const op_info *o)
{
    const emu_trace_rec *r = o->rec;
    for (uint32_t i = 0; i < OP_SPANS && o->spans[i].ntasks; i++) {
        const span *s = &o->spans[i];
        bool launch = s->stream == r->stream;
        emu_trace_rec where = *r;
        where.stream = s->stream;
        sep(w);
        fprintf(w->f, "{\"ph\":\"X\",\"cat\":\"%s\",\"name\":", launch ? "hccl_op" : "hccl_op_stream");
        put_str(w->f, r->u.op.name);
        fprintf(w->f, ",\"pid\":%u,\"tid\":%u,", r->device, track_of(w, &where));
        put_times(w, s->t0, s->t1);
        fprintf(w->f, ",\"args\":{\"op\":%u,\"count\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"dtype\":\"%s\"", r->u.op.id,
                r->u.op.count, r->u.op.bytes, r->u.op.dtype);
        if (r->u.op.redop[0])
            fprintf(w->f, ",\"reduce_op\":\"%s\"", r->u.op.redop);
        if (r->u.op.root >= 0)
            fprintf(w->f, ",\"root\":%d", r->u.op.root);
        fputs(",\"algorithm\":", w->f);
        put_str(w->f, r->u.op.algo);
        fputs(",\"comm\":", w->f);
        put_str(w->f, r->u.op.comm);
        fprintf(w->f, ",\"rank\":%u,\"nranks\":%u,\"seq\":%" PRIu64 ",\"tasks\":%u}}", r->u.op.rank, r->u.op.nranks,
                r->u.op.seq, s->ntasks);
    }
}

static void put_metadata(writer *w)
{
    bool seen[EMU_MAX_DEVICES] = {false};
    for (uint32_t i = 0; i < w->ntracks; i++) {
        const track *t = &w->tracks[i];
        if (t->device < EMU_MAX_DEVICES && !seen[t->device]) {
            seen[t->device] = true;
            sep(w);
            if (w->rank_of[t->device] >= 0)
                fprintf(w->f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%u,\"args\":{\"name\":\"device %u (rank %d)\"}}",
                        t->device, t->device, w->rank_of[t->device]);
            else
                fprintf(w->f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%u,\"args\":{\"name\":\"device %u\"}}",
                        t->device, t->device);
        }
        sep(w);
        if (t->is_default)
            fprintf(w->f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%u,\"tid\":%u,\"args\":{\"name\":\"default stream\"}}",
                    t->device, t->tid);
        else
            fprintf(w->f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%u,\"tid\":%u,\"args\":{\"name\":\"stream %u\"}}",
                    t->device, t->tid, t->tid);
    }
}

static hal_result open_file(const emu_trace_session *ses, char *path, size_t len, FILE **f)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/openhccl_trace_%d_%u.json", ses->dir, (int)getpid(), ses->index);
    *f = fopen(p, "w");
    if (!*f) {
        OH_ERR("trace", "cannot write the trace file %s", p);
        return HAL_E_SYSCALL;
    }
    if (path && len)
        snprintf(path, len, "%s", p);
    return HAL_OK;
}

hal_result emu_trace_write(const emu_trace_session *ses, char *path, size_t len)
{
    writer w = {.ses = ses, .first = true, .nops = ses->end_op - ses->first_op};
    for (uint32_t d = 0; d < EMU_MAX_DEVICES; d++)
        w.rank_of[d] = -1;
    w.tracks = calloc(MAX_TRACKS, sizeof *w.tracks);
    w.ops = calloc(w.nops ? w.nops : 1, sizeof *w.ops);
    hal_result rc = w.tracks && w.ops ? open_file(ses, path, len, &w.f) : HAL_E_NOMEM;
    if (rc == HAL_OK) {
        emu_trace_for_each(collect, &w);
        fprintf(w.f, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"OpenHCCL\",\"pid\":%d,"
                     "\"dropped_events\":%" PRIu64 "},\"traceEvents\":[",
                (int)getpid(), ses->dropped);
        put_metadata(&w);
        emu_trace_for_each(put_task, &w);
        if (ses->what & HAL_TRACE_HCCL)
            for (uint32_t i = 0; i < w.nops; i++)
                if (w.ops[i].rec)
                    put_op(&w, &w.ops[i]);
        fputs("\n]}\n", w.f);
        if (fclose(w.f) != 0) {
            OH_ERR("trace", "writing the trace file %s failed", path ? path : "");
            rc = HAL_E_SYSCALL;
        }
    }
    free(w.tracks);
    free(w.ops);
    return rc;
}
