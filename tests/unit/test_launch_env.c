/* HcclExtGetLaunchEnv under each launcher's environment: torchrun/hcclrun, Open MPI's mpirun,
 * MPICH/Intel MPI (PMI_*), Slurm's srun; the first launcher with rank and size wins, malformed
 * values are refused. Each test sets the variables itself (the test's own process environment). */
#include <criterion/criterion.h>

#include <hccl/hccl_ext.h>

#include <stdlib.h>

static const char *const k_vars[] = {
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID",
    "MPI_LOCALNRANKS", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE",
    "SLURM_TASKS_PER_NODE",
};

static void clear(void)
{
    for (size_t i = 0; i < sizeof k_vars / sizeof *k_vars; i++)
        unsetenv(k_vars[i]);
}

static void expect(uint32_t r, uint32_t w, uint32_t lr, uint32_t lw)
{
    uint32_t a = 99, b = 99, c = 99, d = 99;
    cr_assert_eq(HcclExtGetLaunchEnv(&a, &b, &c, &d), HCCL_SUCCESS);
    cr_expect_eq(a, r, "rank %u, expected %u", a, r);
    cr_expect_eq(b, w, "world size %u, expected %u", b, w);
    cr_expect_eq(c, lr, "local rank %u, expected %u", c, lr);
    cr_expect_eq(d, lw, "local world size %u, expected %u", d, lw);
}

TestSuite(launch_env, .init = clear, .fini = clear);

Test(launch_env, nothing_set_is_refused)
{
    uint32_t r;
    cr_expect_eq(HcclExtGetLaunchEnv(&r, NULL, NULL, NULL), HCCL_E_PARA);
}

Test(launch_env, torchrun)
{
    setenv("RANK", "5", 1);
    setenv("WORLD_SIZE", "8", 1);
    setenv("LOCAL_RANK", "1", 1);
    setenv("LOCAL_WORLD_SIZE", "4", 1);
    expect(5, 8, 1, 4);
}

Test(launch_env, open_mpi)
{
    setenv("OMPI_COMM_WORLD_RANK", "6", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "8", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "2", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "4", 1);
    expect(6, 8, 2, 4);
}

Test(launch_env, mpich_pmi)
{
    setenv("PMI_RANK", "3", 1);
    setenv("PMI_SIZE", "4", 1);
    setenv("MPI_LOCALRANKID", "1", 1);
    setenv("MPI_LOCALNRANKS", "2", 1);
    expect(3, 4, 1, 2);
}

Test(launch_env, slurm)
{
    setenv("SLURM_PROCID", "7", 1);
    setenv("SLURM_NTASKS", "8", 1);
    setenv("SLURM_LOCALID", "3", 1);
    setenv("SLURM_TASKS_PER_NODE", "4(x2)", 1);
    expect(7, 8, 3, 4);
    setenv("SLURM_NTASKS_PER_NODE", "4", 1);
    expect(7, 8, 3, 4);
}

/* Uneven nodes ("3,2"): the local size is unknown, so the whole job counts as one host. */
Test(launch_env, slurm_uneven_nodes)
{
    setenv("SLURM_PROCID", "4", 1);
    setenv("SLURM_NTASKS", "5", 1);
    setenv("SLURM_LOCALID", "1", 1);
    setenv("SLURM_TASKS_PER_NODE", "3,2", 1);
    expect(4, 5, 1, 5);
}

/* hcclrun run by srun on each node sets RANK: the innermost launcher wins. */
Test(launch_env, torchrun_names_win_over_slurm)
{
    setenv("SLURM_PROCID", "1", 1);
    setenv("SLURM_NTASKS", "2", 1);
    setenv("RANK", "9", 1);
    setenv("WORLD_SIZE", "16", 1);
    expect(9, 16, 9, 16);
}

Test(launch_env, malformed_or_inconsistent_is_refused)
{
    setenv("OMPI_COMM_WORLD_RANK", "x", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
    cr_expect_eq(HcclExtGetLaunchEnv(NULL, NULL, NULL, NULL), HCCL_E_PARA);
    setenv("OMPI_COMM_WORLD_RANK", "4", 1);
    cr_expect_eq(HcclExtGetLaunchEnv(NULL, NULL, NULL, NULL), HCCL_E_PARA);
}
