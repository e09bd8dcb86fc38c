/* The OFI transport tested on its own under mpirun (2 to 4 ranks), raw (without the framing of
 * src/transports/frame): the registration cache against counting callbacks, provider choice errors,
 * messages of every size checked byte for byte with guard bytes, many tags, receives before and
 * after their sends, all-to-all, irecv_upto, wrong sizes, cancel, explicit registration, the
 * channels that let communicators share the process's endpoint. Last line on rank 0: "RESULT ofi passed=N failed=M". */
#include <mpi.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/config.h"
#include "base/error.h"
#include "transports/ofi/ofi.h"
#include "transports/transport.h"
#include "tp_check.h"

static const gcoll__transport_t *const T = &gcoll__transport_ofi_raw;

#if GCOLL_HAVE_OFI

#include "transports/ofi/ofi_internal.h" /* to see that a flood reaches the retry queue */
#include "transports/ofi/ofi_mr.h"

/* ---- the registration cache, against callbacks that count what it asks for ---- */

typedef struct {
    int regs, deregs, fail_next;
    void *last_dereg;
    uintptr_t last_base;
    size_t last_len;
} fake_t;

static gcoll_status_t fake_reg(void *ctx, void *base, size_t len, void **handle, void **desc)
{
    fake_t *f = ctx;
    if (f->fail_next) {
        f->fail_next = 0;
        return gcoll__error(GCOLL_ERR_TRANSPORT, "fake registration refused");
    }
    f->regs++;
    f->last_base = (uintptr_t)base;
    f->last_len = len;
    *handle = (void *)(uintptr_t)f->regs; /* registrations are numbered from 1 */
    *desc = (char *)base + 1;
    return GCOLL_SUCCESS;
}

static void fake_dereg(void *ctx, void *handle)
{
    fake_t *f = ctx;
    f->deregs++;
    f->last_dereg = handle;
}

#define REG(n) ((void *)(uintptr_t)(n))

static void test_mrcache(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char *a = aligned_alloc(page, 4 * page), *b = aligned_alloc(page, 4 * page), *c = aligned_alloc(page, 4 * page);
    fake_t f = {0};
    gcoll__ofi_mr_ops_t ops = {fake_reg, fake_dereg, &f};
    gcoll__ofi_mrcache_t *mc = NULL;
    gcoll_status_t st = gcoll__ofi_mrcache_create(2, &ops, &mc);
    CHECK(st == GCOLL_SUCCESS, "cache create: %s", gcoll_last_error());
    if (!mc || !a || !b || !c) {
        free(a), free(b), free(c);
        return;
    }
    gcoll__ofi_mr_entry_t *ea = NULL, *ea2 = NULL, *eb = NULL, *ec = NULL, *ex = NULL;
    /* miss: registration 1, rounded out to the whole page */
    st = gcoll__ofi_mrcache_get(mc, a + 10, 100, &ea);
    CHECK(st == GCOLL_SUCCESS && f.regs == 1 && f.last_base == (uintptr_t)a && f.last_len == page,
          "miss registers the page: regs %d len %zu", f.regs, f.last_len);
    CHECK(gcoll__ofi_mr_desc(ea) == a + 1, "the descriptor is the registration's");
    /* hit: a buffer inside the registered range */
    st = gcoll__ofi_mrcache_get(mc, a + 200, 50, &ea2);
    CHECK(st == GCOLL_SUCCESS && ea2 == ea && f.regs == 1, "covered range hits (regs %d)", f.regs);
    /* a buffer that runs past the range misses: registration 2 spans both pages */
    st = gcoll__ofi_mrcache_get(mc, a + page - 8, 16, &ex);
    CHECK(st == GCOLL_SUCCESS && ex != ea && f.regs == 2 && f.last_base == (uintptr_t)a && f.last_len == 2 * page,
          "straddling buffer registers both pages (regs %d len %zu)", f.regs, f.last_len);
    gcoll__ofi_mrcache_put(mc, ea);
    gcoll__ofi_mrcache_put(mc, ea2);
    gcoll__ofi_mrcache_put(mc, ex);
    /* idle entries still serve: this hits registration 1, now the most recently used */
    st = gcoll__ofi_mrcache_get(mc, a + 5, 5, &ea);
    CHECK(st == GCOLL_SUCCESS && f.regs == 2 && f.deregs == 0, "hit after put (regs %d)", f.regs);
    gcoll__ofi_mrcache_put(mc, ea);
    /* full (2 entries, both idle): a miss evicts the least recently used, registration 2 */
    st = gcoll__ofi_mrcache_get(mc, b, page, &eb);
    CHECK(st == GCOLL_SUCCESS && f.regs == 3 && f.deregs == 1 && f.last_dereg == REG(2),
          "eviction of the LRU idle entry (regs %d deregs %d last %p)", f.regs, f.deregs, f.last_dereg);
    gcoll__ofi_mr_stats_t s = gcoll__ofi_mrcache_stats(mc);
    CHECK(s.hits == 2 && s.misses == 3 && s.evictions == 1 && s.entries == 2, "stats %llu/%llu/%llu/%zu",
          (unsigned long long)s.hits, (unsigned long long)s.misses, (unsigned long long)s.evictions, s.entries);
    /* both entries held (b's still is): the cache grows instead of evicting... */
    st = gcoll__ofi_mrcache_get(mc, a, 8, &ea);
    CHECK(st == GCOLL_SUCCESS && f.regs == 3, "hold registration 1 (regs %d)", f.regs);
    st = gcoll__ofi_mrcache_get(mc, c, 8, &ec);
    CHECK(st == GCOLL_SUCCESS && f.regs == 4 && f.deregs == 1 && gcoll__ofi_mrcache_stats(mc).entries == 3,
          "held entries are not evicted (regs %d deregs %d)", f.regs, f.deregs);
    /* ...and shrinks back to its capacity as soon as an entry goes idle */
    gcoll__ofi_mrcache_put(mc, ec);
    CHECK(f.deregs == 2 && f.last_dereg == REG(4) && gcoll__ofi_mrcache_stats(mc).entries == 2,
          "over capacity: an entry going idle is dropped (deregs %d)", f.deregs);
    /* a refused registration is reported and leaves nothing behind */
    f.fail_next = 1;
    st = gcoll__ofi_mrcache_get(mc, c + page, 8, &ec);
    CHECK(st == GCOLL_ERR_TRANSPORT && strstr(gcoll_last_error(), "refused") &&
              gcoll__ofi_mrcache_stats(mc).entries == 2,
          "failed registration: %s", gcoll_last_error());
    gcoll__ofi_mrcache_put(mc, ea);
    gcoll__ofi_mrcache_put(mc, eb);
    gcoll__ofi_mrcache_destroy(mc);
    CHECK(f.deregs == 4 && f.regs == 4, "destroy deregisters the rest (%d of %d)", f.deregs, f.regs);
    free(a);
    free(b);
    free(c);
}

/* ---- the transport ---- */

/* An endpoint over group g, whose ranks are comm's. */
static gcoll__tp_t *open_on(gcoll__boot_t *g, MPI_Comm comm)
{
    gcoll__bootstrap_t boot = {g, g->rank, g->size, NULL};
    gcoll__tp_t *tp = NULL;
    gcoll_status_t st = T->create(&boot, &tp);
    CHECK(st == GCOLL_SUCCESS, "create: %s", gcoll_last_error());
    if (st != GCOLL_SUCCESS)
        return NULL;
    size_t len = T->addr_len(tp);
    char *mine = calloc(1, len), *all = calloc((size_t)g->size, len);
    CHECK(T->addr(tp, mine) == GCOLL_SUCCESS, "addr: %s", gcoll_last_error());
    MPI_Allgather(mine, (int)len, MPI_BYTE, all, (int)len, MPI_BYTE, comm);
    st = T->connect(tp, all);
    CHECK(st == GCOLL_SUCCESS, "connect: %s", gcoll_last_error());
    free(mine);
    free(all);
    return tp;
}

static gcoll__tp_t *open_tp(void)
{
    return open_on(world_group(), MPI_COMM_WORLD);
}

static unsigned char pat(size_t i, int src, int dst, uint32_t tag)
{
    return (unsigned char)(i * 131u + (i >> 8) * 7u + (unsigned)src * 17u + (unsigned)dst * 29u + tag * 13u + 1u);
}

static void fill(unsigned char *p, size_t n, int src, int dst, uint32_t tag)
{
    for (size_t i = 0; i < n; i++)
        p[i] = pat(i, src, dst, tag);
}

/* Returns the index of the first wrong byte, or n. */
static size_t verify(const unsigned char *p, size_t n, int src, int dst, uint32_t tag)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != pat(i, src, dst, tag))
            return i;
    return n;
}

#define GUARD 16
#define WAIT_S 60.0

/* Tests every request until all are done; st[i] gets each status. Cancels stragglers. */
static int wait_all(gcoll__tp_t *tp, gcoll__tp_req_t **req, gcoll_status_t *st, char (*msg)[256], int n)
{
    double until = check_now() + WAIT_S;
    int left = n;
    for (int i = 0; i < n; i++)
        left -= req[i] == NULL;
    while (left && check_now() < until) {
        int moved = 0;
        for (int i = 0; i < n; i++) {
            if (!req[i])
                continue;
            int done = 0;
            gcoll_status_t s = T->test(tp, req[i], &done);
            if (done || s != GCOLL_SUCCESS) {
                req[i] = NULL;
                st[i] = s;
                if (msg)
                    snprintf(msg[i], 256, "%s", s == GCOLL_SUCCESS ? "" : gcoll_last_error());
                left--;
                moved = 1;
            }
        }
        if (!moved)
            sched_yield(); /* oversubscribed: the peer needs the core */
    }
    for (int i = 0; i < n; i++)
        if (req[i]) {
            T->cancel(tp, req[i]);
            req[i] = NULL;
            st[i] = GCOLL_ERR_TIMEOUT;
        }
    CHECK(left == 0, "%d of %d requests did not finish in %.0f s", left, n, WAIT_S);
    return left == 0;
}

/* One size, one distance: each rank sends to rank+d and receives from rank-d, the receive
 * posted before the send (a barrier between) or after it. */
static void exchange(gcoll__tp_t *tp, size_t bytes, int d, int recv_first, uint32_t tag)
{
    int to = (rank + d) % size, from = (rank - d + size) % size;
    unsigned char *sbuf = malloc(bytes ? bytes : 1), *rbuf = malloc(bytes + GUARD);
    fill(sbuf, bytes, rank, to, tag);
    memset(rbuf, 0xA5, bytes + GUARD);
    gcoll__tp_req_t *req[2] = {NULL, NULL};
    gcoll_status_t st[2] = {GCOLL_SUCCESS, GCOLL_SUCCESS};
    void *rptr = bytes ? rbuf : NULL, *sptr = bytes ? sbuf : NULL; /* empty messages may carry NULL */
    if (recv_first) {
        CHECK(T->irecv(tp, from, tag, rptr, bytes, &req[0]) == GCOLL_SUCCESS, "irecv: %s", gcoll_last_error());
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK(T->isend(tp, to, tag, sptr, bytes, &req[1]) == GCOLL_SUCCESS, "isend: %s", gcoll_last_error());
    } else {
        CHECK(T->isend(tp, to, tag, sptr, bytes, &req[1]) == GCOLL_SUCCESS, "isend: %s", gcoll_last_error());
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK(T->irecv(tp, from, tag, rptr, bytes, &req[0]) == GCOLL_SUCCESS, "irecv: %s", gcoll_last_error());
    }
    wait_all(tp, req, st, NULL, 2);
    CHECK(st[0] == GCOLL_SUCCESS && st[1] == GCOLL_SUCCESS, "%zu bytes d=%d %s: %s/%s", bytes, d,
          recv_first ? "recv first" : "send first", gcoll_status_name(st[0]), gcoll_status_name(st[1]));
    size_t bad = verify(rbuf, bytes, from, rank, tag);
    CHECK(bad == bytes, "%zu bytes from %d: byte %zu wrong", bytes, from, bad);
    int guard_ok = 1;
    for (int i = 0; i < GUARD; i++)
        guard_ok &= rbuf[bytes + (size_t)i] == 0xA5;
    CHECK(guard_ok, "%zu bytes from %d: written past the end", bytes, from);
    free(sbuf);
    free(rbuf);
}

static void test_sizes(gcoll__tp_t *tp)
{
    static const size_t sizes[] = {0, 1, 7, 4095, 65537, (1u << 20) + 3, 16u << 20};
    uint32_t tag = 100;
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
        for (int d = 1; d < size; d++)
            for (int recv_first = 0; recv_first < 2; recv_first++)
                exchange(tp, sizes[k], d, recv_first, tag++);
}

/* Many tags at once to every peer, received in the opposite order, and several messages with
 * one tag, which must match in posting order. */
static void test_tags(gcoll__tp_t *tp)
{
    enum { K = 40, SAME = 5 };
    int n = (size - 1) * (K + SAME);
    gcoll__tp_req_t **req = calloc(2 * (size_t)n, sizeof(*req));
    gcoll_status_t *st = calloc(2 * (size_t)n, sizeof(*st));
    unsigned char **sb = calloc(2 * (size_t)n, sizeof(*sb)), **rb = sb + n;
    size_t *len = calloc((size_t)n, sizeof(*len));
    int *peer = calloc((size_t)n, sizeof(*peer));
    uint32_t *tag = calloc((size_t)n, sizeof(*tag));
    int i = 0;
    for (int p = 0; p < size; p++) {
        if (p == rank)
            continue;
        for (int k = 0; k < K + SAME; k++, i++) {
            peer[i] = p;
            /* the same tag SAME times at the end; sizes from 0 up, some above the eager limit */
            tag[i] = k < K ? 2000u + (uint32_t)k : 2999u;
            len[i] = k % 5 == 4 ? 70000u + (size_t)k : (size_t)k * 97u % 5000u;
            if (k >= K)
                len[i] = 1000u;
        }
    }
    for (i = 0; i < n; i++) { /* receives for one peer: distinct tags in reverse, then the same tag */
        rb[i] = malloc(len[i] + 1);
        sb[i] = malloc(len[i] + 1);
        int k = i % (K + SAME);
        uint32_t salt = k >= K ? (uint32_t)k : 0; /* tells the same-tag messages apart */
        fill(sb[i], len[i], rank, peer[i], tag[i] + salt);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (i = 0; i < n; i++) {
        int base = i - i % (K + SAME), k = i % (K + SAME);
        int r = k < K ? base + K - 1 - k : i;
        CHECK(T->irecv(tp, peer[r], tag[r], rb[r], len[r], &req[r]) == GCOLL_SUCCESS, "irecv: %s", gcoll_last_error());
        CHECK(T->isend(tp, peer[i], tag[i], sb[i], len[i], &req[n + i]) == GCOLL_SUCCESS, "isend: %s",
              gcoll_last_error());
    }
    wait_all(tp, req, st, NULL, 2 * n);
    int bad = 0;
    for (i = 0; i < n; i++) {
        int k = i % (K + SAME);
        uint32_t salt = k >= K ? (uint32_t)k : 0;
        bad += st[i] != GCOLL_SUCCESS || st[n + i] != GCOLL_SUCCESS ||
            verify(rb[i], len[i], peer[i], rank, tag[i] + salt) != len[i];
    }
    CHECK(bad == 0, "%d of %d tagged messages wrong or out of order", bad, n);
    for (i = 0; i < n; i++) {
        free(sb[i]);
        free(rb[i]);
    }
    free(req), free(st), free(sb), free(len), free(peer), free(tag);
}

/* Every rank sends to and receives from every other at once. */
static void test_alltoall(gcoll__tp_t *tp)
{
    size_t bytes = (256u << 10) + (size_t)rank; /* sizes differ by sender */
    gcoll__tp_req_t **req = calloc(2 * (size_t)size, sizeof(*req));
    gcoll_status_t *st = calloc(2 * (size_t)size, sizeof(*st));
    unsigned char **buf = calloc(2 * (size_t)size, sizeof(*buf));
    for (int p = 0; p < size; p++) {
        if (p == rank)
            continue;
        size_t rbytes = (256u << 10) + (size_t)p;
        buf[p] = malloc(rbytes);
        buf[size + p] = malloc(bytes);
        fill(buf[size + p], bytes, rank, p, 3000);
        CHECK(T->irecv(tp, p, 3000, buf[p], rbytes, &req[p]) == GCOLL_SUCCESS, "irecv: %s", gcoll_last_error());
        CHECK(T->isend(tp, p, 3000, buf[size + p], bytes, &req[size + p]) == GCOLL_SUCCESS, "isend: %s",
              gcoll_last_error());
    }
    wait_all(tp, req, st, NULL, 2 * size);
    for (int p = 0; p < size; p++) {
        if (p == rank)
            continue;
        size_t rbytes = (256u << 10) + (size_t)p;
        CHECK(st[p] == GCOLL_SUCCESS && st[size + p] == GCOLL_SUCCESS &&
                  verify(buf[p], rbytes, p, rank, 3000) == rbytes,
              "all-to-all with rank %d", p);
        free(buf[p]);
        free(buf[size + p]);
    }
    free(req), free(st), free(buf);
}

/* irecv_upto: a receive of 5000 bytes takes a message of 3000 (and of 0) from the next rank,
 * reports the length and leaves the rest of the buffer as it was. */
static void test_upto(gcoll__tp_t *tp)
{
    int to = (rank + 1) % size, from = (rank - 1 + size) % size;
    unsigned char *sb = malloc(3000), *rb = malloc(5000), *rb0 = malloc(16);
    fill(sb, 3000, rank, to, 4100);
    memset(rb, 0xee, 5000);
    memset(rb0, 0xee, 16);
    size_t got = 1, got0 = 1;
    gcoll__tp_req_t *req[4] = {NULL};
    gcoll_status_t st[4] = {GCOLL_SUCCESS};
    CHECK(T->irecv_upto(tp, from, 4100, rb, 5000, &got, &req[0]) == GCOLL_SUCCESS, "irecv_upto: %s",
          gcoll_last_error());
    CHECK(T->irecv_upto(tp, from, 4101, rb0, 16, &got0, &req[1]) == GCOLL_SUCCESS, "irecv_upto: %s",
          gcoll_last_error());
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(T->isend(tp, to, 4100, sb, 3000, &req[2]) == GCOLL_SUCCESS, "isend: %s", gcoll_last_error());
    CHECK(T->isend(tp, to, 4101, sb, 0, &req[3]) == GCOLL_SUCCESS, "isend: %s", gcoll_last_error());
    wait_all(tp, req, st, NULL, 4);
    size_t tail = 3000;
    while (tail < 5000 && rb[tail] == 0xee)
        tail++;
    CHECK(st[0] == GCOLL_SUCCESS && got == 3000 && verify(rb, 3000, from, rank, 4100) == 3000 && tail == 5000,
          "upto: status %d, length %zu (3000), tail intact to %zu", (int)st[0], got, tail);
    CHECK(st[1] == GCOLL_SUCCESS && got0 == 0 && rb0[0] == 0xee, "upto, empty: status %d, length %zu", (int)st[1],
          got0);
    free(sb), free(rb), free(rb0);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* More sends in flight than the provider's transmit queue holds (rendezvous-sized messages stay
 * there until their receive is posted): posts meet -FI_EAGAIN and wait in the retry queue, and
 * every message still arrives, in order. Message i is the window at offset i of one buffer, so
 * each is different without a buffer of its own. */
static void test_flood(gcoll__tp_t *tp)
{
    size_t n = tp->proc->info->tx_attr->size + 1000, bytes = 17u << 10, posted = 0, bad = 0;
    int to = (rank + 1) % size, from = (rank - 1 + size) % size, queued = 0;
    unsigned char *sbuf = malloc(n + bytes), *expect = malloc(n + bytes), *rbuf = malloc(bytes);
    gcoll__tp_req_t **sreq = calloc(n, sizeof(*sreq));
    gcoll_status_t *sst = calloc(n, sizeof(*sst));
    fill(sbuf, n + bytes, rank, to, 9000);
    fill(expect, n + bytes, from, rank, 9000);
    for (; posted < n; posted++) {
        if (T->isend(tp, to, 9000, sbuf + posted, bytes, &sreq[posted]) != GCOLL_SUCCESS)
            break;
        queued |= tp->queue[0] != NULL;
    }
    CHECK(posted == n, "flood: isend %zu failed: %s", posted, gcoll_last_error());
    CHECK(queued, "flood: %zu sends never filled provider %s's transmit queue (%zu)", n, tp->proc->prov,
          tp->proc->info->tx_attr->size);
    MPI_Barrier(MPI_COMM_WORLD);
    for (size_t i = 0; i < n; i++) {
        gcoll__tp_req_t *r = NULL;
        gcoll_status_t st = T->irecv(tp, from, 9000, rbuf, bytes, &r);
        if (st == GCOLL_SUCCESS)
            wait_all(tp, &r, &st, NULL, 1);
        bad += st != GCOLL_SUCCESS || memcmp(rbuf, expect + i, bytes) != 0;
    }
    CHECK(bad == 0, "flood: %zu of %zu messages wrong or out of order", bad, n);
    wait_all(tp, sreq, sst, NULL, (int)posted);
    bad = 0;
    for (size_t i = 0; i < posted; i++)
        bad += sst[i] != GCOLL_SUCCESS;
    CHECK(bad == 0, "flood: %zu sends failed", bad);
    free(sbuf), free(expect), free(rbuf), free(sreq), free(sst);
}

/* Rank 0 sends 'sent' bytes to rank 1, which expects 'want': the receive must fail, naming rank
 * 0, and the send must end either way. Each case has the process's endpoint to itself: after a
 * truncation tcp;ofi_rxm 1.17 stops delivering on that connection; the
 * core fails the communicator on such an error anyway. */
static void wrong_size(size_t sent, size_t want, uint32_t tag, const char *expect)
{
    gcoll__tp_t *tp = open_tp();
    if (!tp)
        return;
    if (rank > 1) {
        MPI_Barrier(MPI_COMM_WORLD);
        T->close(tp);
        return;
    }
    size_t n = rank == 0 ? sent : want;
    unsigned char *buf = calloc(1, n + GUARD);
    fill(buf, n, 0, 1, tag);
    gcoll__tp_req_t *req = NULL;
    gcoll_status_t st = rank == 0 ? T->isend(tp, 1, tag, buf, n, &req) : T->irecv(tp, 0, tag, buf, n, &req);
    CHECK(st == GCOLL_SUCCESS, "post: %s", gcoll_last_error());
    char msg[1][256] = {""};
    wait_all(tp, &req, &st, msg, 1);
    if (rank == 1) {
        CHECK(st == GCOLL_ERR_TRANSPORT && strstr(msg[0], "rank 0") && strstr(msg[0], expect),
              "%zu bytes into %zu: %s: %s", sent, want, gcoll_status_name(st), msg[0]);
        int guard_ok = 1;
        for (int i = 0; i < GUARD; i++)
            guard_ok &= buf[want + (size_t)i] == 0;
        CHECK(guard_ok, "%zu bytes into %zu: written past the end", sent, want);
    }
    free(buf);
    MPI_Barrier(MPI_COMM_WORLD);
    T->close(tp);
}

static void test_wrong_sizes(void)
{
    wrong_size(100, 64, 4000, "longer than the 64");
    wrong_size(100, 200, 4001, "received 100 bytes");
    wrong_size(1u << 20, 512u << 10, 4002, "longer than");
    wrong_size(1u << 20, 2u << 20, 4003, "received 1048576 bytes");
}

/* A cancelled receive is gone: a later message with its tag lands in the next receive, and the
 * cancelled buffer is never written. */
static void test_cancel(gcoll__tp_t *tp)
{
    int to = (rank + 1) % size, from = (rank - 1 + size) % size;
    enum { N = 70000 };
    unsigned char *dead = malloc(N), *live = malloc(N), *sbuf = malloc(N);
    memset(dead, 0xEE, N);
    fill(sbuf, N, rank, to, 5000);
    gcoll__tp_req_t *req[2] = {NULL, NULL};
    gcoll_status_t st[2] = {GCOLL_SUCCESS, GCOLL_SUCCESS};
    CHECK(T->irecv(tp, from, 5000, dead, N, &req[0]) == GCOLL_SUCCESS, "irecv: %s", gcoll_last_error());
    int done = 0;
    CHECK(T->test(tp, req[0], &done) == GCOLL_SUCCESS && !done, "nothing was sent yet");
    T->cancel(tp, req[0]);
    req[0] = NULL;
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(T->isend(tp, to, 5000, sbuf, N, &req[1]) == GCOLL_SUCCESS, "isend: %s", gcoll_last_error());
    CHECK(T->irecv(tp, from, 5000, live, N, &req[0]) == GCOLL_SUCCESS, "irecv: %s", gcoll_last_error());
    wait_all(tp, req, st, NULL, 2);
    CHECK(st[0] == GCOLL_SUCCESS && st[1] == GCOLL_SUCCESS && verify(live, N, from, rank, 5000) == N,
          "message after a cancelled receive");
    size_t touched = 0;
    for (size_t i = 0; i < N; i++)
        touched += dead[i] != 0xEE;
    CHECK(touched == 0, "the cancelled receive's buffer was written (%zu bytes)", touched);
    MPI_Barrier(MPI_COMM_WORLD);
    free(dead), free(live), free(sbuf);
}

/* Explicitly registered buffers carry messages like any other. */
static void test_reg_mem(gcoll__tp_t *tp)
{
    enum { N = 100000 };
    int to = (rank + 1) % size, from = (rank - 1 + size) % size;
    unsigned char *s = malloc(N), *r = malloc(N);
    fill(s, N, rank, to, 6000);
    void *hs = NULL, *hr = NULL;
    gcoll_status_t a = T->reg_mem(tp, s, N, &hs), b = T->reg_mem(tp, r, N, &hr);
    CHECK(a == GCOLL_SUCCESS && b == GCOLL_SUCCESS, "reg_mem: %s", gcoll_last_error());
    gcoll__tp_req_t *req[2] = {NULL, NULL};
    gcoll_status_t st[2] = {GCOLL_SUCCESS, GCOLL_SUCCESS};
    CHECK(T->irecv(tp, from, 6000, r, N, &req[0]) == GCOLL_SUCCESS, "irecv: %s", gcoll_last_error());
    CHECK(T->isend(tp, to, 6000, s, N, &req[1]) == GCOLL_SUCCESS, "isend: %s", gcoll_last_error());
    wait_all(tp, req, st, NULL, 2);
    CHECK(st[0] == GCOLL_SUCCESS && st[1] == GCOLL_SUCCESS && verify(r, N, from, rank, 6000) == N,
          "message through registered buffers");
    if (hs)
        T->dereg_mem(tp, hs);
    if (hr)
        T->dereg_mem(tp, hr);
    free(s), free(r);
}

/* Two communicators' endpoints share the process's (one libfabric endpoint, each peer once in
 * its address vector) on channels of their own, and never see each other's messages, though the
 * tags agree. */
static void test_two_endpoints(gcoll__tp_t *tp)
{
    gcoll__tp_t *tp2 = open_tp();
    if (!tp2)
        return;
    CHECK(tp2->proc == tp->proc && tp2->chan != tp->chan && tp->proc->names_used == (size_t)size,
          "a second communicator: its own endpoint (%d), channel %llu beside %llu, %zu peers in the address vector",
          tp2->proc != tp->proc, (unsigned long long)tp2->chan, (unsigned long long)tp->chan, tp->proc->names_used);
    int to = (rank + 1) % size, from = (rank - 1 + size) % size;
    enum { N = 3000 };
    unsigned char s1[N], s2[N], r1[N], r2[N];
    fill(s1, N, rank, to, 7001);
    fill(s2, N, rank, to, 7002);
    gcoll__tp_req_t *q1[2], *q2[2];
    gcoll_status_t st1[2], st2[2];
    /* the second endpoint's message is sent first, with the same core tag */
    CHECK(T->isend(tp2, to, 7000, s2, N, &q2[1]) == GCOLL_SUCCESS, "isend 2");
    CHECK(T->isend(tp, to, 7000, s1, N, &q1[1]) == GCOLL_SUCCESS, "isend 1");
    CHECK(T->irecv(tp, from, 7000, r1, N, &q1[0]) == GCOLL_SUCCESS, "irecv 1");
    CHECK(T->irecv(tp2, from, 7000, r2, N, &q2[0]) == GCOLL_SUCCESS, "irecv 2");
    wait_all(tp, q1, st1, NULL, 2);
    wait_all(tp2, q2, st2, NULL, 2);
    CHECK(verify(r1, N, from, rank, 7001) == N && verify(r2, N, from, rank, 7002) == N,
          "each endpoint got its own message");
    MPI_Barrier(MPI_COMM_WORLD);
    T->close(tp2);
}

/* Sends one message around the ring of tp's ranks (group g) and checks it. */
static void ring_on(gcoll__tp_t *tp, gcoll__boot_t *g, uint32_t tag, const char *what)
{
    if (g->size < 2)
        return;
    enum { N = 2000 };
    unsigned char s[N], r[N];
    int to = (g->rank + 1) % g->size, from = (g->rank - 1 + g->size) % g->size;
    fill(s, N, g->rank, to, tag);
    gcoll__tp_req_t *q[2] = {NULL, NULL};
    gcoll_status_t st[2] = {GCOLL_SUCCESS, GCOLL_SUCCESS};
    CHECK(T->irecv(tp, from, tag, r, N, &q[0]) == GCOLL_SUCCESS, "%s: irecv: %s", what, gcoll_last_error());
    CHECK(T->isend(tp, to, tag, s, N, &q[1]) == GCOLL_SUCCESS, "%s: isend: %s", what, gcoll_last_error());
    wait_all(tp, q, st, NULL, 2);
    CHECK(st[0] == GCOLL_SUCCESS && st[1] == GCOLL_SUCCESS && verify(r, N, from, g->rank, tag) == N, "%s", what);
}

/* A world communicator, which must draw channel want, carries a ring and closes. */
static void world_on_channel(uint64_t want, const char *when)
{
    gcoll__tp_t *t = open_tp();
    if (!t)
        return;
    CHECK(t->chan == want, "%s: channel %llu (%llu expected)", when, (unsigned long long)t->chan,
          (unsigned long long)want);
    ring_on(t, world_group(), 9001, when);
    MPI_Barrier(MPI_COMM_WORLD);
    T->close(t);
}

/* Channels are drawn so that no process has two live communicators on one, whatever the others
 * hold: with only 4 channels (the limit is cut for the test), rank 0 and the rest hold channel 1
 * in communicators of their own, then world communicators take 2 and 3; with 2 closed by every
 * rank but 0, no channel is free on every process and creation fails, naming the cause; once rank
 * 0 closes it too, the next takes it, as it does after rank 0 alone has drawn past the others by
 * more than the channel count. Each communicator's messages stay its own. */
static void test_channels(gcoll__tp_t *tp)
{
    uint64_t limit = tp->proc->chan_limit;
    CHECK(tp->chan == 0 && limit >= 256, "the first communicator: channel %llu of %llu", (unsigned long long)tp->chan,
          (unsigned long long)limit);
    tp->proc->chan_limit = 4;
    gcoll__boot_t *half;
    MPI_Comm half_comm;
    CHECK(gcoll__boot_split(world_group(), rank == 0, rank, &half) == GCOLL_SUCCESS, "split: %s", gcoll_last_error());
    MPI_Comm_split(MPI_COMM_WORLD, rank == 0, rank, &half_comm);
    gcoll__tp_t *own = open_on(half, half_comm), *two = open_tp(), *three = open_tp();
    if (own && two && three) {
        CHECK(own->chan == 1 && two->chan == 2 && three->chan == 3, "channels %llu, %llu, %llu (1, 2, 3 expected)",
              (unsigned long long)own->chan, (unsigned long long)two->chan, (unsigned long long)three->chan);
        ring_on(three, world_group(), 9001, "channel 3");
        ring_on(own, half, 9001, "channel 1 of a group of its own");
        ring_on(two, world_group(), 9001, "channel 2");
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank != 0) {
            T->close(two);
            two = NULL;
        }
        gcoll__bootstrap_t boot = {world_group(), rank, size, NULL};
        gcoll__tp_t *none = NULL;
        gcoll_status_t st = T->create(&boot, &none);
        CHECK(st == GCOLL_ERR_UNSUPPORTED && strstr(gcoll_last_error(), "channels is in use"),
              "no channel free on every process: %s: %s", gcoll_status_name(st), gcoll_last_error());
        if (st == GCOLL_SUCCESS)
            T->close(none);
        if (two)
            T->close(two);
        world_on_channel(2, "after rank 0 closed it too");
        /* rank 0 alone draws past the others by more than the channel count: still one is free */
        for (int k = 0; rank == 0 && k < 6; k++) {
            gcoll__tp_t *solo = open_on(half, half_comm);
            if (solo)
                T->close(solo);
        }
        world_on_channel(2, "after rank 0 drew ahead alone");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (own)
        T->close(own);
    if (three)
        T->close(three);
    tp->proc->chan_limit = limit;
    MPI_Comm_free(&half_comm);
    gcoll__boot_free(half);
}

static int chan_taken(const gcoll__ofi_proc_t *p, uint64_t chan)
{
    for (int i = 0; i < p->nchans; i++)
        if (p->chans[i] == chan)
            return 1;
    return 0;
}

/* A send whose receive never comes (its peer's communicator closed first): tcp;ofi_rxm cannot
 * cancel a rendezvous send, so closing its communicator leaves it with the provider, and it keeps
 * the channel taken, so that no later communicator's receive can match it and read its buffer,
 * which is freed here. A cancelled receive lets its channel go at close. The next communicator
 * works on another channel. */
static void test_held_send(gcoll__tp_t *tp)
{
    gcoll__tp_t *t = open_tp();
    if (!t)
        return;
    uint64_t chan = t->chan;
    size_t n = 4u << 20;
    unsigned char *buf = calloc(1, n);
    gcoll__tp_req_t *req = NULL;
    int done = 0;
    if (rank < 2) {
        gcoll_status_t st = rank == 0 ? T->isend(t, 1, 10001, buf, n, &req) : T->irecv(t, 0, 10002, buf, 16, &req);
        CHECK(st == GCOLL_SUCCESS && T->test(t, req, &done) == GCOLL_SUCCESS && !done,
              "a %s that nothing matches: %s, done %d", rank == 0 ? "4 MiB send" : "receive", gcoll_last_error(), done);
        if (!done)
            T->cancel(t, req);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    T->close(t);
    free(buf);
    int held = chan_taken(tp->proc, chan);
    if (strcmp(tp->proc->prov, "tcp;ofi_rxm") == 0)
        CHECK(held == (rank == 0), "after close, channel %llu is %staken", (unsigned long long)chan,
              held ? "" : "not ");
    gcoll__tp_t *u = open_tp();
    if (u) {
        CHECK(u->chan != chan || !held, "a held channel was drawn again");
        ring_on(u, world_group(), 10001, "the communicator after a held send");
        MPI_Barrier(MPI_COMM_WORLD);
        T->close(u);
    }
}

static void test_bad_args(gcoll__tp_t *tp)
{
    gcoll__tp_req_t *req = NULL;
    char c = 0;
    gcoll_status_t st = T->isend(tp, size, 1, &c, 1, &req);
    CHECK(st == GCOLL_ERR_INVALID_ARG && strstr(gcoll_last_error(), "peer"), "peer out of range: %s",
          gcoll_last_error());
}

/* A provider that does not exist fails create() on every rank, naming the variable and what
 * there is; naming one that exists works. */
static void test_provider_choice(void)
{
    gcoll__bootstrap_t boot = {world_group(), rank, size, NULL};
    gcoll__tp_t *tp = NULL;
    snprintf(gcoll__config.ofi_provider, sizeof(gcoll__config.ofi_provider), "no-such-provider");
    gcoll_status_t st = T->create(&boot, &tp);
    const char *msg = gcoll_last_error();
    CHECK(st == GCOLL_ERR_UNSUPPORTED && strstr(msg, "GCOLL_OFI_PROVIDER=no-such-provider") &&
              strstr(msg, "tcp;ofi_rxm"),
          "unknown provider: %s: %s", gcoll_status_name(st), msg);
    static const char *const named[] = {"tcp;ofi_rxm", "tcp"};
    for (int i = 0; i < 2; i++) {
        snprintf(gcoll__config.ofi_provider, sizeof(gcoll__config.ofi_provider), "%s", named[i]);
        gcoll__tp_t *t = open_tp();
        if (t) {
            exchange(t, 100, 1, 0, 8000);
            T->close(t);
        }
    }
    snprintf(gcoll__config.ofi_provider, sizeof(gcoll__config.ofi_provider), "auto");
}

#endif

int main(int argc, char **argv)
{
    tp_init(&argc, &argv);
    CHECK(gcoll__config_load() == GCOLL_SUCCESS, "config: %s", gcoll_last_error());
#if GCOLL_HAVE_OFI
    test_mrcache();
    test_provider_choice();
    gcoll__tp_t *tp = open_tp();
    if (tp) {
        test_bad_args(tp);
        test_sizes(tp);
        test_tags(tp);
        test_alltoall(tp);
        test_upto(tp);
        test_flood(tp);
        test_cancel(tp);
        test_reg_mem(tp);
        test_channels(tp);
        test_two_endpoints(tp);
        test_held_send(tp);
        MPI_Barrier(MPI_COMM_WORLD);
        T->close(tp);
    }
    test_wrong_sizes(); /* last, alone: a truncation spoils the connection under every communicator */
#else
    gcoll__bootstrap_t boot = {world_group(), rank, size, NULL};
    gcoll__tp_t *tp = NULL;
    gcoll_status_t st = T->create(&boot, &tp);
    CHECK(st == GCOLL_ERR_UNSUPPORTED && strstr(gcoll_last_error(), "built without libfabric"),
          "without libfabric: %s: %s", gcoll_status_name(st), gcoll_last_error());
#endif
    int rc = check_summary("ofi", 0);
    MPI_Finalize();
    return rc;
}
