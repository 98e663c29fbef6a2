/* hcclrun --ranktable: the job's shape from a CANN rank table (runtime/ranktable.c reads it): one
 * emulated server per server_list entry, in file order, its ranks in rank order (the loader
 * checks they are contiguous), each with the table's device_id. */
#include "hcclrun.h"

#include <stdio.h>
#include <stdlib.h>

#include "runtime/ranktable.h"

int hr_table_place(const char *path, unsigned max_servers, unsigned max_per_server, unsigned *n, unsigned *nservers,
                   unsigned *server_size, int32_t **device_id)
{
    rt_ranktable *t = NULL;
    if (rt_ranktable_load(path, &t) != HCCL_SUCCESS) {
        fprintf(stderr, "[hcclrun] --ranktable %s: the table cannot be used (the line above says why)\n", path);
        return -1;
    }
    int rc = 0;
    if (t->nservers > max_servers) {
        fprintf(stderr, "[hcclrun] --ranktable %s: %u servers, at most %u can be emulated\n", path, t->nservers,
                max_servers);
        rc = -1;
    }
    for (unsigned s = 0; rc == 0 && s < t->nservers; s++) {
        server_size[s] = t->server_ranks[s];
        if (server_size[s] > max_per_server) {
            fprintf(stderr, "[hcclrun] --ranktable %s: server '%s' has %u devices, an emulated server at most %u\n",
                    path, t->ranks[t->server_first[s]].server_id, server_size[s], max_per_server);
            rc = -1;
        }
    }
    *device_id = rc == 0 ? calloc(t->nranks, sizeof **device_id) : NULL;
    if (rc == 0 && !*device_id)
        rc = -1;
    for (unsigned r = 0; rc == 0 && r < t->nranks; r++)
        (*device_id)[r] = t->ranks[r].device_id;
    *n = t->nranks;
    *nservers = t->nservers;
    rt_ranktable_free(t);
    return rc;
}
