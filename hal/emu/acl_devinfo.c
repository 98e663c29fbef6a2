/* Device properties: aclrtGetDeviceInfo, aclGetDeviceCapability, and peer access between devices
 * (aclrtDeviceCanAccessPeer / EnablePeerAccess / DisablePeerAccess).
 *
 * None of them opens a device: they answer from the HAL's device-independent info (hal.h
 * device_info(NULL)), so they work before aclrtSetDevice and claim nothing.
 *
 * Numbers: an emulated device describes itself as an Ascend 910B1-class NPU (the SoC name the
 * HAL reports). Core counts and the L2 size are that class's, chosen by the emulator, not
 * measured; memory is the emulated heap. Attributes that only exist on other products (950 warp
 * and grid limits, super-pod ids) are ACL_ERROR_RT_FEATURE_NOT_SUPPORT, as on an A2 device.
 *
 * Peer access: every device of an emulated server can address every other one (its memory is
 * mapped at the same address in every process), so CanAccessPeer says 1 and Enable/Disable only
 * record the switch; nothing is refused while it is off.
 */
#include <pthread.h>

#include "hal/emu/acl_internal.h"

#define EMU_AI_CORES 24
#define EMU_VECTOR_CORES 48
#define EMU_AI_CPUS 6
#define EMU_L2_BYTES (192ll << 20)
#define PEER_MAX_DEVICES 64

static pthread_mutex_t g_peer_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_peer_enabled[PEER_MAX_DEVICES]; /* bit p of [d]: d enabled access to p */

static aclError check_id(const char *func, const char *what, int64_t id)
{
    uint32_t count = 0;
    hal_result rc = emu_hal_ops.device_count(&count);
    if (rc != HAL_OK)
        return acl_fail_hal(rc, func, "device_count");
    if (id < 0 || id >= (int64_t)count || id >= PEER_MAX_DEVICES)
        return acl_fail(ACL_ERROR_RT_INVALID_DEVICEID, func, "%s %lld out of range [0, %u)", what, (long long)id,
                        count);
    return ACL_SUCCESS;
}

aclError aclrtGetDeviceInfo(uint32_t deviceId, aclrtDevAttr attr, int64_t *value)
{
    if (!value)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "value is NULL");
    aclError err = check_id(__func__, "deviceId", deviceId);
    if (err)
        return err;
    hal_device_info info;
    hal_result rc = emu_hal_ops.device_info(NULL, &info);
    if (rc != HAL_OK)
        return acl_fail_hal(rc, __func__, "device_info");
    switch ((int)attr) {
    case ACL_DEV_ATTR_AICPU_CORE_NUM: *value = EMU_AI_CPUS; break;
    case ACL_DEV_ATTR_AICORE_CORE_NUM: *value = EMU_AI_CORES; break;
    case ACL_DEV_ATTR_CUBE_CORE_NUM: *value = EMU_AI_CORES; break;
    case ACL_DEV_ATTR_VECTOR_CORE_NUM: *value = EMU_VECTOR_CORES; break;
    case ACL_DEV_ATTR_TOTAL_GLOBAL_MEM_SIZE: *value = (int64_t)info.mem_total; break;
    case ACL_DEV_ATTR_L2_CACHE_SIZE: *value = EMU_L2_BYTES; break;
    case ACL_DEV_ATTR_SMP_ID: *value = 0; break; /* every emulated device of a server is on one OS */
    case ACL_DEV_ATTR_PHY_CHIP_ID: *value = deviceId; break;
    case ACL_DEV_ATTR_IS_VIRTUAL: *value = 0; break;
    case ACL_DEV_ATTR_HD_CONNECT_TYPE: *value = ACL_HOST_DEVICE_CONNECT_TYPE_PCIE; break;
    case ACL_DEV_ATTR_WARP_SIZE: case ACL_DEV_ATTR_MAX_THREAD_PER_VECTOR_CORE: case ACL_DEV_ATTR_UBUF_PER_VECTOR_CORE:
    case ACL_DEV_ATTR_MAX_GRID_DIM_X: case ACL_DEV_ATTR_MAX_GRID_DIM_Y: case ACL_DEV_ATTR_MAX_GRID_DIM_Z:
    case ACL_DEV_ATTR_MAX_BLOCK_PER_GRID: case ACL_DEV_ATTR_MAX_THREADS_PER_BLOCK: case ACL_DEV_ATTR_MAX_BLOCK_DIM_X:
    case ACL_DEV_ATTR_MAX_BLOCK_DIM_Y: case ACL_DEV_ATTR_MAX_BLOCK_DIM_Z: case ACL_DEV_ATTR_SUPER_POD_DEVICE_ID:
    case ACL_DEV_ATTR_SUPER_POD_SERVER_ID: case ACL_DEV_ATTR_SUPER_POD_ID: case ACL_DEV_ATTR_CUST_OP_PRIVILEGE:
    case ACL_DEV_ATTR_MAINBOARD_ID: case ACL_DEV_ATTR_DEVICE_FORM_FACTOR: case ACL_DEV_ATTR_NPU_ARCH:
        return acl_fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, __func__, "attribute %d is not reported by an emulated %s",
                        (int)attr, info.soc_name ? info.soc_name : "device");
    default:
        return acl_fail(ACL_ERROR_RT_PARAM_INVALID, __func__, "unknown attribute %d", (int)attr);
    }
    return ACL_SUCCESS;
}

/* CANN checks deviceId and the info type in its ACL layer: both are ACL_ERROR_INVALID_PARAM. */
aclError aclGetDeviceCapability(uint32_t deviceId, aclDeviceInfo deviceInfo, int64_t *value)
{
    if (!value)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "value is NULL");
    uint32_t count = 0;
    hal_result rc = emu_hal_ops.device_count(&count);
    if (rc != HAL_OK)
        return acl_fail_hal(rc, __func__, "device_count");
    if (deviceId >= count)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "deviceId %u greater than the device count %u", deviceId,
                        count);
    switch (deviceInfo) {
    case ACL_DEVICE_INFO_AI_CORE_NUM: *value = EMU_AI_CORES; return ACL_SUCCESS;
    case ACL_DEVICE_INFO_VECTOR_CORE_NUM: *value = EMU_VECTOR_CORES; return ACL_SUCCESS;
    case ACL_DEVICE_INFO_L2_SIZE: *value = EMU_L2_BYTES; return ACL_SUCCESS;
    default:
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "unknown deviceInfo %d", (int)deviceInfo);
    }
}

/* ---- peer access ----------------------------------------------------------------------------- */

aclError aclrtDeviceCanAccessPeer(int32_t *canAccessPeer, int32_t deviceId, int32_t peerDeviceId)
{
    if (!canAccessPeer)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "canAccessPeer is NULL");
    if (deviceId == peerDeviceId) /* CANN's ACL layer refuses the pair before asking the runtime */
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "deviceId %d cannot be equal to peerDeviceId %d",
                        deviceId, peerDeviceId);
    aclError err = check_id(__func__, "deviceId", deviceId);
    if (!err)
        err = check_id(__func__, "peerDeviceId", peerDeviceId);
    if (err)
        return err;
    *canAccessPeer = 1;
    return ACL_SUCCESS;
}

/* The current device and a valid peer that is not itself. */
static aclError peer_pair(const char *func, int32_t peer, int32_t *self)
{
    aclError err = acl_current_device(func, NULL, self);
    if (!err)
        err = check_id(func, "peerDeviceId", peer);
    if (!err && *self >= PEER_MAX_DEVICES)
        err = check_id(func, "current device", *self);
    if (!err && peer == *self)
        err = acl_fail(ACL_ERROR_INVALID_PARAM, func, "peerDeviceId %d is the current device", peer);
    return err;
}

aclError aclrtDeviceEnablePeerAccess(int32_t peerDeviceId, uint32_t flags)
{
    if (flags != 0)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "flags %u: reserved, must be 0", flags);
    int32_t self;
    aclError err = peer_pair(__func__, peerDeviceId, &self);
    if (err)
        return err;
    pthread_mutex_lock(&g_peer_lock);
    g_peer_enabled[self] |= 1ull << peerDeviceId;
    pthread_mutex_unlock(&g_peer_lock);
    return ACL_SUCCESS;
}

aclError aclrtDeviceDisablePeerAccess(int32_t peerDeviceId)
{
    int32_t self;
    aclError err = peer_pair(__func__, peerDeviceId, &self);
    if (err)
        return err;
    pthread_mutex_lock(&g_peer_lock);
    int was = (g_peer_enabled[self] >> peerDeviceId) & 1;
    g_peer_enabled[self] &= ~(1ull << peerDeviceId);
    pthread_mutex_unlock(&g_peer_lock);
    if (!was)
        return acl_fail(ACL_ERROR_RT_PARAM_INVALID, __func__, "peer access from device %d to %d was not enabled", self,
                        peerDeviceId);
    return ACL_SUCCESS;
}
