/* The bootstrap group of a job launched without MPI: a star over TCP around the group's rank 0.
 * The others connect (retrying until GCOLL_TIMEOUT) with a hello that proves GCOLL_JOB_SECRET,
 * compared in constant time; rank 0 serves allgather and bcast by gathering and sending to each.
 * A split builds a new star around each new group's rank 0, its address sent through the parent. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/boot.h"
#include "base/config.h"
#include "base/error.h"
#include "base/log.h"
#include "base/le.h"

#define HELLO_MAGIC 0x48544247u /* "GBTH": not the tcp transport's, so neither takes the other's */
#define ACK_MAGIC 0x41544247u   /* "GBTA" */
#define FRAME_MAGIC 0x46544247u /* "GBTF" */
#define HELLO_BYTES 40          /* magic, rank, size, version, group nonce (8), secret (16) */
#define ACK_BYTES 208           /* magic, status, reason (200) */
#define FRAME_BYTES 24          /* magic, type, operation number, 0, payload bytes (8) */
#define SECRET_BYTES 16
#define VERSION 1
#define MAX_PEND 64         /* connections whose hello has not fully arrived */
#define RETRY_NS 100000000L /* between connection attempts to a root not listening yet */
enum { F_DATA = 1, F_FAIL };

typedef struct {
    gcoll__boot_t b;
    int *fd;             /* rank 0: one socket per rank (fd[0] unused); the others: fd[0], to rank 0 */
    uint32_t seq;        /* operations so far: every frame carries the number of its own */
    struct in_addr self; /* where the others reach this rank: a split's new rank 0 listens there */
    char why[256];       /* set once the group failed: every later call fails with it */
} star_t;

static unsigned char secret[SECRET_BYTES];
static const gcoll__boot_ops_t tcp_ops;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static star_t *star_new(int rank, int size)
{
    star_t *s = calloc(1, sizeof(*s));
    if (!s || !(s->fd = malloc(sizeof(int) * (size_t)size))) {
        free(s);
        return NULL;
    }
    for (int r = 0; r < size; r++)
        s->fd[r] = -1;
    s->b = (gcoll__boot_t){&tcp_ops, rank, size, MPI_COMM_NULL};
    s->self.s_addr = htonl(INADDR_LOOPBACK);
    return s;
}

static void t_free(gcoll__boot_t *b)
{
    star_t *s = (star_t *)b;
    for (int r = 0; r < b->size; r++)
        if (s->fd[r] >= 0)
            close(s->fd[r]);
    free(s->fd);
    free(s);
}

/* Waits until fd is ready for ev or the deadline passes: 1 ready, 0 timed out, -1 failed. */
static int wait_fd(int fd, short ev, double deadline)
{
    for (;;) {
        double left = deadline - now();
        if (left <= 0)
            return 0;
        struct pollfd p = {fd, ev, 0};
        int rc = poll(&p, 1, (int)(left * 1000) + 1);
        if (rc > 0)
            return 1;
        if (rc < 0 && errno != EINTR)
            return -1;
    }
}

/* The messages name the peer by its rank in this group and say what the wait was for. */
static gcoll_status_t lost(int peer, const char *what, const char *how)
{
    return gcoll__error(GCOLL_ERR_REMOTE, "bootstrap: %s rank %d: %s", what, peer, how);
}

static gcoll_status_t late(int peer, const char *what)
{
    return gcoll__error(GCOLL_ERR_TIMEOUT, "bootstrap: %s rank %d: nothing within %g s (GCOLL_TIMEOUT)", what, peer,
                        gcoll__config.timeout_s);
}

static gcoll_status_t send_all(int fd, const void *buf, size_t len, double deadline, int peer)
{
    const char *p = buf;
    while (len) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EINTR)
            return lost(peer, "sending to", strerror(errno));
        int w = wait_fd(fd, POLLOUT, deadline);
        if (w == 0)
            return late(peer, "sending to");
        if (w < 0)
            return lost(peer, "sending to", strerror(errno));
    }
    return GCOLL_SUCCESS;
}

static gcoll_status_t recv_all(int fd, void *buf, size_t len, double deadline, int peer)
{
    char *p = buf;
    while (len) {
        ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n == 0)
            return lost(peer, "waiting for", "it closed the connection (did it exit?)");
        if (errno != EAGAIN && errno != EINTR)
            return lost(peer, "waiting for", strerror(errno));
        int w = wait_fd(fd, POLLIN, deadline);
        if (w == 0)
            return late(peer, "waiting for");
        if (w < 0)
            return lost(peer, "waiting for", strerror(errno));
    }
    return GCOLL_SUCCESS;
}

static gcoll_status_t send_frame(star_t *s, int peer, int type, const void *data, size_t len, double deadline)
{
    unsigned char h[FRAME_BYTES];
    gcoll__put32(h, FRAME_MAGIC);
    gcoll__put32(h + 4, (uint32_t)type);
    gcoll__put32(h + 8, s->seq);
    gcoll__put32(h + 12, 0);
    gcoll__put64(h + 16, len);
    int fd = s->fd[s->b.rank == 0 ? peer : 0];
    GCOLL_CHECK(send_all(fd, h, sizeof(h), deadline, peer));
    return send_all(fd, data, len, deadline, peer);
}

static int is_failure(const unsigned char *h)
{
    return gcoll__get32(h) == FRAME_MAGIC && gcoll__get32(h + 4) == F_FAIL && gcoll__get64(h + 16) < 256;
}

/* Reads the reason of a failure frame whose header is h and makes it the error. */
static gcoll_status_t failure_reason(int fd, const unsigned char *h, double deadline)
{
    char why[256] = "";
    GCOLL_CHECK(recv_all(fd, why, (size_t)gcoll__get64(h + 16), deadline, 0));
    return gcoll__error(GCOLL_ERR_REMOTE, "bootstrap: rank 0 gave up: %s", why);
}

/* Receives the frame of the current operation into buf, which it must fill exactly; a failure
 * rank 0 reports comes back as the error. */
static gcoll_status_t recv_frame(star_t *s, int peer, void *buf, size_t len, double deadline)
{
    unsigned char h[FRAME_BYTES];
    int fd = s->fd[s->b.rank == 0 ? peer : 0];
    GCOLL_CHECK(recv_all(fd, h, sizeof(h), deadline, peer));
    uint32_t type = gcoll__get32(h + 4), seq = gcoll__get32(h + 8);
    uint64_t n = gcoll__get64(h + 16);
    if (is_failure(h))
        return failure_reason(fd, h, deadline);
    if (gcoll__get32(h) != FRAME_MAGIC || type != F_DATA || gcoll__get32(h + 12) != 0)
        return gcoll__error(GCOLL_ERR_TRANSPORT, "bootstrap: rank %d sent a malformed frame", peer);
    if (seq != s->seq || n != len)
        return gcoll__error(GCOLL_ERR_INVALID_USAGE,
                            "bootstrap: rank %d sent %llu bytes for setup step %u where "
                            "this rank expects %zu for step %u (HINT: every rank must make the same "
                            "communicator calls in the same order)",
                            peer, (unsigned long long)n, (unsigned)seq, len, (unsigned)s->seq);
    return recv_all(fd, buf, len, deadline, peer);
}

/* A send to rank 0 fails when rank 0 has given up and closed the connection; the reason it sent
 * first may be waiting in this rank's receive queue, and is the error worth reporting. */
static gcoll_status_t send_failed(star_t *s, gcoll_status_t st)
{
    unsigned char h[FRAME_BYTES];
    char first[sizeof(s->why)];
    snprintf(first, sizeof(first), "%s", gcoll_last_error());
    if (st == GCOLL_ERR_REMOTE && recv_all(s->fd[0], h, sizeof(h), now() + 1, 0) == GCOLL_SUCCESS && is_failure(h))
        return failure_reason(s->fd[0], h, now() + 1);
    return gcoll__error(st, "%s", first);
}

/* Rank 0 gives up on the group: it tells every other rank why (briefly: they may be gone too)
 * and keeps the reason for later calls. Returns st. */
static gcoll_status_t give_up(star_t *s, gcoll_status_t st)
{
    snprintf(s->why, sizeof(s->why), "%s", gcoll_last_error());
    if (s->b.rank == 0)
        for (int r = 1; r < s->b.size; r++)
            if (s->fd[r] >= 0)
                (void)send_frame(s, r, F_FAIL, s->why, strlen(s->why) + 1, now() + 1);
    return gcoll__error(st, "%s", s->why);
}

static gcoll_status_t usable(star_t *s)
{
    if (s->why[0])
        return gcoll__error(GCOLL_ERR_REMOTE, "bootstrap: this group failed earlier: %s", s->why);
    s->seq++;
    return GCOLL_SUCCESS;
}

static gcoll_status_t t_allgather(gcoll__boot_t *b, const void *mine, void *all, size_t len)
{
    star_t *s = (star_t *)b;
    GCOLL_CHECK(usable(s));
    double deadline = now() + gcoll__config.timeout_s;
    char *out = all;
    if ((const char *)mine != out + (size_t)b->rank * len)
        memcpy(out + (size_t)b->rank * len, mine, len);
    gcoll_status_t st = GCOLL_SUCCESS;
    if (b->rank != 0) {
        st = send_frame(s, 0, F_DATA, mine, len, deadline);
        st = st == GCOLL_SUCCESS ? recv_frame(s, 0, all, len * (size_t)b->size, deadline) : send_failed(s, st);
        return st == GCOLL_SUCCESS ? st : give_up(s, st);
    }
    for (int r = 1; r < b->size && st == GCOLL_SUCCESS; r++)
        st = recv_frame(s, r, out + (size_t)r * len, len, deadline);
    for (int r = 1; r < b->size && st == GCOLL_SUCCESS; r++)
        st = send_frame(s, r, F_DATA, all, len * (size_t)b->size, deadline);
    return st == GCOLL_SUCCESS ? st : give_up(s, st);
}

static gcoll_status_t t_bcast(gcoll__boot_t *b, void *buf, size_t len, int root)
{
    star_t *s = (star_t *)b;
    GCOLL_CHECK(usable(s));
    double deadline = now() + gcoll__config.timeout_s;
    gcoll_status_t st = GCOLL_SUCCESS;
    if (b->rank == 0) { /* the hub relays a root's data to the others */
        if (root != 0)
            st = recv_frame(s, root, buf, len, deadline);
        for (int r = 1; r < b->size && st == GCOLL_SUCCESS; r++)
            if (r != root)
                st = send_frame(s, r, F_DATA, buf, len, deadline);
    } else if (b->rank == root) {
        st = send_frame(s, 0, F_DATA, buf, len, deadline);
        if (st != GCOLL_SUCCESS)
            st = send_failed(s, st);
    } else {
        st = recv_frame(s, 0, buf, len, deadline);
    }
    return st == GCOLL_SUCCESS ? st : give_up(s, st);
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

/* ---- joining a star ---- */

static void nodelay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static const char *addr_text(const struct sockaddr_in *a, char *buf, size_t len)
{
    char ip[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
    snprintf(buf, len, "%s:%u", ip, (unsigned)ntohs(a->sin_port));
    return buf;
}

/* A listening socket at addr:port (port 0: any); *port gets the one taken. */
static gcoll_status_t listen_on(struct in_addr addr, int *port, int backlog, int *out)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr = addr, .sin_port = htons((uint16_t)*port)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    socklen_t alen = sizeof(a);
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, backlog) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &alen) != 0) {
        int e = errno;
        char text[64];
        if (fd >= 0)
            close(fd);
        return gcoll__error(GCOLL_ERR_SYSTEM, "bootstrap: rank 0 cannot listen at %s: %s%s",
                            addr_text(&a, text, sizeof(text)), strerror(e),
                            e == EADDRINUSE ? " (HINT: another program holds the port: pick another)" : "");
    }
    *port = ntohs(a.sin_port);
    *out = fd;
    return GCOLL_SUCCESS;
}

static void hello_pack(unsigned char *h, int rank, int size, uint64_t nonce)
{
    gcoll__put32(h, HELLO_MAGIC);
    gcoll__put32(h + 4, (uint32_t)rank);
    gcoll__put32(h + 8, (uint32_t)size);
    gcoll__put32(h + 12, VERSION);
    gcoll__put64(h + 16, nonce);
    memcpy(h + 24, secret, SECRET_BYTES);
}

/* 0: a rank of this group; 1: not ours (magic or secret): closed unanswered; 2: ours, but it does
 * not fit (why says how): the group fails. */
static int hello_check(const star_t *s, const unsigned char *h, uint64_t nonce, int *rank, char *why, size_t len)
{
    unsigned char diff = 0;
    for (int i = 0; i < SECRET_BYTES; i++) /* constant time: no hint at how much matched */
        diff |= (unsigned char)(h[24 + i] ^ secret[i]);
    uint32_t r = gcoll__get32(h + 4), n = gcoll__get32(h + 8);
    if (gcoll__get32(h) != HELLO_MAGIC || diff)
        return 1;
    if (gcoll__get32(h + 12) != VERSION)
        snprintf(why, len, "a rank runs another gcoll bootstrap version (%u, here %d)", (unsigned)gcoll__get32(h + 12),
                 VERSION);
    else if (gcoll__get64(h + 16) != nonce)
        snprintf(why, len, "a hello for another group arrived (a rank of an earlier job?)");
    else if (n != (uint32_t)s->b.size)
        snprintf(why, len, "rank %u says the job has %u ranks, rank 0 says %d (GCOLL_SIZE or WORLD_SIZE differ)",
                 (unsigned)r, (unsigned)n, s->b.size);
    else if (r == 0 || r >= n)
        snprintf(why, len, "a rank says it is rank %u, outside 1..%d", (unsigned)r, s->b.size - 1);
    else if (s->fd[r] >= 0)
        snprintf(why, len, "two processes say they are rank %u (GCOLL_RANK or RANK repeated)", (unsigned)r);
    else {
        *rank = (int)r;
        return 0;
    }
    return 2;
}

static void answer(int fd, int status, const char *why, double deadline)
{
    unsigned char a[ACK_BYTES] = {0};
    gcoll__put32(a, ACK_MAGIC);
    gcoll__put32(a + 4, (uint32_t)status);
    snprintf((char *)a + 8, ACK_BYTES - 8, "%s", why);
    (void)send_all(fd, a, sizeof(a), deadline, -1);
}

typedef struct {
    int fd;
    size_t got;
    unsigned char h[HELLO_BYTES];
    struct sockaddr_in from;
} pend_t;

/* The ranks that have not joined, as "2, 5" (at most len bytes). */
static void missing(const star_t *s, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int r = 1; r < s->b.size && strlen(buf) + 16 < len; r++)
        if (s->fd[r] < 0)
            snprintf(buf + strlen(buf), len - strlen(buf), "%s%d", buf[0] ? ", " : "", r);
}

/* Rank 0: accepts the others on lfd until every rank has joined or the deadline passes. */
static gcoll_status_t serve(star_t *s, int lfd, uint64_t nonce, double deadline)
{
    pend_t pend[MAX_PEND];
    int npend = 0, joined = 0;
    unsigned long refused = 0;
    char from[64] = "", why[200];
    gcoll_status_t st = GCOLL_SUCCESS;
    while (joined < s->b.size - 1 && st == GCOLL_SUCCESS) {
        double left = deadline - now();
        if (left <= 0) {
            char who[128];
            missing(s, who, sizeof(who));
            st = gcoll__error(
                GCOLL_ERR_TIMEOUT, "bootstrap: rank%s %s did not join rank 0 within %g s (GCOLL_TIMEOUT)%s%s",
                strchr(who, ',') ? "s" : "", who, gcoll__config.timeout_s,
                refused ? "; refused connections with a wrong job secret (GCOLL_JOB_SECRET), the last from " : "",
                refused ? from : "");
            break;
        }
        struct pollfd p[MAX_PEND + 1];
        for (int i = 0; i < npend; i++)
            p[i] = (struct pollfd){pend[i].fd, POLLIN, 0};
        p[npend] = (struct pollfd){lfd, POLLIN, 0};
        if (poll(p, (nfds_t)npend + 1, left > 1 ? 1000 : (int)(left * 1000) + 1) < 0 && errno != EINTR) {
            st = gcoll__error(GCOLL_ERR_SYSTEM, "bootstrap: poll failed: %s", strerror(errno));
            break;
        }
        int listening = p[npend].revents & POLLIN;
        for (int i = npend - 1; i >= 0; i--) {
            if (!p[i].revents)
                continue;
            pend_t *q = &pend[i];
            ssize_t n = recv(q->fd, q->h + q->got, HELLO_BYTES - q->got, MSG_DONTWAIT);
            if (n < 0 && (errno == EAGAIN || errno == EINTR))
                continue;
            q->got += n > 0 ? (size_t)n : 0;
            int r = -1,
                verdict = n <= 0       ? 1
                : q->got < HELLO_BYTES ? -1
                                       : hello_check(s, q->h, nonce, &r, why, sizeof(why));
            if (verdict < 0)
                continue;
            if (verdict == 0) {
                answer(q->fd, 0, "", deadline);
                nodelay(q->fd);
                s->fd[r] = q->fd;
                joined++;
            } else if (verdict == 1) {
                refused += n > 0;
                addr_text(&q->from, from, sizeof(from));
                if (n > 0)
                    GCOLL_LOG(GCOLL_LOG_WARN,
                              "bootstrap: refused a connection from %s: not a hello with this job's "
                              "secret (GCOLL_JOB_SECRET)",
                              from);
                close(q->fd);
            } else {
                answer(q->fd, 1, why, now() + 1);
                close(q->fd);
                st = gcoll__error(GCOLL_ERR_INVALID_ARG, "bootstrap: %s", why);
            }
            pend[i] = pend[--npend];
        }
        if (listening && st == GCOLL_SUCCESS) {
            pend_t q = {.fd = -1};
            socklen_t alen = sizeof(q.from);
            q.fd = accept4(lfd, (struct sockaddr *)&q.from, &alen, SOCK_CLOEXEC);
            if (q.fd >= 0 && npend == MAX_PEND) { /* a flood: the oldest makes room */
                close(pend[0].fd);
                pend[0] = pend[--npend];
            }
            if (q.fd >= 0)
                pend[npend++] = q;
        }
    }
    for (int i = 0; i < npend; i++)
        close(pend[i].fd);
    if (st == GCOLL_SUCCESS && s->b.size > 1) {
        struct sockaddr_in me;
        socklen_t alen = sizeof(me);
        if (getsockname(s->fd[1], (struct sockaddr *)&me, &alen) == 0)
            s->self = me.sin_addr;
    }
    return st == GCOLL_SUCCESS ? st : give_up(s, st);
}

/* One attempt to connect within the deadline; -1 with errno when it fails. */
static int try_connect(const struct sockaddr_in *to, double deadline)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (const struct sockaddr *)to, sizeof(*to)) == 0)
        return fd;
    int err = errno;
    if (err == EINPROGRESS) {
        socklen_t len = sizeof(err);
        int w = wait_fd(fd, POLLOUT, deadline);
        err = w > 0 ? (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 ? err : errno) : ETIMEDOUT;
        if (err == 0)
            return fd;
    }
    close(fd);
    errno = err;
    return -1;
}

/* A rank other than 0: connects to rank 0 at `to` (retrying while nobody listens there yet),
 * says hello and waits for the answer. */
static gcoll_status_t join(star_t *s, const struct sockaddr_in *to, uint64_t nonce, double deadline)
{
    char where[64];
    addr_text(to, where, sizeof(where));
    int fd;
    while ((fd = try_connect(to, deadline)) < 0) {
        int e = errno;
        if (now() + RETRY_NS * 1e-9 >= deadline)
            return gcoll__error(GCOLL_ERR_TIMEOUT,
                                "bootstrap: rank 0 at %s did not answer within %g s (GCOLL_TIMEOUT): "
                                "%s (HINT: start rank 0; check GCOLL_ROOT_ADDR or MASTER_ADDR/MASTER_PORT and "
                                "firewalls)",
                                where, gcoll__config.timeout_s, strerror(e));
        nanosleep(&(struct timespec){0, RETRY_NS}, NULL);
    }
    nodelay(fd);
    s->fd[0] = fd;
    unsigned char h[HELLO_BYTES], a[ACK_BYTES] = {0};
    hello_pack(h, s->b.rank, s->b.size, nonce);
    gcoll_status_t st = send_all(fd, h, sizeof(h), deadline, 0);
    if (st == GCOLL_SUCCESS)
        st = recv_all(fd, a, sizeof(a), deadline, 0);
    if (st == GCOLL_ERR_REMOTE) /* closed unanswered: what rank 0 does to another secret */
        st = gcoll__error(
            GCOLL_ERR_INVALID_ARG,
            "bootstrap: rank 0 at %s refused this rank's hello: %s (HINT: "
            "GCOLL_JOB_SECRET must be the same on every rank)",
            where, gcoll__config.has_job_secret ? "a wrong job secret" : "no job secret (GCOLL_JOB_SECRET) here");
    if (st == GCOLL_SUCCESS && (gcoll__get32(a) != ACK_MAGIC || gcoll__get32(a + 4) != 0)) {
        a[ACK_BYTES - 1] = '\0';
        st = gcoll__error(GCOLL_ERR_INVALID_ARG, "bootstrap: rank 0 at %s refused rank %d: %s", where, s->b.rank,
                          gcoll__get32(a) == ACK_MAGIC ? (char *)a + 8 : "not a gcoll bootstrap answer");
    }
    struct sockaddr_in me;
    socklen_t alen = sizeof(me);
    if (st == GCOLL_SUCCESS && getsockname(fd, (struct sockaddr *)&me, &alen) == 0)
        s->self = me.sin_addr;
    return st;
}

static uint64_t draw_nonce(void)
{
    uint64_t v = 0;
    if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
        v = (uint64_t)getpid() << 32 ^ (uint64_t)(now() * 1e9);
    return v | 1; /* 0 is the world's */
}

/* ---- splits ---- */

static gcoll_status_t t_split(gcoll__boot_t *b, int color, int key, gcoll__boot_t **out)
{
    star_t *s = (star_t *)b;
    int n = b->size;
    int32_t mine[2] = {color < 0 ? -1 : color, key};
    int32_t *ck = malloc(sizeof(int32_t) * 2 * (size_t)n);
    unsigned char(*ad)[16] = malloc(16 * (size_t)n);
    if (!ck || !ad) {
        free(ck);
        free(ad);
        return gcoll__error(GCOLL_ERR_NOMEM, "bootstrap: no memory to split a group of %d", n);
    }
    gcoll_status_t st = t_allgather(b, mine, ck, sizeof(mine));
    /* the new group: ranks of this color by key, then rank; its rank 0 listens */
    int size = 0, rank = 0, leader = -1;
    for (int r = 0; st == GCOLL_SUCCESS && color >= 0 && r < n; r++) {
        if (ck[2 * r] != mine[0])
            continue;
        size++;
        rank += ck[2 * r + 1] < key || (ck[2 * r + 1] == key && r < b->rank);
        if (leader < 0 || ck[2 * r + 1] < ck[2 * leader + 1])
            leader = r;
    }
    int lfd = -1, port = 0;
    uint64_t nonce = draw_nonce();
    unsigned char me[16] = {0};
    if (st == GCOLL_SUCCESS && leader == b->rank && size > 1 &&
        listen_on(s->self, &port, size, &lfd) == GCOLL_SUCCESS) {
        memcpy(me, &s->self.s_addr, 4);
        gcoll__put32(me + 4, (uint32_t)port);
        gcoll__put64(me + 8, nonce);
    }
    if (st == GCOLL_SUCCESS)
        st = t_allgather(b, me, ad, sizeof(me));
    star_t *sub = NULL;
    if (st == GCOLL_SUCCESS && color >= 0 && !(sub = star_new(rank, size)))
        st = gcoll__error(GCOLL_ERR_NOMEM, "bootstrap: no memory for a group");
    if (sub)
        sub->self = s->self;
    double deadline = now() + gcoll__config.timeout_s;
    if (st == GCOLL_SUCCESS && sub && size > 1 && leader == b->rank) {
        st = lfd >= 0 ? serve(sub, lfd, nonce, deadline) : gcoll__error(GCOLL_ERR_SYSTEM, "%s", gcoll_last_error());
    } else if (st == GCOLL_SUCCESS && sub && size > 1) {
        struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)gcoll__get32(ad[leader] + 4))};
        memcpy(&to.sin_addr.s_addr, ad[leader], 4);
        st = to.sin_port ? join(sub, &to, gcoll__get64(ad[leader] + 8), deadline)
                         : gcoll__error(GCOLL_ERR_SYSTEM,
                                        "bootstrap: rank %d, the new group's rank 0, could not "
                                        "listen (its log says why)",
                                        leader);
    }
    if (lfd >= 0)
        close(lfd);
    free(ck);
    free(ad);
    if (st != GCOLL_SUCCESS && sub)
        t_free(&sub->b);
    else if (sub)
        *out = &sub->b;
    return st;
}

static const gcoll__boot_ops_t tcp_ops = {t_allgather, t_bcast, t_barrier, t_split, gcoll__boot_split_by_host, t_free};

/* ---- the world ---- */

/* host:port into an address, retrying a name that does not resolve yet until the deadline. */
static gcoll_status_t resolve(const char *root, struct sockaddr_in *out, double deadline)
{
    char host[256];
    const char *colon = strrchr(root, ':');
    snprintf(host, sizeof(host), "%.*s", (int)(colon - root), root);
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc;
    while ((rc = getaddrinfo(host, colon + 1, &hints, &res)) != 0) {
        if (rc != EAI_AGAIN && rc != EAI_NONAME && rc != EAI_FAIL)
            break;
        if (now() >= deadline)
            break;
        nanosleep(&(struct timespec){0, RETRY_NS}, NULL);
    }
    if (rc != 0)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "bootstrap: cannot resolve the root address %s: %s", root,
                            gai_strerror(rc));
    memcpy(out, res->ai_addr, sizeof(*out));
    freeaddrinfo(res);
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll__boot_tcp_world(int rank, int size, const char *root, gcoll__boot_t **out)
{
    double deadline = now() + gcoll__config.timeout_s;
    struct sockaddr_in to;
    GCOLL_CHECK(resolve(root, &to, deadline));
    int loopback = (ntohl(to.sin_addr.s_addr) >> 24) == 127;
    if (!gcoll__config.has_job_secret && !loopback)
        return gcoll__error(GCOLL_ERR_INVALID_ARG,
                            "GCOLL_JOB_SECRET is not set: a job launched without MPI whose "
                            "root address (%s) is not loopback needs 32 hex digits shared by every rank (HINT: "
                            "export GCOLL_JOB_SECRET=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \\n'))",
                            root);
    if (gcoll__config.has_job_secret)
        memcpy(secret, gcoll__config.job_secret, SECRET_BYTES);
    else
        memset(secret, 0, SECRET_BYTES); /* loopback only: the port is reachable from this host alone */
    star_t *s = star_new(rank, size);
    if (!s)
        return gcoll__error(GCOLL_ERR_NOMEM, "bootstrap: no memory for the world group");
    gcoll_status_t st = GCOLL_SUCCESS;
    if (rank == 0) {
        /* a loopback root stays on loopback; another listens on every interface, as torchrun's store does */
        struct in_addr at = {loopback ? to.sin_addr.s_addr : htonl(INADDR_ANY)};
        int port = ntohs(to.sin_port), lfd = -1;
        st = listen_on(at, &port, size, &lfd);
        if (st == GCOLL_SUCCESS && size > 1)
            st = serve(s, lfd, 0, deadline);
        if (lfd >= 0)
            close(lfd);
    } else {
        st = join(s, &to, 0, deadline);
    }
    if (st != GCOLL_SUCCESS) {
        t_free(&s->b);
        return st;
    }
    GCOLL_LOG(GCOLL_LOG_INFO, "bootstrap: rank %d of %d, without MPI, through rank 0 at %s (%s)", rank, size, root,
              gcoll__config.has_job_secret ? "job secret from GCOLL_JOB_SECRET" : "no job secret: loopback only");
    *out = &s->b;
    return GCOLL_SUCCESS;
}
