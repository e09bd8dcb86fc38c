/* Topology discovery and the NIC choice: synthetic hwloc topologies and an XML file with PCI
 * network devices (tests/data/topo-2pack-4numa-nics.xml: 2 packages, NUMA nodes 0-3 of 4 PUs each;
 * eth0 virtio on the whole machine, eth1 on NUMA node 0, ib0 + mlx5_0 on package 1, eth2 on NUMA
 * node 3), whose counts are checked against the numbers written in it; this machine against
 * sysconf and /sys; and bad input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/topo.h"
#include "core/lane.h"
#include "unit.h"
#if GCOLL_HAVE_OFI
#include "transports/ofi/ofi_internal.h"
#endif

#define XML GCOLL_TEST_DATA "/topo-2pack-4numa-nics.xml"

static cpu_set_t cpus(int lo, int hi)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    for (int i = lo; i <= hi; i++)
        CPU_SET(i, &s);
    return s;
}

#if GCOLL_HAVE_HWLOC

static gcoll__topo_t *load_xml(void)
{
    static gcoll__topo_t t;
    gcoll_status_t st = gcoll__topo_load_xml(XML, &t);
    ck_assert_msg(st == GCOLL_SUCCESS, "loading %s: %s", XML, gcoll_last_error());
    return &t;
}

START_TEST(worker_cpus_follow_the_spec)
{
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    for (int c = 0; c < 4; c++)
        CPU_SET(c, &allowed);
    int got[8];
    ck_assert_int_eq(gcoll__worker_cpus("none", &allowed, 0, 1, 2, got, 8), 0);
    ck_assert_int_eq(gcoll__worker_cpus("2,4-5", &allowed, 0, 1, 3, got, 8), 3);
    ck_assert(got[0] == 2 && got[1] == 4 && got[2] == 5);
    ck_assert_int_eq(gcoll__worker_cpus("0-7", &allowed, 0, 1, 1, got, 3), 3); /* at most max */
    /* auto: from the back of the allowed cores, each local rank's workers after the previous' */
    ck_assert_int_eq(gcoll__worker_cpus("auto", &allowed, 0, 2, 1, got, 8), 1);
    ck_assert_int_eq(got[0], 3);
    ck_assert_int_eq(gcoll__worker_cpus("auto", &allowed, 1, 2, 1, got, 8), 1);
    ck_assert_int_eq(got[0], 2);
    ck_assert_int_eq(gcoll__worker_cpus("auto", &allowed, 1, 2, 2, got, 8), 2);
    ck_assert(got[0] == 1 && got[1] == 0);
    CPU_ZERO(&allowed);
    CPU_SET(6, &allowed); /* a rank bound to one core: its worker shares it */
    ck_assert_int_eq(gcoll__worker_cpus("auto", &allowed, 3, 4, 1, got, 8), 1);
    ck_assert_int_eq(got[0], 6);
}
END_TEST

START_TEST(synthetic_counts_and_caches)
{
    gcoll__topo_t t;
    ck_assert_int_eq(gcoll__topo_load_synthetic("pack:2 numa:2 l3:1(size=16MiB) l2:2(size=1MiB) l1d:1(size=48KiB) "
                                                "core:1 pu:2",
                                                &t),
                     GCOLL_SUCCESS);
    ck_assert(t.hwloc);
    ck_assert_int_eq(t.packages, 2);
    ck_assert_int_eq(t.numa_nodes, 4);
    ck_assert_int_eq(t.cores, 8);
    ck_assert_int_eq(t.pus, 16);
    ck_assert_uint_eq(t.l1d, 48 << 10);
    ck_assert_uint_eq(t.l2, 1 << 20);
    ck_assert_uint_eq(t.l3, 16 << 20);
    ck_assert_int_eq(t.nnics, 0);
    ck_assert_int_eq(CPU_COUNT(&t.binding), 16); /* not this machine: bound to every PU */

    ck_assert_int_eq(gcoll__topo_load_synthetic("pack:2 numa:2 core:4 pu:2", &t), GCOLL_SUCCESS);
    ck_assert_int_eq(t.packages, 2);
    ck_assert_int_eq(t.numa_nodes, 4);
    ck_assert_int_eq(t.cores, 16);
    ck_assert_int_eq(t.pus, 32);
    ck_assert_uint_eq(t.l1d + t.l2 + t.l3, 0);
}
END_TEST

START_TEST(xml_counts_caches_and_nics)
{
    const gcoll__topo_t *t = load_xml();
    ck_assert_int_eq(t->packages, 2);
    ck_assert_int_eq(t->numa_nodes, 4);
    ck_assert_int_eq(t->cores, 8);
    ck_assert_int_eq(t->pus, 16);
    ck_assert_uint_eq(t->l1d, 48 << 10);
    ck_assert_uint_eq(t->l2, 1 << 20);
    ck_assert_uint_eq(t->l3, 16 << 20);
    ck_assert_int_eq(t->nnics, 5); /* the disk vda is no NIC */
    ck_assert_ptr_null(gcoll__topo_find_nic(t, "vda", NULL));

    const gcoll__nic_t *eth0 = gcoll__topo_find_nic(t, "eth0", NULL);
    ck_assert_ptr_nonnull(eth0);
    ck_assert_str_eq(eth0->pci, "0000:00:03.0");
    ck_assert_int_eq(eth0->local, 0);

    const gcoll__nic_t *eth1 = gcoll__topo_find_nic(t, "eth1", NULL);
    ck_assert_ptr_nonnull(eth1);
    ck_assert_int_eq(eth1->kind, GCOLL_NIC_NETWORK);
    ck_assert_str_eq(eth1->pci, "0000:17:00.0");
    ck_assert(eth1->local);
    ck_assert_int_eq(eth1->numa, 0);
    ck_assert_int_eq(eth1->package, 0);
    cpu_set_t want = cpus(0, 3);
    ck_assert(CPU_EQUAL(&eth1->cpus, &want));
    want = cpus(0, 7);
    ck_assert(CPU_EQUAL(&eth1->package_cpus, &want));

    const gcoll__nic_t *mlx = gcoll__topo_find_nic(t, "mlx5_0", NULL);
    ck_assert_ptr_nonnull(mlx);
    ck_assert_int_eq(mlx->kind, GCOLL_NIC_OPENFABRICS);
    ck_assert_int_eq(mlx->numa, -1); /* attached to the package, across NUMA nodes 2 and 3 */
    ck_assert_int_eq(mlx->package, 1);
    want = cpus(8, 15);
    ck_assert(CPU_EQUAL(&mlx->cpus, &want));
    /* a PCI bus id finds the device whatever the name (ib0 shares it) */
    const gcoll__nic_t *by_pci = gcoll__topo_find_nic(t, "anything", "0000:98:00.0");
    ck_assert_ptr_nonnull(by_pci);
    ck_assert_int_eq(by_pci->package, 1);

    const gcoll__nic_t *eth2 = gcoll__topo_find_nic(t, "eth2", NULL);
    ck_assert_ptr_nonnull(eth2);
    ck_assert_int_eq(eth2->numa, 3);
    ck_assert_int_eq(eth2->package, 1);
}
END_TEST

/* pick over names, with this rank bound to PUs lo..hi; returns the index, reason in why */
static int pick(const gcoll__topo_t *t, int lo, int hi, const char *const *names, int n, char *why, size_t len)
{
    gcoll__nic_cand_t cand[8];
    for (int i = 0; i < n; i++)
        cand[i] = (gcoll__nic_cand_t){names[i], NULL};
    cpu_set_t b = cpus(lo, hi);
    return gcoll__topo_pick_nic(t, &b, cand, n, why, len);
}

START_TEST(nic_choice_prefers_local)
{
    const gcoll__topo_t *t = load_xml();
    const char *const all[] = {"eth0", "eth1", "eth2", "ib0"};
    char why[160];
    /* NUMA node 0: eth1 */
    ck_assert_int_eq(pick(t, 0, 3, all, 4, why, sizeof(why)), 1);
    ck_assert_str_eq(why, "eth1: NIC on NUMA node 0, local to this rank's cores");
    /* NUMA node 1, package 0: eth1 is on the same package */
    ck_assert_int_eq(pick(t, 4, 7, all, 4, why, sizeof(why)), 1);
    ck_assert_str_eq(why, "eth1: NIC on package 0, the package of this rank's cores");
    /* cores across both NUMA nodes of package 0: still its package */
    ck_assert_int_eq(pick(t, 0, 7, all, 4, why, sizeof(why)), 1);
    ck_assert_ptr_nonnull(strstr(why, "package 0"));
    /* NUMA node 3: eth2 (on the node) beats ib0 (on the package), whatever the order */
    ck_assert_int_eq(pick(t, 12, 15, all, 4, why, sizeof(why)), 2);
    const char *const ib_first[] = {"eth0", "ib0", "eth2"};
    ck_assert_int_eq(pick(t, 12, 15, ib_first, 3, why, sizeof(why)), 2);
    ck_assert_str_eq(why, "eth2: NIC on NUMA node 3, local to this rank's cores");
    /* NUMA node 2: ib0 and eth2 both on the package; the earlier wins */
    ck_assert_int_eq(pick(t, 8, 11, ib_first, 3, why, sizeof(why)), 1);
    ck_assert_int_eq(pick(t, 8, 11, all, 4, why, sizeof(why)), 2);
}
END_TEST

START_TEST(nic_choice_keeps_order_without_locality)
{
    const gcoll__topo_t *t = load_xml();
    const char *const all[] = {"eth0", "eth1", "eth2", "ib0"};
    const char *const virt[] = {"eth0", "veth3", "lo"};
    const char *const far[] = {"eth0", "ib0"};
    char why[160];
    /* unbound: no NIC is local to every core */
    ck_assert_int_eq(pick(t, 0, 15, all, 4, why, sizeof(why)), -1);
    ck_assert_str_eq(why, "no NIC local to this rank's cores");
    /* virtual NICs (no PCI locality) and names hwloc does not know */
    ck_assert_int_eq(pick(t, 0, 3, virt, 3, why, sizeof(why)), -1);
    ck_assert_str_eq(why, "no NIC locality known");
    /* the only located NIC is on the other package */
    ck_assert_int_eq(pick(t, 0, 3, far, 2, why, sizeof(why)), -1);
    ck_assert_str_eq(why, "no NIC local to this rank's cores");
    /* an empty binding */
    cpu_set_t none;
    CPU_ZERO(&none);
    gcoll__nic_cand_t c = {"eth1", NULL};
    ck_assert_int_eq(gcoll__topo_pick_nic(t, &none, &c, 1, why, sizeof(why)), -1);
    ck_assert_str_eq(why, "this rank's binding is unknown");
    /* a libfabric domain matched by its NIC's PCI bus id */
    gcoll__nic_cand_t dom[] = {{"eth0", NULL}, {"rdma_dev", "0000:98:00.0"}};
    ck_assert_int_eq(gcoll__topo_pick_nic(t, &(cpu_set_t){0}, dom, 2, why, sizeof(why)), -1);
    cpu_set_t p1 = cpus(9, 9);
    ck_assert_int_eq(gcoll__topo_pick_nic(t, &p1, dom, 2, why, sizeof(why)), 1);
    ck_assert_str_eq(why, "rdma_dev: NIC on package 1, the package of this rank's cores");
}
END_TEST

#if GCOLL_HAVE_OFI
/* An fi_getinfo entry as a provider would list it, prepended to list. */
static struct fi_info *offer(struct fi_info *list, const char *prov, const char *fabric, const char *domain)
{
    struct fi_info *i = fi_allocinfo();
    ck_assert_ptr_nonnull(i);
    i->fabric_attr->prov_name = strdup(prov);
    i->fabric_attr->name = strdup(fabric);
    i->domain_attr->name = strdup(domain);
    i->next = list;
    return i;
}

START_TEST(ofi_domain_choice_stays_on_one_fabric)
{
    const gcoll__topo_t *t = load_xml();
    /* fi_getinfo's order: eth0 (virtio), then eth2 (NUMA node 3) on one fabric; eth1 (NUMA node
     * 0) on another; eth2 again under another provider */
    struct fi_info *list = offer(NULL, "verbs;ofi_rxm", "10.0.0.0/24", "eth2");
    list = offer(list, "tcp;ofi_rxm", "10.1.0.0/24", "eth1");
    list = offer(list, "tcp;ofi_rxm", "10.0.0.0/24", "eth2");
    list = offer(list, "tcp;ofi_rxm", "10.0.0.0/24", "eth0");
    cpu_set_t node3 = cpus(12, 15), node0 = cpus(0, 3), all = cpus(0, 15);
    ck_assert_str_eq(gcoll__ofi_closest_domain(list, t, &node3)->domain_attr->name, "eth2");
    /* eth1 would be local, but it is on another fabric than the first entry's */
    ck_assert_ptr_eq(gcoll__ofi_closest_domain(list, t, &node0), list);
    ck_assert_ptr_eq(gcoll__ofi_closest_domain(list, t, &all), list);
    /* from the verbs entry on, only verbs entries count */
    struct fi_info *verbs = list->next->next->next;
    ck_assert_ptr_eq(gcoll__ofi_closest_domain(verbs, t, &node0), verbs);
    fi_freeinfo(list);
}
END_TEST
#endif

START_TEST(bad_inputs_never_crash)
{
    gcoll__topo_t t;
    ck_assert_int_eq(gcoll__topo_load_xml(GCOLL_TEST_DATA "/no-such-file.xml", &t), GCOLL_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(gcoll_last_error(), "path"));
    ck_assert_int_eq(gcoll__topo_load_xml(NULL, &t), GCOLL_ERR_INVALID_ARG);
    ck_assert_str_eq(gcoll_last_error(), "path is NULL");
    ck_assert_int_eq(gcoll__topo_load_xml(XML, NULL), GCOLL_ERR_INVALID_ARG);
    ck_assert_str_eq(gcoll_last_error(), "out is NULL");
    char junk[] = "/tmp/gcoll-topo-XXXXXX";
    int fd = mkstemp(junk);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "<topology><object type=", 23), 23);
    close(fd);
    ck_assert_int_eq(gcoll__topo_load_xml(junk, &t), GCOLL_ERR_INVALID_ARG);
    unlink(junk);
    ck_assert_int_eq(gcoll__topo_load_synthetic("pack:banana", &t), GCOLL_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(gcoll_last_error(), "description 'pack:banana'"));
    ck_assert_int_eq(gcoll__topo_load_synthetic("", &t), GCOLL_ERR_INVALID_ARG);
    ck_assert_int_eq(gcoll__topo_load_synthetic(NULL, &t), GCOLL_ERR_INVALID_ARG);
    char why[64];
    ck_assert_int_eq(gcoll__topo_pick_nic(&t, NULL, NULL, 3, why, sizeof(why)), -1);
    ck_assert_int_eq(gcoll__topo_pick_nic(NULL, NULL, NULL, 0, why, sizeof(why)), -1);
    ck_assert_ptr_null(gcoll__topo_find_nic(NULL, "eth0", NULL));
    ck_assert_int_eq(gcoll__topo_locality(NULL, NULL), GCOLL_LOCALITY_UNKNOWN);
}
END_TEST

/* Reads a number with an optional K/M suffix from a /sys file; 0 if absent. */
static size_t sys_size(const char *path)
{
    FILE *f = fopen(path, "r");
    unsigned long v = 0;
    char unit = 0;
    if (!f)
        return 0;
    if (fscanf(f, "%lu%c", &v, &unit) < 1)
        v = 0;
    fclose(f);
    return unit == 'K' ? v << 10 : unit == 'M' ? v << 20 : v;
}

static int sys_text(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
    return ok;
}

/* This machine's cores and packages as /sys lists them: distinct sibling lists and package ids. */
static void sys_counts(int *cores, int *packages)
{
    static char seen_core[1024][64];
    long pkg_seen[1024];
    *cores = *packages = 0;
    long conf = sysconf(_SC_NPROCESSORS_CONF);
    for (long c = 0; c < conf && c < 1024; c++) {
        char path[128], list[64], pkg[32];
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%ld/topology/core_cpus_list", c);
        if (!sys_text(path, list, sizeof(list))) {
            snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%ld/topology/thread_siblings_list", c);
            if (!sys_text(path, list, sizeof(list)))
                continue; /* offline */
        }
        int dup = 0;
        for (int k = 0; k < *cores && !dup; k++)
            dup = strcmp(seen_core[k], list) == 0;
        if (!dup)
            snprintf(seen_core[(*cores)++], sizeof(seen_core[0]), "%s", list);
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%ld/topology/physical_package_id", c);
        if (!sys_text(path, pkg, sizeof(pkg)))
            continue;
        long id = atol(pkg);
        dup = 0;
        for (int k = 0; k < *packages && !dup; k++)
            dup = pkg_seen[k] == id;
        if (!dup)
            pkg_seen[(*packages)++] = id;
    }
}

START_TEST(this_machine_matches_sys)
{
    const gcoll__topo_t *t = gcoll__topo();
    ck_assert(t->hwloc);
    ck_assert_int_eq(t->pus, (int)sysconf(_SC_NPROCESSORS_ONLN));
    int cores, packages;
    sys_counts(&cores, &packages);
    if (cores)
        ck_assert_int_eq(t->cores, cores);
    if (packages)
        ck_assert_int_eq(t->packages, packages);
    ck_assert_int_ge(t->numa_nodes, 1);
    /* caches of cpu0, by level and type */
    size_t want[4] = {0};
    for (int i = 0; i < 8; i++) {
        char path[128], type[32], level[8];
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        if (!sys_text(path, type, sizeof(type)))
            continue;
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        if (!sys_text(path, level, sizeof(level)) || strcmp(type, "Instruction") == 0)
            continue;
        int l = atoi(level);
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if (l >= 1 && l <= 3)
            want[l] = sys_size(path);
    }
    if (want[1])
        ck_assert_uint_eq(t->l1d, want[1]);
    if (want[2])
        ck_assert_uint_eq(t->l2, want[2]);
    if (want[3])
        ck_assert_uint_eq(t->l3, want[3]);
    /* the binding is what the kernel says */
    cpu_set_t mine;
    ck_assert_int_eq(sched_getaffinity(0, sizeof(mine), &mine), 0);
    ck_assert(CPU_EQUAL(&mine, &t->binding));
    /* every network NIC is an interface the kernel has */
    for (int i = 0; i < t->nnics; i++) {
        char path[128];
        snprintf(path, sizeof(path), "/sys/class/net/%s", t->nic[i].name);
        if (t->nic[i].kind == GCOLL_NIC_NETWORK)
            ck_assert_msg(access(path, F_OK) == 0, "%s: no such interface", t->nic[i].name);
    }
    /* once per process: the same data until released, then the same again */
    ck_assert_ptr_eq(gcoll__topo(), t);
    int pus = t->pus, nnics = t->nnics;
    gcoll__topo_release();
    ck_assert_int_eq(gcoll__topo()->pus, pus);
    ck_assert_int_eq(gcoll__topo()->nnics, nnics);
}
END_TEST

#else /* HWLOC=0 */

START_TEST(fallback_knows_cpus_and_says_so)
{
    const gcoll__topo_t *t = gcoll__topo();
    ck_assert(!t->hwloc);
    ck_assert_int_eq(t->pus, (int)sysconf(_SC_NPROCESSORS_ONLN));
    ck_assert_int_eq(t->nnics, 0);
    ck_assert_ptr_nonnull(strstr(t->note, "without hwloc"));
    gcoll__topo_t x;
    ck_assert_int_eq(gcoll__topo_load_xml(XML, &x), GCOLL_ERR_UNSUPPORTED);
    ck_assert_int_eq(gcoll__topo_load_synthetic("pack:2 pu:2", &x), GCOLL_ERR_UNSUPPORTED);
    char why[64];
    gcoll__nic_cand_t c = {"eth0", NULL};
    ck_assert_int_eq(gcoll__topo_pick_nic(t, &t->binding, &c, 1, why, sizeof(why)), -1);
}
END_TEST

#endif

START_TEST(cpulist_format)
{
    cpu_set_t s = cpus(0, 3);
    CPU_SET(8, &s);
    CPU_SET(10, &s);
    CPU_SET(11, &s);
    char buf[64];
    gcoll__topo_cpulist(&s, buf, sizeof(buf));
    ck_assert_str_eq(buf, "0-3,8,10-11");
    CPU_ZERO(&s);
    gcoll__topo_cpulist(&s, buf, sizeof(buf));
    ck_assert_str_eq(buf, "none");
    s = cpus(0, CPU_SETSIZE - 1);
    gcoll__topo_cpulist(&s, buf, sizeof(buf));
    ck_assert_str_eq(buf, "0-1023");
    for (int i = 0; i < CPU_SETSIZE; i += 2)
        CPU_CLR(i, &s);
    char tiny[8];
    gcoll__topo_cpulist(&s, tiny, sizeof(tiny)); /* cut, never overrun */
    ck_assert_str_eq(tiny, "1,3,5,7");
}
END_TEST

Suite *topo_suite(void)
{
    Suite *s = suite_create("topo");
    TCase *tc = tcase_create("topo");
#if GCOLL_HAVE_HWLOC
    tcase_add_test(tc, worker_cpus_follow_the_spec);
    tcase_add_test(tc, synthetic_counts_and_caches);
    tcase_add_test(tc, xml_counts_caches_and_nics);
    tcase_add_test(tc, nic_choice_prefers_local);
    tcase_add_test(tc, nic_choice_keeps_order_without_locality);
#if GCOLL_HAVE_OFI
    tcase_add_test(tc, ofi_domain_choice_stays_on_one_fabric);
#endif
    tcase_add_test(tc, bad_inputs_never_crash);
    tcase_add_test(tc, this_machine_matches_sys);
#else
    tcase_add_test(tc, fallback_knows_cpus_and_says_so);
#endif
    tcase_add_test(tc, cpulist_format);
    suite_add_tcase(s, tc);
    return s;
}
