/* Profiling API (acl/acl_prof.h, libmsprofiler): a session around a few ACL tasks writes one
 * trace file that parses as JSON with one event per task on the right stream's track; bad
 * arguments and calls out of order get CANN's codes. Written against the public headers. */
#include <acl/acl.h>
#include <acl/acl_prof.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/acl_fixture.h"
#include "common/trace_json.h"

TestSuite(acl_prof, .init = acl_fixture_setup, .fini = acl_fixture_teardown);

static void bump(void *arg)
{
    ++*(int *)arg;
}

/* The one task event named `name` (category "task"); fails unless there is exactly one. */
static json_object *one_task(json_object *events, const char *name)
{
    json_object *found = NULL;
    int n = 0;
    for (size_t i = 0; i < json_object_array_length(events); i++) {
        json_object *e = json_object_array_get_idx(events, i);
        if (!strcmp(trace_str(e, "cat"), "task") && !strcmp(trace_str(e, "name"), name)) {
            found = e;
            n++;
        }
    }
    cr_assert_eq(n, 1, "%d \"%s\" task events, expected 1", n, name);
    cr_expect_str_eq(trace_str(found, "ph"), "X");
    cr_expect(trace_num(found, "dur") >= 0.0);
    return found;
}

static char *make_dir(void)
{
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/oh_prof_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    return dir;
}

Test(acl_prof, session_records_each_task_on_its_stream)
{
    enum { BYTES = 4096 };
    const char *dir = make_dir();
    char sub[128];
    snprintf(sub, sizeof sub, "%s/out", dir); /* aclprofStart creates it */
    cr_assert_eq(aclprofInit(sub, strlen(sub)), ACL_SUCCESS);
    uint32_t devs[1] = {0};
    aclprofConfig *cfg = aclprofCreateConfig(devs, 1, ACL_AICORE_PIPE_UTILIZATION, NULL,
                                             ACL_PROF_ACL_API | ACL_PROF_TASK_TIME | ACL_PROF_HCCL_TRACE);
    cr_assert_not_null(cfg);

    aclrtStream s1, s2;
    aclrtEvent ev;
    void *a, *b, *c;
    int calls = 0;
    cr_assert_eq(aclrtCreateStream(&s1), ACL_SUCCESS);
    cr_assert_eq(aclrtCreateStream(&s2), ACL_SUCCESS);
    cr_assert_eq(aclrtCreateEvent(&ev), ACL_SUCCESS);
    cr_assert_eq(aclrtMalloc(&a, BYTES, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    cr_assert_eq(aclrtMalloc(&b, BYTES, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    cr_assert_eq(aclrtMalloc(&c, BYTES / 2, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);

    cr_assert_eq(aclprofStart(cfg), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpyAsync(b, BYTES, a, BYTES, ACL_MEMCPY_DEVICE_TO_DEVICE, s1), ACL_SUCCESS);
    cr_assert_eq(aclrtLaunchHostFunc(s1, bump, &calls), ACL_SUCCESS);
    cr_assert_eq(aclrtRecordEvent(ev, s1), ACL_SUCCESS);
    cr_assert_eq(aclrtStreamWaitEvent(s2, ev), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpyAsync(c, BYTES / 2, b, BYTES / 2, ACL_MEMCPY_DEVICE_TO_DEVICE, s2), ACL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeStream(s1), ACL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeStream(s2), ACL_SUCCESS);
    cr_assert_eq(aclprofStop(cfg), ACL_SUCCESS);
    cr_assert_eq(calls, 1);
    /* After the stop nothing is recorded: this copy must not appear in the file. */
    cr_assert_eq(aclrtMemcpyAsync(b, BYTES, a, BYTES, ACL_MEMCPY_DEVICE_TO_DEVICE, s1), ACL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeStream(s1), ACL_SUCCESS);
    cr_assert_eq(aclprofDestroyConfig(cfg), ACL_SUCCESS);
    cr_assert_eq(aclprofFinalize(), ACL_SUCCESS);

    char paths[4][512];
    cr_assert_eq(trace_files(sub, paths, 4), 1, "expected one trace file in %s", sub);
    json_object *root;
    json_object *events = trace_events(paths[0], &root);
    cr_expect_eq(trace_count_cat(events, "task"), 5, "5 tasks ran while profiling");
    cr_expect_eq(trace_count_cat(events, "hccl_op"), 0);
    /* the two copies: told apart by their sizes */
    json_object *copy1 = NULL, *copy2 = NULL;
    for (size_t i = 0; i < json_object_array_length(events); i++) {
        json_object *e = json_object_array_get_idx(events, i);
        if (strcmp(trace_str(e, "name"), "dma"))
            continue;
        int64_t bytes = trace_int(trace_args(e), "bytes", -1);
        if (bytes == BYTES)
            copy1 = e;
        else if (bytes == BYTES / 2)
            copy2 = e;
    }
    cr_assert(copy1 && copy2, "the two copies are not both in the trace with their sizes");
    json_object *host = one_task(events, "host_func"), *rec = one_task(events, "event_record");
    json_object *wait = one_task(events, "event_wait");
    int64_t t1 = trace_int(copy1, "tid", -1), t2 = trace_int(copy2, "tid", -1);
    cr_expect_neq(t1, t2, "two streams, two tracks");
    cr_expect_eq(trace_int(host, "tid", -1), t1);
    cr_expect_eq(trace_int(rec, "tid", -1), t1);
    cr_expect_eq(trace_int(wait, "tid", -1), t2);
    cr_expect_eq(trace_int(copy1, "pid", -1), 0, "pid is the device");
    cr_expect_leq(trace_num(copy1, "ts"), trace_num(host, "ts"), "stream order");
    cr_expect_leq(trace_num(rec, "ts"), trace_num(copy2, "ts"), "the wait orders s2's copy after the record");
    json_object_put(root);
    unlink(paths[0]);
    rmdir(sub);
    rmdir(dir);
    aclrtFree(a);
    aclrtFree(b);
    aclrtFree(c);
    aclrtDestroyEvent(ev);
    aclrtDestroyStream(s1);
    aclrtDestroyStream(s2);
}

Test(acl_prof, init_arguments)
{
    cr_expect_eq(aclprofInit(NULL, 0), ACL_ERROR_INVALID_PARAM);
    cr_expect_eq(aclprofInit("/tmp/x", 3), ACL_ERROR_INVALID_PARAM, "length must be strlen(path)");
    cr_expect_eq(aclprofInit("", 0), ACL_ERROR_INVALID_PARAM);
    const char *dir = make_dir();
    cr_expect_eq(aclprofInit(dir, strlen(dir)), ACL_SUCCESS);
    cr_expect_eq(aclprofInit(dir, strlen(dir)), ACL_ERROR_REPEAT_INITIALIZE);
    cr_expect_eq(aclprofFinalize(), ACL_SUCCESS);
    cr_expect_eq(aclprofFinalize(), ACL_ERROR_PROF_NOT_RUN);
    rmdir(dir);
}

Test(acl_prof, order_before_init)
{
    uint32_t devs[1] = {0};
    aclprofConfig *cfg = aclprofCreateConfig(devs, 1, ACL_AICORE_NONE, NULL, ACL_PROF_TASK_TIME);
    cr_assert_not_null(cfg);
    cr_expect_eq(aclprofStart(cfg), ACL_ERROR_PROF_NOT_RUN);
    cr_expect_eq(aclprofStop(cfg), ACL_ERROR_PROF_NOT_RUN);
    cr_expect_eq(aclprofFinalize(), ACL_ERROR_PROF_NOT_RUN);
    cr_expect_eq(aclprofDestroyConfig(cfg), ACL_SUCCESS);
}

Test(acl_prof, config_arguments)
{
    uint32_t devs[2] = {0, 0}, bad[1] = {999};
    const aclprofAicoreEvents *events = (const aclprofAicoreEvents *)devs; /* any non-NULL pointer */
    cr_expect_null(aclprofCreateConfig(NULL, 1, ACL_AICORE_NONE, NULL, ACL_PROF_TASK_TIME));
    cr_expect_null(aclprofCreateConfig(devs, 1, ACL_AICORE_NONE, events, ACL_PROF_TASK_TIME));
    cr_expect_null(aclprofCreateConfig(bad, 1, ACL_AICORE_NONE, NULL, ACL_PROF_TASK_TIME));
    cr_expect_null(aclprofCreateConfig(devs, 2, ACL_AICORE_NONE, NULL, ACL_PROF_TASK_TIME), "repeated device");
    cr_expect_null(aclprofCreateConfig(devs, 0, ACL_AICORE_NONE, NULL, ACL_PROF_TASK_TIME), "no device");
    cr_expect_eq(aclprofDestroyConfig(NULL), ACL_ERROR_INVALID_PARAM);
    cr_expect_eq(aclprofSetConfig(ACL_PROF_ARGS_MAX, "1", 1), ACL_ERROR_INVALID_PARAM);
    cr_expect_eq(aclprofSetConfig(ACL_PROF_STORAGE_LIMIT, NULL, 0), ACL_ERROR_INVALID_PARAM);
    cr_expect_eq(aclprofSetConfig(ACL_PROF_STORAGE_LIMIT, "200MB", 5), ACL_SUCCESS);
}

Test(acl_prof, start_stop_arguments)
{
    const char *dir = make_dir();
    cr_assert_eq(aclprofInit(dir, strlen(dir)), ACL_SUCCESS);
    uint32_t devs[1] = {0};
    aclprofConfig *none = aclprofCreateConfig(devs, 1, ACL_AICORE_NONE, NULL, 0);
    aclprofConfig *unknown = aclprofCreateConfig(devs, 1, ACL_AICORE_NONE, NULL, 1ull << 40);
    aclprofConfig *cfg = aclprofCreateConfig(devs, 1, ACL_AICORE_NONE, NULL, ACL_PROF_TASK_TIME);
    cr_assert(none && unknown && cfg);
    cr_expect_eq(aclprofStart(NULL), ACL_ERROR_INVALID_PARAM);
    cr_expect_eq(aclprofStart(none), ACL_ERROR_INVALID_PARAM, "dataTypeConfig 0");
    cr_expect_eq(aclprofStart(unknown), ACL_ERROR_PROF_MODULES_UNSUPPORTED);
    cr_expect_eq(aclprofStop(cfg), ACL_ERROR_PROF_NOT_RUN, "device 0 was not started");
    cr_expect_eq(aclprofStart(cfg), ACL_SUCCESS);
    cr_expect_eq(aclprofStart(cfg), ACL_ERROR_PROF_ALREADY_RUN, "device 0 collects already");
    cr_expect_eq(aclprofStop(NULL), ACL_ERROR_INVALID_PARAM);
    cr_expect_eq(aclprofStop(cfg), ACL_SUCCESS);
    cr_expect_eq(aclprofStop(cfg), ACL_ERROR_PROF_NOT_RUN);
    cr_expect_eq(aclprofFinalize(), ACL_SUCCESS);
    char paths[4][512];
    int n = trace_files(dir, paths, 4);
    cr_expect_eq(n, 1, "an empty session still writes its (empty) trace");
    for (int i = 0; i < n; i++) {
        json_object *root;
        json_object *events = trace_events(paths[i], &root);
        cr_expect_eq(trace_count_cat(events, "task"), 0);
        json_object_put(root);
        unlink(paths[i]);
    }
    rmdir(dir);
    aclprofDestroyConfig(none);
    aclprofDestroyConfig(unknown);
    aclprofDestroyConfig(cfg);
}

Test(acl_prof, folder_that_cannot_be_created)
{
    const char *bad = "/proc/oh_no_such_folder/trace"; /* nothing can be created under /proc */
    cr_assert_eq(aclprofInit(bad, strlen(bad)), ACL_SUCCESS, "the folder is created at start, as on CANN");
    uint32_t devs[1] = {0};
    aclprofConfig *cfg = aclprofCreateConfig(devs, 1, ACL_AICORE_NONE, NULL, ACL_PROF_TASK_TIME);
    cr_assert_not_null(cfg);
    cr_expect_eq(aclprofStart(cfg), ACL_ERROR_INVALID_FILE);
    cr_expect_eq(aclprofStop(cfg), ACL_ERROR_PROF_NOT_RUN, "the failed start started nothing");
    cr_expect_eq(aclprofFinalize(), ACL_SUCCESS);
    aclprofDestroyConfig(cfg);
}

/* HCCL_TRACE_MAX_EVENTS bounds the buffered events (in chunks of 1024): past it events are dropped
 * and counted in the file, which stays valid. The stream's tasks may be recorded by two threads
 * (its worker, then the host that syncs and takes over), each filling its own chunk, so the cap
 * bounds what is kept and every event is either kept or counted. */
Test(acl_prof, cap_drops_and_counts)
{
    enum { TASKS = 3000, CAP = 1024 };
    setenv("HCCL_TRACE_MAX_EVENTS", "1024", 1); /* read when this process's first session starts */
    const char *dir = make_dir();
    cr_assert_eq(aclprofInit(dir, strlen(dir)), ACL_SUCCESS);
    uint32_t devs[1] = {0};
    aclprofConfig *cfg = aclprofCreateConfig(devs, 1, ACL_AICORE_NONE, NULL, ACL_PROF_TASK_TIME);
    aclrtStream s;
    int calls = 0;
    cr_assert_eq(aclrtCreateStream(&s), ACL_SUCCESS);
    cr_assert_eq(aclprofStart(cfg), ACL_SUCCESS);
    for (int i = 0; i < TASKS; i++)
        cr_assert_eq(aclrtLaunchHostFunc(s, bump, &calls), ACL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
    cr_assert_eq(aclprofStop(cfg), ACL_SUCCESS);
    cr_assert_eq(aclprofFinalize(), ACL_SUCCESS);
    cr_expect_eq(calls, TASKS, "dropping events never drops work");
    char paths[4][512];
    cr_assert_eq(trace_files(dir, paths, 4), 1);
    json_object *root;
    json_object *events = trace_events(paths[0], &root);
    int kept = trace_count_cat(events, "task");
    json_object *other = NULL;
    cr_assert(json_object_object_get_ex(root, "otherData", &other));
    int dropped = trace_int(other, "dropped_events", -1);
    cr_expect(kept > 0 && kept <= CAP, "%d task events kept, cap %d", kept, CAP);
    cr_expect_eq(kept + dropped, TASKS, "%d kept + %d dropped", kept, dropped);
    json_object_put(root);
    unlink(paths[0]);
    rmdir(dir);
    aclprofDestroyConfig(cfg);
    aclrtDestroyStream(s);
}

static int count_named(json_object *events, const char *name)
{
    int n = 0;
    for (size_t i = 0; i < json_object_array_length(events); i++)
        n += !strcmp(trace_str(json_object_array_get_idx(events, i), "name"), name);
    return n;
}

/* Two start/stop sessions of one process write two files, each with its own tasks only; the
 * stream (and worker thread) of the first is gone before the second. */
Test(acl_prof, sessions_write_one_file_each)
{
    const char *dir = make_dir();
    cr_assert_eq(aclprofInit(dir, strlen(dir)), ACL_SUCCESS);
    uint32_t devs[1] = {0};
    aclprofConfig *cfg = aclprofCreateConfig(devs, 1, ACL_AICORE_NONE, NULL, ACL_PROF_TASK_TIME);
    int calls = 0;
    for (int session = 0; session < 2; session++) {
        aclrtStream s;
        cr_assert_eq(aclrtCreateStream(&s), ACL_SUCCESS);
        cr_assert_eq(aclprofStart(cfg), ACL_SUCCESS);
        for (int i = 0; i <= session; i++) /* one host function, then two */
            cr_assert_eq(aclrtLaunchHostFunc(s, bump, &calls), ACL_SUCCESS);
        cr_assert_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
        cr_assert_eq(aclprofStop(cfg), ACL_SUCCESS);
        cr_assert_eq(aclrtDestroyStream(s), ACL_SUCCESS);
    }
    cr_assert_eq(aclprofFinalize(), ACL_SUCCESS);
    for (int session = 0; session < 2; session++) {
        char path[512];
        snprintf(path, sizeof path, "%s/openhccl_trace_%d_%d.json", dir, (int)getpid(), session);
        json_object *root;
        json_object *events = trace_events(path, &root);
        cr_expect_eq(count_named(events, "host_func"), session + 1, "session %d", session);
        json_object_put(root);
        unlink(path);
    }
    rmdir(dir);
    aclprofDestroyConfig(cfg);
}
