/* gcoll-info: what gcoll sees on this machine, in sections: the topology, the transports built in
 * and what each would use here, and every GCOLL_* variable with its value and its source. With
 * --markdown, only the README's variable table (tests/readme_vars.sh compares the two). Needs no
 * MPI job: it links the static library to reach the internals it reports on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <mpi.h>

#include "gcoll.h"
#include "choose.h"
#include "config.h"
#include "context.h"
#include "error.h"
#include "tcp/tcp.h"
#include "topo.h"
#include "cuda/cuda.h"
#include "select_table.h"

#define MAX_LISTED 32

/* Markdown table cells: a '|' inside one must be escaped. */
static void put_cell(const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            putchar('\\');
        putchar(*s);
    }
}

static int print_markdown(void)
{
    for (size_t i = 0; i < gcoll_config_count(); i++) {
        gcoll_config_var_t v;
        if (gcoll_config_var(i, &v) != GCOLL_SUCCESS)
            return 1;
        printf("| `%s` | `%s` | ", v.name, v.default_str);
        put_cell(v.type);
        printf(" | ");
        put_cell(v.description);
        printf(" |\n");
    }
    return 0;
}

static void section(const char *title)
{
    printf("\n== %s\n", title);
}

/* "48K", "2M": a cache size in the largest binary unit that divides it; "unknown" for 0. */
static const char *bytes(size_t v, char *buf, size_t len)
{
    static const char units[] = "BKMG";
    int u = 0;
    while (u < 3 && v >= 1024 && v % 1024 == 0) {
        v /= 1024;
        u++;
    }
    if (v == 0)
        snprintf(buf, len, "unknown");
    else
        snprintf(buf, len, "%zu%c", v, units[u]);
    return buf;
}

/* "23.5G": a capacity, rounded. */
static const char *capacity(double v, char *buf, size_t len)
{
    static const char units[] = "BKMGT";
    int u = 0;
    while (u < 4 && v >= 1024) {
        v /= 1024;
        u++;
    }
    snprintf(buf, len, "%.1f%c", v, units[u]);
    return buf;
}

static void print_nic(const gcoll__topo_t *t, const gcoll__nic_t *nic)
{
    static const char *const to_me[] = {"", "not local to this process's cores",
                                        "on the package of this process's cores",
                                        "local to this process's cores"};
    char cpus[128], where[256];
    gcoll__topo_cpulist(&nic->cpus, cpus, sizeof(cpus));
    if (!nic->local)
        snprintf(where, sizeof(where), "no locality (attached to the whole machine: virtual, or one NUMA node)");
    else if (nic->numa >= 0)
        snprintf(where, sizeof(where), "NUMA node %d, package %d, PUs %s", nic->numa, nic->package, cpus);
    else
        snprintf(where, sizeof(where), "package %d, PUs %s", nic->package, cpus);
    gcoll__locality_t loc = gcoll__topo_locality(nic, &t->binding);
    printf("  %-12s %-11s PCI %-13s %s%s%s\n", nic->name, nic->kind == GCOLL_NIC_NETWORK ? "network" : "openfabrics",
           nic->pci[0] ? nic->pci : "-", where, loc != GCOLL_LOCALITY_UNKNOWN ? "; " : "", to_me[loc]);
}

static void print_topology(void)
{
    const gcoll__topo_t *t = gcoll__topo();
    char l1[24], l2[24], l3[24], bind[256];
    section(t->hwloc ? "topology (hwloc)" : "topology (without hwloc)");
    if (t->note[0])
        printf("note: %s\n", t->note);
    if (t->hwloc)
        printf("packages %d, NUMA nodes %d, cores %d, PUs %d\n", t->packages, t->numa_nodes, t->cores, t->pus);
    else
        printf("logical CPUs %d\n", t->pus);
    printf("caches: L1d %s, L2 %s, L3 %s (one cache of each level)\n", bytes(t->l1d, l1, sizeof(l1)), bytes(t->l2, l2, sizeof(l2)),
           bytes(t->l3, l3, sizeof(l3)));
    printf("NICs: %d\n", t->nnics);
    for (int i = 0; i < t->nnics; i++)
        print_nic(t, &t->nic[i]);
    gcoll__topo_cpulist(&t->binding, bind, sizeof(bind));
    printf("this process is bound to PUs %s\n", bind);
}

static void print_tcp(int config_ok)
{
    gcoll__tcp_iface_t ifs[MAX_LISTED];
    int n = gcoll__tcp_list_ifaces(ifs, MAX_LISTED);
    printf("tcp: IPv4 interfaces up:");
    for (int i = 0; i < n; i++) {
        char text[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &ifs[i].addr, text, sizeof(text));
        printf("%s %s %s%s", i ? "," : "", ifs[i].name, text, ifs[i].loopback ? " (loopback)" : "");
    }
    printf("%s\n", n ? "" : " none");
    if (!config_ok) {
        printf("  choice not evaluated: the configuration is invalid (see variables)\n");
        return;
    }
    gcoll__tcp_iface_t pick;
    char why[256];
    if (gcoll__tcp_probe(&pick, why, sizeof(why)) == GCOLL_SUCCESS)
        printf("  GCOLL_TCP_IFNAME=%s takes %s (%s)\n", gcoll__config.tcp_ifname, pick.name, why);
    else
        printf("  GCOLL_TCP_IFNAME=%s takes nothing: %s\n", gcoll__config.tcp_ifname, gcoll_last_error());
    printf("  (as one rank alone; a job takes the names every host has, in rank 0's order)\n");
}

static void print_ofi(int config_ok)
{
    if (!GCOLL_HAVE_OFI) {
        printf("ofi: not built in (OFI=0)\n");
        return;
    }
    gcoll__ofi_offer_t offers[MAX_LISTED], pick;
    int n = 0;
    if (gcoll__ofi_offers(offers, MAX_LISTED, &n) != GCOLL_SUCCESS) {
        printf("ofi: fi_getinfo failed: %s\n", gcoll_last_error());
        return;
    }
    printf("ofi: fi_getinfo offers RDM tagged endpoints from %s (provider: domain on fabric)\n",
           n ? "these providers" : "no provider");
    for (int i = 0; i < n; i++) {
        int first = 1;
        for (int k = 0; k < i && first; k++)
            first = strcmp(offers[k].prov, offers[i].prov) != 0;
        if (!first)
            continue; /* printed on its provider's line */
        printf("  %s:", offers[i].prov);
        for (int k = i; k < n; k++)
            if (strcmp(offers[k].prov, offers[i].prov) == 0)
                printf("%s %s on %s%s%s", k > i ? "," : "", offers[k].domain, offers[k].fabric,
                       offers[k].pci[0] ? " PCI " : "", offers[k].pci);
        printf("\n");
    }
    if (!config_ok) {
        printf("  choice not evaluated: the configuration is invalid (see variables)\n");
        return;
    }
    char why[512];
    if (gcoll__ofi_probe(&pick, why, sizeof(why)) == GCOLL_SUCCESS)
        printf("  GCOLL_OFI_PROVIDER=%s opens %s, fabric %s, domain %s (%s)\n", gcoll__config.ofi_provider, pick.prov,
               pick.fabric, pick.domain, why);
    else
        printf("  GCOLL_OFI_PROVIDER=%s opens nothing: %s\n", gcoll__config.ofi_provider, gcoll_last_error());
}

/* Cross-memory attach: the call itself on this process, and the Yama policy that decides whether
 * ranks (siblings under mpirun) may use it on each other. */
static void print_cma(void)
{
    long word = 0x67636f6c6c, copy = 0;
    struct iovec local = {&copy, sizeof(copy)}, remote = {&word, sizeof(word)};
    int works = process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)sizeof(word) && copy == word;
    int scope = -1;
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
    if (f) {
        if (fscanf(f, "%d", &scope) != 1)
            scope = -1;
        fclose(f);
    }
    const char *policy = scope < 0    ? "no Yama ptrace policy: processes of one user may"
                         : scope == 0 ? "Yama ptrace_scope 0: processes of one user may"
                         : scope == 1 ? "Yama ptrace_scope 1: only a parent may, so ranks may not"
                                      : "Yama ptrace_scope >= 2: ranks may not";
    printf("  cross-memory attach: process_vm_readv %s; %s\n", works ? "works" : "refused", policy);
}

static void print_shm(void)
{
    struct statvfs vfs;
    if (statvfs("/dev/shm", &vfs) == 0) {
        char size[24], avail[24];
        printf("shm: /dev/shm %s free of %s, %s\n", capacity((double)vfs.f_bavail * vfs.f_frsize, avail, sizeof(avail)),
               capacity((double)vfs.f_blocks * vfs.f_frsize, size, sizeof(size)),
               access("/dev/shm", W_OK) == 0 ? "writable" : "not writable: the node channel cannot start");
    } else {
        printf("shm: /dev/shm is missing: the node channel cannot start\n");
    }
    print_cma();
}

static void print_mpi(void)
{
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    if (MPI_Get_library_version(version, &len) != MPI_SUCCESS)
        snprintf(version, sizeof(version), "unknown");
    version[strcspn(version, "\n")] = '\0';
    printf("mpi: %s\n", version);
    printf("cuda: %s\n", gcoll__cuda_describe());
}

static void print_transports(int config_ok)
{
    section("transports");
    printf("built in: shm, tcp, %smpi, and plugins (GCOLL_TRANSPORT_PLUGIN)\n", GCOLL_HAVE_OFI ? "ofi, " : "");
    if (!config_ok)
        printf("between hosts: not evaluated: the configuration is invalid (see variables)\n");
    else if (gcoll__transport_choose() == GCOLL_SUCCESS)
        printf("between hosts: %s%s\n", gcoll__context.transport->name, gcoll__context.transport_why);
    else
        printf("between hosts: none: %s\n", gcoll_last_error());
    gcoll__transport_release();
    print_tcp(config_ok);
    print_ofi(config_ok);
    print_shm();
    print_mpi();
}

extern char **environ;

static int registered(const char *name, size_t len)
{
    for (size_t i = 0; i < gcoll_config_count(); i++) {
        gcoll_config_var_t v;
        if (gcoll_config_var(i, &v) == GCOLL_SUCCESS && strlen(v.name) == len && strncmp(v.name, name, len) == 0)
            return 1;
    }
    return 0;
}

static void print_variables(const char *config_error)
{
    section("variables");
    if (config_error)
        printf("invalid: %s\n", config_error);
    for (size_t i = 0; i < gcoll_config_count(); i++) {
        gcoll_config_var_t v;
        if (gcoll_config_var(i, &v) != GCOLL_SUCCESS)
            continue;
        const char *env = getenv(v.name);
        printf("%s=%s (%s)\n", v.name, env ? env : v.default_str, env ? "environment" : "default");
    }
    for (char **e = environ; *e; e++) {
        const char *eq = strchr(*e, '=');
        if (strncmp(*e, "GCOLL_", 6) == 0 && eq && !registered(*e, (size_t)(eq - *e)))
            printf("%s (environment; unknown, ignored)\n", *e);
    }
}

/* --layout HxR: the selection table's hosts and ranks per host (default 2x2). */
static int parse_layout(const char *s, int *hosts, int *rph)
{
    char *end;
    long h = strtol(s, &end, 10), r = *end == 'x' ? strtol(end + 1, &end, 10) : 0;
    if (*end || h < 1 || r < 1 || h > 4096 || r > 4096 || h * r > 65536)
        return 0;
    *hosts = (int)h;
    *rph = (int)r;
    return 1;
}

int main(int argc, char **argv)
{
    int markdown = argc == 2 && strcmp(argv[1], "--markdown") == 0;
    int hosts = 2, rph = 2;
    if (argc > 1 && !markdown && !(argc == 3 && strcmp(argv[1], "--layout") == 0 && parse_layout(argv[2], &hosts, &rph))) {
        fprintf(stderr, "usage: %s [--markdown | --layout HOSTSxRANKS]\n", argv[0]);
        return 2;
    }
    if (markdown)
        return print_markdown();
    char config_error[512] = "";
    int config_ok = gcoll__config_load() == GCOLL_SUCCESS;
    if (!config_ok)
        snprintf(config_error, sizeof(config_error), "%s", gcoll_last_error());
    printf("gcoll %s\n", gcoll_version());
    print_topology();
    print_transports(config_ok);
    print_variables(config_ok ? NULL : config_error);
    if (config_ok) {
        section("selection");
        print_selection(hosts, rph);
    }
    return config_ok ? 0 : 1;
}
