/* The bootstrap group of a job launched without MPI: a binomial tree over TCP rooted at the
 * group's rank 0, so that no rank holds more than log2(n) + 1 connections and every operation
 * takes O(log n) rounds. Gathers climb the tree, results come down it; a rank that gives up tells
 * its neighbours, which pass it on. The wiring (registration with rank 0, parents dialling their
 * children, the hello that proves GCOLL_JOB_SECRET) is boot_tcp_link.c's. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/boot_tcp.h"
#include "base/config.h"
#include "base/error.h"
#include "base/le.h"

#define FRAME_MAGIC 0x46544247u /* "GBTF" */
#define FRAME_BYTES 24          /* magic, type, operation number, the failed rank (F_FAIL), payload bytes (8) */
#define WHY_MAX 256

static const gcoll__boot_ops_t tcp_ops;

gcoll__tree_t *gcoll__tree_new(int rank, int size)
{
    gcoll__tree_t *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->b = (gcoll__boot_t){&tcp_ops, rank, size, MPI_COMM_NULL};
    s->up = -1;
    s->lfd = -1;
    int low = rank & -rank; /* rank 0's children are every power of two below size */
    for (int bit = 1; bit < size && (rank == 0 || bit < low); bit <<= 1)
        if (rank + bit < size) {
            s->kid[s->nkids] = rank + bit;
            s->kfd[s->nkids++] = -1;
        }
    s->self.s_addr = htonl(INADDR_LOOPBACK);
    return s;
}

int gcoll__tree_parent(int rank)
{
    return rank & (rank - 1);
}

/* The end of rank r's subtree: it holds ranks r .. end-1. */
static int subtree_end(int r, int n)
{
    long end = r == 0 ? n : (long)r + (r & -r);
    return end < n ? (int)end : n;
}

static void t_free(gcoll__boot_t *b)
{
    gcoll__tree_t *s = (gcoll__tree_t *)b;
    if (s->up >= 0)
        close(s->up);
    for (int i = 0; i < s->nkids; i++)
        if (s->kfd[i] >= 0)
            close(s->kfd[i]);
    if (s->lfd >= 0)
        close(s->lfd);
    free(s->table);
    free(s);
}

static gcoll_status_t send_frame(gcoll__tree_t *s, int fd, int peer, int type, const void *data, size_t len,
                                 double deadline)
{
    unsigned char h[FRAME_BYTES];
    gcoll__put32(h, FRAME_MAGIC);
    gcoll__put32(h + 4, (uint32_t)type);
    gcoll__put32(h + 8, s->seq);
    gcoll__put32(h + 12, type == GCOLL__F_FAIL ? (uint32_t)s->why_rank : 0);
    gcoll__put64(h + 16, len);
    GCOLL_CHECK(gcoll__tree_send(fd, h, sizeof(h), deadline, peer));
    return gcoll__tree_send(fd, data, len, deadline, peer);
}

/* A failure frame (header h) from peer: its reason becomes this group's and the error. */
static gcoll_status_t failure_from(gcoll__tree_t *s, int fd, const unsigned char *h, int peer, double deadline)
{
    char why[WHY_MAX] = "";
    size_t n = (size_t)gcoll__get64(h + 16);
    GCOLL_CHECK(gcoll__tree_recv(fd, why, n < sizeof(why) ? n : sizeof(why) - 1, deadline, peer));
    snprintf(s->why, sizeof(s->why), "%s", why);
    s->why_rank = (int)gcoll__get32(h + 12);
    s->why_fd = fd;
    return gcoll__error(GCOLL_ERR_REMOTE, "bootstrap: rank %d gave up: %s", s->why_rank, s->why);
}

static int is_failure(const unsigned char *h)
{
    return gcoll__get32(h) == FRAME_MAGIC && gcoll__get32(h + 4) == GCOLL__F_FAIL && gcoll__get64(h + 16) < WHY_MAX;
}

/* Reads the frame of the current operation from peer into buf, which it must fill exactly; a
 * failure the peer reports comes back as the error. */
gcoll_status_t gcoll__tree_recv_frame(gcoll__tree_t *s, int fd, int peer, void *buf, size_t len, double deadline)
{
    unsigned char h[FRAME_BYTES];
    GCOLL_CHECK(gcoll__tree_recv(fd, h, sizeof(h), deadline, peer));
    uint32_t type = gcoll__get32(h + 4), seq = gcoll__get32(h + 8);
    uint64_t n = gcoll__get64(h + 16);
    if (is_failure(h))
        return failure_from(s, fd, h, peer, deadline);
    if (gcoll__get32(h) != FRAME_MAGIC || type != GCOLL__F_DATA || gcoll__get32(h + 12) != 0)
        return gcoll__error(GCOLL_ERR_TRANSPORT, "bootstrap: rank %d sent a malformed frame", peer);
    if (seq != s->seq || n != len)
        return gcoll__error(GCOLL_ERR_INVALID_USAGE,
                            "bootstrap: rank %d sent %llu bytes for setup step %u where "
                            "this rank expects %zu for step %u (HINT: every rank must make the same "
                            "communicator calls in the same order)",
                            peer, (unsigned long long)n, (unsigned)seq, len, (unsigned)s->seq);
    return gcoll__tree_recv(fd, buf, len, deadline, peer);
}

gcoll_status_t gcoll__tree_send_data(gcoll__tree_t *s, int fd, int peer, const void *data, size_t len, double deadline)
{
    gcoll_status_t st = send_frame(s, fd, peer, GCOLL__F_DATA, data, len, deadline);
    if (st != GCOLL_ERR_REMOTE)
        return st;
    /* a peer that gave up closes its connections: the reason it sent first may be queued here */
    char first[WHY_MAX];
    unsigned char h[FRAME_BYTES];
    snprintf(first, sizeof(first), "%s", gcoll_last_error());
    double soon = gcoll__tree_now() + 1;
    if (gcoll__tree_recv(fd, h, sizeof(h), soon, peer) == GCOLL_SUCCESS && is_failure(h))
        return failure_from(s, fd, h, peer, soon);
    return gcoll__error(st, "%s", first);
}

gcoll_status_t gcoll__tree_give_up(gcoll__tree_t *s, gcoll_status_t st)
{
    if (!s->why[0]) { /* this rank is the first to give up */
        snprintf(s->why, sizeof(s->why), "%s", gcoll_last_error());
        s->why_rank = s->b.rank;
        s->why_fd = -1;
    }
    char why[WHY_MAX];
    snprintf(why, sizeof(why), "%s", s->why);
    int fds[1 + GCOLL__TREE_MAX_KIDS], peers[1 + GCOLL__TREE_MAX_KIDS], n = 0;
    if (s->up >= 0) {
        fds[n] = s->up;
        peers[n++] = gcoll__tree_parent(s->b.rank);
    }
    for (int i = 0; i < s->nkids; i++)
        if (s->kfd[i] >= 0) {
            fds[n] = s->kfd[i];
            peers[n++] = s->kid[i];
        }
    for (int i = 0; i < n; i++) /* briefly: the neighbours may be gone too */
        if (fds[i] != s->why_fd)
            (void)send_frame(s, fds[i], peers[i], GCOLL__F_FAIL, why, strlen(why) + 1, gcoll__tree_now() + 1);
    if (s->why_rank == s->b.rank)
        return gcoll__error(st, "%s", why);
    return gcoll__error(st, "bootstrap: rank %d gave up: %s", s->why_rank, why);
}

static gcoll_status_t usable(gcoll__tree_t *s)
{
    if (s->why[0])
        return gcoll__error(GCOLL_ERR_REMOTE, "bootstrap: this group failed earlier: %s", s->why);
    if (s->table) { /* the world's first operation */
        gcoll_status_t st = gcoll__tree_link(s, s->table, s->lfd, 0, 1, gcoll__tree_now() + gcoll__config.timeout_s);
        if (s->lfd >= 0)
            close(s->lfd);
        s->lfd = -1;
        free(s->table);
        s->table = NULL;
        GCOLL_CHECK(st);
    }
    s->seq++;
    return GCOLL_SUCCESS;
}

/* Waits until a neighbour in `want` (bit 0 the parent, bit 1 + i child i) is ready to read and
 * sets *slot to it. The others are quiet unless they are failing: a frame or a close from one of
 * them ends the wait with its failure. */
static gcoll_status_t await(gcoll__tree_t *s, uint64_t want, double deadline, int *slot)
{
    struct pollfd p[1 + GCOLL__TREE_MAX_KIDS];
    int who[1 + GCOLL__TREE_MAX_KIDS], n = 0;
    if (s->up >= 0) {
        who[n] = 0;
        p[n++] = (struct pollfd){s->up, POLLIN, 0};
    }
    for (int i = 0; i < s->nkids; i++) {
        who[n] = 1 + i;
        p[n++] = (struct pollfd){s->kfd[i], POLLIN, 0};
    }
    for (;;) {
        double left = deadline - gcoll__tree_now();
        if (left <= 0) {
            int first = 0;
            while (!(want >> first & 1))
                first++;
            return gcoll__error(GCOLL_ERR_TIMEOUT,
                                "bootstrap: waiting for rank %d: nothing within %g s (GCOLL_TIMEOUT)",
                                first ? s->kid[first - 1] : gcoll__tree_parent(s->b.rank), gcoll__config.timeout_s);
        }
        int rc = poll(p, (nfds_t)n, (int)(left * 1000) + 1);
        if (rc < 0 && errno != EINTR)
            return gcoll__error(GCOLL_ERR_SYSTEM, "bootstrap: poll failed: %s", strerror(errno));
        for (int i = 0; rc > 0 && i < n; i++) {
            if (!p[i].revents)
                continue;
            if (want >> who[i] & 1) {
                *slot = who[i];
                return GCOLL_SUCCESS;
            }
            int peer = who[i] ? s->kid[who[i] - 1] : gcoll__tree_parent(s->b.rank);
            unsigned char h[FRAME_BYTES];
            GCOLL_CHECK(gcoll__tree_recv(p[i].fd, h, sizeof(h), deadline, peer));
            if (is_failure(h))
                return failure_from(s, p[i].fd, h, peer, deadline);
            return gcoll__error(GCOLL_ERR_INVALID_USAGE,
                                "bootstrap: rank %d sent setup step %u out of turn, in step %u here (HINT: every rank "
                                "must make the same communicator calls in the same order)",
                                peer, (unsigned)gcoll__get32(h + 8), (unsigned)s->seq);
        }
    }
}

/* The parent's frame of this operation, a failure from any neighbour meanwhile ending the wait. */
static gcoll_status_t from_parent(gcoll__tree_t *s, void *buf, size_t len, double deadline)
{
    int slot;
    GCOLL_CHECK(await(s, 1, deadline, &slot));
    return gcoll__tree_recv_frame(s, s->up, gcoll__tree_parent(s->b.rank), buf, len, deadline);
}

/* Sends buf to every child. */
static gcoll_status_t down(gcoll__tree_t *s, const void *buf, size_t len, double deadline)
{
    for (int i = 0; i < s->nkids; i++)
        GCOLL_CHECK(gcoll__tree_send_data(s, s->kfd[i], s->kid[i], buf, len, deadline));
    return GCOLL_SUCCESS;
}

static gcoll_status_t allgather(gcoll__tree_t *s, const void *mine, char *all, size_t len, double deadline)
{
    int r = s->b.rank, n = s->b.size;
    if ((const char *)mine != all + (size_t)r * len)
        memcpy(all + (size_t)r * len, mine, len);
    uint64_t want = 0; /* each child's subtree holds contiguous ranks: its blocks land in place */
    for (int i = 0; i < s->nkids; i++)
        want |= (uint64_t)1 << (1 + i);
    while (want) {
        int slot, c;
        GCOLL_CHECK(await(s, want, deadline, &slot));
        c = s->kid[slot - 1];
        GCOLL_CHECK(gcoll__tree_recv_frame(s, s->kfd[slot - 1], c, all + (size_t)c * len,
                                           (size_t)(subtree_end(c, n) - c) * len, deadline));
        want &= ~((uint64_t)1 << slot);
    }
    if (r != 0) {
        int parent = gcoll__tree_parent(r);
        GCOLL_CHECK(gcoll__tree_send_data(s, s->up, parent, all + (size_t)r * len,
                                          (size_t)(subtree_end(r, n) - r) * len, deadline));
        GCOLL_CHECK(from_parent(s, all, len * (size_t)n, deadline));
    }
    return down(s, all, len * (size_t)n, deadline);
}

static gcoll_status_t t_allgather(gcoll__boot_t *b, const void *mine, void *all, size_t len)
{
    gcoll__tree_t *s = (gcoll__tree_t *)b;
    GCOLL_CHECK(usable(s));
    gcoll_status_t st = allgather(s, mine, all, len, gcoll__tree_now() + gcoll__config.timeout_s);
    return st == GCOLL_SUCCESS ? st : gcoll__tree_give_up(s, st);
}

/* A root other than 0 sends up its path to rank 0; then the data comes down the whole tree. */
static gcoll_status_t bcast(gcoll__tree_t *s, void *buf, size_t len, int root, double deadline)
{
    int r = s->b.rank;
    if (root != 0 && root > r && root < subtree_end(r, s->b.size)) {
        int i = s->nkids - 1;
        while (s->kid[i] > root) /* the child whose subtree holds the root */
            i--;
        int slot;
        GCOLL_CHECK(await(s, (uint64_t)1 << (1 + i), deadline, &slot));
        GCOLL_CHECK(gcoll__tree_recv_frame(s, s->kfd[i], s->kid[i], buf, len, deadline));
    }
    if (r != 0 && (r == root || (root > r && root < subtree_end(r, s->b.size))))
        GCOLL_CHECK(gcoll__tree_send_data(s, s->up, gcoll__tree_parent(r), buf, len, deadline));
    if (r != 0)
        GCOLL_CHECK(from_parent(s, buf, len, deadline));
    return down(s, buf, len, deadline);
}

static gcoll_status_t t_bcast(gcoll__boot_t *b, void *buf, size_t len, int root)
{
    gcoll__tree_t *s = (gcoll__tree_t *)b;
    GCOLL_CHECK(usable(s));
    gcoll_status_t st = bcast(s, buf, len, root, gcoll__tree_now() + gcoll__config.timeout_s);
    return st == GCOLL_SUCCESS ? st : gcoll__tree_give_up(s, st);
}

static gcoll_status_t t_barrier(gcoll__boot_t *b)
{
    char mine = 0, *all = malloc((size_t)b->size);
    if (!all)
        return gcoll__error(GCOLL_ERR_NOMEM, "bootstrap: no memory for a barrier");
    gcoll_status_t st = t_allgather(b, &mine, all, 1); /* poll() sleeps while it waits */
    free(all);
    return st;
}

/* A member of a split: its key, then its rank in the parent, set the order. */
typedef struct {
    int32_t key;
    int rank;
} member_t;

static int by_key(const void *a, const void *b)
{
    const member_t *x = a, *y = b;
    return x->key != y->key ? (x->key > y->key) - (x->key < y->key) : (x->rank > y->rank) - (x->rank < y->rank);
}

/* The new groups: every member but each group's rank 0 listens, the addresses go round the
 * parent, and each group links its own tree. */
static gcoll_status_t split(gcoll__tree_t *s, int color, int key, gcoll__tree_t **out)
{
    int n = s->b.size;
    int32_t mine[2] = {color < 0 ? -1 : color, key}, *ck = malloc(sizeof(int32_t) * 2 * (size_t)n);
    unsigned char(*ad)[16] = malloc(16 * (size_t)n);
    member_t *m = malloc(sizeof(member_t) * (size_t)n);
    unsigned char(*table)[GCOLL__TREE_ADDR_BYTES] = malloc(GCOLL__TREE_ADDR_BYTES * (size_t)n);
    gcoll_status_t st = GCOLL_SUCCESS;
    if (!ck || !ad || !m || !table)
        st = gcoll__error(GCOLL_ERR_NOMEM, "bootstrap: no memory to split a group of %d", n);
    if (st == GCOLL_SUCCESS)
        st = t_allgather(&s->b, mine, ck, sizeof(mine));
    int size = 0, rank = 0;
    for (int r = 0; st == GCOLL_SUCCESS && color >= 0 && r < n; r++)
        if (ck[2 * r] == mine[0])
            m[size++] = (member_t){ck[2 * r + 1], r};
    if (size)
        qsort(m, (size_t)size, sizeof(*m), by_key);
    while (rank < size && m[rank].rank != s->b.rank)
        rank++;
    int lfd = -1, port = 0;
    unsigned char me[16] = {0}; /* address, port; the nonce from the new rank 0 */
    if (st == GCOLL_SUCCESS && size > 1 && rank > 0 &&
        gcoll__tree_listen(s->b.rank, s->self, &port, 8, &lfd) == GCOLL_SUCCESS) {
        memcpy(me, &s->self.s_addr, 4);
        gcoll__put32(me + 4, (uint32_t)port);
    }
    if (size > 1 && rank == 0)
        gcoll__put64(me + 8, gcoll__tree_nonce());
    if (st == GCOLL_SUCCESS)
        st = t_allgather(&s->b, me, ad, sizeof(me));
    gcoll__tree_t *sub = NULL;
    if (st == GCOLL_SUCCESS && color >= 0 && !(sub = gcoll__tree_new(rank, size)))
        st = gcoll__error(GCOLL_ERR_NOMEM, "bootstrap: no memory for a group");
    if (sub && st == GCOLL_SUCCESS && size > 1) {
        sub->self = s->self;
        for (int i = 0; i < size; i++)
            memcpy(table[i], ad[m[i].rank], GCOLL__TREE_ADDR_BYTES);
        st = gcoll__tree_link(sub, table, lfd, gcoll__get64(ad[m[0].rank] + 8), 0,
                              gcoll__tree_now() + gcoll__config.timeout_s);
    }
    if (lfd >= 0)
        close(lfd);
    free(ck);
    free(ad);
    free(m);
    free(table);
    if (st != GCOLL_SUCCESS && sub)
        t_free(&sub->b);
    else
        *out = sub;
    return st;
}

static gcoll_status_t t_split(gcoll__boot_t *b, int color, int key, gcoll__boot_t **out)
{
    gcoll__tree_t *sub = NULL;
    GCOLL_CHECK(split((gcoll__tree_t *)b, color, key, &sub));
    *out = sub ? &sub->b : NULL;
    return GCOLL_SUCCESS;
}

static const gcoll__boot_ops_t tcp_ops = {t_allgather, t_bcast, t_barrier, t_split, gcoll__boot_split_by_host, t_free};

void gcoll__tree_free(gcoll__tree_t *s)
{
    t_free(&s->b);
}
