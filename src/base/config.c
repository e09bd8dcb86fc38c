/* Registry of GCOLL_* variables and their strict parsers. docs/env.md is generated from this list
 * (gcoll-info --markdown; tests/docs_env.sh fails when the two differ), and tests/readme_vars.sh
 * checks the README's short table against it. */
#include <ctype.h>
#include <sched.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"

gcoll__config_t gcoll__config;

static const char *const log_levels[] = {"error", "warn", "info", "debug", "trace", NULL};
static const char *const isas[] = {"auto", "generic", "avx2", "avx512", NULL};
static const char *const onoff[] = {"auto", "on", "off", NULL};
static const char *const adasum_modes[] = {"auto", "flat", "hierarchical", NULL};

/* A choice among names; the value stored is the index of the name. */
static gcoll_status_t parse_enum(const char *var, const char *s, const char *const *choices, int *out)
{
    for (int i = 0; choices[i]; i++)
        if (strcmp(s, choices[i]) == 0) {
            *out = i;
            return GCOLL_SUCCESS;
        }
    char list[256] = "";
    for (int i = 0; choices[i]; i++) {
        strncat(list, i ? "|" : "", sizeof(list) - strlen(list) - 1);
        strncat(list, choices[i], sizeof(list) - strlen(list) - 1);
    }
    return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s='%s' is not valid: accepts %s", var, s, list);
}

/* A size in bytes with K/M/G suffixes, at least arg KiB and at most 1 GiB. */
static gcoll_status_t parse_bytes(const char *var, const char *s, void *out, int min_kib)
{
    size_t v;
    if (gcoll__parse_size(s, &v) != GCOLL_SUCCESS || v < (size_t)min_kib << 10 || v > ((size_t)1 << 30))
        return gcoll__error(GCOLL_ERR_INVALID_ARG,
                            "%s='%s' is not valid: accepts bytes with K/M/G suffixes from %dK to 1G", var, s, min_kib);
    *(size_t *)out = v;
    return GCOLL_SUCCESS;
}

/* parse_bytes up to the TCP transport's largest eager frame (16 MiB). */
static gcoll_status_t parse_eager(const char *var, const char *s, void *out, int min_kib)
{
    size_t v = 0;
    if (parse_bytes(var, s, &v, min_kib) != GCOLL_SUCCESS || v > ((size_t)16 << 20))
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s='%s' is not valid: accepts bytes with K/M/G suffixes up to 16M",
                            var, s);
    *(size_t *)out = v;
    return GCOLL_SUCCESS;
}

/* An integer from arg to 1024. */
static gcoll_status_t parse_count(const char *var, const char *s, void *out, int arg)
{
    long lo = arg;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!isdigit((unsigned char)*s) || *end || errno || v < lo || v > 1024)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s='%s' is not valid: accepts an integer from %ld to 1024", var, s,
                            lo);
    *(int *)out = (int)v;
    return GCOLL_SUCCESS;
}

/* none (0), or a count from 1 to 1 Mi. */
static gcoll_status_t parse_limit(const char *var, const char *s, void *out, int arg)
{
    (void)arg;
    char *end;
    errno = 0;
    long v = strcmp(s, "none") == 0 ? 0 : strtol(s, &end, 10);
    if (strcmp(s, "none") != 0 && (!isdigit((unsigned char)*s) || *end || errno || v < 1 || v > 1048576))
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s='%s' is not valid: accepts none or an integer from 1 to 1048576",
                            var, s);
    *(int *)out = (int)v;
    return GCOLL_SUCCESS;
}

/* Free text up to arg bytes (names, lists, paths), checked where it is used. */
static gcoll_status_t parse_text(const char *var, const char *s, void *out, int cap)
{
    if (strlen(s) >= (size_t)cap)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s is too long (over %d characters)", var, cap - 1);
    strcpy(out, s);
    return GCOLL_SUCCESS;
}

/* "auto", or [^|=]NAME[,NAME...] with interface-name characters. */
static gcoll_status_t parse_iflist(const char *var, const char *s, void *out, int cap)
{
    const char *p = s + (*s == '^' || *s == '=');
    int ok = strcmp(s, "auto") == 0 || *p != '\0';
    for (const char *q = p; ok && *q; q++)
        ok = isalnum((unsigned char)*q) || strchr("_.:-@", *q) || (*q == ',' && q > p && q[1] && q[1] != ',');
    if (!ok)
        return gcoll__error(GCOLL_ERR_INVALID_ARG,
                            "%s='%s' is not valid: accepts auto, or interface names separated by commas, "
                            "all after one optional ^ (exclude) or = (exact match)",
                            var, s);
    return parse_text(var, s, out, cap);
}

/* Seconds > 0; arg 1 also accepts 0 (off). */
static gcoll_status_t parse_seconds(const char *var, const char *s, void *out, int arg)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || errno != 0 || !isfinite(v) || v < 0 || (v == 0 && !arg) ||
        isspace((unsigned char)*s))
        return gcoll__error(GCOLL_ERR_INVALID_ARG,
                            "%s='%s' is not valid: accepts a number of seconds %s, e.g. 300 or 0.5", var, s,
                            arg ? ">= 0 (0: off)" : "> 0");
    *(double *)out = v;
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll__parse_size(const char *s, size_t *out)
{
    if (strcmp(s, "max") == 0) {
        *out = SIZE_MAX;
        return GCOLL_SUCCESS;
    }
    if (!isdigit((unsigned char)s[0]))
        return GCOLL_ERR_INVALID_ARG;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0)
        return GCOLL_ERR_INVALID_ARG;
    unsigned shift = 0;
    switch (*end) {
    case 'K':
    case 'k':
        shift = 10;
        end++;
        break;
    case 'M':
    case 'm':
        shift = 20;
        end++;
        break;
    case 'G':
    case 'g':
        shift = 30;
        end++;
        break;
    default: break;
    }
    if (*end != '\0' || (shift && v > (SIZE_MAX >> shift)) || v > SIZE_MAX)
        return GCOLL_ERR_INVALID_ARG;
    *out = (size_t)v << shift;
    return GCOLL_SUCCESS;
}

/* A link for the cost model: auto (measured), builtin, or LATENCY_US:GB_PER_S[:BURST_GB_PER_S]
 * ("12:1.25", "50:0.125:1.5"); the burst rate defaults to the bandwidth. arg: 0 inside a host, 1
 * the network link. */
static gcoll_status_t parse_cost(const char *var, const char *s, void *out, int arg)
{
    gcoll__link_t *l = out;
    gcoll__config.cost_probe[arg] = strcmp(s, "auto") == 0;
    if (strcmp(s, "auto") == 0 || strcmp(s, "builtin") == 0) {
        *l = (gcoll__link_t){0, 0, 0};
        return GCOLL_SUCCESS;
    }
    char *end;
    errno = 0;
    double us = strtod(s, &end);
    double gbps = *end == ':' && end > s ? strtod(end + 1, &end) : -1, burst = gbps;
    if (*end == ':' && isdigit((unsigned char)end[1]))
        burst = strtod(end + 1, &end);
    else if (*end == ':')
        burst = -1;
    if (errno || *end || !isdigit((unsigned char)s[0]) || !(us >= 0 && us <= 1e6) || !(gbps > 0 && gbps <= 1e4))
        return gcoll__error(GCOLL_ERR_INVALID_ARG,
                            "%s='%s' is not valid: accepts auto, builtin, or LATENCY_US:GB_PER_S[:BURST_GB_PER_S] "
                            "with a latency of 0 to 1000000 microseconds and bandwidths above 0 and up to 10000 "
                            "GB/s, e.g. 12:1.25 or 50:0.125:1.5",
                            var, s);
    if (!(burst >= gbps && burst <= 1e4))
        return gcoll__error(GCOLL_ERR_INVALID_ARG,
                            "%s='%s' is not valid: the burst rate (third field, LATENCY_US:GB_PER_S:BURST_GB_PER_S) "
                            "must be a number from the bandwidth (%g GB/s) up to 10000 GB/s",
                            var, s, gbps);
    *l = (gcoll__link_t){us * 1e-6, gbps * 1e9, burst * 1e9};
    return GCOLL_SUCCESS;
}

/* "auto" (stored as 0) or a size as parse_bytes takes it. */
static gcoll_status_t parse_auto_bytes(const char *var, const char *s, void *out, int min_kib)
{
    if (strcmp(s, "auto") == 0) {
        *(size_t *)out = 0;
        return GCOLL_SUCCESS;
    }
    if (parse_bytes(var, s, out, min_kib) != GCOLL_SUCCESS)
        return gcoll__error(GCOLL_ERR_INVALID_ARG,
                            "%s='%s' is not valid: accepts auto, or bytes with K/M/G suffixes from %dK to 1G", var, s,
                            min_kib);
    return GCOLL_SUCCESS;
}

/* none, auto, or a CPU list such as "3", "2,3" or "4-7,12" (each CPU below CPU_SETSIZE). */
static gcoll_status_t parse_cpulist(const char *var, const char *s, void *out, int cap)
{
    int ok = strcmp(s, "none") == 0 || strcmp(s, "auto") == 0;
    for (const char *p = s; !ok && *p;) {
        char *end;
        long lo = isdigit((unsigned char)*p) ? strtol(p, &end, 10) : -1, hi = lo;
        if (lo < 0)
            break;
        if (*end == '-') {
            p = end + 1;
            hi = isdigit((unsigned char)*p) ? strtol(p, &end, 10) : -1;
        }
        if (hi < lo || hi >= CPU_SETSIZE)
            break;
        p = end;
        if (*p == '\0')
            ok = 1;
        else if (*p++ != ',')
            break;
    }
    if (!ok)
        return gcoll__error(GCOLL_ERR_INVALID_ARG,
                            "%s='%s' is not valid: accepts none, auto, or CPU numbers and ranges separated by "
                            "commas, e.g. 3 or 2,3 or 4-7,12 (below %d)",
                            var, s, CPU_SETSIZE);
    return parse_text(var, s, out, cap);
}

/* none, or a file path. */
static gcoll_status_t parse_path(const char *var, const char *s, void *out, int cap)
{
    if (*s == '\0')
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s is empty: accepts none or a file path", var);
    return parse_text(var, s, out, cap);
}

/* A path that a component outside the library reads (the Python package's GCOLL_LIBRARY): listed
 * here so that it is documented and not warned about as unknown; checked, not kept. */
static gcoll_status_t parse_outside_path(const char *var, const char *s, void *out, int arg)
{
    (void)out;
    (void)arg;
    if (*s == '\0')
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s is empty: accepts none or a file path", var);
    return GCOLL_SUCCESS;
}

/* none (stored as -1), or an integer from arg to 2^24 - 1 + arg: a rank or a job size. */
static gcoll_status_t parse_rank(const char *var, const char *s, void *out, int arg)
{
    if (strcmp(s, "none") == 0) {
        *(int *)out = -1;
        return GCOLL_SUCCESS;
    }
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10), hi = (1L << 24) - 1 + arg;
    if (!isdigit((unsigned char)*s) || *end || errno || v < arg || v > hi)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s='%s' is not valid: accepts none or an integer from %d to %ld",
                            var, s, arg, hi);
    *(int *)out = (int)v;
    return GCOLL_SUCCESS;
}

/* none (stored as ""), or HOST:PORT: an IPv4 address or a host name, a port from 1 to 65535. */
static gcoll_status_t parse_hostport(const char *var, const char *s, void *out, int cap)
{
    if (strcmp(s, "none") == 0) {
        *(char *)out = '\0';
        return GCOLL_SUCCESS;
    }
    const char *colon = strrchr(s, ':');
    int ok = colon && colon > s && strlen(s) < (size_t)cap;
    for (const char *p = s; ok && p < colon; p++)
        ok = isalnum((unsigned char)*p) || *p == '.' || *p == '-' || *p == '_';
    char *end = NULL;
    long port = ok && isdigit((unsigned char)colon[1]) ? strtol(colon + 1, &end, 10) : 0;
    if (!ok || !end || *end || port < 1 || port > 65535)
        return gcoll__error(GCOLL_ERR_INVALID_ARG,
                            "%s='%s' is not valid: accepts none or HOST:PORT, an IPv4 address "
                            "or host name and a port from 1 to 65535, e.g. 10.0.0.1:29400",
                            var, s);
    return parse_text(var, s, out, cap);
}

/* none, or 32 hex digits (16 bytes). */
static gcoll_status_t parse_secret(const char *var, const char *s, void *out, int arg)
{
    (void)arg;
    gcoll__config.has_job_secret = 0;
    if (strcmp(s, "none") == 0)
        return GCOLL_SUCCESS;
    unsigned char *key = out;
    int ok = strlen(s) == 32;
    for (int i = 0; ok && i < 16; i++) {
        ok = isxdigit((unsigned char)s[2 * i]) && isxdigit((unsigned char)s[2 * i + 1]);
        char pair[3] = {s[2 * i], s[2 * i + 1], '\0'};
        key[i] = (unsigned char)strtoul(pair, NULL, 16);
    }
    if (!ok) /* the value itself stays out of the message: it may be most of the secret */
        return gcoll__error(GCOLL_ERR_INVALID_ARG,
                            "%s is not valid (%zu characters): accepts none or exactly 32 hex "
                            "digits, e.g. from: od -An -N16 -tx1 /dev/urandom | tr -d ' \\n'",
                            var, strlen(s));
    gcoll__config.has_job_secret = 1;
    return GCOLL_SUCCESS;
}

static const char *const boot_modes[] = {"auto", "mpi", "env", NULL};
static const char *const worker_policies[] = {"auto", "batch", "normal", NULL}; /* GCOLL__WORKER_* order */
static const char *const tcp_connects[] = {"eager", "lazy", NULL};

static gcoll__var_t vars[] = {
    {"GCOLL_LOG_LEVEL", "error|warn|info|debug|trace", "warn",
     "messages up to this level go to stderr, prefixed with host and rank", NULL, log_levels, &gcoll__config.log_level,
     0},
    {"GCOLL_TIMEOUT", "seconds > 0", "300",
     "bound on every wait: an operation not complete by then fails with GCOLL_ERR_TIMEOUT", parse_seconds, NULL,
     &gcoll__config.timeout_s, 0},
    {"GCOLL_REDUCE_ISA", "auto|generic|avx2|avx512", "auto",
     "reduction kernels (and the top-k selection's scan): auto picks the widest vector instructions this CPU has", NULL,
     isas, &gcoll__config.reduce_isa, 0},
    {"GCOLL_SHM_SLOT_SIZE", "bytes, 4K..1G", "64K",
     "staging slot per rank (two per rank): the largest message of one copy-in/copy-out round", parse_bytes, NULL,
     &gcoll__config.shm_slot_size, 4},
    {"GCOLL_SHM_CHUNK_SIZE", "bytes, 4K..1G", "256K",
     "pipelining chunk of the single-copy algorithms (kept in cache between read and reduce)", parse_bytes, NULL,
     &gcoll__config.shm_chunk_size, 4},
    /* Adasum's received half inside a host lands a read at a time and its dot products follow
     * each read while it is in cache: a read of a core's L2 size is the fastest */
    {"GCOLL_SHM_READ_CHUNK", "auto, or bytes 4K..1G", "auto",
     "single-copy read of a message whose receiver works on each part as it lands (Adasum's dot "
     "products); auto: the L2 cache of a core (hwloc), 1M when unknown",
     parse_auto_bytes, NULL, &gcoll__config.shm_read_chunk, 4},
    {"GCOLL_SHM_SINGLE_COPY", "auto|on|off", "auto",
     "cross-memory attach (process_vm_readv/writev) for large messages; auto probes it", NULL, onoff,
     &gcoll__config.shm_single_copy, 0},
    {"GCOLL_SHM_RING_CELL_SIZE", "bytes, 1K..1G", "8K",
     "payload of one point-to-point ring cell: larger messages go single copy or in fragments", parse_bytes, NULL,
     &gcoll__config.shm_cell_size, 1},
    {"GCOLL_SHM_RING_DEPTH", "2..1024", "8", "cells per point-to-point ring (one ring per ordered pair)", parse_count,
     NULL, &gcoll__config.shm_ring_depth, 2},
    {"GCOLL_TRANSPORT_PLUGIN", "none, or the path of a .so", "none",
     "an external transport (see include/gcoll_transport_plugin.h); auto between hosts then picks it", parse_text, NULL,
     gcoll__config.transport_plugin, sizeof(gcoll__config.transport_plugin)},
    {"GCOLL_TCP_NSOCKS", "1..1024", "1",
     "TCP sockets per peer; messages of 1 MiB and more are striped across them (for NICs one flow cannot fill)",
     parse_count, NULL, &gcoll__config.tcp_nsocks, 1},
    {"GCOLL_TCP_CONNECT", "eager|lazy", "lazy",
     "when TCP connections open: lazy, when a request first names the peer, by either rank (a ring touches 2 "
     "peers, recursive doubling log2(n)): far fewer sockets at scale, a crashed peer never exchanged with known "
     "through the peers that were; eager, to every peer when the communicator is created (the first operation pays "
     "no connection, the setup pays them all); every rank must set it alike",
     NULL, tcp_connects, &gcoll__config.tcp_connect_lazy, 0},
    {"GCOLL_TCP_MAX_CONNS", "none, or 1..1048576", "none",
     "lazy connections: the most peer processes this process keeps connected (GCOLL_TCP_NSOCKS sockets each); past "
     "it the least recently used idle connection closes, by agreement of both processes, and opens again when a "
     "request next names that process",
     parse_limit, NULL, &gcoll__config.tcp_max_conns, 0},
    {"GCOLL_TCP_IFNAME", "auto, or a list of interface name prefixes", "auto",
     "interfaces for TCP: eth0,ib (those), ^docker,lo (all but those), =eth0 (exactly); auto prefers "
     "a non-loopback interface every host has",
     parse_iflist, NULL, gcoll__config.tcp_ifname, sizeof(gcoll__config.tcp_ifname)},
    /* 256K: what a sender may queue ahead of its receiver. Small enough that a receiver copies
     * the bytes out while they are still in cache; a link whose bandwidth x round trip passes it
     * needs more. */
    {"GCOLL_TCP_SNDBUF", "auto, or bytes 4K..1G", "256K",
     "SO_SNDBUF of every TCP socket: bytes a sender queues ahead of its receiver; auto leaves it to the "
     "kernel's autotuning (net.ipv4.tcp_wmem); raise it where bandwidth x round trip is larger",
     parse_auto_bytes, NULL, &gcoll__config.tcp_sndbuf, 4},
    {"GCOLL_TCP_RCVBUF", "auto, or bytes 4K..1G", "4M",
     "SO_RCVBUF of every TCP socket (the window a receiver offers); auto leaves it to the kernel's "
     "autotuning (net.ipv4.tcp_rmem)",
     parse_auto_bytes, NULL, &gcoll__config.tcp_rcvbuf, 4},
    {"GCOLL_TCP_EAGER", "bytes, 0..16M", "1M",
     "TCP messages up to this size go at once, copied aside on arrival if their receive is not posted yet; "
     "larger ones (and those striped over GCOLL_TCP_NSOCKS sockets) wait for the receiver's go-ahead, which on a "
     "link busy both ways queues behind the peer's data: keep the pipeline slice (GCOLL_CHUNK_BYTES) within it",
     parse_eager, NULL, &gcoll__config.tcp_eager, 0},
    {"GCOLL_OFI_PROVIDER", "auto, or a libfabric provider name", "auto",
     "libfabric provider for ofi: auto takes the best RDM provider fi_getinfo offers, a real NIC before "
     "tcp;ofi_rxm",
     parse_text, NULL, gcoll__config.ofi_provider, sizeof(gcoll__config.ofi_provider)},
    /* 1M: far past the TCP transport's 64 KiB eager limit, so a slice's rendezvous round trip is
     * a few percent of its time on the wire, and a landed slice is still in the core's L2 when it
     * is reduced. 8 a round: the socket stays busy while the first slices are reduced. Slow links
     * and long chains want smaller, fewer slices. Every rank must use the same values: both sides
     * of a message cut it alike. */
    {"GCOLL_CHUNK_BYTES", "bytes, 4K..1G", "1M",
     "pipeline slice of the point-to-point ring and chain algorithms: each slice is reduced or forwarded "
     "while the next ones arrive",
     parse_bytes, NULL, &gcoll__config.chunk_bytes, 4},
    {"GCOLL_PIPELINE_DEPTH", "1..1024", "8", "slices in flight per peer and step of a pipelined algorithm", parse_count,
     NULL, &gcoll__config.pipeline_depth, 1},
    {"GCOLL_COST_INTRA", "auto, builtin, or LATENCY_US:GB_PER_S[:BURST_GB_PER_S]", "auto",
     "the link between ranks of one host as the algorithm choice prices it: auto measures it at the first "
     "communicator that spans hosts, builtin takes the transport's figure",
     parse_cost, NULL, &gcoll__config.cost[0], 0},
    {"GCOLL_COST_INTER", "auto, builtin, or LATENCY_US:GB_PER_S[:BURST_GB_PER_S]", "auto",
     "a host's network link as the algorithm choice prices it: auto measures it at the first communicator "
     "that spans hosts, builtin takes the transport's figure, 50:0.125 says 50 us and 1 Gbit/s, 50:0.125:1.5 "
     "adds short exchanges at 1.5 GB/s (a token bucket's burst)",
     parse_cost, NULL, &gcoll__config.cost[1], 1},
    {"GCOLL_WORKER_COUNT", "0..1024", "1",
     "progress threads that drive nonblocking operations (communicators are spread over them); 0: progress only "
     "inside gcoll calls",
     parse_count, NULL, &gcoll__config.worker_count, 0},
    {"GCOLL_WORKER_AFFINITY", "none, auto, or a CPU list", "none",
     "cores of the progress threads, one per thread in turn: a list such as 3 or 2,3; auto takes cores of this "
     "rank's allowed set away from those its host's other ranks start on",
     parse_cpulist, NULL, gcoll__config.worker_affinity, sizeof(gcoll__config.worker_affinity)},
    {"GCOLL_WORKER_POLICY", "auto|batch|normal", "auto",
     "scheduling of the progress threads: auto runs a thread as SCHED_BATCH while it sleeps for lack of work, so "
     "that waking it for new work does not preempt the caller about to wait for it, and under the default policy "
     "while it drives operations alone, so that the network's events take a core from compute; batch: SCHED_BATCH "
     "always; normal: the default policy always",
     NULL, worker_policies, &gcoll__config.worker_policy, 0},
    {"GCOLL_INFLIGHT_BYTES", "bytes, 64K..1G", "8M",
     "bound on bytes of sends in flight per progress thread, each operation's first send aside: once reached, an "
     "operation that already has a send in flight waits, and higher priorities get the room first",
     parse_bytes, NULL, &gcoll__config.inflight_bytes, 64},
    {"GCOLL_SCRATCH_CACHE", "bytes, 0..1G", "256M",
     "scratch buffers of finished operations (an in-place ring's received blocks, staging) kept for the next "
     "ones, up to this many bytes in all: a fresh buffer costs a page fault per 4 KiB on every call; 0 frees "
     "each at once",
     parse_bytes, NULL, &gcoll__config.scratch_cache, 0},
    {"GCOLL_FUSION_BYTES", "auto, or bytes 4K..1G", "auto",
     "gradient session: the size of a fusion bucket; auto is about 2 ms of the communicator's slowest link, "
     "between 64K and 64M",
     parse_auto_bytes, NULL, &gcoll__config.fusion_bytes, 4},
    {"GCOLL_FUSION_FIRST_BYTES", "bytes, 4K..1G", "1M",
     "gradient session: the first bucket (the last layers, ready first) is at most this big, so communication "
     "starts early",
     parse_bytes, NULL, &gcoll__config.fusion_first_bytes, 4},
    {"GCOLL_TIMELINE", "none, or a path", "none",
     "writes a Chrome trace (JSON, for Perfetto or chrome://tracing) of every operation, chunk and reduction; "
     "%r in the path becomes the rank, else .RANK is appended",
     parse_path, NULL, gcoll__config.timeline, sizeof(gcoll__config.timeline)},
    {"GCOLL_FLIGHT_RECORDER", "none, or a path", "none",
     "when a communicator fails (a dead peer, a timeout, a mismatch), each rank writes its last operations there "
     "as JSON (gcoll_comm_dump's file; gcoll-info --trace reads the ranks' files together); %r becomes the rank "
     "and %c the communicator's number; whichever is missing is appended (.c<comm>, .r<rank>; .json when both are)",
     parse_path, NULL, gcoll__config.flight_recorder, sizeof(gcoll__config.flight_recorder)},
    {"GCOLL_STALL_WARN_S", "seconds >= 0", "30",
     "an operation still pending after this long logs a warning on each rank naming it, its sequence number and "
     "the peers that have not delivered, again at each such interval until GCOLL_TIMEOUT ends it; 0: never",
     parse_seconds, NULL, &gcoll__config.stall_warn_s, 1},
    {"GCOLL_ADASUM", "auto|flat|hierarchical", "auto",
     "Adasum across hosts: flat over all ranks, or sum inside each host then Adasum among hosts; "
     "auto: hierarchical when some host holds several ranks",
     NULL, adasum_modes, &gcoll__config.adasum, 0},
    /* Pushing pays once the vectors outgrow the cache, where an allgather would read them back
     * from memory. Taken from the host's first rank, as it changes the messages. */
    {"GCOLL_ADASUM_PUSH", "auto|on|off", "auto",
     "Adasum on one host with single copy: the last level writes its result into the other ranks' "
     "outputs as it computes it, instead of an allgather; auto: when the ranks' vectors together "
     "fill the L3 cache (hwloc; 32M when unknown); the host's first rank's value holds",
     NULL, onoff, &gcoll__config.adasum_push, 0},
    {"GCOLL_CUDA_STAGE_CHUNK", "bytes, 64K..1G", "4M",
     "device buffers: the chunk of the host-staged pipeline (copy down, send, copy up overlap chunk by chunk); "
     "1G stages a whole buffer of up to 1 GiB before sending",
     parse_bytes, NULL, &gcoll__config.cuda_chunk, 64},
    /* Below it the two rounds and the copies up and down cost more than the host's reduction saves. */
    {"GCOLL_CUDA_REDUCE_MIN", "bytes, 0..1G", "4M",
     "device buffers, staged between hosts: an allreduce, reduce_scatter or Adasum of more than two ranks whose send "
     "buffer holds at least this many bytes reduces on the GPU, a smaller one on the host (two ranks: always on "
     "the GPU); 0: always on the GPU",
     parse_bytes, NULL, &gcoll__config.cuda_reduce_min, 0},
    {"GCOLL_CUDA_IPC", "auto|on|off", "auto",
     "device buffers, every rank of the communicator on one host: each rank maps its peers' buffers "
     "(CUDA IPC) and reduces or copies its share with kernels; off: the host-staged pipeline; on: as auto, "
     "but an operation that cannot use it fails (GCOLL_ERR_UNSUPPORTED, saying why) instead of staging",
     NULL, onoff, &gcoll__config.cuda_ipc, 0},
    {"GCOLL_LIBRARY", "none, or a path", "none",
     "Python package (bindings/python): the libgcoll.so it loads; none: the path recorded at install, one beside "
     "the package, then the loader's search",
     parse_outside_path, NULL, NULL, 0},
    {"GCOLL_MPI_COLLS",
     "all, none, or a list of MPI collectives in lower case without MPI_ (allreduce,iallreduce,...,iscatterv)", "all",
     "the MPI calls that the MPI interposer (LD_PRELOAD=lib/libgcoll_mpi.so) takes over; the others go to "
     "MPI unchanged",
     gcoll__parse_mpi_colls, NULL, &gcoll__config.mpi_colls, 0},
    /* launch without MPI: docs/transports.md */
    {"GCOLL_BOOT", "auto|mpi|env", "auto",
     "how the ranks find each other: mpi (MPI_COMM_WORLD), env (GCOLL_RANK, GCOLL_SIZE, GCOLL_ROOT_ADDR or torchrun's "
     "RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, over TCP); auto: env when those are set and no MPI launcher is seen",
     NULL, boot_modes, &gcoll__config.boot, 0},
    {"GCOLL_RANK", "none, or 0..16777215", "none", "launch without MPI: this process's rank", parse_rank, NULL,
     &gcoll__config.boot_rank, 0},
    {"GCOLL_SIZE", "none, or 1..16777216", "none", "launch without MPI: the number of ranks", parse_rank, NULL,
     &gcoll__config.boot_size, 1},
    {"GCOLL_ROOT_ADDR", "none, or HOST:PORT", "none",
     "launch without MPI: where rank 0 listens and the others connect (IPv4 address or host name)", parse_hostport,
     NULL, gcoll__config.root_addr, sizeof(gcoll__config.root_addr)},
    {"GCOLL_JOB_SECRET", "none, or 32 hex digits", "none",
     "launch without MPI: the secret every connection proves; required unless the root address is loopback "
     "(never printed)",
     parse_secret, NULL, gcoll__config.job_secret, 0},
};
static gcoll__var_group_t base_group = {0, vars, sizeof(vars) / sizeof(vars[0]), NULL};
static gcoll__var_group_t *groups = &base_group; /* by rank */

void gcoll__config_add_group(gcoll__var_group_t *g)
{
    gcoll__var_group_t **at = &groups;
    while (*at && (*at)->rank <= g->rank)
        at = &(*at)->next;
    g->next = *at;
    *at = g;
}

static size_t nvars(void)
{
    size_t n = 0;
    for (const gcoll__var_group_t *g = groups; g; g = g->next)
        n += g->n;
    return n;
}

/* Variable index of the whole registry, or NULL past its end. */
static const gcoll__var_t *var_at(size_t index)
{
    for (const gcoll__var_group_t *g = groups; g; g = g->next) {
        if (index < g->n)
            return &g->vars[index];
        index -= g->n;
    }
    return NULL;
}

#define GCOLL_MAX_VARS 128
/* The environment's values that the last gcoll__config_load read, one copy per variable (NULL:
 * unset, the default), kept until gcoll__config_unload: what the library runs with, even if the
 * environment changes afterwards. */
static pthread_mutex_t loaded_lock = PTHREAD_MUTEX_INITIALIZER;
static char *loaded_env[GCOLL_MAX_VARS];
static int loaded;

static void forget_loaded(void)
{
    for (size_t i = 0; i < GCOLL_MAX_VARS; i++) {
        free(loaded_env[i]);
        loaded_env[i] = NULL;
    }
    loaded = 0;
}

GCOLL_API size_t gcoll_config_count(void)
{
    return nvars();
}

GCOLL_API gcoll_status_t gcoll_config_var(size_t index, gcoll_config_var_t *var)
{
    const gcoll__var_t *v = var_at(index);
    if (!v)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "index %zu is out of range (count %zu)", index, nvars());
    if (!var)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "var is NULL");
    var->name = v->name;
    var->type = v->accepts;
    var->default_str = v->def;
    var->description = v->desc;
    return GCOLL_SUCCESS;
}

/* The index of the variable whose name is the len bytes at name, or -1. */
static long find_var(const char *name, size_t len)
{
    for (size_t i = 0; var_at(i); i++)
        if (strlen(var_at(i)->name) == len && strncmp(var_at(i)->name, name, len) == 0)
            return (long)i;
    return -1;
}

gcoll_status_t gcoll__config_parse(size_t index, const char *value)
{
    const gcoll__var_t *v = var_at(index);
    if (!v || !value)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s", !v ? "index is out of range" : "value is NULL");
    return v->parse ? v->parse(v->name, value, v->out, v->arg) : parse_enum(v->name, value, v->choices, v->out);
}

extern char **environ;

gcoll_status_t gcoll__config_load(void)
{
    size_t n = nvars();
    if (n > GCOLL_MAX_VARS)
        return gcoll__error(GCOLL_ERR_INTERNAL, "the registry holds %zu variables, over %d", n, GCOLL_MAX_VARS);
    pthread_mutex_lock(&loaded_lock);
    forget_loaded();
    gcoll_status_t st = GCOLL_SUCCESS;
    for (size_t i = 0; i < n && st == GCOLL_SUCCESS; i++) {
        const char *env = getenv(var_at(i)->name);
        if (env && !(loaded_env[i] = strdup(env)))
            st = gcoll__error(GCOLL_ERR_NOMEM, "no memory for the value of %s", var_at(i)->name);
        else
            st = gcoll__config_parse(i, env ? env : var_at(i)->def);
    }
    if (st != GCOLL_SUCCESS)
        forget_loaded();
    loaded = st == GCOLL_SUCCESS;
    pthread_mutex_unlock(&loaded_lock);
    GCOLL_CHECK(st);
    gcoll__log_level = gcoll__config.log_level;
    for (char **e = environ; *e; e++) {
        const char *eq = strchr(*e, '=');
        if (strncmp(*e, "GCOLL_", 6) == 0 && eq && find_var(*e, (size_t)(eq - *e)) < 0)
            GCOLL_LOG(GCOLL_LOG_WARN, "unknown variable %.*s ignored (HINT: see docs/env.md or gcoll-info)",
                      (int)(eq - *e), *e);
    }
    return GCOLL_SUCCESS;
}

void gcoll__config_unload(void)
{
    pthread_mutex_lock(&loaded_lock);
    forget_loaded();
    pthread_mutex_unlock(&loaded_lock);
}

/* Variable i's value as the library takes it (the default where the environment has none; a
 * secret set in the environment reads "(hidden)"), and its source. loaded_lock held: the value
 * may live in loaded_env. */
static const char *value_locked(size_t i, const char **source)
{
    const gcoll__var_t *v = var_at(i);
    const char *env = loaded ? loaded_env[i] : getenv(v->name);
    *source = env ? "environment" : "default";
    return !env ? v->def : v->parse == parse_secret ? "(hidden)" : env;
}

static gcoll_status_t value_of(size_t i, char *buf, size_t len, const char **source)
{
    const char *from;
    pthread_mutex_lock(&loaded_lock);
    const char *value = value_locked(i, &from);
    size_t need = strlen(value) + 1;
    if (need <= len)
        memcpy(buf, value, need);
    else if (len)
        buf[0] = '\0';
    pthread_mutex_unlock(&loaded_lock);
    if (source)
        *source = from;
    if (need > len)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "len %zu is too small for the value of %s: it needs %zu bytes", len,
                            var_at(i)->name, need);
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll__config_get(const char *name, char *buf, size_t len, const char **source)
{
    long i = find_var(name, strlen(name));
    if (i >= 0)
        return value_of((size_t)i, buf, len, source);
    return gcoll__error(GCOLL_ERR_INVALID_ARG,
                        "name '%s' is not a GCOLL_* variable of the registry (HINT: see "
                        "docs/env.md or gcoll-info)",
                        name);
}

GCOLL_API gcoll_status_t gcoll_config_get(const char *name, char *buf, size_t len, const char **source)
{
    if (!name)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "name is NULL");
    if (!buf)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "buf is NULL");
    return gcoll__config_get(name, buf, len, source);
}

void gcoll__config_dump(void)
{
    pthread_mutex_lock(&loaded_lock);
    for (size_t i = 0; var_at(i); i++) {
        const char *source, *value = value_locked(i, &source);
        GCOLL_LOG(GCOLL_LOG_INFO, "%s = %s (%s)", var_at(i)->name, value, source);
    }
    pthread_mutex_unlock(&loaded_lock);
}
