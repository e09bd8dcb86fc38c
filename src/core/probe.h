/* The links' latency and bandwidth, measured for the cost model (GCOLL_COST_*=auto), once per
 * process at the first communicator that spans hosts. */
#ifndef GCOLL_PROBE_H
#define GCOLL_PROBE_H

#include "core/comm.h"

/* Collective over c, which spans hosts. Measures once per process (at the first communicator
 * that spans hosts) and sets c->links.inter (if inter) and c->links.intra (if intra, and rank 1
 * shares rank 0's host); leaves them alone where the probe fails, and says why at info level. */
gcoll_status_t gcoll__probe_links(gcoll_comm_t c, int inter, int intra);

#endif
