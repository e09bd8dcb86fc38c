/* The names of the collective kinds, for messages and the registries. */
#include "base/coll.h"

static const char *const coll_names[GCOLL_COLL_COUNT + 1] = {
    "allreduce",       "reduce_scatter", "allgather", "bcast",   "reduce",  "alltoall", "barrier", "allgatherv",
    "reduce_scatterv", "alltoallv",      "gather",    "gatherv", "scatter", "scatterv", "p2p"};

const char *gcoll__coll_name(int coll)
{
    return coll >= 0 && coll <= GCOLL_COLL_P2P ? coll_names[coll] : "unknown";
}
