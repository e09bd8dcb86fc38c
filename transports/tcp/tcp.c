/* PLACEHOLDER (replaced by the TCP transport work before landing). */
#include "../../src/error.h"
#include "../transport.h"

static gcoll_status_t tcp_create(const gcoll__bootstrap_t *boot, gcoll__tp_t **tp)
{
    (void)boot;
    (void)tp;
    return gcoll__error(GCOLL_ERR_UNSUPPORTED, "tcp transport: not built yet");
}

const gcoll__transport_t gcoll__transport_tcp = {.name = "tcp", .create = tcp_create};
