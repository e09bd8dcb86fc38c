/* The choice of transports (choose.c): what GCOLL_TRANSPORT_INTER and GCOLL_TRANSPORT_INTRA name,
 * and the transport between hosts chosen at init. */
#ifndef GCOLL_CHOOSE_H
#define GCOLL_CHOOSE_H

#include "transports/registry.h"

/* The inter-node transport and why it was chosen (for the logs); loads GCOLL_TRANSPORT_PLUGIN if set. */
gcoll_status_t gcoll__transport_choose(const gcoll__transport_t **out, const char **why);
void gcoll__transport_release(void); /* at finalize */

/* The transport GCOLL_TRANSPORT_INTER names; NULL for auto. */
const gcoll__tp_entry_t *gcoll__transport_inter(void);
/* The transport GCOLL_TRANSPORT_INTRA names; NULL for inter (the inter-node transport's). */
const gcoll__tp_entry_t *gcoll__transport_intra(void);

#endif
