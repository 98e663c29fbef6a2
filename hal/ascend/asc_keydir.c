/* How IPC keys travel between the processes of one server without changing the runtime: a hal
 * handle is fixed-size plain data (no room for CANN's 65-byte keys), so each process publishes the
 * keys it exports in a small host shared-memory file named by (uid, pid, device id), and a handle
 * carries only the slot (hal_notify_handle.offset = generation << 32 | slot; a device handle names
 * the file by pid and device id). Importers read the key from the owner's file, then import by key
 * through ACL. Slots are generation-tagged: a handle of a destroyed notify never finds a later key. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hal/ascend/asc_internal.h"

#define KEYDIR_MAGIC 0x4b444952u /* "KDIR" */

static void dir_name(char *buf, size_t n, uint32_t pid, uint32_t dev)
{
    snprintf(buf, n, "/ohccl_asc_%u_%u_%u", (unsigned)getuid(), pid, dev);
}

static asc_keydir *dir_map(uint32_t pid, uint32_t dev, int create)
{
    char name[96];
    dir_name(name, sizeof name, pid, dev);
    int fd = shm_open(name, create ? O_RDWR | O_CREAT | O_TRUNC : O_RDONLY, 0600);
    if (fd < 0)
        return NULL;
    if (create && ftruncate(fd, sizeof(asc_keydir)) != 0) {
        close(fd);
        shm_unlink(name);
        return NULL;
    }
    void *p = mmap(NULL, sizeof(asc_keydir), create ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    return p == MAP_FAILED ? NULL : p;
}

/* Caller holds asc_lock. Creates the directory and the exported anchor allocation once. */
static hal_result publish_locked(hal_device *dev)
{
    if (dev->dir)
        return HAL_OK;
    if (asc_ipc_missing())
        return HAL_E_NOT_SUPPORTED;
    asc_keydir *d = dir_map(dev->handle.pid, dev->handle.device_id, 1);
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
        munmap(d, sizeof *d);
        char name[96];
        dir_name(name, sizeof name, dev->handle.pid, dev->handle.device_id);
        shm_unlink(name);
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
    asc_keydir *d = dir_map(owner->pid, owner->device_id, 0);
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
        munmap(dev->dir, sizeof *dev->dir);
        dev->dir = NULL;
        char name[96];
        dir_name(name, sizeof name, dev->handle.pid, dev->handle.device_id);
        shm_unlink(name);
    }
    pthread_mutex_unlock(&asc_lock);
}
