/* The configuration registry: every GCOLL_* variable defined once (name, what it accepts,
 * default, description, parser), parsed strictly at init, dumped with its source at info level. */
#ifndef GCOLL_CONFIG_H
#define GCOLL_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "gcoll.h"
#include "base/coll.h"

/* GCOLL_WORKER_POLICY's values, in the order of their names in config.c. */
enum { GCOLL__WORKER_AUTO, GCOLL__WORKER_BATCH, GCOLL__WORKER_NORMAL };

/* A link as the cost model sees it. */
typedef struct {
    double lat_s;  /* per message */
    double bw_Bps; /* sustained bytes per second; 0: the transport's built-in figure */
    /* bytes per second of a short exchange, which a NIC's queues or a token bucket let through
     * faster than the sustained rate; at most bw_Bps (0 included) counts as bw_Bps */
    double burst_Bps;
} gcoll__link_t;

typedef struct {
    int log_level;
    double timeout_s;
    char transport_plugin[256]; /* "" when none */
    int reduce_isa;             /* 0 auto, 1 generic, 2 avx2, 3 avx512 */
    size_t shm_slot_size;       /* staging bytes per rank and parity */
    size_t shm_chunk_size;      /* single-copy pipelining chunk */
    size_t shm_read_chunk;      /* single-copy read of a message consumed as it lands; 0: auto */
    int shm_single_copy;        /* 0 auto, 1 on, 2 off */
    size_t shm_cell_size;       /* point-to-point ring cell payload */
    int shm_ring_depth;         /* cells per ring */
    int tcp_nsocks;             /* sockets per peer, striped for large messages */
    int tcp_connect_lazy;       /* GCOLL_TCP_CONNECT: 0 eager, 1 lazy */
    int tcp_max_conns;          /* GCOLL_TCP_MAX_CONNS: peer processes kept connected; 0: no limit */
    char tcp_ifname[256];       /* "auto", or a list: "eth0,eth1", "^lo,docker" */
    size_t tcp_sndbuf;          /* SO_SNDBUF of every socket; 0: the kernel's autotuning */
    size_t tcp_rcvbuf;          /* SO_RCVBUF likewise */
    size_t tcp_eager;           /* messages up to this size go without a rendezvous */
    char ofi_provider[64];      /* "auto", or a libfabric provider name such as "tcp;ofi_rxm" */
    size_t chunk_bytes;         /* pipeline slice of the point-to-point algorithms */
    int pipeline_depth;         /* slices in flight per round */
    int worker_count;           /* progress threads; 0: none */
    char worker_affinity[256];  /* "none", "auto", or a CPU list */
    int worker_policy;          /* GCOLL__WORKER_AUTO, _BATCH or _NORMAL */
    size_t inflight_bytes;      /* sends in flight per lane */
    size_t scratch_cache;       /* bytes of freed scratch buffers kept for reuse */
    size_t fusion_bytes;        /* 0: auto */
    size_t fusion_first_bytes;
    char timeline[256];        /* "none" or a path */
    char flight_recorder[256]; /* "none" or a path */
    double stall_warn_s;       /* 0: no stall warnings */
    int adasum;                /* GCOLL_ADASUM: 0 auto, 1 flat, 2 hierarchical */
    int adasum_push;           /* GCOLL_ADASUM_PUSH: 0 auto, 1 on, 2 off */
    gcoll__link_t cost[2];     /* inside a host, to the network */
    int cost_probe[2];         /* GCOLL_COST_INTRA/INTER=auto: measure the link */
    unsigned mpi_colls;        /* GCOLL_MPI_COLLS: a bit per call of src/core/mpi_colls.c's list */
    /* launch without MPI (src/base/boot.c) */
    int boot;                 /* GCOLL_BOOT: 0 auto, 1 mpi, 2 env */
    int boot_rank, boot_size; /* GCOLL_RANK, GCOLL_SIZE: -1 when unset */
    char root_addr[256];      /* GCOLL_ROOT_ADDR: HOST:PORT, "" when unset */
    unsigned char job_secret[16];
    int has_job_secret;
    size_t cuda_chunk; /* device buffers: the staged pipeline's chunk */
    size_t
        cuda_reduce_min; /* staged between hosts: the send buffer's bytes from which more than two ranks reduce on the GPU */
    int cuda_ipc;        /* GCOLL_CUDA_IPC: 0 auto, 1 on, 2 off */
} gcoll__config_t;

extern gcoll__config_t gcoll__config;

/* One GCOLL_* variable: what it accepts, its default and description, and how its value is
 * parsed into *out (parse NULL: a choice among choices, stored as the index of the name). */
typedef gcoll_status_t (*gcoll__parse_fn)(const char *var, const char *s, void *out, int arg);
typedef struct {
    const char *name;
    const char *accepts;
    const char *def;
    const char *desc;
    gcoll__parse_fn parse;
    const char *const *choices;
    void *out;
    int arg; /* the parser's argument */
} gcoll__var_t;

/* A layer above the base keeps its own variables (the selection its GCOLL_<COLL> tables, the
 * transports GCOLL_TRANSPORT_INTER and GCOLL_TRANSPORT_INTRA) and adds them to the registry
 * before main (a constructor calling gcoll__config_add_group); the registry lists the base's
 * variables, then the groups by rank. A group is parsed, dumped and listed like the base's. */
typedef struct gcoll__var_group {
    int rank;
    gcoll__var_t *vars;
    size_t n;
    struct gcoll__var_group *next;
} gcoll__var_group_t;
void gcoll__config_add_group(gcoll__var_group_t *g);

/* Reads the environment into gcoll__config; a malformed value is an error naming the variable.
 * Warns about unknown GCOLL_* names. */
gcoll_status_t gcoll__config_load(void);
/* Variable `index` (gcoll_config_var's order) parsed from value into gcoll__config, as the
 * environment's value would be; the entry point of the fuzz harnesses (tests/fuzz/). */
gcoll_status_t gcoll__config_parse(size_t index, const char *value);
void gcoll__config_dump(void); /* at info level: every variable, its value and its source */
/* Forgets the values the last load read: until the next load, gcoll__config_get reads the
 * environment as it is (gcoll_finalize, or a failed gcoll_init). */
void gcoll__config_unload(void);
/* gcoll_config_get without its NULL checks: name's value as the library takes it, into buf. */
gcoll_status_t gcoll__config_get(const char *name, char *buf, size_t len, const char **source);

/* Strict parsers, shared with the benchmark's option parsing through their public twins. */
gcoll_status_t gcoll__parse_size(const char *s, size_t *out); /* "64K", "1M", "max" */

/* GCOLL_MPI_COLLS (src/core/mpi_colls.c): all, none, or a list of call names, into an unsigned mask. */
gcoll_status_t gcoll__parse_mpi_colls(const char *var, const char *s, void *out, int arg);

#endif
