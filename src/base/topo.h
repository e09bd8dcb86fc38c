/* This node's hardware as gcoll sees it: packages, NUMA nodes, cores, PUs, cache sizes, the NICs
 * and the cores they attach to, and this process's binding. Discovered once per process (hwloc;
 * without it sysconf and sched_getaffinity, which know the logical CPUs and the binding only),
 * kept as plain data and forgotten at finalize. The network transports' NIC preference is a
 * pure function of it (gcoll__topo_pick_nic), so tests can feed it any topology. */
#ifndef GCOLL_TOPO_H
#define GCOLL_TOPO_H

#include <sched.h>
#include <stddef.h>

#include "gcoll.h"

#define GCOLL_TOPO_MAX_NICS 32

typedef enum { GCOLL_NIC_NETWORK, GCOLL_NIC_OPENFABRICS } gcoll__nic_kind_t;

/* How close a NIC is to a set of cores, worst first. */
typedef enum {
    GCOLL_LOCALITY_UNKNOWN, /* the NIC hangs off the whole machine (virtual, or one NUMA node) */
    GCOLL_LOCALITY_REMOTE,  /* attached to other cores than these */
    GCOLL_LOCALITY_PACKAGE, /* on these cores' package, another NUMA node */
    GCOLL_LOCALITY_NUMA     /* attached to these cores' NUMA node */
} gcoll__locality_t;

typedef struct {
    char name[32];          /* the OS device name: eth0, ib0, mlx5_0 */
    gcoll__nic_kind_t kind; /* network interface, or OpenFabrics (verbs) device */
    char pci[16];           /* PCI bus id "0000:17:00.0"; "" when not on PCI */
    int local;              /* 1: attached to part of the machine (the cpus below); 0: no locality */
    int numa;               /* OS index of the one NUMA node it is attached to, else -1 */
    int package;            /* OS index of its package, else -1 */
    cpu_set_t cpus;         /* the cores of the object it is attached to */
    cpu_set_t package_cpus; /* the cores of its package (empty when package is -1) */
} gcoll__nic_t;

typedef struct {
    int hwloc;                            /* 1: discovered by hwloc; 0: the fallback (see note) */
    char note[256];                       /* what is unknown and why; "" when nothing */
    int packages, numa_nodes, cores, pus; /* 0: unknown */
    size_t l1d, l2, l3;                   /* bytes of one data or unified cache of each level; 0: none known */
    int nnics;
    gcoll__nic_t nic[GCOLL_TOPO_MAX_NICS];
    cpu_set_t machine; /* every PU */
    cpu_set_t binding; /* the PUs this process may run on (read at discovery) */
} gcoll__topo_t;

/* This node, discovered on the first call (thread-safe, never fails: what hwloc cannot tell is
 * unknown and said so in note). Later calls return the same data until gcoll__topo_release. */
const gcoll__topo_t *gcoll__topo(void);
void gcoll__topo_release(void); /* at finalize: the next gcoll__topo() discovers again */
void gcoll__topo_log(void);     /* one info-level line: counts, caches, NICs, binding */

/* For tests: a topology from an hwloc XML file or a synthetic description ("pack:2 core:4 pu:2")
 * instead of this machine; its binding is then every PU. GCOLL_ERR_UNSUPPORTED without hwloc,
 * GCOLL_ERR_INVALID_ARG (naming the argument) when hwloc refuses the input. */
gcoll_status_t gcoll__topo_load_xml(const char *path, gcoll__topo_t *out);
gcoll_status_t gcoll__topo_load_synthetic(const char *description, gcoll__topo_t *out);

/* The NIC named name (OS device name), or on PCI bus id pci when pci is non-empty; NULL if none. */
const gcoll__nic_t *gcoll__topo_find_nic(const gcoll__topo_t *t, const char *name, const char *pci);
gcoll__locality_t gcoll__topo_locality(const gcoll__nic_t *nic, const cpu_set_t *cpus);

/* A candidate for the NIC choice: an interface or libfabric domain name, and its PCI bus id
 * when known (NULL or "" otherwise: matched by name). */
typedef struct {
    const char *name;
    const char *pci;
} gcoll__nic_cand_t;

/* The pure decision: among n candidates in the caller's order of preference, the index of the
 * first whose NIC is on cpus' NUMA node, else the first on their package; the reason (for the
 * logs: "eth1: NIC on NUMA node 0, local to this rank's cores") in reason. -1, with the reason,
 * when none is local (virtual NICs, no NIC found, cpus spanning packages): the caller
 * keeps its own order then. */
int gcoll__topo_pick_nic(const gcoll__topo_t *t, const cpu_set_t *cpus, const gcoll__nic_cand_t *cand, int n,
                         char *reason, size_t len);

/* "0-3,8,10-11" (cut at len); "none" for an empty set. */
void gcoll__topo_cpulist(const cpu_set_t *set, char *buf, size_t len);

#endif
