/* acl_basics: an ordinary Ascend-style ACL program. It builds against <acl/acl.h>, links with
 * -lascendcl, and runs unchanged on an NPU or on the OpenHCCL emulator:
 * init -> set device -> malloc -> H2D copy -> async D2D copy on a stream -> sync -> D2H -> check.
 * Prints "OK" and exits 0 on success. */
#include <stdio.h>
#include <string.h>

#include <acl/acl.h>

#define ACL_CHECK(call)                                                                        \
    do {                                                                                       \
        aclError err_ = (call);                                                                \
        if (err_ != ACL_SUCCESS) {                                                             \
            const char *msg_ = aclGetRecentErrMsg();                                           \
            fprintf(stderr, "%s failed: %d (%s)\n", #call, err_, msg_ ? msg_ : "no message"); \
            return 1;                                                                          \
        }                                                                                      \
    } while (0)

enum { COUNT = 1 << 16 };

int main(void)
{
    static float host[COUNT], back[COUNT];
    const int32_t device = 0;
    size_t bytes = sizeof host;
    void *a = NULL, *b = NULL;
    aclrtStream stream = NULL;

    for (int i = 0; i < COUNT; i++)
        host[i] = (float)i * 0.5f;

    ACL_CHECK(aclInit(NULL));
    ACL_CHECK(aclrtSetDevice(device));
    printf("device %d: %s\n", device, aclrtGetSocName());
    ACL_CHECK(aclrtMalloc(&a, bytes, ACL_MEM_MALLOC_HUGE_ONLY));
    ACL_CHECK(aclrtMalloc(&b, bytes, ACL_MEM_MALLOC_HUGE_ONLY));
    ACL_CHECK(aclrtCreateStream(&stream));

    ACL_CHECK(aclrtMemcpy(a, bytes, host, bytes, ACL_MEMCPY_HOST_TO_DEVICE));
    ACL_CHECK(aclrtMemcpyAsync(b, bytes, a, bytes, ACL_MEMCPY_DEVICE_TO_DEVICE, stream));
    ACL_CHECK(aclrtSynchronizeStream(stream));
    ACL_CHECK(aclrtMemcpy(back, bytes, b, bytes, ACL_MEMCPY_DEVICE_TO_HOST));

    int ok = memcmp(host, back, bytes) == 0;

    ACL_CHECK(aclrtDestroyStream(stream));
    ACL_CHECK(aclrtFree(a));
    ACL_CHECK(aclrtFree(b));
    ACL_CHECK(aclrtResetDevice(device));
    ACL_CHECK(aclFinalize());

    if (!ok) {
        fprintf(stderr, "data mismatch after the round trip\n");
        return 1;
    }
    printf("OK\n");
    return 0;
}
