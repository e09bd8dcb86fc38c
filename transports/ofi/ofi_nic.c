/* Whether libfabric offers tagged RDM endpoints on real network hardware here: the automatic
 * choice of the inter-node transport prefers such a provider over TCP sockets. Providers that
 * only emulate a fabric over sockets or shared memory do not count. */
#include <stdio.h>
#include <string.h>

#include "../choose.h"

#if GCOLL_HAVE_OFI
#include <rdma/fabric.h>

static int emulated(const char *core)
{
    static const char *const soft[] = {"tcp", "sockets", "udp", "shm", "net", "sm2", NULL};
    for (int i = 0; soft[i]; i++)
        if (strcmp(core, soft[i]) == 0)
            return 1;
    return strncmp(core, "ofi_", 4) == 0; /* utility and hook layers */
}

const char *gcoll__ofi_nic_provider(void)
{
    static char found[64];
    struct fi_info *hints = fi_allocinfo(), *list = NULL;
    if (!hints)
        return NULL;
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_TAGGED;
    found[0] = '\0';
    if (fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, hints, &list) == 0) {
        for (struct fi_info *i = list; i && !found[0]; i = i->next) {
            char core[64];
            snprintf(core, sizeof(core), "%s", i->fabric_attr->prov_name);
            core[strcspn(core, ";")] = '\0'; /* "verbs;ofi_rxm": the core provider comes first */
            if (!emulated(core))
                snprintf(found, sizeof(found), "%s", i->fabric_attr->prov_name);
        }
        fi_freeinfo(list);
    }
    fi_freeinfo(hints);
    return found[0] ? found : NULL;
}
#else
const char *gcoll__ofi_nic_provider(void)
{
    return NULL;
}
#endif
