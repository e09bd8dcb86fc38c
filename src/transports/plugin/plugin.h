/* External transports loaded from a shared object (see plugin.c): loading and unloading the
 * plugin named by GCOLL_TRANSPORT_PLUGIN, and its framed transport table. */
#ifndef GCOLL_PLUGIN_H
#define GCOLL_PLUGIN_H

#include <stddef.h>

#include "transports/transport.h"

/* The loaded plugin, framed (frame.h). */
extern const gcoll__transport_t gcoll__transport_plugin;
/* For the transport list (registry.h): whether a plugin is loaded, and why in why. */
int gcoll__plugin_serves(char *why, size_t len);

gcoll_status_t gcoll__plugin_load(const char *path); /* the error names GCOLL_TRANSPORT_PLUGIN */
void gcoll__plugin_unload(void);
const char *gcoll__plugin_name(void); /* NULL when none is loaded */

#endif
