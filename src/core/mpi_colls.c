/* GCOLL_MPI_COLLS: which of MPI's collectives the MPI interposer (lib/libgcoll_mpi.so, built
 * from interposer/) takes over. The names live here once: the registry parses the variable with
 * them and the interposer asks about each call through gcoll_mpi_coll_enabled. */
#include <string.h>

#include "base/config.h"
#include "base/error.h"
#include "gcoll_mpi.h"
#include "core/context.h"

static const char *const names[] = {"allreduce",
                                    "iallreduce",
                                    "reduce_scatter_block",
                                    "allgather",
                                    "bcast",
                                    "reduce",
                                    "barrier",
                                    "ireduce_scatter_block",
                                    "iallgather",
                                    "ibcast",
                                    "ireduce",
                                    "ibarrier",
                                    "allgatherv",
                                    "iallgatherv",
                                    "alltoall",
                                    "ialltoall",
                                    "alltoallv",
                                    "ialltoallv",
                                    "reduce_scatter",
                                    "ireduce_scatter",
                                    "gather",
                                    "igather",
                                    "gatherv",
                                    "igatherv",
                                    "scatter",
                                    "iscatter",
                                    "scatterv",
                                    "iscatterv"};
#define NNAMES (sizeof(names) / sizeof(names[0]))

static int find(const char *s, size_t len)
{
    for (size_t i = 0; i < NNAMES; i++)
        if (strlen(names[i]) == len && strncmp(names[i], s, len) == 0)
            return (int)i;
    return -1;
}

/* all, none, or names separated by commas; stored as a bit per name. */
gcoll_status_t gcoll__parse_mpi_colls(const char *var, const char *s, void *out, int arg)
{
    (void)arg;
    unsigned mask = 0;
    if (strcmp(s, "all") == 0)
        mask = (1u << NNAMES) - 1;
    else if (strcmp(s, "none") != 0)
        for (const char *p = s;; p++) {
            size_t len = strcspn(p, ",");
            int i = find(p, len);
            if (i < 0)
                return gcoll__error(GCOLL_ERR_INVALID_ARG,
                                    "%s='%s' is not valid: '%.*s' is not a call it takes over; accepts all, none, "
                                    "or names separated by commas from MPI's collectives in lower case without "
                                    "MPI_ (allreduce, iallreduce, ..., scatterv, iscatterv; docs/interposer.md)",
                                    var, s, (int)len, p);
            mask |= 1u << i;
            p += len;
            if (*p == '\0')
                break;
        }
    *(unsigned *)out = mask;
    return GCOLL_SUCCESS;
}

GCOLL_API gcoll_status_t gcoll_mpi_coll_enabled(const char *call, int *enabled)
{
    if (!call)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "call is NULL");
    if (!enabled)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "enabled is NULL");
    if (!gcoll__context.initialized)
        return gcoll__error(GCOLL_ERR_INVALID_USAGE, "gcoll is not initialized: call gcoll_init first");
    int i = find(call, strlen(call));
    if (i < 0)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "call '%s' is not one the interposer takes over", call);
    *enabled = (gcoll__config.mpi_colls >> i) & 1;
    return GCOLL_SUCCESS;
}
