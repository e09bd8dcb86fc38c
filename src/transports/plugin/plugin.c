/* The loader of external transports (include/gcoll_transport_plugin.h): opens the shared object
 * named by GCOLL_TRANSPORT_PLUGIN, finds its versioned entry point, checks the table, and
 * adapts it to the internal transport interface (raw bytes: the core uses its framed table,
 * frame.h). Errors from the plugin carry its own reason, prefixed with its name. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "gcoll_transport_plugin.h"
#include "base/error.h"
#include "base/log.h"
#include "transports/frame/frame.h"
#include "transports/plugin/plugin.h"

static void *handle;
static const gcoll_transport_plugin_v1_t *plug;

struct gcoll__tp {
    void *ep;
};

static gcoll_status_t failed(gcoll_status_t st, void *ep, const char *what)
{
    const char *why = plug->last_error(ep);
    return gcoll__error(st, "plugin %s: %s failed: %s", plug->name, what, why && why[0] ? why : "(no reason given)");
}

gcoll_status_t gcoll__plugin_load(const char *path)
{
    handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "GCOLL_TRANSPORT_PLUGIN='%s' cannot be loaded: %s", path, dlerror());
    gcoll_transport_plugin_v1_fn entry;
    *(void **)&entry = dlsym(handle, GCOLL_TRANSPORT_PLUGIN_SYMBOL);
    const char *why = NULL;
    if (!entry)
        why = "it exports no " GCOLL_TRANSPORT_PLUGIN_SYMBOL " (a gcoll transport plugin of version 1)";
    else if (!(plug = entry()))
        why = "its entry point declined (returned NULL)";
    else if (plug->version != GCOLL_TRANSPORT_PLUGIN_VERSION)
        why = "its table has the wrong version";
    else if (!plug->name || !plug->create || !plug->addr_len || !plug->addr || !plug->connect || !plug->isend ||
             !plug->irecv || !plug->test || !plug->cancel || !plug->close || !plug->last_error)
        why = "its table lacks a name or a function";
    if (why) {
        gcoll_status_t st = gcoll__error(GCOLL_ERR_INVALID_ARG, "GCOLL_TRANSPORT_PLUGIN='%s': %s", path, why);
        gcoll__plugin_unload();
        return st;
    }
    GCOLL_LOG(GCOLL_LOG_INFO, "transport plugin '%s' loaded from %s", plug->name, path);
    return GCOLL_SUCCESS;
}

void gcoll__plugin_unload(void)
{
    if (handle)
        dlclose(handle);
    handle = NULL;
    plug = NULL;
}

const char *gcoll__plugin_name(void)
{
    return plug ? plug->name : NULL;
}

int gcoll__plugin_serves(char *why, size_t len)
{
    snprintf(why, len, "%s", plug ? "GCOLL_TRANSPORT_PLUGIN" : "no plugin is loaded");
    return plug != NULL;
}

static gcoll_status_t boot_allgather(void *ctx, const void *mine, void *all, size_t len)
{
    if (len > INT32_MAX)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "plugin %s: allgather of %zu bytes is too large", plug->name, len);
    if (gcoll__boot_allgather(ctx, mine, all, len) != GCOLL_SUCCESS)
        return gcoll__error(GCOLL_ERR_TRANSPORT, "plugin %s: bootstrap allgather failed: %s", plug->name,
                            gcoll_last_error());
    return GCOLL_SUCCESS;
}

static gcoll_status_t p_create(const gcoll__bootstrap_t *boot, gcoll__tp_t **out)
{
    gcoll__tp_t *tp = calloc(1, sizeof(*tp));
    if (!tp)
        return gcoll__error(GCOLL_ERR_NOMEM, "plugin %s: no memory for an endpoint", plug->name);
    gcoll_plugin_boot_t pb = {boot->rank, boot->size, boot_allgather, boot->group};
    gcoll_status_t st = plug->create(&pb, &tp->ep);
    if (st != GCOLL_SUCCESS) {
        free(tp);
        return failed(st, NULL, "create");
    }
    *out = tp;
    return GCOLL_SUCCESS;
}

static size_t p_addr_len(gcoll__tp_t *tp)
{
    return plug->addr_len(tp->ep);
}

static gcoll_status_t p_addr(gcoll__tp_t *tp, void *buf)
{
    gcoll_status_t st = plug->addr(tp->ep, buf);
    return st == GCOLL_SUCCESS ? st : failed(st, tp->ep, "addr");
}

static gcoll_status_t p_connect(gcoll__tp_t *tp, const void *all)
{
    gcoll_status_t st = plug->connect(tp->ep, all);
    return st == GCOLL_SUCCESS ? st : failed(st, tp->ep, "connect");
}

/* The header asks for requests aligned as malloc aligns them: the core keeps a flag in the low bit. */
static gcoll_status_t posted(gcoll__tp_t *tp, gcoll_status_t st, void *r, const char *what, gcoll__tp_req_t **req)
{
    if (st != GCOLL_SUCCESS)
        return failed(st, tp->ep, what);
    if (!r || ((uintptr_t)r & 7)) {
        if (r)
            plug->cancel(tp->ep, r);
        return gcoll__error(GCOLL_ERR_INTERNAL,
                            "plugin %s: %s returned a request that is NULL or not aligned to 8 bytes", plug->name,
                            what);
    }
    *req = r;
    return GCOLL_SUCCESS;
}

static gcoll_status_t p_isend(gcoll__tp_t *tp, int peer, uint32_t tag, const void *buf, size_t bytes,
                              gcoll__tp_req_t **req)
{
    void *r = NULL;
    gcoll_status_t st = plug->isend(tp->ep, peer, tag, buf, bytes, &r);
    return posted(tp, st, r, "isend", req);
}

static gcoll_status_t p_irecv(gcoll__tp_t *tp, int peer, uint32_t tag, void *buf, size_t bytes, gcoll__tp_req_t **req)
{
    void *r = NULL;
    gcoll_status_t st = plug->irecv(tp->ep, peer, tag, buf, bytes, &r);
    return posted(tp, st, r, "irecv", req);
}

static gcoll_status_t p_test(gcoll__tp_t *tp, gcoll__tp_req_t *req, int *done)
{
    gcoll_status_t st = plug->test(tp->ep, req, done);
    if (st != GCOLL_SUCCESS) {
        *done = 1;
        return failed(st, tp->ep, "a message");
    }
    return st;
}

static void p_cancel(gcoll__tp_t *tp, gcoll__tp_req_t *req)
{
    plug->cancel(tp->ep, req);
}

static void p_close(gcoll__tp_t *tp)
{
    plug->close(tp->ep);
    free(tp);
}

static const gcoll__transport_t raw = {
    .name = "plugin",
    .create = p_create,
    .addr_len = p_addr_len,
    .addr = p_addr,
    .connect = p_connect,
    .isend = p_isend,
    .irecv = p_irecv,
    .test = p_test,
    .cancel = p_cancel,
    .close = p_close,
};

static gcoll_status_t framed_create(const gcoll__bootstrap_t *boot, gcoll__tp_t **tp)
{
    return gcoll__frame_create(&raw, boot, GCOLL_FRAME_CTL_BYTES, tp);
}

/* Plugins register no memory, wait on nothing and tell of no dead peers. */
const gcoll__transport_t gcoll__transport_plugin = GCOLL_FRAMED("plugin", framed_create);
