/* Framing for transports that carry raw tagged bytes (MPI, libfabric, plugins): frame.c wraps
 * them so that their messages carry their operation's descriptor and size, and builds
 * gcoll__transport_mpi, gcoll__transport_ofi and gcoll__transport_plugin, the framed forms that
 * the core uses, from the raw tables here. */
#ifndef GCOLL_FRAME_H
#define GCOLL_FRAME_H

#include "transports/transport.h"

extern const gcoll__transport_t gcoll__transport_mpi_raw;    /* src/transports/mpi/mpi_transport.c */
extern const gcoll__transport_t gcoll__transport_plugin_raw; /* src/transports/plugin/plugin.c */
extern const gcoll__transport_t gcoll__transport_ofi_raw;    /* src/transports/ofi/ofi.c */

#endif
