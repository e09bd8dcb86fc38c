/* gcoll transport plugin ABI, version 1: a transport built outside gcoll's tree is a shared object
 * exporting GCOLL_TRANSPORT_PLUGIN_SYMBOL, which returns the table of calls below. gcoll loads it
 * when GCOLL_TRANSPORT_PLUGIN=path.so; a later version adds a new symbol and table, and gcoll keeps
 * loading the older ones, so a built plugin keeps working. */
#ifndef GCOLL_TRANSPORT_PLUGIN_H
#define GCOLL_TRANSPORT_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "gcoll.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GCOLL_TRANSPORT_PLUGIN_VERSION 1
#define GCOLL_TRANSPORT_PLUGIN_SYMBOL "gcoll_transport_plugin_v1"

/* What create learns of the communicator. */
typedef struct {
    int rank, size;
    /* Collective over the communicator: gathers len bytes from every rank into all (size*len
     * bytes, in rank order). For secrets, interface lists, or anything the plugin must agree on. */
    gcoll_status_t (*allgather)(void *ctx, const void *mine, void *all, size_t len);
    void *ctx; /* pass to allgather */
} gcoll_plugin_boot_t;

/* The calls of a plugin, under the same contract as gcoll's own transports:
 * - One endpoint per communicator. create is called on every rank of the communicator at once;
 *   each rank's addr (addr_len bytes) is gathered and handed to connect on every rank.
 * - isend/irecv post nonblocking tagged messages to/from a peer (its rank in the communicator)
 *   and return a request: a pointer aligned to 8 bytes at least (malloc'd memory is).
 *   Messages between one pair with one tag arrive in posting order. A receive may be posted
 *   before or after the message arrives and must match its size exactly: any other size fails
 *   the receive. Zero-byte messages are legal.
 * - gcoll frames the messages itself (they carry what mismatch detection needs): between each
 *   pair, tag 1 carries a stream of fixed-size control messages, and a larger payload travels
 *   under its operation's number shifted left by one. A plugin that carries fewer than 32 bits
 *   of tag keeps the low ones (tag & (2^k - 1), as the example does), never a remainder
 *   by another number, so the two never meet.
 * - test is the only progress call: it must move all of the endpoint's traffic, set *done, and
 *   once it reports done (or returns an error) the request is the plugin's to free.
 *   cancel abandons a request that will not complete; the plugin frees it and never touches its
 *   buffer again.
 * - gcoll serializes every call on an endpoint: a plugin needs no locks of its own for that.
 * - Calls return GCOLL_SUCCESS or an error status; last_error then gives the reason (a peer,
 *   a system call), which gcoll prefixes with the plugin's name. */
typedef struct {
    uint32_t version; /* GCOLL_TRANSPORT_PLUGIN_VERSION */
    const char *name; /* for logs and gcoll_comm_transport */
    gcoll_status_t (*create)(const gcoll_plugin_boot_t *boot, void **endpoint);
    size_t (*addr_len)(void *endpoint);
    gcoll_status_t (*addr)(void *endpoint, void *buf);
    gcoll_status_t (*connect)(void *endpoint, const void *all_addrs);
    gcoll_status_t (*isend)(void *endpoint, int peer, uint32_t tag, const void *buf, size_t bytes, void **request);
    gcoll_status_t (*irecv)(void *endpoint, int peer, uint32_t tag, void *buf, size_t bytes, void **request);
    gcoll_status_t (*test)(void *endpoint, void *request, int *done);
    void (*cancel)(void *endpoint, void *request);
    void (*close)(void *endpoint);
    /* The reason for the last error on this thread (endpoint may be NULL after a failed create). */
    const char *(*last_error)(void *endpoint);
} gcoll_transport_plugin_v1_t;

/* The entry point a plugin exports: extern "C" const gcoll_transport_plugin_v1_t *
 * gcoll_transport_plugin_v1(void); it may return NULL to refuse (e.g. no hardware). */
typedef const gcoll_transport_plugin_v1_t *(*gcoll_transport_plugin_v1_fn)(void);

#ifdef __cplusplus
}
#endif

#endif
