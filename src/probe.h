/* The network link's latency and bandwidth, measured for the cost model (GCOLL_COST_INTER=auto). */
#ifndef GCOLL_PROBE_H
#define GCOLL_PROBE_H

#include "comm.h"

/* Collective over c, which spans hosts. Measures once per process (the first communicator that
 * spans hosts) and sets *link; leaves it alone when the probe fails, and says why at info level. */
gcoll_status_t gcoll__probe_inter(gcoll_comm_t c, gcoll__link_t *link);

#endif
