/* PLACEHOLDER (replaced by the OFI transport work before landing). */
#include "../../src/error.h"
#include "../transport.h"

static gcoll_status_t ofi_create(const gcoll__bootstrap_t *boot, gcoll__tp_t **tp)
{
    (void)boot;
    (void)tp;
    return gcoll__error(GCOLL_ERR_UNSUPPORTED, "ofi transport: not built yet");
}

const gcoll__transport_t gcoll__transport_ofi = {.name = "ofi", .create = ofi_create};
