/* Transport-level tests of the TCP transport under mpirun (any rank count >= 2): messages of many
 * sizes checked byte for byte, receives posted before and after arrival, tags interleaved and out
 * of order, all-to-all, size mismatches, intruders on the listening socket, malformed frames, a
 * peer that closes, GCOLL_TCP_SNDBUF / GCOLL_TCP_RCVBUF, and the priority order of queued data
 * (isend_prio). Prints "RESULT tcp np=N passed=N failed=N". */
#include <arpa/inet.h>
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"
#include "transports/tcp/tcp.h"
#include "tp_check.h"
#include "tp_data.h"

static const gcoll__transport_t *T = &gcoll__transport_tcp;
static unsigned char *addrs; /* every rank's published address, from the last open_tp */

static void wait_all(gcoll__tp_t *tp, gcoll__tp_req_t **reqs, gcoll_status_t *st, char (*why)[256], int n);

static int open_socks(const gcoll__tp_t *tp)
{
    int n = 0;
    for (int q = 0; q < size; q++)
        for (int i = 0; q != rank && i < tp->nsocks; i++)
            n += tp->peers[q].socks[i].ev.fd >= 0;
    return n;
}

/* An endpoint whose sockets to every peer are open: with GCOLL_TCP_CONNECT=lazy, an empty message
 * each way with every peer opens them, so the tests that reach into sockets find them. */
static void meet_all(gcoll__tp_t *tp)
{
    gcoll__tp_req_t **reqs = calloc(2 * (size_t)size, sizeof(*reqs));
    gcoll_status_t *st = calloc(2 * (size_t)size, sizeof(*st));
    char dummy = 0;
    int n = 0;
    for (int q = 0; q < size && reqs && st; q++)
        if (q != rank) {
            CHECK(T->irecv(tp, q, 0xfffffff2u, &dummy, 0, &reqs[n++]) == GCOLL_SUCCESS, "meet: %s", gcoll_last_error());
            CHECK(T->isend(tp, q, 0xfffffff2u, &dummy, 0, &reqs[n++]) == GCOLL_SUCCESS, "meet: %s", gcoll_last_error());
        }
    if (reqs && st)
        wait_all(tp, reqs, st, NULL, n);
    for (int i = 0; i < n && st; i++)
        CHECK(st[i] == GCOLL_SUCCESS, "meet: request %d ended with %d", i, st[i]);
    /* the messages take socket 0; the others open beside it */
    for (double end = check_now() + 10; open_socks(tp) < (size - 1) * tp->nsocks && check_now() < end;)
        T->check(tp);
    CHECK(open_socks(tp) == (size - 1) * tp->nsocks, "meet: %d of %d sockets open", open_socks(tp),
          (size - 1) * tp->nsocks);
    free(reqs);
    free(st);
}

/* The peers this rank holds an open socket to, as a bit mask (ranks below 64). */
static unsigned long long open_peers(const gcoll__tp_t *tp)
{
    unsigned long long m = 0;
    for (int q = 0; q < size && q < 64; q++)
        for (int i = 0; q != rank && i < tp->nsocks; i++)
            if (tp->peers[q].socks[i].ev.fd >= 0)
                m |= 1ull << q;
    return m;
}

static gcoll__tp_t *open_bare(void)
{
    gcoll__bootstrap_t boot = {world_group(), rank, size, NULL};
    gcoll__tp_t *tp = NULL;
    gcoll_status_t st = T->create(&boot, &tp);
    CHECK(st == GCOLL_SUCCESS, "create: %s", gcoll_last_error());
    if (st != GCOLL_SUCCESS)
        return NULL;
    size_t len = T->addr_len(tp);
    unsigned char *mine = malloc(len);
    free(addrs);
    addrs = malloc(len * (size_t)size);
    T->addr(tp, mine);
    MPI_Allgather(mine, (int)len, MPI_BYTE, addrs, (int)len, MPI_BYTE, MPI_COMM_WORLD);
    free(mine);
    st = T->connect(tp, addrs);
    CHECK(st == GCOLL_SUCCESS, "connect: %s", gcoll_last_error());
    return tp;
}

static gcoll__tp_t *open_tp(void)
{
    gcoll__tp_t *tp = open_bare();
    if (tp)
        meet_all(tp);
    MPI_Barrier(MPI_COMM_WORLD); /* no rank closes while another still meets it */
    return tp;
}

/* Tests every request until all are done (each slot set to NULL), or 60 s pass. */
static void wait_all(gcoll__tp_t *tp, gcoll__tp_req_t **reqs, gcoll_status_t *st, char (*why)[256], int n)
{
    double end = check_now() + 60;
    for (int left = n; left > 0;) {
        left = 0;
        for (int i = 0; i < n; i++) {
            if (!reqs[i])
                continue;
            int done = 0;
            st[i] = T->test(tp, reqs[i], &done);
            if (done) {
                reqs[i] = NULL;
                if (why)
                    snprintf(why[i], sizeof(why[i]), "%s", st[i] ? gcoll_last_error() : "");
            }
            left += !done;
        }
        if (left && check_now() > end) {
            CHECK(0, "%d requests still pending after 60 s", left);
            for (int i = 0; i < n; i++)
                if (reqs[i]) {
                    T->cancel(tp, reqs[i]);
                    reqs[i] = NULL;
                    st[i] = GCOLL_ERR_TIMEOUT;
                }
            return;
        }
    }
}

static gcoll_status_t wait_one(gcoll__tp_t *tp, gcoll__tp_req_t *r, char *why, size_t len)
{
    gcoll_status_t st;
    char w[1][256];
    wait_all(tp, &r, &st, w, 1);
    snprintf(why, len, "%s", w[0]);
    return st;
}

/* Runs progress for a while through a receive that never matches, then abandons it: what has
 * arrived meanwhile is read, so receives posted next find it waiting (the unexpected path). */
static void drive(gcoll__tp_t *tp, int peer, double seconds)
{
    char dummy;
    gcoll__tp_req_t *r;
    if (T->irecv(tp, peer, 0xfffffff0u, &dummy, 1, &r) != GCOLL_SUCCESS)
        return;
    int done = 0;
    for (double end = check_now() + seconds; check_now() < end && !done;)
        T->test(tp, r, &done);
    CHECK(!done, "a receive nobody sends to completed");
    if (!done)
        T->cancel(tp, r);
}

/* Each rank sends to the next and receives from the previous, one size at a time; every other
 * size, the receive is posted only after the message (or its offer) has been read. */
static void test_sizes(gcoll__tp_t *tp)
{
    static const size_t sizes[] = {0, 1, 7, 4095, 65536, 65537, 1048576 + 3, 16777216};
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    for (int late = 0; late < 2; late++)
        for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
            size_t n = sizes[k];
            uint32_t tag = 1000 + (uint32_t)k + 100 * (uint32_t)late;
            unsigned char *out = malloc(n + 1), *in = malloc(n + 1);
            fill(out, n, seed_of(rank, to, tag, n));
            memset(in, 0xA5, n + 1);
            gcoll__tp_req_t *reqs[2] = {NULL, NULL};
            gcoll_status_t st[2] = {0, 0};
            if (!late)
                CHECK(T->irecv(tp, from, tag, in, n, &reqs[1]) == GCOLL_SUCCESS, "irecv: %s", gcoll_last_error());
            CHECK(T->isend(tp, to, tag, out, n, &reqs[0]) == GCOLL_SUCCESS, "isend: %s", gcoll_last_error());
            if (late) {
                MPI_Barrier(MPI_COMM_WORLD);
                drive(tp, from, 0.05);
                CHECK(T->irecv(tp, from, tag, in, n, &reqs[1]) == GCOLL_SUCCESS, "irecv: %s", gcoll_last_error());
            }
            char why[2][256];
            wait_all(tp, reqs, st, why, 2);
            CHECK(st[0] == GCOLL_SUCCESS, "send of %zu bytes to %d: %s", n, to, why[0]);
            CHECK(st[1] == GCOLL_SUCCESS, "receive of %zu bytes from %d: %s", n, from, why[1]);
            size_t d = first_diff(in, n, seed_of(from, rank, tag, n));
            CHECK(d == n, "%zu bytes from %d (%s): byte %zu differs", n, from, late ? "late" : "early", d);
            CHECK(in[n] == 0xA5, "%zu bytes from %d: the byte after the buffer was written", n, from);
            free(out);
            free(in);
        }
}

/* Whether a message goes eagerly: up to GCOLL_TCP_EAGER, unless it is striped. */
static int eager(const gcoll__tp_t *tp, size_t n)
{
    return n <= gcoll__config.tcp_eager && (n < ((size_t)1 << 20) || tp->nsocks == 1);
}

/* A message within GCOLL_TCP_EAGER is sent whole before its receive is posted (the receiver's
 * progress copies it aside); one byte more waits for the receive (a rendezvous). Rank 0 sends,
 * rank 1 drives its endpoint for a while before it posts the receives. */
static void test_eager_goes_ahead(gcoll__tp_t *tp)
{
    size_t big = gcoll__config.tcp_eager;
    if (!eager(tp, big))
        big = ((size_t)1 << 20) - 1; /* striped from 1 MiB on */
    const size_t sizes[2] = {big, big + 1};
    for (int k = 0; k < 2; k++) {
        size_t n = sizes[k];
        uint32_t tag = 3000 + (uint32_t)k;
        unsigned char *buf = malloc(n + 1);
        gcoll__tp_req_t *r = NULL;
        int done = 0;
        if (rank == 0) {
            fill(buf, n, seed_of(0, 1, tag, n));
            CHECK(T->isend(tp, 1, tag, buf, n, &r) == GCOLL_SUCCESS, "isend: %s", gcoll_last_error());
            for (double end = check_now() + (eager(tp, n) ? 20 : 0.3); check_now() < end && !done;)
                T->test(tp, r, &done);
            CHECK(done == eager(tp, n), "a send of %zu bytes (GCOLL_TCP_EAGER=%zu, %d sockets) %s before its receive",
                  n, gcoll__config.tcp_eager, tp->nsocks, done ? "completed" : "did not complete");
        } else if (rank == 1) {
            drive(tp, 0, eager(tp, n) ? 1.0 : 0.5);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        char why[256] = "";
        if (rank == 0 && !done)
            CHECK(wait_one(tp, r, why, sizeof(why)) == GCOLL_SUCCESS, "send of %zu bytes: %s", n, why);
        if (rank == 1) {
            CHECK(T->irecv(tp, 0, tag, buf, n, &r) == GCOLL_SUCCESS, "irecv: %s", gcoll_last_error());
            CHECK(wait_one(tp, r, why, sizeof(why)) == GCOLL_SUCCESS, "receive of %zu bytes: %s", n, why);
            size_t d = first_diff(buf, n, seed_of(0, 1, tag, n));
            CHECK(d == n, "%zu bytes sent before their receive: byte %zu differs", n, d);
        }
        free(buf);
    }
}

/* A socket's data stripes wait in priority order, equal priorities in posting order, and a
 * higher priority goes before a stripe already partly framed. */
static void test_priority_queue(void)
{
    static const int prio[] = {0, 0, 5, -1, 5, 0, 9};
    static const int want[] = {6, 2, 4, 0, 1, 5, 3}; /* the order they must go out in */
    enum { N = sizeof(prio) / sizeof(prio[0]) };
    gcoll__tp_req_t req[N];
    tcp_stripe_t st[N];
    tcp_sock_t s;
    memset(&s, 0, sizeof(s));
    memset(req, 0, sizeof(req));
    for (int i = 0; i < N; i++) {
        req[i].prio = prio[i];
        st[i] = (tcp_stripe_t){.req = &req[i], .end = 1 << 20};
        if (i == 1)
            st[0].pos = 512 << 10; /* the head is half framed when the others come */
        gcoll__tcp_queue_stripe(&s, &st[i]);
    }
    int k = 0;
    for (tcp_stripe_t *q = s.data; q && k < N; q = q->next, k++)
        CHECK(q == &st[want[k]],
              "stripe %d of the queue has priority %d (posted as number %d); want the one "
              "posted as number %d (priority %d)",
              k, q->req->prio, (int)(q - st), want[k], prio[want[k]]);
    CHECK(k == N, "the queue holds %d stripes, not %d", k, N);
}

/* Socket 0's frames wait likewise: a go-ahead (CTS) first, messages (eager or offers) in their
 * operations' priority order, equal priorities in posting order, a mismatch notice last. */
static void test_frame_queue(void)
{
    static const int prio[] = {0, 0, 5, TCP_NOTICE_PRIO, TCP_CTS_PRIO, -1, 5};
    static const int want[] = {4, 2, 6, 0, 1, 5, 3};
    enum { N = sizeof(prio) / sizeof(prio[0]) };
    tcp_frame_t f[N];
    tcp_sock_t sock;
    tcp_peer_t peer;
    tcp_link_t link;
    memset(&sock, 0, sizeof(sock));
    memset(&peer, 0, sizeof(peer));
    memset(&link, 0, sizeof(link));
    sock.link = &link;
    sock.ev.fd = -1; /* not writable: the frames stay queued */
    peer.socks = &sock;
    for (int i = 0; i < N; i++) {
        f[i] = (tcp_frame_t){.prio = prio[i]};
        gcoll__tcp_send_ctrl(&peer, &f[i]);
    }
    int k = 0;
    for (tcp_frame_t *q = sock.ctrl; q && k < N; q = q->next, k++)
        CHECK(q == &f[want[k]], "frame %d of the queue was posted as number %d; want number %d", k, (int)(q - f),
              want[k]);
    CHECK(k == N && sock.ctrl_tail == &f[want[N - 1]], "the queue holds %d frames, not %d, or its tail is wrong", k, N);
}

/* Reads one frame (header and payload) that sock_write put on a socket pair. */
static gcoll__tcp_hdr_t read_frame(int fd)
{
    unsigned char buf[TCP_HDR_BYTES + 64];
    gcoll__tcp_hdr_t h = {0};
    size_t got = 0, need = TCP_HDR_BYTES;
    while (got < need) {
        ssize_t n = read(fd, buf + got, need - got);
        if (n <= 0)
            return h;
        got += (size_t)n;
        if (got == TCP_HDR_BYTES) {
            gcoll__tcp_hdr_unpack(buf, &h);
            need += h.len < 64 ? (size_t)h.len : 0;
        }
    }
    return h;
}

/* On the wire, a data stripe goes before queued eager messages of a lower priority and after
 * those of its own priority or higher. */
static void test_wire_order(void)
{
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) {
        CHECK(0, "socketpair: %s", strerror(errno));
        return;
    }
    static char payload[64];
    tcp_sock_t sock;
    tcp_peer_t peer;
    tcp_link_t link;
    gcoll__tp_req_t req;
    memset(&link, 0, sizeof(link));
    memset(&sock, 0, sizeof(sock));
    memset(&peer, 0, sizeof(peer));
    memset(&req, 0, sizeof(req));
    sock.ev.fd = fds[0];
    sock.link = &link;
    peer.socks = &sock;
    req.prio = 5;
    req.id = 77;
    req.buf = payload;
    req.left = 1 << 20; /* never completes: it has no peer to leave */
    tcp_stripe_t st = {.req = &req, .end = 32};
    tcp_frame_t low = {.hdr = {.type = TCP_EAGER, .tag = 1, .len = 8}, .data = payload, .prio = 0};
    tcp_frame_t same = {.hdr = {.type = TCP_EAGER, .tag = 2, .len = 8}, .data = payload, .prio = 5};
    gcoll__tcp_send_ctrl(&peer, &low); /* not writable yet: queued */
    gcoll__tcp_send_ctrl(&peer, &same);
    gcoll__tcp_queue_stripe(&sock, &st);
    sock.wr_ready = 1;
    gcoll__tcp_sock_write(NULL, &sock);
    static const uint32_t want_type[3] = {TCP_EAGER, TCP_DATA, TCP_EAGER};
    static const uint32_t want_tag[3] = {2, 0, 1};
    for (int i = 0; i < 3; i++) {
        gcoll__tcp_hdr_t h = read_frame(fds[1]);
        CHECK(h.type == want_type[i] && h.tag == want_tag[i] && (h.type != TCP_DATA || h.id == 77),
              "frame %d on the wire: type %u tag %u; want type %u tag %u", i, (unsigned)h.type, (unsigned)h.tag,
              (unsigned)want_type[i], (unsigned)want_tag[i]);
    }
    close(fds[0]);
    close(fds[1]);
}

/* Every rank sends to every other rank at once: messages of several sizes, with several
 * messages per tag (order within a tag must hold, and the sizes tell a swap), the receives
 * posted in reverse tag order, half before the sends and half after. */
#define NTAGS 6
#define PER_TAG 3
static void test_all_to_all(gcoll__tp_t *tp)
{
    static const size_t sizes[PER_TAG] = {100, 300000, 7};
    int n = (size - 1) * NTAGS * PER_TAG;
    gcoll__tp_req_t **sreq = calloc((size_t)n, sizeof(*sreq)), **rreq = calloc((size_t)n, sizeof(*rreq));
    unsigned char **out = calloc((size_t)n, sizeof(*out)), **in = calloc((size_t)n, sizeof(*in));
    gcoll_status_t *sst = calloc((size_t)n, sizeof(*sst)), *rst = calloc((size_t)n, sizeof(*rst));
    char(*why)[256] = calloc((size_t)n, sizeof(*why));
    int i = 0;
    for (int q = 0; q < size; q++)
        for (int t = NTAGS - 1; t >= 0 && q != rank; t--)
            for (int m = 0; m < PER_TAG; m++, i++) {
                size_t len = sizes[(m + t) % PER_TAG];
                in[i] = malloc(len);
                if (t % 2 == 0)
                    T->irecv(tp, q, 500 + (uint32_t)t, in[i], len, &rreq[i]);
            }
    i = 0;
    for (int q = 0; q < size; q++)
        for (int t = 0; t < NTAGS && q != rank; t++)
            for (int m = 0; m < PER_TAG; m++, i++) {
                size_t len = sizes[(m + t) % PER_TAG];
                out[i] = malloc(len);
                fill(out[i], len, seed_of(rank, q, 500 + (uint32_t)t, len) + (unsigned)m);
                T->isend(tp, q, 500 + (uint32_t)t, out[i], len, &sreq[i]);
            }
    i = 0;
    for (int q = 0; q < size; q++)
        for (int t = NTAGS - 1; t >= 0 && q != rank; t--)
            for (int m = 0; m < PER_TAG; m++, i++)
                if (t % 2 == 1)
                    T->irecv(tp, q, 500 + (uint32_t)t, in[i], sizes[(m + t) % PER_TAG], &rreq[i]);
    wait_all(tp, sreq, sst, NULL, n);
    wait_all(tp, rreq, rst, why, n);
    int bad = 0;
    i = 0;
    for (int q = 0; q < size; q++)
        for (int t = NTAGS - 1; t >= 0 && q != rank; t--)
            for (int m = 0; m < PER_TAG; m++, i++) {
                size_t len = sizes[(m + t) % PER_TAG];
                if (rst[i] != GCOLL_SUCCESS && bad++ < 3)
                    CHECK(0, "all-to-all: receive %d of tag %d from %d: %s", m, 500 + t, q, why[i]);
                else if (rst[i] == GCOLL_SUCCESS)
                    CHECK(first_diff(in[i], len, seed_of(q, rank, 500 + (uint32_t)t, len) + (unsigned)m) == len,
                          "all-to-all: message %d of tag %d from %d differs", m, 500 + t, q);
                free(in[i]);
            }
    for (int k = 0; k < n; k++) {
        CHECK(sst[k] == GCOLL_SUCCESS, "all-to-all: send %d failed", k);
        free(out[k]);
    }
    free(sreq), free(rreq), free(out), free(in), free(sst), free(rst), free(why);
}

/* A receive of the wrong size fails, naming the peer and both sizes; traffic goes on after. */
static void test_wrong_size(gcoll__tp_t *tp)
{
    static const size_t sent[2] = {100, 2000000}, want[2] = {99, 3000000}; /* eager, rendezvous */
    for (int k = 0; k < 2; k++) {
        unsigned char *buf = calloc(1, want[k] > sent[k] ? want[k] : sent[k]);
        gcoll__tp_req_t *r;
        char why[256] = "";
        if (rank == 0) {
            T->isend(tp, 1, 77, buf, sent[k], &r);
            gcoll_status_t st = wait_one(tp, r, why, sizeof(why));
            if (k == 1) /* a rendezvous offer is declined: the sender learns it too */
                CHECK(st == GCOLL_ERR_TRANSPORT && strstr(why, "rank 1"), "declined send: %d '%s'", st, why);
        } else if (rank == 1) {
            T->irecv(tp, 0, 77, buf, want[k], &r);
            gcoll_status_t st = wait_one(tp, r, why, sizeof(why));
            char expect[64];
            snprintf(expect, sizeof(expect), "sent %zu bytes", sent[k]);
            CHECK(st == GCOLL_ERR_TRANSPORT && strstr(why, "rank 0") && strstr(why, expect),
                  "wrong-size receive: status %d, '%s'", st, why);
        }
        free(buf);
    }
    /* the connection still works */
    if (rank < 2) {
        unsigned char out[1000], in[1000];
        fill(out, sizeof(out), 42u + (unsigned)rank);
        gcoll__tp_req_t *reqs[2];
        gcoll_status_t st[2];
        T->irecv(tp, 1 - rank, 78, in, sizeof(in), &reqs[1]);
        T->isend(tp, 1 - rank, 78, out, sizeof(out), &reqs[0]);
        wait_all(tp, reqs, st, NULL, 2);
        CHECK(st[0] == GCOLL_SUCCESS && st[1] == GCOLL_SUCCESS &&
                  first_diff(in, sizeof(in), 43u - (unsigned)rank) == sizeof(in),
              "traffic after a size mismatch");
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static int has(const char *why, const char *word)
{
    return strstr(why, word) != NULL;
}

static int dial(int victim)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    memcpy(&a.sin_addr.s_addr, addrs + 6 * victim, 4);
    memcpy(&a.sin_port, addrs + 6 * victim + 4, 2);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* The key (gcoll__tcp_key) of rank q's process, from its published address. */
static uint64_t key_of(int q)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    memcpy(&a.sin_addr.s_addr, addrs + 6 * q, 4);
    memcpy(&a.sin_port, addrs + 6 * q + 4, 2);
    return gcoll__tcp_key(&a);
}

/* Of ranks 0 and 1, the process with the lower key connects to the other's listening socket as an
 * intruder would, one at a time: a wrong secret (for a process and index that are connected: the
 * secret must be what refuses it), garbage, an immediate close, a duplicate of a connected socket
 * with the right secret, a stall, and the right secret for a channel the victim does not have.
 * The victim must reject each one for its own reason, and then real traffic must still flow. */
static void test_intruders(gcoll__tp_t *tp)
{
    static const char *reason[] = {"wrong secret",      "not a gcoll hello", "closed after 0",
                                   "connected already", "in time",           "no communicator"};
    int lo = key_of(0) < key_of(1) ? 0 : 1, hi = 1 - lo;
    double saved = gcoll__config.timeout_s;
    gcoll__config.timeout_s = 1; /* bounds the wait for a hello: the stall is cut after 1 s */
    for (int k = 0; k < 6; k++) {
        unsigned long before = tp->pool->rejected;
        int fd = -1;
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == lo) {
            unsigned char hello[TCP_HELLO_BYTES], wrong[TCP_SECRET_BYTES];
            memcpy(wrong, tp->secret, sizeof(wrong));
            wrong[5] ^= 1; /* one bit off */
            gcoll__tcp_hello_pack(hello, k == 0 ? wrong : tp->secret, k == 5 ? ~tp->chan : tp->chan, key_of(lo), 0);
            if (k == 1)
                fill(hello, sizeof(hello), 99);
            fd = dial(hi);
            size_t len = k == 2 ? 0 : k == 4 ? 5 : sizeof(hello);
            CHECK(fd >= 0 && write(fd, hello, len) == (ssize_t)len, "intruder %d could not send", k);
            if (k != 4) {
                close(fd);
                fd = -1;
            }
        }
        if (rank == hi) {
            char dummy;
            gcoll__tp_req_t *r;
            T->irecv(tp, lo, 0xfffffff1u, &dummy, 1, &r);
            int done = 0;
            for (double end = check_now() + 20; check_now() < end && tp->pool->rejected == before && !done;)
                T->test(tp, r, &done);
            if (!done)
                T->cancel(tp, r);
            CHECK(tp->pool->rejected == before + 1 && has(tp->pool->last_rejection, reason[k]),
                  "intruder %d: %lu rejected, the last because '%s' (expected '%s')", k, tp->pool->rejected - before,
                  tp->pool->last_rejection, reason[k]);
            CHECK(tp->pool->npend == 0, "%d intruders still pending", tp->pool->npend);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (fd >= 0)
            close(fd);
    }
    gcoll__config.timeout_s = saved;
    /* real traffic between the two, both protocols */
    if (rank < 2) {
        static const size_t sizes[2] = {7, 1048576 + 3};
        for (int k = 0; k < 2; k++) {
            size_t n = sizes[k];
            unsigned char *out = malloc(n), *in = malloc(n);
            fill(out, n, seed_of(rank, 1 - rank, 90, n));
            gcoll__tp_req_t *reqs[2];
            gcoll_status_t st[2];
            T->irecv(tp, 1 - rank, 90, in, n, &reqs[1]);
            T->isend(tp, 1 - rank, 90, out, n, &reqs[0]);
            wait_all(tp, reqs, st, NULL, 2);
            CHECK(st[0] == GCOLL_SUCCESS && st[1] == GCOLL_SUCCESS &&
                      first_diff(in, n, seed_of(1 - rank, rank, 90, n)) == n,
                  "%zu bytes after the intruders", n);
            free(out);
            free(in);
        }
    }
}

/* GCOLL_TCP_CONNECT=lazy: no socket until a request names the peer; a ring opens sockets to its
 * two neighbours only; every pair dialling each other at once ends with one connection per
 * socket index and nothing rejected; a request to a peer whose endpoint is gone fails at once. */
/* A lazy endpoint that loses a peer tells the peers it reaches: ranks 0-1 and 1-2 are connected,
 * 0 and 2 never were; rank 0's connection to rank 1 dies, and rank 2 hears of it from rank 1 (a
 * DOWN frame) at once instead of waiting on it. Then a DOWN frame that names its receiver is
 * refused as a broken protocol. */
static void test_lazy_down(void)
{
    gcoll__tp_t *tp = open_bare();
    if (!tp)
        return;
    char byte = 7, got = 0;
    if (rank <= 2) { /* 0 <-> 1, 1 <-> 2 */
        gcoll__tp_req_t *reqs[2];
        gcoll_status_t st[2];
        int peer = rank == 1 ? 0 : 1;
        T->irecv(tp, peer, 94, &got, 1, &reqs[0]);
        T->isend(tp, peer, 94, &byte, 1, &reqs[1]);
        wait_all(tp, reqs, st, NULL, 2);
        if (rank == 1) {
            T->irecv(tp, 2, 94, &got, 1, &reqs[0]);
            T->isend(tp, 2, 94, &byte, 1, &reqs[1]);
            wait_all(tp, reqs, st, NULL, 2);
        }
    }
    /* every socket of those pairs up (GCOLL_TCP_NSOCKS), so that rank 0's "death" closes them all */
    for (double end = check_now() + 5; check_now() < end;) {
        int up = tp->pool->npend == 0;
        for (int q = 0; q < size && rank <= 2; q++)
            for (int i = 0; i < tp->nsocks && q <= 2 && q != rank && (q == 1 || rank == 1); i++)
                up &= tp->peers[q].socks[i].ev.fd >= 0 && !tp->peers[q].socks[i].dialing;
        if (up)
            break;
        T->check(tp);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        for (int i = 0; i < tp->nsocks; i++)
            shutdown(tp->peers[1].socks[i].ev.fd, SHUT_RDWR);
    if (rank == 1) {
        for (double end = check_now() + 5; !tp->peers[0].failed && check_now() < end;)
            T->check(tp);
        CHECK(tp->peers[0].failed == GCOLL_ERR_REMOTE, "rank 1 did not see rank 0's connection close");
    }
    if (rank == 2) {
        char why[256] = "";
        int dead = -1;
        double t0 = check_now();
        while (dead < 0 && check_now() - t0 < 5)
            dead = T->dead_peer(tp, why, sizeof(why));
        CHECK(dead == 0 && has(why, "rank 1 reports") && tp->peers[0].socks[0].ev.fd < 0,
              "rank 2 never connected to rank 0: told of its loss %d after %.1f s: '%s'", dead, check_now() - t0, why);
        gcoll__tp_req_t *r = NULL;
        CHECK(T->isend(tp, 0, 95, &byte, 1, &r) == GCOLL_ERR_REMOTE, "a send to the lost rank: '%s'",
              gcoll_last_error());
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) { /* a notice that rank 2 itself failed */
        unsigned char h[TCP_HDR_BYTES];
        gcoll__tcp_hdr_t down = {
            .type = TCP_DOWN, .seq = tp->peers[2].socks[0].wseq, .len = 4, .aux = 2, .chan = tp->chan};
        gcoll__tcp_hdr_pack(h, &down);
        CHECK(write(tp->peers[2].socks[0].ev.fd, h, sizeof(h)) == (ssize_t)sizeof(h) &&
                  write(tp->peers[2].socks[0].ev.fd, "lies", 4) == 4,
              "could not inject");
    }
    if (rank == 2) {
        for (double end = check_now() + 5; !tp->peers[1].failed && check_now() < end;)
            T->check(tp);
        CHECK(tp->peers[1].failed == GCOLL_ERR_TRANSPORT && has(tp->peers[1].why, "broke the protocol"),
              "a DOWN frame naming its receiver: %d '%s'", tp->peers[1].failed, tp->peers[1].why);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    T->close(tp);
}

/* A dial for a communicator that the peer has closed since (its hello waited in the backlog)
 * still opens the connection, which then carries the communicators the two still share. */
static void test_lazy_gone(void)
{
    gcoll__tp_t *a = open_bare(), *d = a ? open_bare() : NULL;
    if (!d) {
        if (a)
            T->close(a);
        return;
    }
    gcoll__tp_req_t *r = NULL;
    char byte = 3;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) { /* dials rank 0 for d, and sends its hello */
        T->isend(d, 0, 100, &byte, 1, &r);
        for (double end = check_now() + 0.3; check_now() < end;)
            T->check(d);
    }
    if (rank == 0)
        T->close(d);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank <= 1) {
        gcoll__tp_req_t *reqs[2];
        gcoll_status_t st[2];
        char got[2] = {0};
        T->irecv(a, 1 - rank, 101, &got[0], 1, &reqs[0]);
        T->isend(a, 1 - rank, 101, &byte, 1, &reqs[1]);
        wait_all(a, reqs, st, NULL, 2);
        CHECK(!st[0] && !st[1] && got[0] == 3 && a->pool->rejected == 0,
              "a connection dialled for a communicator closed at the other end: %d %d, %lu rejected (%s)", st[0], st[1],
              a->pool->rejected, a->pool->last_rejection);
    }
    if (r) {
        int done = 0;
        if (T->test(d, r, &done) == GCOLL_SUCCESS && !done)
            T->cancel(d, r);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank != 0)
        T->close(d);
    T->close(a);
}

/* What an endpoint learnt before a peer's link came up reaches that peer once it does: rank 0
 * fails with a mismatch while connected to no one; rank 1 then dials it for a receive, which
 * must end with that mismatch instead of waiting. */
static void test_lazy_news(void)
{
    gcoll__tp_t *tp = open_bare();
    if (!tp)
        return;
    if (rank == 0)
        T->mismatch(tp, "a planted mismatch on rank 0");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        char byte, why[256];
        gcoll__tp_req_t *r = NULL;
        gcoll_status_t st = T->irecv(tp, 0, 102, &byte, 1, &r);
        double t0 = check_now();
        if (st == GCOLL_SUCCESS) {
            int done = 0;
            while (!done && check_now() - t0 < 10)
                st = T->test(tp, r, &done);
            if (!done)
                T->cancel(tp, r);
        }
        snprintf(why, sizeof(why), "%s", gcoll_last_error());
        CHECK(st == GCOLL_ERR_INVALID_USAGE && has(why, "planted"), "told of a mismatch after %.1f s: %d '%s'",
              check_now() - t0, st, why);
    }
    if (rank == 0)
        for (double end = check_now() + 3; check_now() < end;)
            T->check(tp); /* accepts rank 1's dial */
    MPI_Barrier(MPI_COMM_WORLD);
    T->close(tp);
}

static void test_lazy(void)
{
    gcoll__tp_t *tp = open_bare();
    if (!tp)
        return;
    CHECK(tp->lazy && open_peers(tp) == 0 && tp->pool->npend == 0, "lazy endpoint: peers %llx open at creation",
          open_peers(tp));
    /* the ring: rank + 1 and rank - 1 only */
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    size_t n = 100003;
    unsigned char *out = malloc(n), *in = malloc(n);
    fill(out, n, seed_of(rank, right, 91, n));
    gcoll__tp_req_t *reqs[2 * 64];
    gcoll_status_t st[2 * 64];
    T->irecv(tp, left, 91, in, n, &reqs[0]);
    T->isend(tp, right, 91, out, n, &reqs[1]);
    wait_all(tp, reqs, st, NULL, 2);
    CHECK(st[0] == GCOLL_SUCCESS && st[1] == GCOLL_SUCCESS && first_diff(in, n, seed_of(left, rank, 91, n)) == n,
          "ring over lazy connections");
    MPI_Barrier(MPI_COMM_WORLD);
    unsigned long long want = (1ull << right) | (1ull << left);
    for (double end = check_now() + 5; open_peers(tp) != want && check_now() < end;)
        T->check(tp); /* the neighbour's own dial may still be landing */
    CHECK(open_peers(tp) == want, "ring: sockets open to peers %llx, want %llx", open_peers(tp), want);
    /* everyone with everyone at once: both sides of every pair not yet connected dial */
    unsigned long before = tp->pool->rejected;
    int k = 0;
    char *bufs = calloc((size_t)size, 2 * 64);
    for (int q = 0; q < size && q < 64 && bufs; q++)
        if (q != rank) {
            snprintf(bufs + 128 * q, 64, "from %d to %d", rank, q);
            T->irecv(tp, q, 92, bufs + 128 * q + 64, 64, &reqs[k++]);
            T->isend(tp, q, 92, bufs + 128 * q, 64, &reqs[k++]);
        }
    wait_all(tp, reqs, st, NULL, k);
    int bad = 0;
    for (int q = 0; q < size && q < 64 && bufs; q++) {
        char expect[64];
        snprintf(expect, sizeof(expect), "from %d to %d", q, rank);
        bad += q != rank && strcmp(bufs + 128 * q + 64, expect) != 0;
    }
    CHECK(bufs && !bad, "all to all over lazy connections: %d wrong", bad);
    MPI_Barrier(MPI_COMM_WORLD);
    for (double end = check_now() + 5; tp->pool->npend && check_now() < end;)
        T->check(tp); /* declined dials finish */
    int one_each = 1;
    for (int q = 0; q < size; q++)
        for (int i = 0; i < tp->nsocks && q != rank; i++)
            one_each &= tp->peers[q].socks[i].ev.fd >= 0 && !tp->peers[q].socks[i].dialing;
    CHECK(one_each && tp->pool->npend == 0 && tp->pool->rejected == before,
          "after every pair dialled: all sockets open %d, %d handshakes pending, %lu rejected", one_each,
          tp->pool->npend, tp->pool->rejected - before);
    free(bufs);
    free(out);
    free(in);
    MPI_Barrier(MPI_COMM_WORLD); /* a rank's goodbye would close the sockets another still counts */
    T->close(tp);
    /* a peer whose endpoint closed before anyone dialled it: the dial is refused, and a request to
     * it fails at once (GCOLL_ERR_REMOTE), as a crash must, not at the timeout */
    tp = open_bare();
    if (!tp)
        return;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == size - 1)
        T->close(tp);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        char byte = 1, why[256] = "";
        gcoll__tp_req_t *r = NULL;
        double t0 = check_now();
        gcoll_status_t s0 = T->isend(tp, size - 1, 93, &byte, 1, &r);
        if (s0 == GCOLL_SUCCESS)
            s0 = wait_one(tp, r, why, sizeof(why));
        else
            snprintf(why, sizeof(why), "%s", gcoll_last_error());
        CHECK(s0 == GCOLL_ERR_REMOTE && has(why, "not listening") && check_now() - t0 < 10,
              "a send to a closed endpoint: status %d after %.1f s: '%s'", s0, check_now() - t0, why);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank != size - 1)
        T->close(tp);
    if (size >= 3)
        test_lazy_down();
    test_lazy_gone();
    test_lazy_news();
}

/* The peers this process holds an open connection to (any endpoint's). */
static int open_links(const gcoll__tp_t *tp)
{
    int n = 0;
    for (int k = 0; k < tp->pool->nlinks; k++)
        n += !tp->pool->links[k]->down && tp->pool->links[k]->socks[0].ev.fd >= 0;
    return n;
}

/* One exchange at distance d: each rank sends n bytes to rank + d and receives from rank - d,
 * checked byte for byte. */
static void exchange(gcoll__tp_t *tp, int d, uint32_t tag, size_t n, const char *what)
{
    int to = (rank + d) % size, from = (rank + size - d) % size;
    unsigned char *out = malloc(n ? n : 1), *in = malloc(n ? n : 1);
    fill(out, n, seed_of(rank, to, tag, n));
    gcoll__tp_req_t *reqs[2];
    gcoll_status_t st[2] = {GCOLL_ERR_INTERNAL, GCOLL_ERR_INTERNAL};
    char why[2][256] = {"", ""};
    if (T->irecv(tp, from, tag, in, n, &reqs[0]) == GCOLL_SUCCESS &&
        T->isend(tp, to, tag, out, n, &reqs[1]) == GCOLL_SUCCESS)
        wait_all(tp, reqs, st, why, 2);
    CHECK(!st[0] && !st[1] && first_diff(in, n, seed_of(from, rank, tag, n)) == n,
          "%s: %zu bytes at distance %d: %d %d (%s%s)", what, n, d, st[0], st[1], why[0], why[1]);
    free(out);
    free(in);
}

/* GCOLL_TCP_MAX_CONNS=1: every exchange with another peer closes the idle connection to the last
 * one (both processes agree), and the next message to it opens it again, the requests and
 * messages that waited meanwhile intact: eager, rendezvous (striped with several sockets), an
 * offer that arrived before the close and is received after it; no dial refused, no peer failed. */
static void test_idle_limit(void)
{
    int saved = gcoll__config.tcp_max_conns;
    gcoll__config.tcp_max_conns = 1;
    gcoll__tp_t *tp = open_bare(); /* a pool of its own: the limit is read when it is made */
    gcoll__config.tcp_max_conns = saved;
    if (!tp)
        return;
    size_t sizes[] = {0, 1, 4099, 300007, 1572869};
    for (int round = 0; round < 3; round++)
        for (int d = 1; d < size; d++)
            exchange(tp, d, 300 + (uint32_t)d, sizes[(round + d) % 5], "exchange under a limit of one connection");
    if (size >= 3) {
        /* an offer to the right, then traffic at distance 2 closes that link, then the receive */
        size_t n = 700001;
        int to = (rank + 1) % size, from = (rank + size - 1) % size;
        unsigned char *out = malloc(n), *in = malloc(n);
        fill(out, n, seed_of(rank, to, 310, n));
        gcoll__tp_req_t *reqs[2];
        gcoll_status_t st[2] = {GCOLL_ERR_INTERNAL, GCOLL_ERR_INTERNAL};
        char why[2][256] = {"", ""};
        T->isend(tp, to, 310, out, n, &reqs[1]);
        drive(tp, from, 0.2); /* the offer arrives and waits */
        exchange(tp, 2, 311, 1000, "traffic between an offer and its receive");
        unsigned long closed = tp->pool->idle_closed;
        T->irecv(tp, from, 310, in, n, &reqs[0]);
        wait_all(tp, reqs, st, why, 2);
        CHECK(!st[0] && !st[1] && first_diff(in, n, seed_of(from, rank, 310, n)) == n && closed > 0,
              "an offer received after its connection closed idle: %d %d (%s%s), %lu closed", st[0], st[1], why[0],
              why[1], closed);
        free(out);
        free(in);
    }
    /* left alone, each process closes down to the limit */
    int ok = 0;
    for (double end = check_now() + 10; !ok && check_now() < end;) {
        for (double t = check_now() + 0.05; check_now() < t;)
            T->check(tp);
        ok = open_links(tp) <= 1;
        MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    }
    int failed = 0;
    for (int q = 0; q < size; q++)
        failed += tp->peers[q].failed != 0;
    CHECK(ok && !failed && tp->pool->rejected == 0 && (size < 3 || tp->pool->idle_closed > 0),
          "limit of one connection: %d open at the end, %d peers failed, %lu dials refused (%s), %lu closed idle",
          open_links(tp), failed, tp->pool->rejected, tp->pool->last_rejection, tp->pool->idle_closed);
    MPI_Barrier(MPI_COMM_WORLD);
    T->close(tp);
}

/* Endpoint c of this process (another communicator's), created, its address exchanged and
 * connected as open_bare does; but rank `late` first drives endpoint a for up to 1 s, until a
 * frame for c (sent by a rank that connected first) waits at the head of a socket: c has joined
 * the pool and has no routes yet. Sets *held on that rank when it saw one. */
static gcoll__tp_t *open_late(gcoll__tp_t *a, int late, int *held)
{
    gcoll__bootstrap_t boot = {world_group(), rank, size, NULL};
    gcoll__tp_t *c = NULL;
    CHECK(T->create(&boot, &c) == GCOLL_SUCCESS, "create: %s", gcoll_last_error());
    if (!c)
        return NULL;
    unsigned char mine[6], *all = malloc(6 * (size_t)size);
    T->addr(c, mine);
    MPI_Allgather(mine, 6, MPI_BYTE, all, 6, MPI_BYTE, MPI_COMM_WORLD);
    *held = 0;
    for (double end = check_now() + 1; rank == late && !*held && check_now() < end;) {
        T->check(a);
        for (int k = 0; k < a->pool->nlinks; k++)
            *held |= a->pool->links[k]->socks[0].held;
    }
    CHECK(T->connect(c, all) == GCOLL_SUCCESS, "connect: %s", gcoll_last_error());
    free(all);
    return c;
}

/* Two endpoints of one process (two communicators) share one connection per pair of processes:
 * the second opens no socket; messages under one tag on both reach their own endpoint; a frame
 * for an endpoint that has not learnt its peers yet waits for it; one for an endpoint closed is
 * dropped while the other's traffic goes on over the same sockets. */
static void test_shared(void)
{
    gcoll__tp_t *a = open_tp(), *b = a ? open_tp() : NULL;
    char why[256];
    if (!b) {
        if (a)
            T->close(a);
        return;
    }
    int shared = a->pool == b->pool && a->pool->nlinks == size - 1;
    for (int q = 0; q < size; q++)
        shared &= q == rank || (a->peers[q].link == b->peers[q].link && a->peers[q].link->nready == a->nsocks);
    CHECK(shared && a->chan != b->chan, "two endpoints: %d links for %d peers, not one each shared", a->pool->nlinks,
          size - 1);
    /* one tag on both endpoints, posted in crossed orders */
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    enum { N = 3001 };
    unsigned char *out = malloc(4 * N), *in = out + 2 * N;
    fill(out, N, seed_of(rank, right, 96, N));
    fill(out + N, N, seed_of(rank, right, 97, N));
    gcoll__tp_req_t *ra[2], *rb[2];
    gcoll_status_t sa[2], sb[2];
    T->irecv(a, left, 96, in, N, &ra[0]);
    T->irecv(b, left, 96, in + N, N, &rb[0]);
    T->isend(b, right, 96, out + N, N, &rb[1]);
    T->isend(a, right, 96, out, N, &ra[1]);
    wait_all(b, rb, sb, NULL, 2);
    wait_all(a, ra, sa, NULL, 2);
    CHECK(!sa[0] && !sa[1] && !sb[0] && !sb[1] && first_diff(in, N, seed_of(left, rank, 96, N)) == N &&
              first_diff(in + N, N, seed_of(left, rank, 97, N)) == N,
          "one tag on two endpoints: statuses %d %d %d %d, or payloads crossed", sa[0], sa[1], sb[0], sb[1]);
    MPI_Barrier(MPI_COMM_WORLD);
    /* rank 1 sends on a new endpoint before rank 0 has routed it */
    int held = 0;
    gcoll__tp_t *c = open_late(a, 0, &held);
    if (c && rank == 1) {
        gcoll__tp_req_t *r;
        CHECK(T->isend(c, 0, 98, out, 64, &r) == GCOLL_SUCCESS && wait_one(c, r, why, sizeof(why)) == GCOLL_SUCCESS,
              "a send on the third endpoint: %s", gcoll_last_error());
    }
    if (c && rank == 0) {
        gcoll__tp_req_t *r;
        T->irecv(c, 1, 98, in, 64, &r);
        gcoll_status_t st = wait_one(c, r, why, sizeof(why));
        CHECK(held && st == GCOLL_SUCCESS && first_diff(in, 64, seed_of(1, 2 % size, 96, N)) == 64,
              "a frame that came before its endpoint was routed: held %d, status %d", held, st);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (c)
        T->close(c);
    /* rank 0 closes b; rank 1's message on b is dropped there, and a's traffic goes on */
    if (rank == 0)
        T->close(b);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        gcoll__tp_req_t *r;
        T->isend(b, 0, 96, out, N, &r); /* eager: done once the kernel took it; an offer waits */
        int done = 0;
        gcoll_status_t st = GCOLL_SUCCESS;
        for (double end = check_now() + 5; !(b->peers[0].left && done) && check_now() < end;)
            if (!done)
                st = T->test(b, r, &done);
            else
                T->check(b);
        if (!done)
            T->cancel(b, r);
        CHECK(st == GCOLL_SUCCESS && b->peers[0].left, "a send to an endpoint closed: status %d, left %d", st,
              b->peers[0].left);
    }
    if (rank <= 1) {
        T->irecv(a, 1 - rank, 99, in, N, &ra[0]);
        T->isend(a, 1 - rank, 99, out, N, &ra[1]);
        wait_all(a, ra, sa, NULL, 2);
        CHECK(!sa[0] && !sa[1] && first_diff(in, N, seed_of(1 - rank, (2 - rank) % size, 96, N)) == N,
              "the other endpoint after one closed: %d %d", sa[0], sa[1]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank != 0)
        T->close(b);
    /* the sockets per pair are the pool's: a communicator asking for another count is refused */
    const char *env = getenv("GCOLL_TCP_NSOCKS");
    char saved[16];
    snprintf(saved, sizeof(saved), "%s", env ? env : "");
    setenv("GCOLL_TCP_NSOCKS", a->nsocks == 1 ? "2" : "1", 1);
    gcoll__config_load();
    gcoll__bootstrap_t boot = {world_group(), rank, size, NULL};
    gcoll__tp_t *e = NULL;
    gcoll_status_t st = T->create(&boot, &e);
    CHECK(st == GCOLL_ERR_INVALID_USAGE && has(gcoll_last_error(), "GCOLL_TCP_NSOCKS"),
          "another GCOLL_TCP_NSOCKS beside a live endpoint: %d '%s'", st, gcoll_last_error());
    if (e)
        T->close(e);
    if (env)
        setenv("GCOLL_TCP_NSOCKS", saved, 1);
    else
        unsetenv("GCOLL_TCP_NSOCKS");
    gcoll__config_load();
    T->close(a);
    free(out);
}

/* The header check alone: a good header passes, each defect is caught and named. */
static void test_header_check(void)
{
    char why[160];
    gcoll__tcp_hdr_t
        good = {.type = TCP_EAGER,
                .seq = 7,
                .tag = 3,
                .len = 10,
                .desc = {.coll = 4, .dtype = 8, .op = GCOLL_OPDESC_NONE, .root = 70000, .count = (1ull << 40) + 5}},
        h;
    unsigned char buf[TCP_HDR_BYTES];
    gcoll__tcp_hdr_pack(buf, &good);
    gcoll__tcp_hdr_unpack(buf, &h);
    CHECK(h.type == good.type && h.seq == 7 && h.tag == 3 && h.len == 10, "header round trip");
    CHECK(memcmp(&h.desc, &good.desc, sizeof(h.desc)) == 0, "descriptor round trip: kind %u root %d count %llu",
          (unsigned)h.desc.coll, (int)h.desc.root, (unsigned long long)h.desc.count);
    CHECK(gcoll__tcp_hdr_check(&h, 7, why, sizeof(why)) == GCOLL_SUCCESS, "good header refused: %s", why);
    CHECK(gcoll__tcp_hdr_check(&h, 8, why, sizeof(why)) == GCOLL_ERR_TRANSPORT && has(why, "sequence"),
          "wrong sequence: '%s'", why);
    buf[0] ^= 0xff;
    gcoll__tcp_hdr_unpack(buf, &h);
    CHECK(gcoll__tcp_hdr_check(&h, 7, why, sizeof(why)) == GCOLL_ERR_TRANSPORT && has(why, "magic"), "bad magic: '%s'",
          why);
    struct {
        gcoll__tcp_hdr_t h;
        const char *word;
    } bad[] = {
        {{.type = TCP_EAGER, .len = TCP_EAGER_MAX + 1}, "eager"},
        {{.type = TCP_EAGER, .len = UINT64_MAX}, "eager"},
        {{.type = TCP_DATA, .len = TCP_CHUNK_MAX + 1, .id = 1}, "data frame"},
        {{.type = TCP_DATA, .len = 0, .id = 1}, "data frame"},
        {{.type = TCP_RTS, .len = 5}, "control"},
        {{.type = TCP_IDLE_NO + 1}, "type"},
        {{.type = TCP_IDLE, .len = 1}, "control"},
        {{.type = TCP_MISMATCH, .len = 0}, "notice"},
        {{.type = TCP_MISMATCH, .len = TCP_NOTICE_MAX + 1}, "notice"},
        {{.type = TCP_DOWN, .len = 0}, "notice"},
        {{.type = TCP_DOWN, .len = TCP_NOTICE_MAX + 1}, "notice"},
        {{.type = TCP_EAGER, .len = 4, .desc = {.coll = 200}}, "descriptor"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        gcoll__tcp_hdr_pack(buf, &bad[i].h);
        gcoll__tcp_hdr_unpack(buf, &h);
        CHECK(gcoll__tcp_hdr_check(&h, 0, why, sizeof(why)) == GCOLL_ERR_TRANSPORT && has(why, bad[i].word),
              "bad header %zu: '%s'", i, why);
    }
    buf[5] = 1; /* a nonzero reserved byte */
    gcoll__tcp_hdr_unpack(buf, &h);
    CHECK(gcoll__tcp_hdr_check(&h, 0, why, sizeof(why)) == GCOLL_ERR_TRANSPORT, "reserved bytes accepted");
    gcoll__tcp_hdr_pack(buf, &good);
    buf[43] = GCOLL_OPDESC_GPU + 1; /* the descriptor's placement: host, device, IPC or GPU-reduced only */
    gcoll__tcp_hdr_unpack(buf, &h);
    CHECK(gcoll__tcp_hdr_check(&h, 7, why, sizeof(why)) == GCOLL_ERR_TRANSPORT && has(why, "descriptor"),
          "a descriptor's unknown placement: '%s'", why);
    buf[43] = GCOLL_OPDESC_DEVICE; /* travels and is accepted */
    gcoll__tcp_hdr_unpack(buf, &h);
    CHECK(gcoll__tcp_hdr_check(&h, 7, why, sizeof(why)) == GCOLL_SUCCESS && h.desc.where == GCOLL_OPDESC_DEVICE,
          "a device descriptor refused or lost: '%s'", why);

    unsigned char secret[TCP_SECRET_BYTES], hello[TCP_HELLO_BYTES];
    fill(secret, sizeof(secret), 5);
    int x = -1;
    uint64_t chan = 0, from = 0;
    gcoll__tcp_hello_pack(hello, secret, 0x1234567890abcdefull, 2000, 1);
    CHECK(gcoll__tcp_hello_peek(hello, &chan, &from) && chan == 0x1234567890abcdefull && from == 2000,
          "hello round trip: channel %llx from %llu", (unsigned long long)chan, (unsigned long long)from);
    CHECK(gcoll__tcp_hello_check(hello, secret, 3000, 1, 2, &x, why, sizeof(why)) == GCOLL_SUCCESS && x == 1,
          "good hello refused: %s", why);
    CHECK(gcoll__tcp_hello_check(hello, secret, 1000, 1, 2, &x, why, sizeof(why)) && has(why, "may not connect"),
          "eager: a hello from a higher key: '%s'", why);
    CHECK(gcoll__tcp_hello_check(hello, secret, 3000, 1, 1, &x, why, sizeof(why)) && has(why, "index"),
          "hello with an index out of range: '%s'", why);
    hello[TCP_HELLO_BYTES - 1] ^= 0x80;
    CHECK(gcoll__tcp_hello_check(hello, secret, 3000, 1, 2, &x, why, sizeof(why)) && has(why, "secret"),
          "hello with a wrong secret: '%s'", why);
    /* lazy endpoints: any other process of the job may dial */
    hello[TCP_HELLO_BYTES - 1] ^= 0x80;
    CHECK(gcoll__tcp_hello_check(hello, secret, 1000, 0, 2, &x, why, sizeof(why)) == GCOLL_SUCCESS,
          "lazy: a hello from a higher key refused: %s", why);
    CHECK(gcoll__tcp_hello_check(hello, secret, 2000, 0, 2, &x, why, sizeof(why)) && has(why, "may not connect"),
          "lazy: a hello from itself taken: '%s'", why);
    gcoll__tcp_hello_pack(hello, secret, 1, 1ull << 48, 0);
    CHECK(gcoll__tcp_hello_check(hello, secret, 1000, 0, 2, &x, why, sizeof(why)) && has(why, "may not connect"),
          "a hello from a key beyond 48 bits taken: '%s'", why);
    unsigned char ack[TCP_ACK_BYTES];
    gcoll__tcp_decline_pack(ack, 5);
    CHECK(gcoll__tcp_declined(ack, 5) && !gcoll__tcp_declined(ack, 4) && !gcoll__tcp_ack_ok(ack, 5),
          "a decline from key 5 is not told apart");
    gcoll__tcp_ack_pack(ack, 5);
    CHECK(!gcoll__tcp_declined(ack, 5) && gcoll__tcp_ack_ok(ack, 5) && !gcoll__tcp_ack_ok(ack, (1ull << 40) | 5),
          "an ack passes as a decline, or for another key");
}

/* The kernel's cap on a buffer size (net.core.wmem_max / rmem_max). */
static long proc_long(const char *path)
{
    long v = -1;
    FILE *f = fopen(path, "r");
    if (f) {
        if (fscanf(f, "%ld", &v) != 1)
            v = -1;
        fclose(f);
    }
    return v;
}

/* Every socket to every peer has GCOLL_TCP_SNDBUF / GCOLL_TCP_RCVBUF as set (Linux reports
 * twice what it grants, and grants at most the sysctl's cap). */
static void check_buffers(long snd, long rcv, const char *what)
{
    long caps[2] = {proc_long("/proc/sys/net/core/wmem_max"), proc_long("/proc/sys/net/core/rmem_max")};
    CHECK(caps[0] > 0 && caps[1] > 0, "%s: cannot read net.core.wmem_max / rmem_max", what);
    char var[2][32];
    snprintf(var[0], sizeof(var[0]), "%ld", snd);
    snprintf(var[1], sizeof(var[1]), "%ld", rcv);
    setenv("GCOLL_TCP_SNDBUF", var[0], 1);
    setenv("GCOLL_TCP_RCVBUF", var[1], 1);
    CHECK(gcoll__config_load() == GCOLL_SUCCESS, "%s: config: %s", what, gcoll_last_error());
    gcoll__tp_t *tp = open_tp();
    if (!tp)
        return;
    int opts[2] = {SO_SNDBUF, SO_RCVBUF};
    long want[2] = {snd, rcv};
    for (int q = 0; q < size; q++)
        for (int i = 0; q != rank && i < tp->nsocks; i++)
            for (int k = 0; k < 2; k++) {
                int got = 0;
                socklen_t len = sizeof(got);
                long expect = 2 * (want[k] < caps[k] ? want[k] : caps[k]);
                int ok = getsockopt(tp->peers[q].socks[i].ev.fd, SOL_SOCKET, opts[k], &got, &len) == 0;
                CHECK(ok && got == expect, "%s: peer %d socket %d: %s is %d, not %ld", what, q, i,
                      k ? "SO_RCVBUF" : "SO_SNDBUF", got, expect);
            }
    T->close(tp);
    unsetenv("GCOLL_TCP_SNDBUF");
    unsetenv("GCOLL_TCP_RCVBUF");
    gcoll__config_load();
}

static void test_buffers(void)
{
    check_buffers(256 << 10, 4 << 20, "the defaults' values");
    check_buffers(64 << 10, 96 << 10, "64K / 96K");
}

/* On a fresh endpoint: rank 0 writes a frame with a bad magic into its socket to rank 1; rank
 * 1's receive from rank 0 fails with a message naming rank 0 and the defect, while rank 1 and
 * rank 2 still talk. Then rank 0 closes, and rank 1's next receive from it fails too. */
static void test_live_faults(void)
{
    gcoll__tp_t *tp = open_tp();
    if (!tp)
        return;
    char why[256] = "";
    unsigned char small[64] = {0};
    gcoll__tp_req_t *r = NULL;
    if (rank == 1)
        T->irecv(tp, 0, 1, small, sizeof(small), &r);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        unsigned char bad[TCP_HDR_BYTES];
        gcoll__tcp_hdr_t h = {
            .type = TCP_EAGER, .seq = tp->peers[1].socks[0].wseq, .tag = 1, .len = sizeof(small), .chan = tp->chan};
        gcoll__tcp_hdr_pack(bad, &h);
        bad[1] ^= 0x10;
        CHECK(write(tp->peers[1].socks[0].ev.fd, bad, sizeof(bad)) == (ssize_t)sizeof(bad), "could not inject");
    }
    if (rank == 1) {
        gcoll_status_t st = wait_one(tp, r, why, sizeof(why));
        CHECK(st == GCOLL_ERR_TRANSPORT && has(why, "rank 0") && has(why, "magic"), "bad frame: %d '%s'", st, why);
        gcoll__tp_req_t *s;
        st = T->isend(tp, 0, 2, small, 1, &s);
        CHECK(st == GCOLL_ERR_TRANSPORT && has(gcoll_last_error(), "rank 0"), "a send to the failed peer: %d '%s'", st,
              gcoll_last_error());
    }
    if (size > 2 && rank >= 1 && rank <= 2) {
        unsigned char out[5000], in[5000];
        gcoll__tp_req_t *reqs[2];
        gcoll_status_t st[2];
        fill(out, sizeof(out), 1234u + (unsigned)rank);
        T->irecv(tp, 3 - rank, 3, in, sizeof(in), &reqs[1]);
        T->isend(tp, 3 - rank, 3, out, sizeof(out), &reqs[0]);
        wait_all(tp, reqs, st, NULL, 2);
        CHECK(!st[0] && !st[1] && first_diff(in, sizeof(in), 1234u + 3u - (unsigned)rank) == sizeof(in),
              "ranks 1 and 2 after rank 1 dropped rank 0");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    T->close(tp);

    /* rank 0 "dies": its sockets to rank 1 close with no goodbye; rank 1's receive fails, blaming
     * the peer (GCOLL_ERR_REMOTE) */
    tp = open_tp();
    if (!tp)
        return;
    if (rank == 1)
        T->irecv(tp, 0, 4, small, sizeof(small), &r);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        for (int i = 0; i < tp->nsocks; i++)
            shutdown(tp->peers[1].socks[i].ev.fd, SHUT_RDWR);
    if (rank == 1) {
        gcoll_status_t st = wait_one(tp, r, why, sizeof(why));
        CHECK(st == GCOLL_ERR_REMOTE && has(why, "rank 0") && has(why, "closed"), "peer died: %d '%s'", st, why);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    T->close(tp);

    /* rank 0 closes its endpoint on purpose: like a rank that never joins, what waits on it
     * stays pending (the core's timeout ends it), and a later send to it does not fail at once */
    tp = open_tp();
    if (!tp)
        return;
    if (rank == 1)
        T->irecv(tp, 0, 5, small, sizeof(small), &r);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        T->close(tp);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        gcoll__tp_req_t *s;
        CHECK(T->isend(tp, 0, 6, small, 10, &s) == GCOLL_SUCCESS, "a send to a rank that left: %s", gcoll_last_error());
        int done = 0, sdone = 0;
        gcoll_status_t sst = GCOLL_SUCCESS;
        for (double end = check_now() + 0.5; check_now() < end && !done;) {
            T->test(tp, r, &done);
            if (!sdone) /* an eager send may complete: the kernel took it */
                sst = T->test(tp, s, &sdone);
        }
        CHECK(!done && sst == GCOLL_SUCCESS && tp->peers[0].left,
              "requests to a rank that left: receive done %d, "
              "send status %d, left %d",
              done, sst, tp->peers[0].left);
        if (!done)
            T->cancel(tp, r);
        if (!sdone)
            T->cancel(tp, s);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank != 0)
        T->close(tp);
}

int main(int argc, char **argv)
{
    tp_init(&argc, &argv);
    gcoll__log_set_identity(rank);
    if (gcoll__config_load() != GCOLL_SUCCESS) {
        fprintf(stderr, "test_tcp: %s\n", gcoll_last_error());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    test_header_check();
    test_priority_queue();
    test_frame_queue();
    test_wire_order();
    if (size >= 2) {
        gcoll__tp_t *tp = open_tp();
        if (tp) {
            test_sizes(tp);
            test_all_to_all(tp);
            test_eager_goes_ahead(tp);
            test_wrong_size(tp);
            test_intruders(tp);
            T->close(tp);
        }
        test_live_faults();
        test_buffers();
        test_shared();
        if (gcoll__config.tcp_connect_lazy) {
            test_lazy();
            test_idle_limit();
        }
    }
    int rc = check_summary("tcp", CHECK_NP);
    free(addrs);
    MPI_Finalize();
    return rc;
}
