/* What the OFI transport's files share: the endpoint, the tag layout, and the set-up and
 * tear-down entry points of ofi_setup.c that the table in ofi.c points to. */
#ifndef GCOLL_OFI_INTERNAL_H
#define GCOLL_OFI_INTERNAL_H

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "transports/transport.h"
#include "base/topo.h"
#include "transports/ofi/ofi_mr.h"

/* Fixed so that behaviour does not change with the headers the library is built against. */
#define GCOLL_OFI_API FI_VERSION(1, 10)

struct gcoll__tp {
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_cq *cq;
    struct fid_av *av;
    struct fid_ep *ep;
    gcoll__ofi_mrcache_t *mrc; /* registrations: for FI_MR_LOCAL providers, and reg_mem */
    int mr_local;              /* every buffer needs a descriptor */
    int mr_endpoint;           /* registrations are bound to the endpoint */
    int mr_prov_key;           /* the provider picks the keys */
    uint64_t next_key;         /* otherwise keys must be unique in the domain */
    int directed;              /* FI_DIRECTED_RECV: receives match on the source address */
    int rank, size;
    fi_addr_t *peers;
    char name[256]; /* this endpoint's name (fi_getname) */
    size_t name_len;
    size_t name_max; /* the longest endpoint name of any rank */
    size_t max_msg_size, inject_size;
    /* Posts that met -FI_EAGAIN, retried in order: sends [0] and receives [1] apart, so that a
     * receive never waits behind sends that wait for the peer's receives. */
    gcoll__tp_req_t *queue[2], *queue_tail[2];
    gcoll__tp_req_t *orphans; /* cancelled, but the provider may still hold them */
    char prov[64];
    /* Failure detection: each peer's pid and pid space (liveness.h), from the addresses, so a
     * peer on this machine is checked by its pid; a peer whose connection failed a message. */
    int32_t *pids;
    uint64_t *spaces;
    uint64_t space; /* this process's */
    int lost;       /* a peer whose messages failed with a connection error, or -1 */
    char lost_why[320];
};

/* The 64-bit libfabric tag: the core's 32-bit tag below, and the sender's rank above it when
 * the provider cannot match receives on their source address. */
static inline uint64_t ofi_wire_tag(const gcoll__tp_t *tp, int src, uint32_t tag)
{
    return tp->directed ? tag : (uint64_t)(uint32_t)src << 32 | tag;
}

/* GCOLL_ERR_TRANSPORT naming the call, the provider and fi_strerror's text. */
gcoll_status_t gcoll__ofi_fail(const char *what, int rc, const char *prov);

gcoll_status_t gcoll__ofi_create(const gcoll__bootstrap_t *boot, gcoll__tp_t **tp);
size_t gcoll__ofi_addr_len(gcoll__tp_t *tp);
gcoll_status_t gcoll__ofi_addr(gcoll__tp_t *tp, void *buf);
gcoll_status_t gcoll__ofi_connect(gcoll__tp_t *tp, const void *all_addrs);
void gcoll__ofi_close(gcoll__tp_t *tp);

/* Of the fi_getinfo entries from first on with first's provider and fabric, the one whose NIC
 * (by PCI bus id, else by domain name) is local to cpus in t (gcoll__topo_pick_nic), else first:
 * ranks may so open different domains of one fabric. Says which at info level when there was a
 * choice. */
const struct fi_info *gcoll__ofi_closest_domain(const struct fi_info *first, const gcoll__topo_t *t,
                                                const cpu_set_t *cpus);

/* Frees the cancelled requests the provider never completed; close() calls it once the
 * endpoint is closed. */
void gcoll__ofi_free_orphans(gcoll__tp_t *tp);

#endif
