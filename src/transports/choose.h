/* The inter-node transport chosen at init (see choose.c), and the libfabric offers that the
 * automatic choice and gcoll-info look at. */
#ifndef GCOLL_CHOOSE_H
#define GCOLL_CHOOSE_H

#include "transports/transport.h"

/* The inter-node transport and why it was chosen (for the logs); loads GCOLL_TRANSPORT_PLUGIN if set. */
gcoll_status_t gcoll__transport_choose(const gcoll__transport_t **out, const char **why);
void gcoll__transport_release(void); /* at finalize */

/* The name of a libfabric provider for real network hardware (not tcp, sockets, udp or shm)
 * that offers tagged RDM endpoints here, or NULL. */
const char *gcoll__ofi_nic_provider(void);

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
