/* Staging mode: control blocks in host shared memory. On an NPU device memory is not host
 * addressable, and the control path (PUBLISH/FETCH records, abort words, the join counter, the
 * watchdog's marks) is host code; no plan step DMAs into a control block. So in this mode the
 * control-block pool (rt_ctrl_pool.c) takes its blocks from memfd segments, one per block, that
 * the process keeps open for its life (pooled like device blocks: a late peer access still lands
 * in a control block). A rank sends the segment's descriptor number in its init blob and the peers
 * of its server open it through /proc/<pid>/fd/<n> (same user; the kernel checks it as it checks
 * reading the process's files) and map it. Nothing is named, so nothing outlives the process. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/rt_internal.h"

void *rt_ctrl_shm_create(size_t bytes, uint32_t *seg)
{
    int fd = memfd_create("ohccl_ctrl", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)bytes) != 0) {
        OH_ERR("comm", "creating a control block (%zu bytes) in host shared memory failed: %m", bytes);
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        OH_ERR("comm", "mapping a control block (%zu bytes) failed: %m", bytes);
        close(fd);
        return NULL;
    }
    *seg = (uint32_t)fd + 1; /* kept open: peers open it by number; 0 stays "device memory" */
    return p;
}

rt_ctrl *rt_ctrl_shm_map(uint32_t pid, uint32_t seg, size_t bytes)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%u/fd/%u", pid, seg - 1);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        OH_ERR("comm", "opening the peer's control block %s failed: %m", path);
        return NULL;
    }
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        OH_ERR("comm", "mapping the peer's control block %s (%zu bytes) failed: %m", path, bytes);
        return NULL;
    }
    return p;
}

void rt_ctrl_shm_unmap(void *p, size_t bytes)
{
    if (p)
        munmap(p, bytes);
}
