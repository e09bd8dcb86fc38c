/* The libfabric (OFI) transport's interface: its tables (the raw one, which the transport tests
 * drive, and the framed one the core uses), and what the transport list and gcoll-info ask of
 * libfabric on this machine. */
#ifndef GCOLL_OFI_H
#define GCOLL_OFI_H

#include <stddef.h>

#include "transports/transport.h"

extern const gcoll__transport_t gcoll__transport_ofi;     /* framed (frame.h) */
extern const gcoll__transport_t gcoll__transport_ofi_raw; /* ofi.c: raw tagged bytes */

/* For the transport list (registry.h): whether libfabric offers a provider for real network
 * hardware (not tcp, sockets, udp or shm) with tagged RDM endpoints here, and why in why. */
int gcoll__ofi_serves(char *why, size_t len);

/* For gcoll-info. An entry fi_getinfo offers for what gcoll asks (RDM, tagged, in order). */
typedef struct {
    char prov[64], fabric[64], domain[64];
    char pci[16]; /* its NIC's PCI bus id, "" where libfabric does not say */
} gcoll__ofi_offer_t;
/* The distinct provider, fabric and domain triples, in fi_getinfo's order (at most cap). */
gcoll_status_t gcoll__ofi_offers(gcoll__ofi_offer_t *out, int cap, int *n);
/* Opens what the automatic choice (or GCOLL_OFI_PROVIDER) opens for a job of one rank, says which
 * entry and why, and closes it. GCOLL_ERR_UNSUPPORTED without libfabric. */
gcoll_status_t gcoll__ofi_probe(gcoll__ofi_offer_t *pick, char *why, size_t len);

#endif
