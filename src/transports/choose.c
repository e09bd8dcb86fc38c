/* The choice of the inter-node transport at init: GCOLL_TRANSPORT_INTER names one, or auto
 * takes a loaded plugin, else libfabric on a real NIC, else TCP. The reason is kept for the
 * per-communicator log line. */
#include <string.h>

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"
#include "transports/choose.h"
#include "transports/plugin/plugin.h"

gcoll_status_t gcoll__transport_choose(const gcoll__transport_t **out, const char **why)
{
    int plugged = strcmp(gcoll__config.transport_plugin, "none") != 0;
    if (plugged)
        GCOLL_CHECK(gcoll__plugin_load(gcoll__config.transport_plugin));
    static const gcoll__transport_t *const named[] = {NULL, &gcoll__transport_tcp, &gcoll__transport_ofi,
                                                      &gcoll__transport_mpi};
    int which = gcoll__config.transport_inter; /* 0 auto, 1 tcp, 2 ofi, 3 mpi */
    const char *nic = NULL;
    if (which) {
        *out = named[which];
        *why = " (GCOLL_TRANSPORT_INTER)";
        if (plugged)
            GCOLL_LOG(GCOLL_LOG_WARN,
                      "GCOLL_TRANSPORT_PLUGIN is loaded but GCOLL_TRANSPORT_INTER=%s "
                      "takes precedence (HINT: GCOLL_TRANSPORT_INTER=auto uses the plugin)",
                      named[which]->name);
    } else if (plugged) {
        *out = &gcoll__transport_plugin;
        *why = " (auto: GCOLL_TRANSPORT_PLUGIN)";
    } else if ((nic = gcoll__ofi_nic_provider()) != NULL) {
        *out = &gcoll__transport_ofi;
        *why = " (auto: libfabric has a NIC provider)";
        GCOLL_LOG(GCOLL_LOG_INFO, "libfabric NIC provider %s found: ofi between hosts", nic);
    } else {
        *out = &gcoll__transport_tcp;
        *why = " (auto: no libfabric NIC provider)";
    }
    return GCOLL_SUCCESS;
}

void gcoll__transport_release(void)
{
    gcoll__plugin_unload();
}
