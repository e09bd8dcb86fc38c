/* The TCP bootstrap tree of a launch without MPI, between its two files: boot_tcp.c runs the
 * group's operations over the tree, boot_tcp_link.c builds it (the world's registration with rank
 * 0, a split's groups from addresses allgathered through their parent) and moves the bytes. */
#ifndef GCOLL_BOOT_TCP_H
#define GCOLL_BOOT_TCP_H

#include <netinet/in.h>
#include <stdint.h>

#include "base/boot.h"

#define GCOLL__TREE_MAX_KIDS 31  /* rank 0 of 2^31 ranks */
#define GCOLL__TREE_ADDR_BYTES 8 /* an IPv4 address as sent, the port (little-endian) */
enum { GCOLL__F_DATA = 1, GCOLL__F_FAIL };

/* A rank's place in a binomial tree over the group: its parent clears the rank's lowest set bit,
 * its children set each bit below it, so a child's subtree holds contiguous ranks. */
typedef struct {
    gcoll__boot_t b;
    int up;                        /* the parent's connection; -1 at rank 0 */
    int nkids;                     /* children, nearest first */
    int kid[GCOLL__TREE_MAX_KIDS]; /* their ranks */
    int kfd[GCOLL__TREE_MAX_KIDS]; /* their connections */
    uint32_t seq;                  /* operations so far: every frame carries the number of its own */
    struct in_addr self;           /* where the others reach this rank */
    char why[256];                 /* set once the group failed: every later call fails with it */
    int why_rank;                  /* the rank that gave up first */
    int why_fd;                    /* the connection the failure came in on (not told back), or -1 */
    /* The world links its tree at its first operation, not in gcoll_init, so that a rank's own
     * start-up work overlaps the wait for the last rank to register: until then its listener and
     * (rank 0) the table of addresses wait here. */
    int lfd;
    unsigned char (*table)[GCOLL__TREE_ADDR_BYTES];
} gcoll__tree_t;

/* boot_tcp.c */
gcoll__tree_t *gcoll__tree_new(int rank, int size); /* unlinked; NULL without memory */
void gcoll__tree_free(gcoll__tree_t *s);
int gcoll__tree_parent(int rank);
gcoll_status_t gcoll__tree_recv_frame(gcoll__tree_t *s, int fd, int peer, void *buf, size_t len, double deadline);
gcoll_status_t gcoll__tree_send_data(gcoll__tree_t *s, int fd, int peer, const void *data, size_t len, double deadline);
/* The group fails: the reason (this rank's last error, unless a neighbour's came first) goes to
 * every neighbour but the one it came from, and stays for later calls. Returns st. */
gcoll_status_t gcoll__tree_give_up(gcoll__tree_t *s, gcoll_status_t st);

/* boot_tcp_link.c */
double gcoll__tree_now(void);
gcoll_status_t gcoll__tree_send(int fd, const void *buf, size_t len, double deadline, int peer);
gcoll_status_t gcoll__tree_recv(int fd, void *buf, size_t len, double deadline, int peer);
/* A listening socket of this rank at addr:port (port 0: any); *port gets the one taken. */
gcoll_status_t gcoll__tree_listen(int rank, struct in_addr addr, int *port, int backlog, int *out);
uint64_t gcoll__tree_nonce(void); /* a new group's: never 0, the world's */
/* Links s into its group: a rank but 0 accepts its parent's connection on lfd, then every rank
 * dials its children at their addresses in table (indexed by rank). In the world (world = 1) only
 * rank 0 has the table at first: it comes down the tree, each parent sending it after its hello. */
gcoll_status_t gcoll__tree_link(gcoll__tree_t *s, unsigned char (*table)[GCOLL__TREE_ADDR_BYTES], int lfd,
                                uint64_t nonce, int world, double deadline);

#endif
