/* The TCP transport's choice of interface (GCOLL_TCP_IFNAME), made together by every rank of the
 * bootstrap communicator so that all of them agree, or all of them fail with the same reason.
 * auto: among the non-loopback IPv4 interfaces whose name every rank has (in rank 0's order), the
 * first whose NIC is local to this rank's cores (src/base/topo.c), else the first; loopback only when
 * every rank shares this host and network namespace. */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"
#include "base/topo.h"
#include "transports/tcp/tcp.h"

#define MAX_IFS 16

/* What each rank tells the others: where it runs and which interfaces qualify there. */
typedef struct {
    char host[GCOLL_HOST_KEY_BYTES];
    int ok, n;
    char names[MAX_IFS][IFNAMSIZ];
} rank_ifs_t;

int gcoll__tcp_list_ifaces(gcoll__tcp_iface_t *out, int cap)
{
    struct ifaddrs *all;
    if (getifaddrs(&all) != 0)
        return 0;
    int n = 0;
    for (struct ifaddrs *a = all; a && n < cap; a = a->ifa_next) {
        if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET || !(a->ifa_flags & IFF_UP))
            continue;
        int seen = 0;
        for (int i = 0; i < n && !seen; i++)
            seen = strcmp(out[i].name, a->ifa_name) == 0;
        if (seen)
            continue;
        snprintf(out[n].name, sizeof(out[n].name), "%s", a->ifa_name);
        out[n].addr = ((struct sockaddr_in *)(void *)a->ifa_addr)->sin_addr;
        out[n].loopback = (a->ifa_flags & IFF_LOOPBACK) != 0;
        n++;
    }
    freeifaddrs(all);
    return n;
}

/* NCCL_SOCKET_IFNAME's syntax: prefixes, ^ excludes them, = makes them exact names. */
static int spec_matches(const char *spec, const char *name)
{
    int exclude = spec[0] == '^', exact = spec[0] == '=';
    const char *p = spec + (exclude || exact);
    int hit = 0;
    while (*p && !hit) {
        size_t len = strcspn(p, ",");
        hit = exact ? strlen(name) == len && strncmp(name, p, len) == 0 : strncmp(name, p, len) == 0;
        p += len + (p[len] == ',');
    }
    return exclude ? !hit : hit;
}

static int has_name(const rank_ifs_t *r, const char *name)
{
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->names[i], name) == 0)
            return 1;
    return 0;
}

static const gcoll__tcp_iface_t *find(const gcoll__tcp_iface_t *ifs, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(ifs[i].name, name) == 0)
            return &ifs[i];
    return NULL;
}

static gcoll_status_t no_match(const char *spec, const gcoll__tcp_iface_t *ifs, int n)
{
    char names[256] = "";
    for (int i = 0; i < n; i++)
        snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%.*s", i ? ", " : "", IFNAMSIZ - 1,
                 ifs[i].name);
    return gcoll__error(GCOLL_ERR_INVALID_ARG,
                        "tcp: GCOLL_TCP_IFNAME='%s' matches no IPv4 interface that is up; this host has: %s", spec,
                        n ? names : "none");
}

/* auto's preference among n interface names every host has, in order: the index of the first
 * whose NIC is local to this rank's cores, else 0; why says which, or why none is. */
static int prefer_local(const char *const *names, int n, char *why, size_t len)
{
    gcoll__nic_cand_t cand[MAX_IFS * 2];
    if (n > MAX_IFS * 2)
        n = MAX_IFS * 2;
    for (int i = 0; i < n; i++)
        cand[i] = (gcoll__nic_cand_t){names[i], NULL};
    const gcoll__topo_t *t = gcoll__topo();
    int k = gcoll__topo_pick_nic(t, &t->binding, cand, n, why, len);
    return k < 0 ? 0 : k;
}

/* Decides from what every rank reported; all ranks reach the same verdict, but for auto's
 * preference of a NIC local to this rank's cores among the interfaces every host has. */
static gcoll_status_t decide(const gcoll__bootstrap_t *boot, const rank_ifs_t *all, const gcoll__tcp_iface_t *ifs,
                             int n, const gcoll__tcp_iface_t **pick, char *reason, size_t rlen)
{
    const char *spec = gcoll__config.tcp_ifname;
    if (!all[boot->rank].ok)
        return no_match(spec, ifs, n);
    for (int r = 0; r < boot->size; r++)
        if (!all[r].ok)
            return gcoll__error(GCOLL_ERR_INVALID_ARG,
                                "tcp: rank %d has no interface matching "
                                "GCOLL_TCP_IFNAME='%s'",
                                r, spec);
    if (strcmp(spec, "auto") != 0) {
        for (int i = 0; i < n && !*pick; i++)
            if (spec_matches(spec, ifs[i].name))
                *pick = &ifs[i];
        snprintf(reason, rlen, "as GCOLL_TCP_IFNAME asks");
        return GCOLL_SUCCESS;
    }
    const char *common[MAX_IFS];
    int ncommon = 0;
    for (int i = 0; i < all[0].n && i < MAX_IFS; i++) {
        int everywhere = 1;
        for (int r = 1; r < boot->size && everywhere; r++)
            everywhere = has_name(&all[r], all[0].names[i]);
        if (everywhere && find(ifs, n, all[0].names[i]))
            common[ncommon++] = all[0].names[i];
    }
    if (ncommon) {
        char why[160];
        *pick = find(ifs, n, common[prefer_local(common, ncommon, why, sizeof(why))]);
        snprintf(reason, rlen, "non-loopback, on every host; %s", why);
        return GCOLL_SUCCESS;
    }
    int one_host = 1, lacking = -1;
    for (int r = 0; r < boot->size; r++) {
        one_host &= strcmp(all[r].host, all[0].host) == 0;
        if (all[r].n == 0 && lacking < 0)
            lacking = r;
    }
    if (one_host) {
        for (int i = 0; i < n && !*pick; i++)
            if (ifs[i].loopback)
                *pick = &ifs[i];
        snprintf(reason, rlen, "loopback: every rank is on this host, which has no usable non-loopback interface");
        return *pick ? GCOLL_SUCCESS : gcoll__error(GCOLL_ERR_SYSTEM, "tcp: no IPv4 interface is up on this host");
    }
    if (lacking >= 0)
        return gcoll__error(GCOLL_ERR_SYSTEM,
                            "tcp: rank %d has no non-loopback IPv4 interface and the ranks "
                            "span several hosts; HINT: set GCOLL_TCP_IFNAME",
                            lacking);
    *pick = find(ifs, n, all[boot->rank].names[0]);
    snprintf(reason, rlen, "non-loopback; no interface name is common to every host");
    return GCOLL_SUCCESS;
}

/* What this rank tells the others: its host and the interfaces GCOLL_TCP_IFNAME lets it use. */
static void qualify(const gcoll__tcp_iface_t *ifs, int n, rank_ifs_t *mine)
{
    const char *spec = gcoll__config.tcp_ifname;
    int is_auto = strcmp(spec, "auto") == 0;
    memset(mine, 0, sizeof(*mine));
    gcoll__boot_host_key(mine->host, sizeof(mine->host));
    for (int i = 0; i < n && mine->n < MAX_IFS; i++)
        if (is_auto ? !ifs[i].loopback : spec_matches(spec, ifs[i].name))
            snprintf(mine->names[mine->n++], IFNAMSIZ, "%.*s", IFNAMSIZ - 1, ifs[i].name);
    mine->ok = is_auto || mine->n > 0;
}

gcoll_status_t gcoll__tcp_probe(gcoll__tcp_iface_t *pick, char *why, size_t len)
{
    gcoll__tcp_iface_t ifs[MAX_IFS * 2];
    int n = gcoll__tcp_list_ifaces(ifs, MAX_IFS * 2);
    rank_ifs_t mine;
    qualify(ifs, n, &mine);
    const gcoll__bootstrap_t alone = {NULL, 0, 1, NULL};
    const gcoll__tcp_iface_t *p = NULL;
    GCOLL_CHECK(decide(&alone, &mine, ifs, n, &p, why, len));
    *pick = *p;
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll__tcp_choose_if(const gcoll__bootstrap_t *boot, struct in_addr *addr)
{
    gcoll__tcp_iface_t ifs[MAX_IFS * 2];
    int n = gcoll__tcp_list_ifaces(ifs, MAX_IFS * 2);
    rank_ifs_t mine;
    qualify(ifs, n, &mine);
    rank_ifs_t *all = calloc((size_t)boot->size, sizeof(*all));
    if (!all)
        return gcoll__error(GCOLL_ERR_NOMEM, "tcp: no memory for the interface lists");
    gcoll_status_t st = gcoll__boot_allgather(boot->group, &mine, all, sizeof(mine));
    const gcoll__tcp_iface_t *pick = NULL;
    char reason[256] = "";
    if (st == GCOLL_SUCCESS)
        st = decide(boot, all, ifs, n, &pick, reason, sizeof(reason));
    free(all);
    if (st != GCOLL_SUCCESS)
        return st;
    char text[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &pick->addr, text, sizeof(text));
    GCOLL_LOG(GCOLL_LOG_INFO, "tcp: using %s %s (%s)", pick->name, text, reason);
    *addr = pick->addr;
    return GCOLL_SUCCESS;
}
