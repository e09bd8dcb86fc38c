/* The transport list, in order of preference: the node channel inside a host; between hosts a
 * loaded plugin, else libfabric on a real NIC, else TCP (the automatic choice takes the first
 * of those whose probe says it can serve); MPI only where a variable names it. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "transports/mpi/mpi.h"
#include "transports/ofi/ofi.h"
#include "transports/plugin/plugin.h"
#include "transports/registry.h"
#include "transports/shm/shm.h"
#include "transports/tcp/tcp.h"

/* The node channel lives in /dev/shm. */
static int shm_serves(char *why, size_t len)
{
    int ok = access("/dev/shm", W_OK) == 0;
    snprintf(why, len, "%s", ok ? "/dev/shm is writable" : "/dev/shm is not writable");
    return ok;
}

/* TCP is the last resort between hosts: it needs nothing but sockets. */
static int always(char *why, size_t len)
{
    if (len)
        why[0] = '\0';
    return 1;
}

const gcoll__tp_entry_t gcoll__transports[] = {
    {"shm", &gcoll__transport_shm, shm_serves, GCOLL_TP_INTRA | GCOLL_TP_CHANNEL, "shared memory", NULL},
    {"plugin", &gcoll__transport_plugin, gcoll__plugin_serves, GCOLL_TP_AUTO, "the plugin if one is loaded", NULL},
    {"ofi", &gcoll__transport_ofi, gcoll__ofi_serves, GCOLL_TP_AUTO | GCOLL_TP_INTER, "libfabric on a real NIC", NULL},
    {"tcp", &gcoll__transport_tcp, always, GCOLL_TP_AUTO | GCOLL_TP_INTER, "TCP", gcoll__tcp_service},
    {"mpi", &gcoll__transport_mpi, gcoll__mpi_serves, GCOLL_TP_INTER | GCOLL_TP_INTRA, "MPI", NULL},
    {NULL, NULL, NULL, 0, NULL, NULL},
};

const gcoll__tp_entry_t *gcoll__tp_find(const char *name)
{
    for (const gcoll__tp_entry_t *e = gcoll__transports; e->name; e++)
        if (strcmp(e->name, name) == 0)
            return e;
    return NULL;
}

void gcoll__tp_service(void)
{
    for (const gcoll__tp_entry_t *e = gcoll__transports; e->name; e++)
        if (e->service)
            e->service();
}
