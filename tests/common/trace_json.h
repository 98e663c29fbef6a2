/* Reading timeline-trace files (docs/tracing.md) in tests: the file(s) of a folder, parsed with
 * json-c, and lookups of the events they hold. */
#ifndef TRACE_JSON_H
#define TRACE_JSON_H

#include <criterion/criterion.h>
#include <dirent.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

/* Paths of the *.json files in dir (up to max); returns how many. */
static inline int trace_files(const char *dir, char paths[][512], int max)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "cannot open %s", dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len > 5 && strcmp(e->d_name + len - 5, ".json") == 0 && n < max)
            snprintf(paths[n++], 512, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    return n;
}

/* The traceEvents array of a file that must parse as JSON (owned by *root: json_object_put it). */
static inline json_object *trace_events(const char *path, json_object **root)
{
    *root = json_object_from_file(path);
    cr_assert_not_null(*root, "%s is not valid JSON: %s", path, json_util_get_last_err());
    json_object *ev = NULL;
    cr_assert(json_object_object_get_ex(*root, "traceEvents", &ev) && json_object_is_type(ev, json_type_array),
              "%s has no traceEvents array", path);
    return ev;
}

static inline const char *trace_str(json_object *o, const char *key)
{
    json_object *v = NULL;
    return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : "";
}

static inline int64_t trace_int(json_object *o, const char *key, int64_t dflt)
{
    json_object *v = NULL;
    return json_object_object_get_ex(o, key, &v) ? json_object_get_int64(v) : dflt;
}

static inline double trace_num(json_object *o, const char *key)
{
    json_object *v = NULL;
    return json_object_object_get_ex(o, key, &v) ? json_object_get_double(v) : -1.0;
}

static inline json_object *trace_args(json_object *ev)
{
    json_object *a = NULL;
    return json_object_object_get_ex(ev, "args", &a) ? a : NULL;
}

/* Events of category cat (any phase "X"). */
static inline int trace_count_cat(json_object *events, const char *cat)
{
    int n = 0;
    for (size_t i = 0; i < json_object_array_length(events); i++)
        n += strcmp(trace_str(json_object_array_get_idx(events, i), "cat"), cat) == 0;
    return n;
}

#endif
