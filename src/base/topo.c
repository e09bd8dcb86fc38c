/* Topology discovery (see topo.h): hwloc with I/O discovery when built with it (HWLOC=1), copied
 * into plain data and the hwloc topology destroyed at once; without hwloc, sysconf and
 * sched_getaffinity. Then the NIC preference of the network transports, a pure function. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#if GCOLL_HAVE_HWLOC
#include <hwloc.h>
#endif

#include "base/error.h"
#include "base/log.h"
#include "base/topo.h"

static pthread_mutex_t topo_lock = PTHREAD_MUTEX_INITIALIZER;
static gcoll__topo_t this_node;
static int discovered;

static int is_subset(const cpu_set_t *a, const cpu_set_t *b)
{
    cpu_set_t both;
    CPU_AND(&both, a, b);
    return CPU_EQUAL(&both, a);
}

void gcoll__topo_cpulist(const cpu_set_t *set, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < CPU_SETSIZE && used < len; i++) {
        if (!CPU_ISSET(i, set) || (i > 0 && CPU_ISSET(i - 1, set)))
            continue; /* not in the set, or inside a run printed already */
        int last = i;
        while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, set))
            last++;
        int n = last > i ? snprintf(buf + used, len - used, "%s%d-%d", used ? "," : "", i, last)
                         : snprintf(buf + used, len - used, "%s%d", used ? "," : "", i);
        used += n > 0 ? (size_t)n : 0;
    }
    if (!buf[0])
        snprintf(buf, len, "none");
}

/* What the kernel tells without hwloc: online logical CPUs and this process's binding. */
static void discover_fallback(gcoll__topo_t *t, const char *why)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    memset(t, 0, sizeof(*t));
    t->pus = t->cores = n > 0 ? (int)n : 0;
    snprintf(t->note, sizeof(t->note),
             "%.150s: cores counted as online logical CPUs; packages, NUMA nodes, caches "
             "and NICs unknown",
             why);
    if (sched_getaffinity(0, sizeof(t->binding), &t->binding) != 0)
        CPU_ZERO(&t->binding);
}

#if GCOLL_HAVE_HWLOC

static void to_cpuset(hwloc_const_bitmap_t b, cpu_set_t *out)
{
    CPU_ZERO(out);
    if (!b)
        return;
    for (int i = hwloc_bitmap_first(b); i >= 0 && i < CPU_SETSIZE; i = hwloc_bitmap_next(b, i))
        CPU_SET(i, out);
}

static size_t cache_bytes(hwloc_topology_t topo, hwloc_obj_type_t type)
{
    hwloc_obj_t c = hwloc_get_obj_by_type(topo, type, 0);
    return c && c->attr ? (size_t)c->attr->cache.size : 0;
}

/* A network or OpenFabrics OS device, with the cores of its nearest non-I/O ancestor unless that
 * is the whole machine (a virtual NIC, or a machine with one NUMA node: no locality to prefer). */
static void add_nic(hwloc_topology_t topo, hwloc_obj_t os, gcoll__topo_t *t)
{
    hwloc_obj_osdev_type_t type = os->attr->osdev.type;
    if ((type != HWLOC_OBJ_OSDEV_NETWORK && type != HWLOC_OBJ_OSDEV_OPENFABRICS) || !os->name ||
        t->nnics == GCOLL_TOPO_MAX_NICS)
        return;
    gcoll__nic_t *nic = &t->nic[t->nnics++];
    memset(nic, 0, sizeof(*nic));
    snprintf(nic->name, sizeof(nic->name), "%s", os->name);
    nic->kind = type == HWLOC_OBJ_OSDEV_NETWORK ? GCOLL_NIC_NETWORK : GCOLL_NIC_OPENFABRICS;
    nic->numa = nic->package = -1;
    hwloc_obj_t dev = os->parent;
    if (dev && dev->type == HWLOC_OBJ_PCI_DEVICE)
        snprintf(nic->pci, sizeof(nic->pci), "%04x:%02x:%02x.%x", (unsigned)dev->attr->pcidev.domain,
                 (unsigned)dev->attr->pcidev.bus, (unsigned)dev->attr->pcidev.dev, (unsigned)dev->attr->pcidev.func);
    hwloc_obj_t at = hwloc_get_non_io_ancestor_obj(topo, os);
    hwloc_obj_t root = hwloc_get_root_obj(topo);
    if (!at || !at->cpuset || hwloc_bitmap_isincluded(root->cpuset, at->cpuset))
        return;
    nic->local = 1;
    to_cpuset(at->cpuset, &nic->cpus);
    if (at->nodeset && hwloc_bitmap_weight(at->nodeset) == 1)
        nic->numa = hwloc_bitmap_first(at->nodeset);
    hwloc_obj_t pkg = at->type == HWLOC_OBJ_PACKAGE ? at : hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, at);
    if (pkg) {
        nic->package = (int)pkg->os_index;
        to_cpuset(pkg->cpuset, &nic->package_cpus);
    }
}

enum { FROM_SYSTEM, FROM_XML, FROM_SYNTHETIC };

static gcoll_status_t discover_hwloc(int from, const char *arg, gcoll__topo_t *t)
{
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0)
        return gcoll__error(GCOLL_ERR_NOMEM, "hwloc_topology_init failed");
    /* this machine: every PU, also those a cgroup keeps from us (the binding says which we have) */
    int rc = from == FROM_SYSTEM ? hwloc_topology_set_flags(topo, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED)
        : from == FROM_XML       ? hwloc_topology_set_xml(topo, arg)
                                 : hwloc_topology_set_synthetic(topo, arg);
#if HWLOC_API_VERSION >= 0x00020100
    /* Linux's own backend reads PCI devices and their locality from sysfs; the libpciaccess
     * component adds nothing gcoll uses and leaks about 1 KiB per load. */
    if (rc == 0 && from == FROM_SYSTEM)
        hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "pci");
#endif
    if (rc == 0)
        rc = hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (rc == 0)
        rc = hwloc_topology_load(topo);
    if (rc != 0) {
        hwloc_topology_destroy(topo);
        return from == FROM_SYSTEM ? gcoll__error(GCOLL_ERR_SYSTEM, "hwloc could not discover this machine")
            : from == FROM_XML     ? gcoll__error(GCOLL_ERR_INVALID_ARG,
                                                  "path '%s' is not a readable hwloc XML "
                                                      "topology",
                                                  arg)
                                   : gcoll__error(GCOLL_ERR_INVALID_ARG,
                                                  "description '%s' is not a valid hwloc "
                                                      "synthetic topology",
                                                  arg);
    }
    memset(t, 0, sizeof(*t));
    t->hwloc = 1;
    t->packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
    t->numa_nodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    t->cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    t->pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    t->l1d = cache_bytes(topo, HWLOC_OBJ_L1CACHE);
    t->l2 = cache_bytes(topo, HWLOC_OBJ_L2CACHE);
    t->l3 = cache_bytes(topo, HWLOC_OBJ_L3CACHE);
    for (hwloc_obj_t os = hwloc_get_next_osdev(topo, NULL); os; os = hwloc_get_next_osdev(topo, os))
        add_nic(topo, os, t);
    if (from != FROM_SYSTEM)
        to_cpuset(hwloc_get_root_obj(topo)->cpuset, &t->binding);
    else if (sched_getaffinity(0, sizeof(t->binding), &t->binding) != 0)
        snprintf(t->note, sizeof(t->note), "this process's binding is unknown (more than %d CPUs?)", CPU_SETSIZE);
    hwloc_topology_destroy(topo);
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll__topo_load_xml(const char *path, gcoll__topo_t *out)
{
    if (!path || !out)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s is NULL", path ? "out" : "path");
    return discover_hwloc(FROM_XML, path, out);
}

gcoll_status_t gcoll__topo_load_synthetic(const char *description, gcoll__topo_t *out)
{
    if (!description || !out)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s is NULL", description ? "out" : "description");
    return discover_hwloc(FROM_SYNTHETIC, description, out);
}

static void discover(gcoll__topo_t *t)
{
    if (discover_hwloc(FROM_SYSTEM, NULL, t) == GCOLL_SUCCESS)
        return;
    char why[160];
    snprintf(why, sizeof(why), "%s", gcoll_last_error());
    gcoll__error_clear();
    discover_fallback(t, why);
}

#else /* built without hwloc */

gcoll_status_t gcoll__topo_load_xml(const char *path, gcoll__topo_t *out)
{
    (void)out;
    return gcoll__error(GCOLL_ERR_UNSUPPORTED, "built without hwloc (HWLOC=0): cannot load path '%s'",
                        path ? path : "(null)");
}

gcoll_status_t gcoll__topo_load_synthetic(const char *description, gcoll__topo_t *out)
{
    (void)out;
    return gcoll__error(GCOLL_ERR_UNSUPPORTED, "built without hwloc (HWLOC=0): cannot load description '%s'",
                        description ? description : "(null)");
}

static void discover(gcoll__topo_t *t)
{
    discover_fallback(t, "built without hwloc (HWLOC=0)");
}

#endif

const gcoll__topo_t *gcoll__topo(void)
{
    pthread_mutex_lock(&topo_lock);
    if (!discovered) {
        discover(&this_node);
        discovered = 1;
    }
    pthread_mutex_unlock(&topo_lock);
    return &this_node;
}

void gcoll__topo_release(void)
{
    pthread_mutex_lock(&topo_lock);
    discovered = 0;
    pthread_mutex_unlock(&topo_lock);
}

const gcoll__nic_t *gcoll__topo_find_nic(const gcoll__topo_t *t, const char *name, const char *pci)
{
    for (int i = 0; t && i < t->nnics; i++)
        if (pci && pci[0] ? strcmp(t->nic[i].pci, pci) == 0 : name && strcmp(t->nic[i].name, name) == 0)
            return &t->nic[i];
    return NULL;
}

gcoll__locality_t gcoll__topo_locality(const gcoll__nic_t *nic, const cpu_set_t *cpus)
{
    if (!nic || !nic->local || !cpus || CPU_COUNT(cpus) == 0)
        return GCOLL_LOCALITY_UNKNOWN;
    if (is_subset(cpus, &nic->cpus))
        return nic->numa >= 0 ? GCOLL_LOCALITY_NUMA : GCOLL_LOCALITY_PACKAGE;
    if (nic->package >= 0 && is_subset(cpus, &nic->package_cpus))
        return GCOLL_LOCALITY_PACKAGE;
    return GCOLL_LOCALITY_REMOTE;
}

int gcoll__topo_pick_nic(const gcoll__topo_t *t, const cpu_set_t *cpus, const gcoll__nic_cand_t *cand, int n,
                         char *reason, size_t len)
{
    int best = -1, known = 0;
    gcoll__locality_t best_loc = GCOLL_LOCALITY_REMOTE;
    const gcoll__nic_t *best_nic = NULL;
    for (int i = 0; cand && i < n; i++) {
        const gcoll__nic_t *nic = gcoll__topo_find_nic(t, cand[i].name, cand[i].pci);
        gcoll__locality_t loc = gcoll__topo_locality(nic, cpus);
        known |= loc != GCOLL_LOCALITY_UNKNOWN;
        if (loc > best_loc) {
            best = i;
            best_loc = loc;
            best_nic = nic;
        }
    }
    if (best_nic && best_loc == GCOLL_LOCALITY_NUMA)
        snprintf(reason, len, "%s: NIC on NUMA node %d, local to this rank's cores", cand[best].name, best_nic->numa);
    else if (best_nic)
        snprintf(reason, len, "%s: NIC on package %d, the package of this rank's cores", cand[best].name,
                 best_nic->package);
    else if (!cpus || CPU_COUNT(cpus) == 0)
        snprintf(reason, len, "this rank's binding is unknown");
    else if (known)
        snprintf(reason, len, "no NIC local to this rank's cores");
    else
        snprintf(reason, len, "no NIC locality known");
    return best;
}

/* "48K", "2M", "480M": a size in the largest binary unit that divides it. */
static void format_bytes(size_t v, char *buf, size_t len)
{
    static const char units[] = "BKMG";
    int u = 0;
    while (u < 3 && v >= 1024 && v % 1024 == 0) {
        v /= 1024;
        u++;
    }
    snprintf(buf, len, "%zu%c", v, units[u]);
}

void gcoll__topo_log(void)
{
    const gcoll__topo_t *t = gcoll__topo();
    if (GCOLL_LOG_INFO > gcoll__log_level)
        return;
    char l1[24], l2[24], l3[24], nics[512] = "", bind[256];
    format_bytes(t->l1d, l1, sizeof(l1));
    format_bytes(t->l2, l2, sizeof(l2));
    format_bytes(t->l3, l3, sizeof(l3));
    static const char *const where[] = {"no locality", "remote", "on this rank's package", "local"};
    for (int i = 0; i < t->nnics; i++) {
        const gcoll__nic_t *nic = &t->nic[i];
        size_t used = strlen(nics);
        snprintf(nics + used, sizeof(nics) - used, "%s%s (%s)", i ? ", " : "", nic->name,
                 where[gcoll__topo_locality(nic, &t->binding)]);
    }
    gcoll__topo_cpulist(&t->binding, bind, sizeof(bind));
    if (t->hwloc)
        GCOLL_LOG(GCOLL_LOG_INFO,
                  "topology: packages %d, NUMA nodes %d, cores %d, PUs %d; L1d %s, L2 %s, L3 %s; "
                  "NICs: %s; bound to PUs %s%s%s",
                  t->packages, t->numa_nodes, t->cores, t->pus, l1, l2, l3, t->nnics ? nics : "none", bind,
                  t->note[0] ? "; " : "", t->note);
    else
        GCOLL_LOG(GCOLL_LOG_INFO, "topology: logical CPUs %d; bound to PUs %s; %s", t->pus, bind, t->note);
}
