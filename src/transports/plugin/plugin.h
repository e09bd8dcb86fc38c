/* External transports loaded from a shared object (see plugin.c): loading and unloading the
 * plugin named by GCOLL_TRANSPORT_PLUGIN, and its framed transport table. */
#ifndef GCOLL_PLUGIN_H
#define GCOLL_PLUGIN_H

#include "transports/transport.h"

/* The loaded plugin, framed (src/transports/frame/frame.c builds it). */
extern const gcoll__transport_t gcoll__transport_plugin;

gcoll_status_t gcoll__plugin_load(const char *path); /* the error names GCOLL_TRANSPORT_PLUGIN */
void gcoll__plugin_unload(void);
const char *gcoll__plugin_name(void); /* NULL when none is loaded */

#endif
