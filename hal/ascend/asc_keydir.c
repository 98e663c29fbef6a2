/* How IPC keys travel between the processes of one server without changing the runtime: a hal
 * handle is fixed-size plain data (no room for CANN's 65-byte keys), so each process publishes the
 * keys it exports in a small host shared-memory file named by (uid, pid, device id), and a handle
 * carries only the slot (hal_notify_handle.offset = generation << 32 | slot; a device handle names
 * the file by pid and device id). Importers read the key from the owner's file, then import by key
 * through ACL. Slots are generation-tagged: a handle of a destroyed notify never finds a later key.
 *
 * A file outlives its process unless removed: the runtime keeps its devices open to the end, and a
 * rank may be killed. So the owner holds a shared flock on its file while it lives and removes it at
 * exit; the first publication of every process removes the files whose owner is gone (their lock is
 * free). A lock, not a pid check: a process of another pid namespace that shares /dev/shm is alive
 * though its pid is not. */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hal/ascend/asc_internal.h"

#define KEYDIR_MAGIC 0x4b444952u /* "KDIR" */

static void dir_name(char *buf, size_t n, uint32_t pid, uint32_t dev)
{
    snprintf(buf, n, "/ohccl_asc_%u_%u_%u", (unsigned)getuid(), pid, dev);
}

/* The files this process owns, by device id (asc_lock): the fd holds the file's flock. */
static struct {
    int fd; /* -1: none */
    uint32_t pid;
} g_owned[ASC_MAX_DEVICES];
static pthread_once_t g_owned_once = PTHREAD_ONCE_INIT;

/* At exit: the files of this process (not of a parent that forked it) go with it. No lock: other
 * threads may hold asc_lock forever now, and a file removed twice is harmless. */
static void remove_owned_at_exit(void)
{
    for (uint32_t i = 0; i < ASC_MAX_DEVICES; i++)
        if (g_owned[i].fd >= 0 && g_owned[i].pid == (uint32_t)getpid()) {
            char name[96];
            dir_name(name, sizeof name, g_owned[i].pid, i);
            shm_unlink(name);
        }
}

/* /dev/shm/name, if its lock is free (its owner is gone) and the name still holds the file locked. */
static void remove_if_orphan(const char *name)
{
    char path[128];
    snprintf(path, sizeof path, "/dev/shm%s", name);
    int fd = shm_open(name, O_RDONLY, 0);
    if (fd < 0)
        return;
    struct stat held, now;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &held) == 0 && stat(path, &now) == 0 &&
        held.st_ino == now.st_ino)
        shm_unlink(name);
    close(fd);
}

/* Once per process: this user's key directories whose owner died (killed, or a build without locks). */
static void sweep_orphans(void)
{
    for (uint32_t i = 0; i < ASC_MAX_DEVICES; i++)
        g_owned[i].fd = -1;
    atexit(remove_owned_at_exit);
    DIR *d = opendir("/dev/shm");
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        unsigned uid, pid, dev;
        int end = 0;
        if (sscanf(e->d_name, "ohccl_asc_%u_%u_%u%n", &uid, &pid, &dev, &end) == 3 && !e->d_name[end] &&
            uid == (unsigned)getuid() && pid != (unsigned)getpid()) {
            char name[96];
            dir_name(name, sizeof name, pid, dev);
            remove_if_orphan(name);
        }
    }
    closedir(d);
}

/* This process's new directory for dev, locked before its name exists (a sweep of a process that
 * starts at the same time must not find it unlocked): made under a name the sweep skips, then
 * renamed over whatever file of a dead process had this pid. */
static int dir_create(const char *name, uint32_t pid, uint32_t dev)
{
    char tmp[96], from[128], to[128];
    snprintf(tmp, sizeof tmp, "/ohccl_asc_new_%u_%u_%u", (unsigned)getuid(), pid, dev);
    snprintf(from, sizeof from, "/dev/shm%s", tmp);
    snprintf(to, sizeof to, "/dev/shm%s", name);
    int fd = shm_open(tmp, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return -1;
    if (flock(fd, LOCK_SH) != 0 || ftruncate(fd, sizeof(asc_keydir)) != 0 || rename(from, to) != 0) {
        close(fd);
        shm_unlink(tmp);
        return -1;
    }
    return fd;
}

/* Maps another process's directory (pid, dev) to read its keys. */
static asc_keydir *dir_open(uint32_t pid, uint32_t dev)
{
    char name[96];
    dir_name(name, sizeof name, pid, dev);
    int fd = shm_open(name, O_RDONLY, 0);
    if (fd < 0)
        return NULL;
    void *p = mmap(NULL, sizeof(asc_keydir), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    return p == MAP_FAILED ? NULL : p;
}

/* This process's directory for dev: new, locked and remembered (asc_lock held). */
static asc_keydir *dir_own(uint32_t pid, uint32_t dev)
{
    pthread_once(&g_owned_once, sweep_orphans);
    if (dev >= ASC_MAX_DEVICES)
        return NULL;
    char name[96];
    dir_name(name, sizeof name, pid, dev);
    int fd = dir_create(name, pid, dev);
    if (fd < 0)
        return NULL;
    void *p = mmap(NULL, sizeof(asc_keydir), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        shm_unlink(name);
        close(fd);
        return NULL;
    }
    g_owned[dev].fd = fd;
    g_owned[dev].pid = pid;
    return p;
}

/* Ends this process's ownership of dev's directory (asc_lock held). */
static void dir_unmap_owned(asc_keydir *d, uint32_t pid, uint32_t dev)
{
    munmap(d, sizeof *d);
    char name[96];
    dir_name(name, sizeof name, pid, dev);
    shm_unlink(name);
    if (dev < ASC_MAX_DEVICES && g_owned[dev].fd >= 0) {
        close(g_owned[dev].fd);
        g_owned[dev].fd = -1;
    }
}

/* Caller holds asc_lock. Creates the directory and the exported anchor allocation once. */
static hal_result publish_locked(hal_device *dev)
{
    if (dev->dir)
        return HAL_OK;
    if (asc_ipc_missing())
        return HAL_E_NOT_SUPPORTED;
    asc_keydir *d = dir_own(dev->handle.pid, dev->handle.device_id);
    if (!d) {
        OH_ERR("hal", "ascend: creating the key directory of device %d failed", dev->id);
        return HAL_E_SYSCALL;
    }
    hal_result rc = asc_select(dev);
    if (rc == HAL_OK && !dev->anchor)
        rc = asc_from_acl(ACL(aclrtMalloc)(&dev->anchor, 4096, ACL_MEM_MALLOC_HUGE_FIRST));
    if (rc == HAL_OK)
        rc = asc_from_acl(ACL(aclrtIpcMemGetExportKey)(dev->anchor, 4096, d->mem_key, sizeof d->mem_key,
                                                       ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION));
    if (rc != HAL_OK) {
        OH_ERR("hal", "ascend: exporting device %d's memory (aclrtIpcMemGetExportKey) failed: %s", dev->id,
               asc_errmsg());
        dir_unmap_owned(d, dev->handle.pid, dev->handle.device_id);
        return rc;
    }
    d->version = 1;
    __atomic_store_n(&d->magic, KEYDIR_MAGIC, __ATOMIC_RELEASE);
    dev->dir = d;
    return HAL_OK;
}

void asc_keydir_publish(hal_device *dev)
{
    pthread_mutex_lock(&asc_lock);
    publish_locked(dev);
    pthread_mutex_unlock(&asc_lock);
}

hal_result asc_keydir_put(hal_device *dev, char keys[][HAL_IPC_KEY_LEN], int *slot, uint32_t *gen)
{
    pthread_mutex_lock(&asc_lock);
    hal_result rc = publish_locked(dev);
    int i = 0;
    while (rc == HAL_OK && i < ASC_KEY_SLOTS && dev->dir->slot[i].key[0][0])
        i++;
    if (rc == HAL_OK && i == ASC_KEY_SLOTS)
        rc = HAL_E_NOMEM;
    if (rc == HAL_OK) {
        asc_keyslot *s = &dev->dir->slot[i];
        atomic_fetch_add(&s->gen, 1); /* odd: being written */
        memcpy(s->key, keys, sizeof s->key);
        *gen = atomic_fetch_add(&s->gen, 1) + 1;
        *slot = i;
    }
    pthread_mutex_unlock(&asc_lock);
    return rc;
}

void asc_keydir_drop(hal_device *dev, int slot)
{
    pthread_mutex_lock(&asc_lock);
    if (dev->dir && slot >= 0 && slot < ASC_KEY_SLOTS) {
        asc_keyslot *s = &dev->dir->slot[slot];
        atomic_fetch_add(&s->gen, 1);
        memset(s->key, 0, sizeof s->key);
        atomic_fetch_add(&s->gen, 1);
    }
    pthread_mutex_unlock(&asc_lock);
}

static hal_result read_key(const hal_device_handle *owner, int slot, uint32_t gen, char (*key)[HAL_IPC_KEY_LEN])
{
    asc_keydir *d = dir_open(owner->pid, owner->device_id);
    if (!d) {
        OH_ERR("hal", "ascend: device %u of pid %u has published no keys (process gone, or it never exported)",
               owner->device_id, owner->pid);
        return HAL_E_PEER;
    }
    hal_result rc = HAL_OK;
    if (__atomic_load_n(&d->magic, __ATOMIC_ACQUIRE) != KEYDIR_MAGIC)
        rc = HAL_E_PEER;
    else if (slot < 0)
        memcpy(key[0], d->mem_key, HAL_IPC_KEY_LEN);
    else if (slot >= ASC_KEY_SLOTS)
        rc = HAL_E_PARAM;
    else {
        asc_keyslot *s = &d->slot[slot];
        uint32_t g = atomic_load(&s->gen);
        memcpy(key, s->key, sizeof s->key);
        if (g != gen || atomic_load(&s->gen) != g || !key[0][0])
            rc = HAL_E_PEER; /* destroyed (and maybe reused) since the handle was made */
    }
    munmap(d, sizeof *d);
    return rc;
}

hal_result asc_keydir_get(const hal_device_handle *owner, int slot, uint32_t gen, char keys[][HAL_IPC_KEY_LEN])
{
    hal_result rc = read_key(owner, slot, gen, keys);
    for (int i = 0; i < ASC_LANES; i++)
        keys[i][HAL_IPC_KEY_LEN - 1] = 0;
    return rc;
}

hal_result asc_keydir_mem_key(const hal_device_handle *owner, char *key)
{
    char keys[1][HAL_IPC_KEY_LEN];
    hal_result rc = read_key(owner, -1, 0, keys);
    memcpy(key, keys[0], HAL_IPC_KEY_LEN);
    key[HAL_IPC_KEY_LEN - 1] = 0;
    return rc;
}

void asc_keydir_close(hal_device *dev)
{
    pthread_mutex_lock(&asc_lock);
    if (dev->dir) {
        if (dev->dir->mem_key[0])
            ACL(aclrtIpcMemClose)(dev->dir->mem_key); /* ends the export; importers keep their mapping */
        dir_unmap_owned(dev->dir, dev->handle.pid, dev->handle.device_id);
        dev->dir = NULL;
    }
    pthread_mutex_unlock(&asc_lock);
}
