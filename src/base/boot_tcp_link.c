/* Building the bootstrap tree of a launch without MPI. The world: every rank but 0 listens, then
 * registers its address with rank 0 (GCOLL_ROOT_ADDR, or MASTER_ADDR:MASTER_PORT+1) on a
 * connection closed as soon as rank 0 answers, so rank 0 never holds more than a few at once; with
 * every rank registered, the table of addresses comes down the tree, each parent dialling its
 * children. Every hello proves GCOLL_JOB_SECRET, compared in constant time. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/boot_tcp.h"
#include "base/config.h"
#include "base/error.h"
#include "base/le.h"
#include "base/log.h"

#define HELLO_MAGIC 0x48544247u /* "GBTH": not the tcp transport's, so neither takes the other's */
#define ACK_MAGIC 0x41544247u   /* "GBTA" */
#define HELLO_BYTES 48          /* magic, rank, size, version, group nonce (8), secret (16), address (8) */
#define ACK_BYTES 208           /* magic, status, reason (200) */
#define SECRET_BYTES 16
#define VERSION 2
#define MAX_PEND 64         /* connections whose hello has not fully arrived */
#define RETRY_NS 100000000L /* between connection attempts to a root not listening yet */

static unsigned char secret[SECRET_BYTES];

double gcoll__tree_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Waits until fd is ready for ev or the deadline passes: 1 ready, 0 timed out, -1 failed. */
static int wait_fd(int fd, short ev, double deadline)
{
    for (;;) {
        double left = deadline - gcoll__tree_now();
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

gcoll_status_t gcoll__tree_send(int fd, const void *buf, size_t len, double deadline, int peer)
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

gcoll_status_t gcoll__tree_recv(int fd, void *buf, size_t len, double deadline, int peer)
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

gcoll_status_t gcoll__tree_listen(int rank, struct in_addr addr, int *port, int backlog, int *out)
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
        return gcoll__error(GCOLL_ERR_SYSTEM, "bootstrap: rank %d cannot listen at %s: %s%s", rank,
                            addr_text(&a, text, sizeof(text)), strerror(e),
                            e == EADDRINUSE ? " (HINT: another program holds the port: pick another)" : "");
    }
    *port = ntohs(a.sin_port);
    *out = fd;
    return GCOLL_SUCCESS;
}

uint64_t gcoll__tree_nonce(void)
{
    uint64_t v = 0;
    if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
        v = (uint64_t)getpid() << 32 ^ (uint64_t)(gcoll__tree_now() * 1e9);
    return v | 1;
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

/* ---- hellos ---- */

static void hello_pack(unsigned char *h, int rank, int size, uint64_t nonce, const unsigned char *addr)
{
    gcoll__put32(h, HELLO_MAGIC);
    gcoll__put32(h + 4, (uint32_t)rank);
    gcoll__put32(h + 8, (uint32_t)size);
    gcoll__put32(h + 12, VERSION);
    gcoll__put64(h + 16, nonce);
    memcpy(h + 24, secret, SECRET_BYTES);
    if (addr)
        memcpy(h + 40, addr, GCOLL__TREE_ADDR_BYTES);
    else
        memset(h + 40, 0, GCOLL__TREE_ADDR_BYTES);
}

/* Whether h carries this job's secret (constant time: no hint at how much matched). */
static int ours(const unsigned char *h)
{
    unsigned char diff = 0;
    for (int i = 0; i < SECRET_BYTES; i++)
        diff |= (unsigned char)(h[24 + i] ^ secret[i]);
    return gcoll__get32(h) == HELLO_MAGIC && !diff;
}

/* 0 when a hello of ours fits this group (its rank in *rank), else why says how it does not. */
static int misfit(const gcoll__tree_t *s, const unsigned char *h, uint64_t nonce, int *rank, char *why, size_t len)
{
    uint32_t r = gcoll__get32(h + 4), n = gcoll__get32(h + 8);
    if (gcoll__get32(h + 12) != VERSION)
        snprintf(why, len, "a rank runs another gcoll bootstrap version (%u, here %d)", (unsigned)gcoll__get32(h + 12),
                 VERSION);
    else if (gcoll__get64(h + 16) != nonce)
        snprintf(why, len, "a hello for another group arrived (a rank of an earlier job?)");
    else if (n != (uint32_t)s->b.size)
        snprintf(why, len, "rank %u says the job has %u ranks, rank %d says %d (GCOLL_SIZE or WORLD_SIZE differ)",
                 (unsigned)r, (unsigned)n, s->b.rank, s->b.size);
    else if (r >= n || (int)r == s->b.rank)
        snprintf(why, len, "a rank says it is rank %u, outside 0..%d or this rank's own", (unsigned)r, s->b.size - 1);
    else {
        *rank = (int)r;
        return 0;
    }
    return 1;
}

static void answer(int fd, int status, const char *why, double deadline)
{
    unsigned char a[ACK_BYTES] = {0};
    gcoll__put32(a, ACK_MAGIC);
    gcoll__put32(a + 4, (uint32_t)status);
    snprintf((char *)a + 8, ACK_BYTES - 8, "%s", why);
    (void)gcoll__tree_send(fd, a, sizeof(a), deadline, -1);
}

/* Connections from strangers (no hello with this job's secret): counted, the last one named. */
typedef struct {
    unsigned long refused;
    char from[64];
} strangers_t;

/* What a listener does with a hello of ours: keep waiting (0), done (1), or fail (-1, its error
 * set). It owns fd from then on. */
typedef int (*take_fn)(void *ctx, int fd, const unsigned char *h);

typedef struct {
    int fd;
    size_t got;
    unsigned char h[HELLO_BYTES];
    struct sockaddr_in from;
} pend_t;

/* Accepts on lfd, reading at most MAX_PEND hellos at a time, until take is done or fails, or
 * the deadline passes (GCOLL_ERR_TIMEOUT with no message: the caller says who is missing). */
static gcoll_status_t accept_hellos(int lfd, double deadline, take_fn take, void *ctx, strangers_t *x)
{
    pend_t pend[MAX_PEND];
    int npend = 0, verdict = 0;
    while (verdict == 0) {
        double left = deadline - gcoll__tree_now();
        if (left <= 0)
            break;
        struct pollfd p[MAX_PEND + 1];
        for (int i = 0; i < npend; i++)
            p[i] = (struct pollfd){pend[i].fd, POLLIN, 0};
        p[npend] = (struct pollfd){lfd, POLLIN, 0};
        if (poll(p, (nfds_t)npend + 1, left > 1 ? 1000 : (int)(left * 1000) + 1) < 0 && errno != EINTR) {
            verdict = -1;
            gcoll__error(GCOLL_ERR_SYSTEM, "bootstrap: poll failed: %s", strerror(errno));
            break;
        }
        int listening = p[npend].revents & POLLIN;
        for (int i = npend - 1; i >= 0 && verdict == 0; i--) {
            if (!p[i].revents)
                continue;
            pend_t *q = &pend[i];
            ssize_t n = recv(q->fd, q->h + q->got, HELLO_BYTES - q->got, MSG_DONTWAIT);
            if (n < 0 && (errno == EAGAIN || errno == EINTR))
                continue;
            q->got += n > 0 ? (size_t)n : 0;
            if (n > 0 && q->got < HELLO_BYTES)
                continue;
            if (n > 0 && ours(q->h)) {
                verdict = take(ctx, q->fd, q->h);
            } else {
                if (n > 0) {
                    x->refused++;
                    addr_text(&q->from, x->from, sizeof(x->from));
                    GCOLL_LOG(GCOLL_LOG_WARN,
                              "bootstrap: refused a connection from %s: not a hello with this job's "
                              "secret (GCOLL_JOB_SECRET)",
                              x->from);
                }
                close(q->fd);
            }
            pend[i] = pend[--npend];
        }
        if (listening && verdict == 0) {
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
    return verdict > 0 ? GCOLL_SUCCESS : verdict < 0 ? GCOLL_ERR_INVALID_ARG : GCOLL_ERR_TIMEOUT;
}

static const char *refusals(const strangers_t *x, char *buf, size_t len)
{
    if (!x->refused)
        return "";
    snprintf(buf, len, "; refused connections with a wrong job secret (GCOLL_JOB_SECRET), the last from %s", x->from);
    return buf;
}

/* ---- the world's registration with rank 0 ---- */

typedef struct {
    gcoll__tree_t *s;
    unsigned char (*table)[GCOLL__TREE_ADDR_BYTES]; /* a port of 0: not registered yet */
    int joined;
    double deadline;
} registry_t;

static int registered(const registry_t *g, int r)
{
    return gcoll__get32(g->table[r] + 4) != 0;
}

static int take_registration(void *ctx, int fd, const unsigned char *h)
{
    registry_t *g = ctx;
    char why[200];
    int r = -1;
    if (!misfit(g->s, h, 0, &r, why, sizeof(why)) && registered(g, r))
        snprintf(why, sizeof(why), "two processes say they are rank %d (GCOLL_RANK or RANK repeated)", r);
    else if (r >= 0 && gcoll__get32(h + 44) == 0)
        snprintf(why, sizeof(why), "rank %d registered no address", r);
    else if (r >= 0) {
        answer(fd, 0, "", g->deadline);
        memcpy(g->table[r], h + 40, GCOLL__TREE_ADDR_BYTES);
        if (g->joined++ == 0) { /* where the others reach rank 0: the address they came in on */
            struct sockaddr_in me;
            socklen_t alen = sizeof(me);
            if (getsockname(fd, (struct sockaddr *)&me, &alen) == 0)
                g->s->self = me.sin_addr;
        }
        close(fd);
        return g->joined == g->s->b.size - 1;
    }
    answer(fd, 1, why, gcoll__tree_now() + 1);
    close(fd);
    gcoll__error(GCOLL_ERR_INVALID_ARG, "bootstrap: %s", why);
    return -1;
}

/* The ranks that have not registered, as "2, 5" (at most len bytes). */
static void missing(const registry_t *g, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int r = 1; r < g->s->b.size && strlen(buf) + 16 < len; r++)
        if (!registered(g, r))
            snprintf(buf + strlen(buf), len - strlen(buf), "%s%d", buf[0] ? ", " : "", r);
}

static struct sockaddr_in addr_of(const unsigned char *a)
{
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)gcoll__get32(a + 4))};
    memcpy(&to.sin_addr.s_addr, a, 4);
    return to;
}

/* Rank 0 gives up before the tree exists: each registered rank waits for a connection on its
 * listener, so rank 0 dials them one by one with the reason. Returns st. */
static gcoll_status_t tell_registered(registry_t *g, gcoll_status_t st)
{
    gcoll__tree_t *s = g->s;
    char why[256];
    snprintf(why, sizeof(why), "%s", gcoll_last_error());
    snprintf(s->why, sizeof(s->why), "%s", why);
    s->why_rank = 0;
    s->why_fd = -1;
    double deadline = gcoll__tree_now() + 2;
    for (int r = 1; r < s->b.size && gcoll__tree_now() < deadline; r++) {
        if (!registered(g, r))
            continue;
        struct sockaddr_in to = addr_of(g->table[r]);
        int fd = try_connect(&to, gcoll__tree_now() + 0.5);
        if (fd < 0)
            continue;
        unsigned char h[HELLO_BYTES];
        hello_pack(h, 0, s->b.size, 0, NULL);
        s->up = fd; /* for the moment: the failure frame goes out on it */
        if (gcoll__tree_send(fd, h, sizeof(h), deadline, r) == GCOLL_SUCCESS)
            (void)gcoll__tree_give_up(s, st);
        s->up = -1;
        close(fd);
    }
    return gcoll__error(st, "%s", why);
}

static gcoll_status_t serve(gcoll__tree_t *s, int lfd, unsigned char (*table)[GCOLL__TREE_ADDR_BYTES], double deadline)
{
    registry_t g = {s, table, 0, deadline};
    strangers_t x = {0, ""};
    gcoll_status_t st = accept_hellos(lfd, deadline, take_registration, &g, &x);
    if (st == GCOLL_ERR_TIMEOUT) {
        char who[128], more[128];
        missing(&g, who, sizeof(who));
        gcoll__error(GCOLL_ERR_TIMEOUT, "bootstrap: rank%s %s did not join rank 0 within %g s (GCOLL_TIMEOUT)%s",
                     strchr(who, ',') ? "s" : "", who, gcoll__config.timeout_s, refusals(&x, more, sizeof(more)));
    }
    return st == GCOLL_SUCCESS ? st : tell_registered(&g, st);
}

/* A rank other than 0: connects to rank 0 at `to` (retrying while nobody listens there yet),
 * listens where rank 0 reached it, registers that address and waits for the answer. */
static gcoll_status_t join(gcoll__tree_t *s, const struct sockaddr_in *to, double deadline, int *lfd)
{
    char where[64];
    addr_text(to, where, sizeof(where));
    int fd;
    while ((fd = try_connect(to, deadline)) < 0) {
        int e = errno;
        if (gcoll__tree_now() + RETRY_NS * 1e-9 >= deadline)
            return gcoll__error(GCOLL_ERR_TIMEOUT,
                                "bootstrap: rank 0 at %s did not answer within %g s (GCOLL_TIMEOUT): "
                                "%s (HINT: start rank 0; check GCOLL_ROOT_ADDR or MASTER_ADDR/MASTER_PORT and "
                                "firewalls)",
                                where, gcoll__config.timeout_s, strerror(e));
        nanosleep(&(struct timespec){0, RETRY_NS}, NULL);
    }
    struct sockaddr_in me;
    socklen_t alen = sizeof(me);
    int port = 0;
    unsigned char h[HELLO_BYTES], a[ACK_BYTES] = {0}, addr[GCOLL__TREE_ADDR_BYTES];
    gcoll_status_t st = getsockname(fd, (struct sockaddr *)&me, &alen) == 0
        ? GCOLL_SUCCESS
        : gcoll__error(GCOLL_ERR_SYSTEM, "bootstrap: getsockname: %s", strerror(errno));
    if (st == GCOLL_SUCCESS) {
        s->self = me.sin_addr;
        st = gcoll__tree_listen(s->b.rank, s->self, &port, 8, lfd);
    }
    memcpy(addr, &s->self.s_addr, 4);
    gcoll__put32(addr + 4, (uint32_t)port);
    hello_pack(h, s->b.rank, s->b.size, 0, addr);
    if (st == GCOLL_SUCCESS)
        st = gcoll__tree_send(fd, h, sizeof(h), deadline, 0);
    if (st == GCOLL_SUCCESS)
        st = gcoll__tree_recv(fd, a, sizeof(a), deadline, 0);
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
    close(fd);
    return st;
}

/* ---- linking the tree ---- */

typedef struct {
    gcoll__tree_t *s;
    uint64_t nonce;
    int world; /* rank 0 may dial in with a failure before the tree exists */
} parent_wait_t;

static int take_parent(void *ctx, int fd, const unsigned char *h)
{
    parent_wait_t *w = ctx;
    char why[200];
    int r = -1, parent = gcoll__tree_parent(w->s->b.rank);
    if (!misfit(w->s, h, w->nonce, &r, why, sizeof(why)) && r != parent && !(w->world && r == 0))
        snprintf(why, sizeof(why), "rank %d dialled this rank, whose parent in the bootstrap tree is rank %d", r,
                 parent);
    else if (r >= 0) {
        nodelay(fd);
        w->s->up = fd;
        return 1;
    }
    close(fd);
    gcoll__error(GCOLL_ERR_INVALID_ARG, "bootstrap: %s", why);
    return -1;
}

static gcoll_status_t dial_kid(gcoll__tree_t *s, int i, const unsigned char *addr, uint64_t nonce, double deadline)
{
    int kid = s->kid[i];
    struct sockaddr_in to = addr_of(addr);
    if (!to.sin_port)
        return gcoll__error(GCOLL_ERR_SYSTEM, "bootstrap: rank %d could not listen (its log says why)", kid);
    int fd = try_connect(&to, deadline);
    if (fd < 0)
        return lost(kid, "connecting to", strerror(errno));
    nodelay(fd);
    s->kfd[i] = fd;
    unsigned char h[HELLO_BYTES];
    hello_pack(h, s->b.rank, s->b.size, nonce, NULL);
    return gcoll__tree_send(fd, h, sizeof(h), deadline, kid);
}

gcoll_status_t gcoll__tree_link(gcoll__tree_t *s, unsigned char (*table)[GCOLL__TREE_ADDR_BYTES], int lfd,
                                uint64_t nonce, int world, double deadline)
{
    gcoll_status_t st = GCOLL_SUCCESS;
    size_t tbytes = GCOLL__TREE_ADDR_BYTES * (size_t)s->b.size;
    if (s->b.rank != 0) {
        parent_wait_t w = {s, nonce, world};
        strangers_t x = {0, ""};
        st = lfd >= 0 ? accept_hellos(lfd, deadline, take_parent, &w, &x)
                      : gcoll__error(GCOLL_ERR_SYSTEM,
                                     "bootstrap: this rank could not listen for its parent in "
                                     "the bootstrap tree (its log says why)");
        if (st == GCOLL_ERR_TIMEOUT) {
            char more[128];
            gcoll__error(st,
                         "bootstrap: rank %d, this rank's parent in the bootstrap tree, did not connect within %g s "
                         "(GCOLL_TIMEOUT)%s",
                         gcoll__tree_parent(s->b.rank), gcoll__config.timeout_s, refusals(&x, more, sizeof(more)));
        }
        if (st == GCOLL_SUCCESS && world)
            st = gcoll__tree_recv_frame(s, s->up, gcoll__tree_parent(s->b.rank), table, tbytes, deadline);
    }
    for (int i = 0; i < s->nkids && st == GCOLL_SUCCESS; i++) {
        st = dial_kid(s, i, table[s->kid[i]], nonce, deadline);
        if (st == GCOLL_SUCCESS && world)
            st = gcoll__tree_send_data(s, s->kfd[i], s->kid[i], table, tbytes, deadline);
    }
    return st == GCOLL_SUCCESS ? st : gcoll__tree_give_up(s, st);
}

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
        if (gcoll__tree_now() >= deadline)
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

/* Rank 0: listens at the root address and takes every registration. */
static gcoll_status_t root_world(gcoll__tree_t *s, struct sockaddr_in *to, int loopback,
                                 unsigned char (*table)[GCOLL__TREE_ADDR_BYTES], double deadline)
{
    /* a loopback root stays on loopback; another listens on every interface, as torchrun's store does */
    struct in_addr at = {loopback ? to->sin_addr.s_addr : htonl(INADDR_ANY)};
    int port = ntohs(to->sin_port), lfd = -1;
    gcoll_status_t st = gcoll__tree_listen(0, at, &port, 128, &lfd);
    if (st != GCOLL_SUCCESS)
        return st;
    if (s->b.size > 1)
        st = serve(s, lfd, table, deadline);
    close(lfd);
    return st;
}

gcoll_status_t gcoll__boot_tcp_world(int rank, int size, const char *root, gcoll__boot_t **out)
{
    double deadline = gcoll__tree_now() + gcoll__config.timeout_s;
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
    gcoll__tree_t *s = gcoll__tree_new(rank, size);
    unsigned char(*table)[GCOLL__TREE_ADDR_BYTES] = calloc((size_t)size, GCOLL__TREE_ADDR_BYTES);
    gcoll_status_t st = GCOLL_SUCCESS;
    int lfd = -1;
    if (!s || !table)
        st = gcoll__error(GCOLL_ERR_NOMEM, "bootstrap: no memory for the world group of %d", size);
    else if (rank == 0)
        st = root_world(s, &to, loopback, table, deadline);
    else
        st = join(s, &to, deadline, &lfd);
    if (st != GCOLL_SUCCESS) {
        if (lfd >= 0)
            close(lfd);
        free(table);
        if (s)
            gcoll__tree_free(s);
        return st;
    }
    s->lfd = lfd; /* linked at the first operation */
    s->table = table;
    GCOLL_LOG(GCOLL_LOG_INFO, "bootstrap: rank %d of %d, without MPI, through rank 0 at %s (%s)", rank, size, root,
              gcoll__config.has_job_secret ? "job secret from GCOLL_JOB_SECRET" : "no job secret: loopback only");
    *out = &s->b;
    return GCOLL_SUCCESS;
}
