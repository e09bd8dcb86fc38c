/* The transports gcoll has, in one list in order of preference (registry.c): what each is
 * called, its table, and its probe. The choice between hosts, the routing of a communicator,
 * GCOLL_TRANSPORT_INTER and GCOLL_TRANSPORT_INTRA (choose.c) and gcoll-info all read it. */
#ifndef GCOLL_REGISTRY_H
#define GCOLL_REGISTRY_H

#include <stddef.h>

#include "transports/transport.h"

/* What a transport is for; an entry may have several. */
#define GCOLL_TP_AUTO 1u    /* GCOLL_TRANSPORT_INTER=auto may take it between hosts */
#define GCOLL_TP_INTER 2u   /* GCOLL_TRANSPORT_INTER may name it */
#define GCOLL_TP_INTRA 4u   /* GCOLL_TRANSPORT_INTRA may name it */
#define GCOLL_TP_CHANNEL 8u /* the node channel: the core opens it through shm.h, not create */

typedef struct {
    const char *name; /* as the variables name it, and the logs */
    const gcoll__transport_t *ops;
    /* Whether it can serve here, and why in why: "" for one that always can. */
    int (*probe)(char *why, size_t len);
    unsigned roles;
    /* How the variables' descriptions name it (with the condition auto takes it under). */
    const char *desc;
    /* Keeps the process's connections answered while no thread is in gcoll (gcoll__tp_service);
     * NULL: it needs nothing then. */
    void (*service)(void);
} gcoll__tp_entry_t;

extern const gcoll__tp_entry_t gcoll__transports[]; /* ends with an entry whose name is NULL */

/* The entry called name, or NULL. */
const gcoll__tp_entry_t *gcoll__tp_find(const char *name);

/* Every transport's service: an idle progress thread calls it now and then (GCOLL__TP_SERVICE_MS),
 * so that a peer that dials this process, or waits on a notice this process owes it, is not kept
 * waiting until this process calls gcoll again. Takes no lock of the core's. */
#define GCOLL__TP_SERVICE_MS 50
void gcoll__tp_service(void);

#endif
