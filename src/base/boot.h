/* The bootstrap group: the few collective operations that set communicators and transports up
 * (address exchange, agreement on settings, the host map), behind one table with three
 * implementations: an MPI communicator (boot_mpi.c), for jobs launched without MPI a TCP tree
 * rooted at rank 0 (boot_tcp.c), and the application's key-value store (boot_store.c). Every call
 * is collective over the group. */
#ifndef GCOLL_BOOT_H
#define GCOLL_BOOT_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "gcoll.h"

typedef struct gcoll__boot gcoll__boot_t;

typedef struct {
    gcoll_status_t (*allgather)(gcoll__boot_t *b, const void *mine, void *all, size_t len);
    gcoll_status_t (*bcast)(gcoll__boot_t *b, void *buf, size_t len, int root);
    gcoll_status_t (*barrier)(gcoll__boot_t *b); /* sleeps while it waits: it must not take a core */
    /* The ranks of one color, ordered by key then rank; a negative color gets *out = NULL. */
    gcoll_status_t (*split)(gcoll__boot_t *b, int color, int key, gcoll__boot_t **out);
    gcoll_status_t (*split_node)(gcoll__boot_t *b, gcoll__boot_t **out); /* the ranks of this host */
    void (*free)(gcoll__boot_t *b);
} gcoll__boot_ops_t;

struct gcoll__boot {
    const gcoll__boot_ops_t *ops;
    int rank, size;
    MPI_Comm comm; /* MPI groups: a private duplicate; MPI_COMM_NULL in an MPI-free job */
};

/* How the job was launched, decided once by gcoll__boot_world. */
typedef enum { GCOLL_BOOT_MPI = 1, GCOLL_BOOT_ENV, GCOLL_BOOT_STORE } gcoll__boot_mode_t;

/* The world group: MPI (started here unless the application did, THREAD_MULTIPLE) or the TCP
 * rendezvous from the environment, as GCOLL_BOOT and the launcher's variables say. Needs the
 * configuration loaded. Sets *mode and *mpi_owned (gcoll_init started MPI). */
gcoll_status_t gcoll__boot_world(int *argc, char ***argv, gcoll__boot_mode_t *mode, int *mpi_owned,
                                 gcoll__boot_t **out);
/* MPI_COMM_WORLD's group, MPI started first unless the application did (boot_mpi.c). */
gcoll_status_t gcoll__boot_mpi_world(int *argc, char ***argv, int *mpi_owned, gcoll__boot_t **out);
/* A group over a private duplicate of comm (collective over comm). */
gcoll_status_t gcoll__boot_from_mpi(MPI_Comm comm, gcoll__boot_t **out);
/* The TCP tree: rank 0 listens at GCOLL_ROOT_ADDR (or MASTER_ADDR:MASTER_PORT+1), the others
 * register with it and link the tree (boot_tcp_link.c). */
gcoll_status_t gcoll__boot_tcp_world(int rank, int size, const char *root, gcoll__boot_t **out);
/* A group of size ranks that meet through the application's store (boot_store.c); checks the
 * arguments, naming the bad one. */
gcoll_status_t gcoll__boot_store(const gcoll_store_t *store, int rank, int size, gcoll__boot_t **out);
/* The rank the launcher's variables give, for log lines before the bootstrap; -1 if none. */
int gcoll__boot_env_rank(void);
/* This host's identity: hostname, boot id and network namespace (ranks with equal keys share a
 * loopback and shared memory); GCOLL_HOST_KEY_BYTES holds any. */
#define GCOLL_HOST_KEY_BYTES 128 /* a Linux hostname (64), a boot id (36), an inode number (20) */
void gcoll__boot_host_key(char *buf, size_t len);

gcoll_status_t gcoll__boot_allgather(gcoll__boot_t *b, const void *mine, void *all, size_t len);
gcoll_status_t gcoll__boot_bcast(gcoll__boot_t *b, void *buf, size_t len, int root);
gcoll_status_t gcoll__boot_barrier(gcoll__boot_t *b);
gcoll_status_t gcoll__boot_split(gcoll__boot_t *b, int color, int key, gcoll__boot_t **out);
gcoll_status_t gcoll__boot_split_node(gcoll__boot_t *b, gcoll__boot_t **out);
/* A split_node for groups that have no host map of their own: host keys allgathered, each host's
 * first rank its color (the TCP tree and the store group use it as theirs). */
gcoll_status_t gcoll__boot_split_by_host(gcoll__boot_t *b, gcoll__boot_t **out);
gcoll_status_t gcoll__boot_dup(gcoll__boot_t *b, gcoll__boot_t **out);
/* In place over n values: every rank gets the smallest (max = 0) or largest (max = 1) of each. */
gcoll_status_t gcoll__boot_reduce_i64(gcoll__boot_t *b, int64_t *v, int n, int max);
gcoll_status_t gcoll__boot_min_int(gcoll__boot_t *b, int *v);
gcoll_status_t gcoll__boot_max_int(gcoll__boot_t *b, int *v);
void gcoll__boot_free(gcoll__boot_t *b); /* NULL is fine */

#endif
