/* OpenHCCL extensions: functions CANN's HCCL does not have. Programs that must also build against
 * CANN should guard their use (e.g. #ifdef OPENHCCL_EXT). */
#ifndef HCCL_EXT_H_
#define HCCL_EXT_H_

#include <stddef.h>
#include <stdint.h>
#include <hccl/hccl_types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OPENHCCL_EXT 1

/* OpenHCCL extension. Hands one HcclRootInfo from rank 0 to every rank through the launcher's
 * key-value store (MASTER_ADDR/MASTER_PORT, set by hcclrun or torchrun-style launchers): rank 0 calls
 * HcclGetRootInfo(rootInfo) and publishes it; the other ranks wait for it (up to HCCL_CONNECT_TIMEOUT).
 * Every rank must call it the same number of times in the same order: the n-th call of each rank
 * shares the n-th root info, so one job can create several communicators. */
HcclResult HcclExtShareRootInfo(uint32_t rank, HcclRootInfo *rootInfo);

/* OpenHCCL extension. Reads the launcher's rank, world size, local rank and local world size from the
 * first of: torchrun/hcclrun (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE), Open MPI's mpirun
 * (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE), MPICH/Intel MPI (PMI_RANK, PMI_SIZE,
 * MPI_LOCALRANKID, MPI_LOCALNRANKS), Slurm's srun (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID,
 * SLURM_NTASKS_PER_NODE or an even SLURM_TASKS_PER_NODE) whose rank and size are both set
 * (HCCL_E_PARA with a hint otherwise); the local rank and size default to the rank and size. Any
 * output pointer may be NULL. */
HcclResult HcclExtGetLaunchEnv(uint32_t *rank, uint32_t *worldSize, uint32_t *localRank, uint32_t *localWorldSize);

/* OpenHCCL extension. Plans compiled by this process so far: a second call of the same shape on
 * the same communicator compiles nothing (the plan cache), which tests and tools can observe. */
uint64_t HcclExtPlanCompileCount(void);

/* OpenHCCL extension. The reason a communicator failed (a mismatch naming both calls, a timeout),
 * "" while it is healthy. Copies at most len bytes including the terminating NUL. */
HcclResult HcclExtGetCommErrorMessage(HcclComm comm, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
