/* CANN rank table loader (versions 1.0 and 1.2). It stops at the first problem and names the
 * exact entry, because a cluster of hundreds of lines is hard to eyeball. */
#include "runtime/ranktable.h"

#include "common/oh_log.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct parse_ctx {
    const char *path;
    HcclResult rc;
    rt_ranktable *t;
    int has_pods;
} parse_ctx;

static int fail(parse_ctx *c, HcclResult rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(parse_ctx *c, HcclResult rc, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    OH_ERR("ranktable", "rank table %s: %s", c->path, msg);
    c->rc = rc;
    return -1;
}

/* A string field: 1 present, 0 absent; -1 (logged) if not a string or longer than cap-1. */
static int get_str(parse_ctx *c, json_object *o, const char *key, char *dst, size_t cap, const char *where)
{
    json_object *v;
    if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
        return 0;
    if (!json_object_is_type(v, json_type_string))
        return fail(c, HCCL_E_PARA, "%s: \"%s\" must be a string", where, key);
    const char *s = json_object_get_string(v);
    if (strlen(s) >= cap)
        return fail(c, HCCL_E_PARA, "%s: \"%s\" is longer than %zu characters", where, key, cap - 1);
    snprintf(dst, cap, "%s", s);
    return 1;
}

/* A number field: CANN writes numbers as strings ("16666"); plain integers are accepted too.
 * 1 present, 0 absent, -1 (logged) if malformed or outside [lo, hi]. */
static int get_num(parse_ctx *c, json_object *o, const char *key, long long lo, long long hi, long long *out,
                   const char *where)
{
    json_object *v;
    if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
        return 0;
    long long n;
    if (json_object_is_type(v, json_type_int)) {
        n = json_object_get_int64(v);
    } else if (json_object_is_type(v, json_type_string)) {
        const char *s = json_object_get_string(v);
        char *end;
        errno = 0;
        n = strtoll(s, &end, 10);
        if (errno || end == s || *end)
            return fail(c, HCCL_E_PARA, "%s: \"%s\" is \"%s\", not a number", where, key, s);
    } else {
        return fail(c, HCCL_E_PARA, "%s: \"%s\" must be a number written as a string", where, key);
    }
    if (n < lo || n > hi)
        return fail(c, HCCL_E_PARA, "%s: \"%s\" is %lld, outside [%lld, %lld]", where, key, n, lo, hi);
    *out = n;
    return 1;
}

static int need(parse_ctx *c, int got, const char *key, const char *where)
{
    if (got == 0)
        return fail(c, HCCL_E_PARA, "%s: required field \"%s\" is missing", where, key);
    return got < 0 ? -1 : 0;
}

static json_object *get_array(parse_ctx *c, json_object *o, const char *key, const char *where, int required)
{
    json_object *v;
    if (!json_object_object_get_ex(o, key, &v)) {
        if (required)
            fail(c, HCCL_E_PARA, "%s: required field \"%s\" is missing", where, key);
        return NULL;
    }
    if (!json_object_is_type(v, json_type_array) || json_object_array_length(v) == 0) {
        fail(c, HCCL_E_PARA, "%s: \"%s\" must be a non-empty list", where, key);
        return NULL;
    }
    return v;
}

static int check_header(parse_ctx *c, json_object *root)
{
    char status[32] = "", version[16] = "";
    if (need(c, get_str(c, root, "status", status, sizeof status, "top level"), "status", "top level") < 0 ||
        need(c, get_str(c, root, "version", version, sizeof version, "top level"), "version", "top level") < 0)
        return -1;
    if (strcmp(status, "completed"))
        return fail(c, HCCL_E_PARA, "status is \"%s\", not \"completed\": the file is not ready for use", status);
    if (!strcmp(version, "1.1") || !strcmp(version, "2.0"))
        return fail(c, HCCL_E_NOT_SUPPORT, "version \"%s\" is not supported yet (supported: \"1.0\", \"1.2\")",
                    version);
    if (strcmp(version, "1.0") && strcmp(version, "1.2"))
        return fail(c, HCCL_E_PARA, "unknown version \"%s\" (supported: \"1.0\", \"1.2\")", version);
    snprintf(c->t->version, sizeof c->t->version, "%.7s", version); /* "1.0" or "1.2", checked above */
    return 0;
}

/* Counts devices (= ranks) over all servers; checks each server has a device list. */
static int count_ranks(parse_ctx *c, json_object *servers, uint32_t *n)
{
    *n = 0;
    for (size_t i = 0; i < json_object_array_length(servers); i++) {
        json_object *s = json_object_array_get_idx(servers, i);
        char where[64];
        snprintf(where, sizeof where, "server_list[%zu]", i);
        if (!json_object_is_type(s, json_type_object))
            return fail(c, HCCL_E_PARA, "%s must be an object", where);
        json_object *devs = get_array(c, s, "device", where, 1);
        if (!devs)
            return -1;
        *n += (uint32_t)json_object_array_length(devs);
    }
    return 0;
}

static int parse_device(parse_ctx *c, json_object *d, const rt_rank_entry *srv, const char *where)
{
    long long rank, dev, v;
    if (!json_object_is_type(d, json_type_object))
        return fail(c, HCCL_E_PARA, "%s must be an object", where);
    if (need(c, get_num(c, d, "rank_id", 0, UINT32_MAX, &rank, where), "rank_id", where) < 0 ||
        need(c, get_num(c, d, "device_id", 0, INT32_MAX, &dev, where), "device_id", where) < 0)
        return -1;
    rt_ranktable *t = c->t;
    if (rank >= t->nranks)
        return fail(c, HCCL_E_PARA, "%s: rank_id %lld is out of range: %u devices are listed, so rank ids must be "
                    "0..%u", where, rank, t->nranks, t->nranks - 1);
    rt_rank_entry *e = &t->ranks[rank];
    if (e->server_id[0])
        return fail(c, HCCL_E_PARA, "%s: rank_id %lld is used twice (also by a device of server '%s')", where,
                    rank, e->server_id);
    *e = *srv;
    e->rank_id = (uint32_t)rank;
    e->device_id = (int32_t)dev;
    e->super_device_id = -1;
    int got;
    if ((got = get_num(c, d, "host_port", 0, 65535, &v, where)) < 0)
        return -1;
    e->host_port = got ? (uint32_t)v : 0;
    if ((got = get_num(c, d, "device_port", 0, 65535, &v, where)) < 0)
        return -1;
    e->device_port = got ? (uint32_t)v : 0;
    if (get_str(c, d, "device_ip", e->device_ip, sizeof e->device_ip, where) < 0)
        return -1;
    if ((got = get_num(c, d, "super_device_id", 0, INT32_MAX, &v, where)) < 0)
        return -1;
    if (!got && c->has_pods)
        return fail(c, HCCL_E_PARA, "%s: \"super_device_id\" is required when \"super_pod_list\" is given",
                    where);
    e->super_device_id = got ? (int32_t)v : -1;
    return 0;
}

/* Ranks of one server must be contiguous (CANN: ranks never interleave across servers). */
static int parse_server(parse_ctx *c, json_object *s, uint32_t index)
{
    char where[160];
    rt_rank_entry srv;
    memset(&srv, 0, sizeof srv);
    srv.server_index = index;
    snprintf(where, sizeof where, "server_list[%u]", index);
    if (need(c, get_str(c, s, "server_id", srv.server_id, sizeof srv.server_id, where), "server_id", where) < 0 ||
        get_str(c, s, "host_ip", srv.host_ip, sizeof srv.host_ip, where) < 0)
        return -1;
    if (!srv.server_id[0])
        return fail(c, HCCL_E_PARA, "%s: \"server_id\" is empty", where);
    json_object *devs = get_array(c, s, "device", where, 1);
    uint32_t n = (uint32_t)json_object_array_length(devs), lo = UINT32_MAX, hi = 0;
    for (uint32_t j = 0; j < n; j++) {
        char dwhere[224];
        snprintf(dwhere, sizeof dwhere, "server_list[%u] (server_id '%s') device[%u]", index, srv.server_id, j);
        if (parse_device(c, json_object_array_get_idx(devs, j), &srv, dwhere) < 0)
            return -1;
    }
    for (uint32_t r = 0; r < c->t->nranks; r++) {
        const rt_rank_entry *e = &c->t->ranks[r];
        if (e->server_id[0] && e->server_index == index) {
            lo = r < lo ? r : lo;
            hi = r > hi ? r : hi;
        }
    }
    if (hi - lo + 1 != n)
        return fail(c, HCCL_E_PARA, "server_list[%u] (server_id '%s'): its rank ids %u..%u are not contiguous "
                    "(ranks must follow the server order and never interleave across servers)", index,
                    srv.server_id, lo, hi);
    c->t->server_first[index] = lo;
    c->t->server_ranks[index] = n;
    return 0;
}

static int check_unique_servers(parse_ctx *c)
{
    rt_ranktable *t = c->t;
    for (uint32_t i = 0; i < t->nservers; i++)
        for (uint32_t j = 0; j < i; j++)
            if (!strcmp(t->ranks[t->server_first[i]].server_id, t->ranks[t->server_first[j]].server_id))
                return fail(c, HCCL_E_PARA, "server_id '%s' appears twice (server_list[%u] and [%u])",
                            t->ranks[t->server_first[i]].server_id, j, i);
    return 0;
}


static int find_server(const rt_ranktable *t, const char *id)
{
    for (uint32_t i = 0; i < t->nservers; i++)
        if (!strcmp(t->ranks[t->server_first[i]].server_id, id))
            return (int)i;
    return -1;
}

/* One super_pod_list entry: records which pod each of its servers belongs to. */
static int parse_pod(parse_ctx *c, json_object *pod, uint32_t i, uint32_t *pod_of)
{
    char where[96], sid[RT_RANKTABLE_ID_LEN];
    snprintf(where, sizeof where, "super_pod_list[%u]", i);
    char *id = c->t->super_pod_ids + (size_t)i * RT_RANKTABLE_ID_LEN;
    if (!json_object_is_type(pod, json_type_object))
        return fail(c, HCCL_E_PARA, "%s must be an object", where);
    if (need(c, get_str(c, pod, "super_pod_id", id, RT_RANKTABLE_ID_LEN, where), "super_pod_id", where) < 0)
        return -1;
    json_object *list = get_array(c, pod, "server_list", where, 1);
    if (!list)
        return -1;
    for (size_t j = 0; j < json_object_array_length(list); j++) {
        char swhere[160];
        snprintf(swhere, sizeof swhere, "super_pod_list[%u] (super_pod_id '%s') server_list[%zu]", i, id, j);
        json_object *e = json_object_array_get_idx(list, j);
        if (!json_object_is_type(e, json_type_object))
            return fail(c, HCCL_E_PARA, "%s must be an object", swhere);
        if (need(c, get_str(c, e, "server_id", sid, sizeof sid, swhere), "server_id", swhere) < 0)
            return -1;
        int s = find_server(c->t, sid);
        if (s < 0)
            return fail(c, HCCL_E_PARA, "%s: server_id '%s' is not in the top-level server_list", swhere, sid);
        if (pod_of[s] != UINT32_MAX)
            return fail(c, HCCL_E_PARA, "%s: server '%s' is already in super_pod_list[%u]", swhere, sid, pod_of[s]);
        pod_of[s] = i;
    }
    return 0;
}

/* Every server in exactly one superpod, and a superpod's servers listed together in server_list. */
static int check_pods(parse_ctx *c, const uint32_t *pod_of, uint8_t *closed)
{
    rt_ranktable *t = c->t;
    for (uint32_t s = 0; s < t->nservers; s++) {
        const char *sid = t->ranks[t->server_first[s]].server_id;
        if (pod_of[s] == UINT32_MAX)
            return fail(c, HCCL_E_PARA, "server '%s' is in no super_pod_list entry", sid);
        if (s > 0 && pod_of[s] != pod_of[s - 1]) {
            if (closed[pod_of[s]])
                return fail(c, HCCL_E_PARA, "servers of superpod '%s' are interleaved with other superpods in "
                            "server_list (at server '%s'); list each superpod's servers together",
                            rt_ranktable_super_pod_id(t, pod_of[s]), sid);
            closed[pod_of[s - 1]] = 1;
        }
        for (uint32_t r = 0; r < t->server_ranks[s]; r++)
            t->ranks[t->server_first[s] + r].super_pod_index = pod_of[s];
    }
    return 0;
}

static int parse_pods(parse_ctx *c, json_object *pods)
{
    rt_ranktable *t = c->t;
    uint32_t n = (uint32_t)json_object_array_length(pods);
    t->super_pod_ids = calloc(n, RT_RANKTABLE_ID_LEN);
    uint32_t *pod_of = malloc(t->nservers * sizeof *pod_of);
    uint8_t *closed = calloc(n, 1);
    int rc = 0;
    if (!t->super_pod_ids || !pod_of || !closed) {
        rc = fail(c, HCCL_E_MEMORY, "out of memory");
    } else {
        t->nsuper_pods = n;
        for (uint32_t s = 0; s < t->nservers; s++)
            pod_of[s] = UINT32_MAX;
        for (uint32_t i = 0; i < n && rc == 0; i++)
            rc = parse_pod(c, json_object_array_get_idx(pods, i), i, pod_of);
        if (rc == 0)
            rc = check_pods(c, pod_of, closed);
    }
    free(pod_of);
    free(closed);
    return rc;
}

static int alloc_table(parse_ctx *c, uint32_t nranks, uint32_t nservers)
{
    rt_ranktable *t = c->t;
    t->nranks = nranks;
    t->nservers = nservers;
    t->ranks = calloc(nranks, sizeof *t->ranks);
    t->server_ranks = calloc(nservers, sizeof *t->server_ranks);
    t->server_first = calloc(nservers, sizeof *t->server_first);
    if (!t->ranks || !t->server_ranks || !t->server_first)
        return fail(c, HCCL_E_MEMORY, "out of memory for %u ranks", nranks);
    return 0;
}

static int parse_table(parse_ctx *c, json_object *root)
{
    if (!json_object_is_type(root, json_type_object))
        return fail(c, HCCL_E_PARA, "the top level must be a JSON object");
    if (check_header(c, root) < 0)
        return -1;
    int v12 = !strcmp(c->t->version, "1.2");
    long long count = 0;
    int got = get_num(c, root, "server_count", 1, UINT32_MAX, &count, "top level");
    if (got < 0 || (!v12 && need(c, got, "server_count", "top level") < 0))
        return -1;
    json_object *servers = get_array(c, root, "server_list", "top level", 1), *pods = NULL;
    uint32_t nranks;
    if (!servers || count_ranks(c, servers, &nranks) < 0)
        return -1;
    uint32_t nservers = (uint32_t)json_object_array_length(servers);
    if (got && count != nservers)
        return fail(c, HCCL_E_PARA, "server_count is %lld but server_list has %u servers", count, nservers);
    if (v12 && json_object_object_get_ex(root, "super_pod_list", NULL)) {
        if (!(pods = get_array(c, root, "super_pod_list", "top level", 1)))
            return -1;
        c->has_pods = 1;
    }
    if (alloc_table(c, nranks, nservers) < 0)
        return -1;
    for (uint32_t i = 0; i < nservers; i++)
        if (parse_server(c, json_object_array_get_idx(servers, i), i) < 0)
            return -1;
    if (check_unique_servers(c) < 0)
        return -1;
    return pods ? parse_pods(c, pods) : 0;
}

static char *read_file(parse_ctx *c)
{
    FILE *f = fopen(c->path, "rb");
    if (!f) {
        fail(c, HCCL_E_OPEN_FILE_FAILURE, "cannot open: %s (pass the rank table path as clusterInfo)", strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap)
            break;
        char *p = realloc(buf, cap * 2 + 1);
        if (!p) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = p;
        cap *= 2;
    }
    int err = ferror(f);
    fclose(f);
    if (!buf || err) {
        free(buf);
        fail(c, buf ? HCCL_E_OPEN_FILE_FAILURE : HCCL_E_MEMORY, "cannot read the file");
        return NULL;
    }
    buf[len] = '\0';
    return buf;
}

HcclResult rt_ranktable_load(const char *path, rt_ranktable **out)
{
    if (!path || !out) {
        OH_ERR("ranktable", "rt_ranktable_load: NULL %s", !path ? "path" : "output");
        return HCCL_E_PTR;
    }
    *out = NULL;
    parse_ctx c = {.path = path, .rc = HCCL_SUCCESS};
    char *text = read_file(&c);
    if (!text)
        return c.rc;
    enum json_tokener_error jerr = json_tokener_success;
    json_object *root = json_tokener_parse_verbose(text, &jerr);
    free(text);
    if (!root) {
        fail(&c, HCCL_E_PARA, "not valid JSON: %s (truncated, or not a rank table file?)",
             json_tokener_error_desc(jerr));
        return c.rc;
    }
    c.t = calloc(1, sizeof *c.t);
    if (!c.t)
        fail(&c, HCCL_E_MEMORY, "out of memory");
    else if (parse_table(&c, root) < 0) {
        rt_ranktable_free(c.t);
        c.t = NULL;
    }
    json_object_put(root);
    *out = c.t;
    return c.t ? HCCL_SUCCESS : c.rc;
}

void rt_ranktable_free(rt_ranktable *t)
{
    if (!t)
        return;
    free(t->ranks);
    free(t->super_pod_ids);
    free(t->server_ranks);
    free(t->server_first);
    free(t);
}
