/* all_gatherv_perf: nccl-tests-style benchmark of one collective (see perf_common.c for the flags). */
#include "perf_common.h"

int main(int argc, char **argv)
{
    return perf_main(PERF_ALL_GATHERV, argc, argv);
}
