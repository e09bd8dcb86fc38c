/* What the OFI transport's files share: the process's endpoint, a communicator's view of it, the
 * tag layout, the set-up and tear-down entry points of ofi_setup.c that the table in ofi.c points
 * to, and ofi_proc.c's sharing of the endpoint. */
#ifndef GCOLL_OFI_INTERNAL_H
#define GCOLL_OFI_INTERNAL_H

#include <pthread.h>
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

/* The process's one endpoint (ofi_proc.c): opened by its first communicator over ofi, shared by
 * every later one and closed with the last. Its lock covers every call on it and every request's
 * state: the communicators' threads read one completion queue, and a completion read by one
 * communicator's test may be another's. */
typedef struct gcoll__ofi_proc {
    pthread_mutex_t lock;
    int refs; /* communicators on it (ofi_proc.c's own lock) */
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
    char name[256];            /* this endpoint's name (fi_getname) */
    size_t name_len;
    size_t max_msg_size, inject_size;
    char prov[64];
    /* Channels: the tag's bits from chan_shift up name the communicator; chan_limit of them. */
    int chan_shift;
    uint64_t chan_limit;
    uint64_t *chans; /* in use by this process's communicators */
    int nchans, chans_cap;
    uint64_t next_chan;        /* channels are drawn upwards from here, so a closed one comes back last */
    size_t av_count;           /* the address vector's size hint: its first communicator's ranks */
    struct ofi_av_name *names; /* the peers in the address vector, by endpoint name (open addressing) */
    size_t names_cap, names_used;
    gcoll__tp_req_t *orphans; /* cancelled, but the provider may still hold them */
    char broken[320];         /* set when the endpoint was closed under its communicators: why */
} gcoll__ofi_proc_t;

/* One communicator's view of the process's endpoint. */
struct gcoll__tp {
    gcoll__ofi_proc_t *proc;
    uint64_t chan;
    int has_chan; /* chan is taken (released at close) */
    int rank, size;
    fi_addr_t *peers;
    size_t name_max; /* the longest endpoint name of any rank */
    /* Posts that met -FI_EAGAIN, retried in order: sends [0] and receives [1] apart, so that a
     * receive never waits behind sends that wait for the peer's receives. */
    gcoll__tp_req_t *queue[2], *queue_tail[2];
    /* Failure detection: each peer's pid and pid space (liveness.h), from the addresses, so a
     * peer on this machine is checked by its pid; a peer whose connection failed a message. */
    int32_t *pids;
    uint64_t *spaces;
    uint64_t space; /* this process's */
    int lost;       /* a peer whose messages failed with a connection error, or -1 */
    char lost_why[320];
};

/* Tag bits below the channel: the core's 32-bit tag, and above it the sender's rank (16 bits)
 * when the provider cannot match receives on their source address. */
#define GCOLL_OFI_RANK_BITS 16
static inline int ofi_chan_shift(int directed)
{
    return 32 + (directed ? 0 : GCOLL_OFI_RANK_BITS);
}

/* The 64-bit libfabric tag: channel, sender's rank (undirected providers), the core's tag. */
static inline uint64_t ofi_wire_tag(const gcoll__tp_t *tp, int src, uint32_t tag)
{
    uint64_t t = tp->chan << tp->proc->chan_shift | tag;
    return tp->proc->directed ? t : t | (uint64_t)(uint32_t)src << 32;
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

/* ---- ofi_proc.c ---- */

/* An endpoint with nothing open yet (NULL: no memory), and its end (whatever it opened). */
gcoll__ofi_proc_t *gcoll__ofi_proc_new(void);
void gcoll__ofi_proc_free(gcoll__ofi_proc_t *p);
/* The process's endpoint with a reference taken, or NULL where none is open. */
gcoll__ofi_proc_t *gcoll__ofi_proc_get(void);
/* Makes p (opened by the caller) the process's endpoint, holding one reference; where another
 * thread published one meanwhile, closes p and returns that one, referenced. */
gcoll__ofi_proc_t *gcoll__ofi_proc_publish(gcoll__ofi_proc_t *p);
/* Drops a reference; the last closes the endpoint. NULL is ignored. */
void gcoll__ofi_proc_put(gcoll__ofi_proc_t *p);
/* Closes p's libfabric objects in dependency order and frees the orphans: nothing touches a
 * request or a registered buffer afterwards. Leaves p's configuration; ofi_setup.c's. */
void gcoll__ofi_proc_close_objects(gcoll__ofi_proc_t *p);
/* Collective over group: a channel no rank's process uses for another live communicator. */
gcoll_status_t gcoll__ofi_proc_channel(gcoll__ofi_proc_t *p, gcoll__boot_t *group, uint64_t *chan);
void gcoll__ofi_proc_release_channel(gcoll__ofi_proc_t *p, uint64_t chan);
/* The same under p's lock. */
void gcoll__ofi_proc_drop_channel(gcoll__ofi_proc_t *p, uint64_t chan);
/* The address-vector entry of the endpoint named name, inserted at its first sight. Under p's lock. */
gcoll_status_t gcoll__ofi_proc_av(gcoll__ofi_proc_t *p, const void *name, size_t len, fi_addr_t *out);

/* Retires p when a communicator closes while the provider still holds one of its operations:
 * the only way to take the buffer back is to close the endpoint, so it is closed under the other
 * communicators (whose calls then fail with why) and the next communicator opens a new one. Under
 * p's lock. */
void gcoll__ofi_proc_retire(gcoll__ofi_proc_t *p, const char *why);

/* ofi.c: waits for the provider to give back the operations tp cancelled: receives, which write
 * their buffers, for up to recv_s seconds (0 when one is still held then), then sends for up to
 * send_s. The provider reads a send's buffer only once a receive matches it: a send still held
 * then keeps its channel taken (*sends_left set) until its completion comes, so that no later
 * communicator with this process in it can post that receive. Under tp's endpoint's lock. */
int gcoll__ofi_settle(gcoll__tp_t *tp, double recv_s, double send_s, int *sends_left);
/* ofi.c: frees the cancelled requests the provider never completed, once the endpoint is closed. */
void gcoll__ofi_free_orphans(gcoll__ofi_proc_t *p);

#endif
