/* The inter-node transport chosen at init (see choose.c). */
#ifndef GCOLL_CHOOSE_H
#define GCOLL_CHOOSE_H

#include "transport.h"

/* Sets gcoll__context.transport and its reason; loads GCOLL_TRANSPORT_PLUGIN if set. */
gcoll_status_t gcoll__transport_choose(void);
void gcoll__transport_release(void); /* at finalize */

/* The name of a libfabric provider for real network hardware (not tcp, sockets, udp or shm)
 * that offers tagged RDM endpoints here, or NULL. */
const char *gcoll__ofi_nic_provider(void);

#endif
