/* Setting up and closing a communicator's OFI endpoint. For a process's first, rank 0 ranks the
 * providers fi_getinfo offers (a NIC first, then tcp;ofi_rxm, slow fallbacks last, shared memory
 * never), opens the first that works, and the others open it too (each on the domain whose NIC is
 * local to its cores); later ones share it (ofi_proc.c). Then the channel and the address
 * exchange. The same ranking answers the transport list and gcoll-info (ofi.h). */
#include <stdio.h>

#include "base/error.h"
#include "base/text.h"
#include "transports/ofi/ofi.h"

#if GCOLL_HAVE_OFI

#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/config.h"
#include "base/log.h"
#include "transports/liveness.h"
#include "transports/ofi/ofi_internal.h"

/* Registrations kept per endpoint; a collective touches a handful of buffers at a time. */
#define MR_CACHE_ENTRIES 64
#define MAX_PROVIDERS 32
/* The fewest channels (communicators live at once) a provider's tag bits must leave room for. */
#define MIN_CHAN_BITS 8
/* How long close waits for a cancelled send's receive: a peer still in the operation posts it
 * within this of reading the message's header, and then the send ends before its buffer goes. */
#define SEND_WAIT_S 1.0

/* Rank 0's decision, broadcast to the others. */
typedef struct {
    int ok, directed;
    gcoll_status_t status;
    uint32_t addr_format;
    char prov[64];
    char msg[512]; /* the error, or why this provider */
} choice_t;

enum { CLASS_NIC, CLASS_TCP, CLASS_OTHER, CLASS_FALLBACK, CLASS_LOCAL };

gcoll_status_t gcoll__ofi_fail(const char *what, int rc, const char *prov)
{
    return gcoll__error(GCOLL_ERR_TRANSPORT, "ofi transport: %s failed on provider %s: %s (%d)", what, prov,
                        fi_strerror(rc < 0 ? -rc : rc), rc);
}

/* Ranks a provider by its core (the part before ';', e.g. "verbs" of "verbs;ofi_rxm"). */
static int provider_class(const char *name)
{
    static const char *const nic[] = {"verbs", "efa",   "psm", "psm2", "psm3", "cxi",
                                      "opx",   "usnic", "gni", "ucx",  "bgq"};
    size_t core = strcspn(name, ";");
    for (size_t i = 0; i < sizeof(nic) / sizeof(nic[0]); i++)
        if (strlen(nic[i]) == core && strncmp(name, nic[i], core) == 0)
            return CLASS_NIC;
    if (core == 3 && strncmp(name, "tcp", 3) == 0)
        return CLASS_TCP;
    if ((core == 7 && strncmp(name, "sockets", 7) == 0) || (core == 3 && strncmp(name, "udp", 3) == 0))
        return CLASS_FALLBACK;
    if (core == 3 && strncmp(name, "shm", 3) == 0)
        return CLASS_LOCAL; /* cannot reach another host */
    return CLASS_OTHER;
}

/* What gcoll asks of a provider; prov NULL for any, addr_format 0 for any. */
static struct fi_info *make_hints(const char *prov, uint32_t addr_format, int directed)
{
    struct fi_info *h = fi_allocinfo();
    if (!h)
        return NULL;
    h->caps = FI_TAGGED | (directed ? FI_DIRECTED_RECV : 0);
    h->mode = FI_CONTEXT | FI_CONTEXT2; /* every request carries a struct fi_context2 */
    h->addr_format = addr_format;
    h->ep_attr->type = FI_EP_RDM;
    h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
    /* One lock serializes all calls on the process's endpoint, which has its own domain. */
    h->domain_attr->threading = FI_THREAD_DOMAIN;
    /* One pair and tag must match in posting order. */
    h->tx_attr->msg_order = FI_ORDER_SAS;
    h->rx_attr->msg_order = FI_ORDER_SAS;
    if (prov && !(h->fabric_attr->prov_name = strdup(prov))) {
        fi_freeinfo(h);
        return NULL;
    }
    return h;
}

static gcoll_status_t mr_reg(void *ctx, void *base, size_t len, void **handle, void **desc)
{
    gcoll__ofi_proc_t *tp = ctx;
    struct fid_mr *mr;
    int rc = fi_mr_reg(tp->domain, base, len, FI_SEND | FI_RECV, 0, tp->mr_prov_key ? 0 : tp->next_key++, 0, &mr, NULL);
    if (rc)
        return gcoll__ofi_fail("fi_mr_reg", rc, tp->prov);
    if (tp->mr_endpoint) {
        rc = fi_mr_bind(mr, &tp->ep->fid, 0);
        if (!rc)
            rc = fi_mr_enable(mr);
        if (rc) {
            fi_close(&mr->fid);
            return gcoll__ofi_fail("binding a registration to the endpoint", rc, tp->prov);
        }
    }
    *handle = mr;
    *desc = fi_mr_desc(mr);
    return GCOLL_SUCCESS;
}

static void mr_dereg(void *ctx, void *handle)
{
    (void)ctx;
    fi_close(&((struct fid_mr *)handle)->fid);
}

static const char *or_empty(const char *s)
{
    return s ? s : "";
}

/* The PCI bus id of an entry's NIC, "" where libfabric does not say. */
static void nic_pci(const struct fi_info *i, char *buf, size_t len)
{
    buf[0] = '\0';
    if (i->nic && i->nic->bus_attr && i->nic->bus_attr->bus_type == FI_BUS_PCI) {
        const struct fi_pci_attr *p = &i->nic->bus_attr->attr.pci;
        snprintf(buf, len, "%04x:%02x:%02x.%x", (unsigned)p->domain_id, (unsigned)p->bus_id, (unsigned)p->device_id,
                 (unsigned)p->function_id);
    }
}

const struct fi_info *gcoll__ofi_closest_domain(const struct fi_info *first, const gcoll__topo_t *t,
                                                const cpu_set_t *cpus)
{
    const struct fi_info *entry[MAX_PROVIDERS];
    char pci[MAX_PROVIDERS][16];
    gcoll__nic_cand_t cand[MAX_PROVIDERS] = {{NULL, NULL}}; /* n >= 1: first is its own match */
    int n = 0;
    for (const struct fi_info *i = first; i && n < MAX_PROVIDERS; i = i->next)
        if (strcmp(i->fabric_attr->prov_name, first->fabric_attr->prov_name) == 0 &&
            strcmp(or_empty(i->fabric_attr->name), or_empty(first->fabric_attr->name)) == 0) {
            entry[n] = i;
            nic_pci(i, pci[n], sizeof(pci[n]));
            cand[n] = (gcoll__nic_cand_t){or_empty(i->domain_attr->name), pci[n]};
            n++;
        }
    char why[160];
    int k = gcoll__topo_pick_nic(t, cpus, cand, n, why, sizeof(why)), several = 0;
    for (int j = 1; j < n; j++)
        several |= strcmp(cand[j].name, cand[0].name) != 0;
    if (k < 0)
        k = 0;
    if (several)
        GCOLL_LOG(GCOLL_LOG_INFO, "ofi: provider %s, fabric %s: domain %s (%s)", first->fabric_attr->prov_name,
                  or_empty(first->fabric_attr->name), cand[k].name, why);
    return entry[k];
}

/* The fi_getinfo entry of provider prov (its first fabric, that fabric's domain closest to this
 * rank's cores); directed < 0 tries with FI_DIRECTED_RECV first. */
static gcoll_status_t find_info(const char *prov, uint32_t addr_format, int directed, struct fi_info **out)
{
    for (int d = directed < 0 ? 1 : directed; d >= (directed < 0 ? 0 : directed); d--) {
        struct fi_info *hints = make_hints(prov, addr_format, d), *list = NULL;
        if (!hints)
            return gcoll__error(GCOLL_ERR_NOMEM, "ofi transport: no memory for fi_getinfo hints");
        int rc = fi_getinfo(GCOLL_OFI_API, NULL, NULL, 0, hints, &list);
        fi_freeinfo(hints);
        if (rc == -FI_ENODATA)
            continue;
        if (rc)
            return gcoll__ofi_fail("fi_getinfo", rc, prov);
        for (struct fi_info *i = list; i; i = i->next)
            if (strcmp(i->fabric_attr->prov_name, prov) == 0) {
                *out = fi_dupinfo(gcoll__ofi_closest_domain(i, gcoll__topo(), &gcoll__topo()->binding));
                fi_freeinfo(list);
                return *out ? GCOLL_SUCCESS
                            : gcoll__error(GCOLL_ERR_NOMEM, "ofi transport: no memory for provider info");
            }
        fi_freeinfo(list);
    }
    return gcoll__error(GCOLL_ERR_UNSUPPORTED,
                        "ofi transport: provider %s offers no RDM endpoint with tagged "
                        "messages in order%s",
                        prov, addr_format ? " in rank 0's address format" : "");
}

/* Opens provider prov's fabric, domain, queues and endpoint into tp, and reads its name. */
static gcoll_status_t open_provider(gcoll__ofi_proc_t *tp, const char *prov, uint32_t addr_format, int directed)
{
    struct fi_info *info;
    GCOLL_CHECK(find_info(prov, addr_format, directed, &info));
    tp->info = info;
    snprintf(tp->prov, sizeof(tp->prov), "%s", prov);
    tp->directed = (info->caps & FI_DIRECTED_RECV) != 0;
    uint64_t fmt = info->ep_attr->mem_tag_format;
    int width = fmt ? 64 - __builtin_clzll(fmt) : 64;
    tp->chan_shift = ofi_chan_shift(tp->directed);
    if (width < tp->chan_shift + MIN_CHAN_BITS)
        return gcoll__error(GCOLL_ERR_UNSUPPORTED, "ofi transport: provider %s matches %d tag bits, gcoll needs %d",
                            prov, width, tp->chan_shift + MIN_CHAN_BITS);
    int chan_bits = width - tp->chan_shift < 32 ? width - tp->chan_shift : 32;
    tp->chan_limit = (uint64_t)1 << chan_bits;
    int rc = fi_fabric(info->fabric_attr, &tp->fabric, NULL);
    if (rc)
        return gcoll__ofi_fail("fi_fabric", rc, prov);
    if ((rc = fi_domain(tp->fabric, info, &tp->domain, NULL)))
        return gcoll__ofi_fail("fi_domain", rc, prov);
    struct fi_cq_attr cqa;
    memset(&cqa, 0, sizeof(cqa));
    cqa.format = FI_CQ_FORMAT_TAGGED;
    cqa.wait_obj = FI_WAIT_NONE; /* only ever polled */
    if ((rc = fi_cq_open(tp->domain, &cqa, &tp->cq, NULL)))
        return gcoll__ofi_fail("fi_cq_open", rc, prov);
    struct fi_av_attr ava;
    memset(&ava, 0, sizeof(ava));
    ava.type = info->domain_attr->av_type == FI_AV_UNSPEC ? FI_AV_TABLE : info->domain_attr->av_type;
    ava.count = tp->av_count ? tp->av_count : 1;
    if ((rc = fi_av_open(tp->domain, &ava, &tp->av, NULL)))
        return gcoll__ofi_fail("fi_av_open", rc, prov);
    if ((rc = fi_endpoint(tp->domain, info, &tp->ep, NULL)))
        return gcoll__ofi_fail("fi_endpoint", rc, prov);
    if ((rc = fi_ep_bind(tp->ep, &tp->av->fid, 0)) || (rc = fi_ep_bind(tp->ep, &tp->cq->fid, FI_TRANSMIT | FI_RECV)))
        return gcoll__ofi_fail("fi_ep_bind", rc, prov);
    if ((rc = fi_enable(tp->ep)))
        return gcoll__ofi_fail("fi_enable", rc, prov);
    tp->name_len = sizeof(tp->name);
    if ((rc = fi_getname(&tp->ep->fid, tp->name, &tp->name_len)))
        return gcoll__ofi_fail("fi_getname", rc, prov);
    uint64_t mr_mode = (uint64_t)info->domain_attr->mr_mode;
    tp->mr_local = (mr_mode & FI_MR_LOCAL) != 0;
    tp->mr_endpoint = (mr_mode & FI_MR_ENDPOINT) != 0;
    tp->mr_prov_key = (mr_mode & FI_MR_PROV_KEY) != 0;
    tp->next_key = 1;
    tp->max_msg_size = info->ep_attr->max_msg_size;
    tp->inject_size = info->tx_attr->inject_size;
    const gcoll__ofi_mr_ops_t ops = {mr_reg, mr_dereg, tp};
    return gcoll__ofi_mrcache_create(MR_CACHE_ENTRIES, &ops, &tp->mrc);
}

/* The distinct provider names fi_getinfo offers for what gcoll asks, in its order. */
/* Everything fi_getinfo offers for what gcoll asks, any provider; *list is NULL when nothing. */
static gcoll_status_t offered(struct fi_info **list)
{
    struct fi_info *hints = make_hints(NULL, 0, 0);
    *list = NULL;
    if (!hints)
        return gcoll__error(GCOLL_ERR_NOMEM, "ofi transport: no memory for fi_getinfo hints");
    int rc = fi_getinfo(GCOLL_OFI_API, NULL, NULL, 0, hints, list);
    fi_freeinfo(hints);
    if (rc && rc != -FI_ENODATA)
        return gcoll__ofi_fail("fi_getinfo", rc, "(any)");
    if (rc)
        *list = NULL;
    return GCOLL_SUCCESS;
}

static gcoll_status_t list_providers(char names[][64], int *n)
{
    struct fi_info *list;
    *n = 0;
    GCOLL_CHECK(offered(&list));
    for (struct fi_info *i = list; i && *n < MAX_PROVIDERS; i = i->next) {
        int seen = 0;
        for (int k = 0; k < *n && !seen; k++)
            seen = strcmp(names[k], i->fabric_attr->prov_name) == 0;
        if (!seen)
            snprintf(names[(*n)++], 64, "%s", i->fabric_attr->prov_name);
    }
    fi_freeinfo(list);
    return GCOLL_SUCCESS;
}

/* The first NIC provider fi_getinfo offers, by the same ranking that create() uses: the
 * automatic choice takes ofi between hosts where there is one. */
int gcoll__ofi_serves(char *why, size_t len)
{
    char names[MAX_PROVIDERS][64];
    int n = 0;
    if (list_providers(names, &n) == GCOLL_SUCCESS)
        for (int k = 0; k < n; k++)
            if (provider_class(names[k]) == CLASS_NIC) {
                GCOLL_LOG(GCOLL_LOG_INFO, "libfabric NIC provider %s found: ofi between hosts", names[k]);
                snprintf(why, len, "libfabric has a NIC provider");
                return 1;
            }
    snprintf(why, len, "no libfabric NIC provider");
    return 0;
}

static void join_names(char names[][64], int n, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int k = 0; k < n; k++)
        gcoll__append(buf, len, "%s%s", k ? ", " : "", names[k]);
}

/* Rank 0: the provider GCOLL_OFI_PROVIDER names, or the best one that opens. */
static gcoll_status_t choose(gcoll__ofi_proc_t *tp, choice_t *c)
{
    char names[MAX_PROVIDERS][64], on_offer[1024];
    int n;
    GCOLL_CHECK(list_providers(names, &n));
    join_names(names, n, on_offer, sizeof(on_offer));
    const char *want = gcoll__config.ofi_provider;
    int named = strcmp(want, "auto") != 0;
    if (named) {
        int found = -1;
        for (int k = 0; k < n && found < 0; k++) /* "verbs" also names "verbs;ofi_rxm" */
            if (strcmp(names[k], want) == 0 ||
                (strcspn(names[k], ";") == strlen(want) && strncmp(names[k], want, strlen(want)) == 0))
                found = k;
        if (found < 0)
            return gcoll__error(GCOLL_ERR_UNSUPPORTED,
                                "ofi transport: GCOLL_OFI_PROVIDER=%s is not available; "
                                "fi_getinfo offers RDM tagged providers: %s",
                                want, n ? on_offer : "none");
        gcoll_status_t st = open_provider(tp, names[found], 0, -1);
        if (st != GCOLL_SUCCESS)
            return gcoll__error(st, "GCOLL_OFI_PROVIDER=%s: %s", want, gcoll_last_error());
        snprintf(c->msg, sizeof(c->msg), "GCOLL_OFI_PROVIDER");
        return GCOLL_SUCCESS;
    }
    char failed[sizeof(c->msg)] = "";
    int nic_seen = 0;
    for (int cls = CLASS_NIC; cls < CLASS_LOCAL; cls++)
        for (int k = 0; k < n; k++) {
            if (provider_class(names[k]) != cls)
                continue;
            nic_seen |= cls == CLASS_NIC;
            gcoll_status_t st = open_provider(tp, names[k], 0, -1);
            if (st == GCOLL_SUCCESS) {
                snprintf(c->msg, sizeof(c->msg), "%s",
                         failed[0]              ? failed
                             : cls == CLASS_NIC ? "NIC provider"
                             : nic_seen         ? "no NIC provider opened"
                                                : "no NIC provider found");
                return GCOLL_SUCCESS;
            }
            gcoll__append(failed, sizeof(failed), "%s%s unusable: %s", failed[0] ? "; " : "", names[k],
                          gcoll_last_error());
            gcoll__ofi_proc_close_objects(tp); /* the next candidate starts clean */
        }
    return gcoll__error(GCOLL_ERR_UNSUPPORTED,
                        "ofi transport: no usable libfabric provider for RDM tagged "
                        "messages (offered: %s%s%s)",
                        n ? on_offer : "none", failed[0] ? "; " : "", failed);
}

static atomic_int announced; /* the choice is logged at info level once per process */

static void announce(const gcoll__ofi_proc_t *tp, const char *why)
{
    int level = atomic_exchange(&announced, 1) ? GCOLL_LOG_DEBUG : GCOLL_LOG_INFO;
    char limit[64] = "no message size limit";
    if (tp->max_msg_size != SIZE_MAX)
        snprintf(limit, sizeof(limit), "messages up to %zu bytes", tp->max_msg_size);
    GCOLL_LOG(level, "ofi: provider %s (%s); fabric %s, domain %s; receives match %s; %s; %s", tp->prov, why,
              tp->info->fabric_attr->name, tp->info->domain_attr->name,
              tp->directed ? "on the source address" : "on the sender's rank in the tag",
              tp->mr_local ? "buffers registered through the cache" : "no registration needed", limit);
}

/* Rank 0: the process's endpoint, or a new one on the provider choose() takes. */
static gcoll_status_t root_proc(choice_t *c, int size, gcoll__ofi_proc_t **out)
{
    gcoll__ofi_proc_t *p = gcoll__ofi_proc_get();
    if (p)
        snprintf(c->msg, sizeof(c->msg), "the process's endpoint");
    else {
        if (!(p = gcoll__ofi_proc_new()))
            return gcoll__error(GCOLL_ERR_NOMEM, "ofi transport: no memory for an endpoint");
        p->av_count = (size_t)size;
        gcoll_status_t st = choose(p, c);
        if (st != GCOLL_SUCCESS) {
            gcoll__ofi_proc_free(p);
            return st;
        }
        p = gcoll__ofi_proc_publish(p);
    }
    *out = p;
    snprintf(c->prov, sizeof(c->prov), "%s", p->prov);
    c->directed = p->directed;
    pthread_mutex_lock(&p->lock); /* a communicator's close may retire the endpoint meanwhile */
    int broken = p->broken[0] != 0;
    if (!broken)
        c->addr_format = p->info->addr_format;
    pthread_mutex_unlock(&p->lock);
    return broken ? gcoll__error(GCOLL_ERR_TRANSPORT, "%s", p->broken) : GCOLL_SUCCESS;
}

/* The others: the process's endpoint, which must be on rank 0's provider, or a new one on it. */
static gcoll_status_t other_proc(const choice_t *c, int size, gcoll__ofi_proc_t **out)
{
    gcoll__ofi_proc_t *p = gcoll__ofi_proc_get();
    if (!p) {
        if (!(p = gcoll__ofi_proc_new()))
            return gcoll__error(GCOLL_ERR_NOMEM, "ofi transport: no memory for an endpoint");
        p->av_count = (size_t)size;
        gcoll_status_t st = open_provider(p, c->prov, c->addr_format, c->directed);
        if (st != GCOLL_SUCCESS) {
            gcoll__ofi_proc_free(p);
            return st;
        }
        p = gcoll__ofi_proc_publish(p);
    }
    *out = p;
    if (strcmp(p->prov, c->prov) == 0 && p->directed == c->directed)
        return GCOLL_SUCCESS;
    return gcoll__error(GCOLL_ERR_INVALID_ARG,
                        "ofi transport: this process's endpoint, opened for an earlier communicator, is on provider "
                        "%s%s; rank 0's is on %s%s (HINT: GCOLL_OFI_PROVIDER must be the same on every rank)",
                        p->prov, p->directed ? " (directed receives)" : "", c->prov,
                        c->directed ? " (directed receives)" : "");
}

static gcoll_status_t create_fail(gcoll__tp_t *tp, gcoll_status_t st)
{
    gcoll__ofi_proc_put(tp->proc);
    free(tp);
    return st;
}

gcoll_status_t gcoll__ofi_create(const gcoll__bootstrap_t *boot, gcoll__tp_t **out)
{
    gcoll__tp_t *tp = calloc(1, sizeof(*tp));
    if (!tp)
        return gcoll__error(GCOLL_ERR_NOMEM, "ofi transport: no memory for an endpoint");
    tp->rank = boot->rank;
    tp->size = boot->size;
    tp->lost = -1;
    choice_t c;
    memset(&c, 0, sizeof(c));
    gcoll_status_t st = GCOLL_SUCCESS;
    if (boot->rank == 0) {
        st = root_proc(&c, tp->size, &tp->proc);
        c.ok = st == GCOLL_SUCCESS;
        c.status = st;
        if (!c.ok)
            snprintf(c.msg, sizeof(c.msg), "%s", gcoll_last_error());
    }
    if (gcoll__boot_bcast(boot->group, &c, sizeof(c), 0) != GCOLL_SUCCESS)
        return create_fail(tp,
                           gcoll__error(GCOLL_ERR_TRANSPORT, "ofi transport: broadcasting the provider choice failed"));
    if (!c.ok)
        return create_fail(tp, gcoll__error(c.status, "%s", c.msg));
    if (!c.directed && tp->size > 1 << GCOLL_OFI_RANK_BITS)
        return create_fail(tp,
                           gcoll__error(GCOLL_ERR_UNSUPPORTED,
                                        "ofi transport: provider %s cannot match receives on their source, and "
                                        "its tags name at most %d ranks; this communicator has %d",
                                        c.prov, 1 << GCOLL_OFI_RANK_BITS, tp->size));
    if (boot->rank != 0)
        st = other_proc(&c, tp->size, &tp->proc);
    /* Every rank must have opened it; the lowest that could not explains why to all. */
    struct {
        gcoll_status_t status;
        char msg[512];
    } why = {st, ""};
    int first_bad = st == GCOLL_SUCCESS ? tp->size : tp->rank;
    int64_t longest = st == GCOLL_SUCCESS ? (int64_t)tp->proc->name_len : 0;
    if (gcoll__boot_min_int(boot->group, &first_bad) != GCOLL_SUCCESS ||
        gcoll__boot_reduce_i64(boot->group, &longest, 1, 1) != GCOLL_SUCCESS)
        return create_fail(tp,
                           gcoll__error(GCOLL_ERR_TRANSPORT, "ofi transport: agreeing on provider %s failed", c.prov));
    if (first_bad < tp->size) {
        if (tp->rank == first_bad)
            snprintf(why.msg, sizeof(why.msg), "%s", gcoll_last_error());
        (void)gcoll__boot_bcast(boot->group, &why, sizeof(why), first_bad); /* the message says enough without it */
        return create_fail(tp,
                           gcoll__error(why.status,
                                        "ofi transport: rank %d could not open provider %s chosen by rank 0: %s",
                                        first_bad, c.prov, why.msg));
    }
    tp->name_max = (size_t)longest;
    if ((st = gcoll__ofi_proc_channel(tp->proc, boot->group, &tp->chan)) != GCOLL_SUCCESS)
        return create_fail(tp, st);
    tp->has_chan = 1;
    pthread_mutex_lock(&tp->proc->lock);
    if (tp->rank == 0 && !tp->proc->broken[0])
        announce(tp->proc, c.msg);
    pthread_mutex_unlock(&tp->proc->lock);
    GCOLL_LOG(GCOLL_LOG_DEBUG, "ofi: %d ranks on channel %llu of the process's endpoint", tp->size,
              (unsigned long long)tp->chan);
    *out = tp;
    return GCOLL_SUCCESS;
}

/* An address is the endpoint name's length (4 bytes), the name, zeros up to the longest, then
 * the process's pid (4 bytes) and pid space (8 bytes, liveness.h) for the liveness check. */
#define LIFE_BYTES 12
size_t gcoll__ofi_addr_len(gcoll__tp_t *tp)
{
    return sizeof(uint32_t) + tp->name_max + LIFE_BYTES;
}

gcoll_status_t gcoll__ofi_addr(gcoll__tp_t *tp, void *buf)
{
    uint32_t len = (uint32_t)tp->proc->name_len;
    int32_t pid = (int32_t)getpid();
    tp->space = gcoll__pid_space();
    memset(buf, 0, gcoll__ofi_addr_len(tp));
    memcpy(buf, &len, sizeof(len));
    memcpy((char *)buf + sizeof(len), tp->proc->name, tp->proc->name_len);
    char *life = (char *)buf + sizeof(len) + tp->name_max;
    memcpy(life, &pid, sizeof(pid));
    memcpy(life + sizeof(pid), &tp->space, sizeof(tp->space));
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll__ofi_connect(gcoll__tp_t *tp, const void *all_addrs)
{
    tp->peers = calloc((size_t)tp->size, sizeof(*tp->peers));
    tp->pids = calloc((size_t)tp->size, sizeof(*tp->pids));
    tp->spaces = calloc((size_t)tp->size, sizeof(*tp->spaces));
    if (!tp->peers || !tp->pids || !tp->spaces)
        return gcoll__error(GCOLL_ERR_NOMEM, "ofi transport: no memory for %d peer addresses", tp->size);
    size_t stride = gcoll__ofi_addr_len(tp);
    for (int i = 0; i < tp->size; i++) {
        const char *a = (const char *)all_addrs + (size_t)i * stride;
        uint32_t len;
        memcpy(&len, a, sizeof(len));
        memcpy(&tp->pids[i], a + sizeof(len) + tp->name_max, sizeof(tp->pids[i]));
        memcpy(&tp->spaces[i], a + sizeof(len) + tp->name_max + sizeof(tp->pids[i]), sizeof(tp->spaces[i]));
        if (len == 0 || len > tp->name_max)
            return gcoll__error(GCOLL_ERR_TRANSPORT,
                                "ofi transport: rank %d published a malformed address "
                                "(%u bytes, at most %zu expected)",
                                i, len, tp->name_max);
        pthread_mutex_lock(&tp->proc->lock);
        gcoll_status_t st = gcoll__ofi_proc_av(tp->proc, a + sizeof(len), len, &tp->peers[i]);
        pthread_mutex_unlock(&tp->proc->lock);
        if (st != GCOLL_SUCCESS)
            return gcoll__error(st, "rank %d's address: %s", i, gcoll_last_error());
    }
    return GCOLL_SUCCESS;
}

/* The communicator's cancelled operations must be out of the provider's hands before their
 * buffers go: the endpoint stays open for the others. */
void gcoll__ofi_close(gcoll__tp_t *tp)
{
    gcoll__ofi_proc_t *p = tp->proc;
    pthread_mutex_lock(&p->lock);
    int sends_left = 0;
    if (!gcoll__ofi_settle(tp, gcoll__config.timeout_s, SEND_WAIT_S, &sends_left)) {
        char why[320];
        snprintf(why, sizeof(why),
                 "ofi transport: provider %s still held a cancelled receive of a closed communicator after %g s "
                 "(GCOLL_TIMEOUT); the process's endpoint was closed to take its buffer back",
                 p->prov, gcoll__config.timeout_s);
        gcoll__ofi_proc_retire(p, why);
    }
    if (tp->has_chan && !sends_left) /* else its last held send lets it go */
        gcoll__ofi_proc_drop_channel(p, tp->chan);
    pthread_mutex_unlock(&p->lock);
    gcoll__ofi_proc_put(p);
    free(tp->peers);
    free(tp->pids);
    free(tp->spaces);
    free(tp);
}

static void describe(const struct fi_info *i, gcoll__ofi_offer_t *o)
{
    memset(o, 0, sizeof(*o));
    snprintf(o->prov, sizeof(o->prov), "%s", i->fabric_attr->prov_name);
    snprintf(o->fabric, sizeof(o->fabric), "%s", or_empty(i->fabric_attr->name));
    snprintf(o->domain, sizeof(o->domain), "%s", or_empty(i->domain_attr->name));
    nic_pci(i, o->pci, sizeof(o->pci));
}

gcoll_status_t gcoll__ofi_offers(gcoll__ofi_offer_t *out, int cap, int *n)
{
    struct fi_info *list;
    *n = 0;
    GCOLL_CHECK(offered(&list));
    for (struct fi_info *i = list; i && *n < cap; i = i->next) {
        gcoll__ofi_offer_t o;
        describe(i, &o);
        int seen = 0;
        for (int k = 0; k < *n && !seen; k++)
            seen = strcmp(out[k].prov, o.prov) == 0 && strcmp(out[k].fabric, o.fabric) == 0 &&
                strcmp(out[k].domain, o.domain) == 0;
        if (!seen)
            out[(*n)++] = o;
    }
    fi_freeinfo(list);
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll__ofi_probe(gcoll__ofi_offer_t *pick, char *why, size_t len)
{
    gcoll__ofi_proc_t *tp = gcoll__ofi_proc_new();
    if (!tp)
        return gcoll__error(GCOLL_ERR_NOMEM, "ofi transport: no memory for an endpoint");
    choice_t c;
    memset(&c, 0, sizeof(c));
    gcoll_status_t st = choose(tp, &c);
    if (st == GCOLL_SUCCESS) {
        describe(tp->info, pick);
        snprintf(why, len, "%s", c.msg);
    }
    gcoll__ofi_proc_free(tp);
    return st;
}

#else
int gcoll__ofi_serves(char *why, size_t len)
{
    snprintf(why, len, "no libfabric NIC provider"); /* built without libfabric */
    return 0;
}

gcoll_status_t gcoll__ofi_offers(gcoll__ofi_offer_t *out, int cap, int *n)
{
    (void)out;
    (void)cap;
    *n = 0;
    return gcoll__error(GCOLL_ERR_UNSUPPORTED, "ofi transport: built without libfabric (OFI=0)");
}

gcoll_status_t gcoll__ofi_probe(gcoll__ofi_offer_t *pick, char *why, size_t len)
{
    (void)pick;
    (void)why;
    (void)len;
    return gcoll__error(GCOLL_ERR_UNSUPPORTED, "ofi transport: built without libfabric (OFI=0)");
}
#endif
