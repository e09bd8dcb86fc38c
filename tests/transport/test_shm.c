/* Transport-level tests of the node channel's point-to-point rings (src/transports/shm/shm_p2p.c)
 * under mpirun on one host, 2 or more ranks, each sending to the next: single-copy messages not
 * holding back later ones, out-of-order acknowledgements, the acknowledgement window, per-tag
 * order, receives told of each part as it lands; then mismatch detection on the three paths that
 * compare a message's operation descriptor; and that building a node algorithm's schedule, dry
 * or not, leaves the channel as it was, its rounds taken only when the schedule is issued (and
 * again when a rewound one is issued again).
 * Prints "RESULT shm np=N passed=N failed=N". */
#include <mpi.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "base/log.h"
#include "base/schedule.h"
#include "collectives/adasum.h"
#include "collectives/cost.h"
#include "collectives/select.h"
#include "transports/shm/shm_internal.h"
#include "transports/transport.h"
#include "tp_check.h"
#include "tp_data.h"

/* A wait that would hang fails after WAIT_S seconds, and the test posts what is missing so that it ends. */
#define WAIT_S 5.0

static const gcoll__transport_t *T = &gcoll__transport_shm;
static int to, from;

/* Whether b holds what fill(seed) writes. */
static int intact(const unsigned char *b, size_t n, unsigned seed)
{
    return first_diff(b, n, seed) == n;
}

/* Tests every request until all are done (each slot set to NULL, its status in st) or `until`
 * passes; returns how many are still pending, which stay the caller's. */
static int wait_until(gcoll__tp_t *tp, gcoll__tp_req_t **reqs, gcoll_status_t *st, int n, double until)
{
    for (;;) {
        int left = 0;
        for (int i = 0; i < n; i++) {
            if (!reqs[i])
                continue;
            int done = 0;
            st[i] = T->test(tp, reqs[i], &done);
            if (done)
                reqs[i] = NULL;
            left += !done;
        }
        if (!left || check_now() > until)
            return left;
        sched_yield(); /* more ranks than cores: let the peer run */
    }
}

/* wait_until with the last resort: what is still pending after WAIT_S is a failure, cancelled. */
static void wait_all(gcoll__tp_t *tp, gcoll__tp_req_t **reqs, gcoll_status_t *st, int n, const char *what)
{
    int left = wait_until(tp, reqs, st, n, check_now() + WAIT_S);
    CHECK(left == 0, "%s: %d requests still pending after %.0f s", what, left, WAIT_S);
    for (int i = 0; i < n; i++)
        if (reqs[i]) {
            T->cancel(tp, reqs[i]);
            reqs[i] = NULL;
            st[i] = GCOLL_ERR_TIMEOUT;
        }
}

/* A single-copy message waiting for its receive must not hold back a later message to the same
 * peer: a large message on tag 1, then a small one on tag 2; the receiver waits for tag 2 before
 * it posts the receive for tag 1. */
static void test_not_held_back(gcoll__tp_t *tp, size_t big)
{
    unsigned char *out = malloc(big), *in = malloc(big), sout[64], sin[64];
    fill(out, big, seed_of(rank, to, 1, big));
    fill(sout, sizeof(sout), seed_of(rank, to, 2, sizeof(sout)));
    gcoll__tp_req_t *r[4];
    gcoll_status_t st[4] = {0};
    CHECK(T->isend(tp, to, 1, out, big, &r[0]) == GCOLL_SUCCESS, "isend: %s", gcoll_last_error());
    CHECK(T->isend(tp, to, 2, sout, sizeof(sout), &r[1]) == GCOLL_SUCCESS, "isend: %s", gcoll_last_error());
    CHECK(T->irecv(tp, from, 2, sin, sizeof(sin), &r[2]) == GCOLL_SUCCESS, "irecv: %s", gcoll_last_error());
    int stuck = wait_until(tp, &r[2], &st[2], 1, check_now() + WAIT_S);
    CHECK(!stuck,
          "a %zu-byte message on tag 2 is held back behind a %zu-byte one on tag 1 that waits for "
          "its receive",
          sizeof(sin), big);
    /* the receive that releases the large message; a stuck small one then follows it */
    CHECK(T->irecv(tp, from, 1, in, big, &r[3]) == GCOLL_SUCCESS, "irecv: %s", gcoll_last_error());
    wait_all(tp, r, st, 4, "held back");
    for (int i = 0; i < 4; i++)
        CHECK(st[i] == GCOLL_SUCCESS, "held back: request %d: status %d", i, st[i]);
    CHECK(intact(sin, sizeof(sin), seed_of(from, rank, 2, sizeof(sin))), "held back: tag 2 data");
    CHECK(intact(in, big, seed_of(from, rank, 1, big)), "held back: tag 1 data (%zu bytes)", big);
    free(out);
    free(in);
}

/* Two single-copy messages, X then Y; Y's receive comes first. Y's acknowledgement must
 * complete Y's send only: X's buffer is still to be read. */
static void test_acks_out_of_order(gcoll__tp_t *tp, size_t big, int single_copy)
{
    unsigned char *out[2], *in[2];
    gcoll__tp_req_t *r[4];
    gcoll_status_t st[4] = {0};
    for (int k = 0; k < 2; k++) {
        out[k] = malloc(big);
        in[k] = malloc(big);
        fill(out[k], big, seed_of(rank, to, 3 + (uint32_t)k, big));
        CHECK(T->isend(tp, to, 3 + (uint32_t)k, out[k], big, &r[k]) == GCOLL_SUCCESS, "isend: %s", gcoll_last_error());
    }
    CHECK(T->irecv(tp, from, 4, in[1], big, &r[3]) == GCOLL_SUCCESS, "irecv: %s", gcoll_last_error());
    int stuck = wait_until(tp, &r[3], &st[3], 1, check_now() + WAIT_S);
    CHECK(!stuck, "out of order: Y's receive waits for X's");
    /* Y's send completes; X's must not while no rank has posted X's receive */
    stuck = wait_until(tp, &r[1], &st[1], 1, check_now() + WAIT_S);
    CHECK(!stuck, "out of order: Y's send not complete after its receive");
    MPI_Barrier(MPI_COMM_WORLD);
    if (single_copy) {
        stuck = wait_until(tp, &r[0], &st[0], 1, check_now() + 0.05);
        CHECK(stuck,
              "out of order: X's send complete before its receive was posted (Y's acknowledgement "
              "taken for X's)");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(T->irecv(tp, from, 3, in[0], big, &r[2]) == GCOLL_SUCCESS, "irecv: %s", gcoll_last_error());
    wait_all(tp, r, st, 4, "out of order");
    for (int k = 0; k < 2; k++) {
        CHECK(st[k] == GCOLL_SUCCESS && st[2 + k] == GCOLL_SUCCESS, "out of order: status %d %d", st[k], st[2 + k]);
        CHECK(intact(in[k], big, seed_of(from, rank, 3 + (uint32_t)k, big)), "out of order: data of %c", k ? 'Y' : 'X');
        free(out[k]);
        free(in[k]);
    }
}

/* More large messages than the acknowledgement window, then a small one that is received first;
 * the large ones are received last to first, so that ids sharing a slot would overwrite each
 * other's acknowledgement. */
static void test_many_in_flight(gcoll__tp_t *tp, size_t big)
{
    enum { N = 3 * GCOLL_SHM_ACKS + 5 };
    unsigned char *out = malloc(N * big), *in = malloc(N * big), sout[8], sin[8];
    gcoll__tp_req_t **r = calloc(2 * N + 2, sizeof(*r));
    gcoll_status_t *st = calloc(2 * N + 2, sizeof(*st));
    for (int i = 0; i < N; i++) {
        fill(out + i * big, big, seed_of(rank, to, 100 + (uint32_t)i, big));
        CHECK(T->isend(tp, to, 100 + (uint32_t)i, out + i * big, big, &r[i]) == GCOLL_SUCCESS, "isend: %s",
              gcoll_last_error());
    }
    fill(sout, sizeof(sout), seed_of(rank, to, 99, sizeof(sout)));
    CHECK(T->isend(tp, to, 99, sout, sizeof(sout), &r[N]) == GCOLL_SUCCESS, "isend: %s", gcoll_last_error());
    CHECK(T->irecv(tp, from, 99, sin, sizeof(sin), &r[N + 1]) == GCOLL_SUCCESS, "irecv: %s", gcoll_last_error());
    /* the small send done: everything before it is in the ring, and the receiver needs no more
     * of this rank's progress to get it */
    int stuck = wait_until(tp, &r[N], &st[N], 2, check_now() + WAIT_S);
    CHECK(!stuck, "many in flight: the small message is held back behind %d large ones", N);
    /* Every large one has arrived before the small one, so each receive reads and acknowledges at
     * once; the senders look only afterwards, when every acknowledgement has been written. */
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = N - 1; i >= 0; i--)
        CHECK(T->irecv(tp, from, 100 + (uint32_t)i, in + i * big, big, &r[N + 2 + i]) == GCOLL_SUCCESS, "irecv: %s",
              gcoll_last_error());
    MPI_Barrier(MPI_COMM_WORLD);
    wait_all(tp, r, st, 2 * N + 2, "many in flight");
    int bad = 0;
    for (int i = 0; i < 2 * N + 2; i++)
        bad += st[i] != GCOLL_SUCCESS;
    CHECK(!bad, "many in flight: %d requests failed", bad);
    CHECK(intact(sin, sizeof(sin), seed_of(from, rank, 99, sizeof(sin))), "many in flight: small data");
    for (int i = 0; i < N; i++)
        CHECK(intact(in + i * big, big, seed_of(from, rank, 100 + (uint32_t)i, big)),
              "many in flight: "
              "message %d",
              i);
    free(out);
    free(in);
    free(r);
    free(st);
}

/* Messages of mixed sizes (empty, inline, fragments or single copy) on two tags arrive in order
 * per tag; the receives for the second tag are posted first. */
static void test_order_per_tag(gcoll__tp_t *tp, size_t cell)
{
    enum { N = 12 };
    const size_t sizes[6] = {0, 100, cell, cell + 1, 3 * cell, 100000};
    unsigned char *out[N], *in[N];
    gcoll__tp_req_t *r[2 * N];
    gcoll_status_t st[2 * N] = {0};
    for (int i = 0; i < N; i++) { /* message i: tag 7 + i % 2, the (i / 2)-th of its tag */
        size_t n = sizes[i % 6];
        out[i] = malloc(n + 1);
        in[i] = malloc(n + 1);
        fill(out[i], n, seed_of(rank, to, 7 + (uint32_t)(i % 2), n) + (unsigned)i);
        CHECK(T->isend(tp, to, 7 + (uint32_t)(i % 2), out[i], n, &r[i]) == GCOLL_SUCCESS, "isend: %s",
              gcoll_last_error());
    }
    for (int odd = 1; odd >= 0; odd--)
        for (int i = odd; i < N; i += 2)
            CHECK(T->irecv(tp, from, 7 + (uint32_t)odd, in[i], sizes[i % 6], &r[N + i]) == GCOLL_SUCCESS, "irecv: %s",
                  gcoll_last_error());
    wait_all(tp, r, st, 2 * N, "order per tag");
    for (int i = 0; i < N; i++) {
        size_t n = sizes[i % 6];
        CHECK(st[i] == GCOLL_SUCCESS && st[N + i] == GCOLL_SUCCESS &&
                  intact(in[i], n, seed_of(from, rank, 7 + (uint32_t)(i % 2), n) + (unsigned)i),
              "order per tag: message %d "
              "(%zu bytes): status %d %d or its data",
              i, n, st[i], st[N + i]);
        free(out[i]);
        free(in[i]);
    }
}

/* ---- receives told of their parts (irecv_landed) ---- */

typedef struct {
    const unsigned char *buf, *want; /* want: the sender's data */
    size_t bytes, covered;           /* covered: the end of the last part told */
    int parts, in_order, landed;     /* in_order: each part starts where the last ended; landed: its data is there */
} parts_t;

static void on_part(void *arg, size_t off, size_t len)
{
    parts_t *p = arg;
    p->in_order &= off == p->covered && len <= p->bytes - off;
    if (p->in_order && len)
        p->landed &= memcmp(p->buf + off, p->want + off, len) == 0;
    p->covered = off + len;
    p->parts++;
}

/* Each size arrives once after its receive was posted and once before (set aside while a later
 * message is received first); every byte is told, in order, with its data already in place,
 * and a single-copy message in reads of read_bytes (GCOLL_SHM_READ_CHUNK). */
static void test_landed(gcoll__tp_t *tp, size_t cell, size_t read_bytes, int single_copy)
{
    const size_t sizes[5] = {0, 100, cell, 3 * cell + 5, 5 * read_bytes + 7};
    for (int early = 0; early < 2; early++)
        for (int i = 0; i < 5; i++) {
            size_t n = sizes[i];
            uint32_t tag = 20 + (uint32_t)(2 * i + early);
            unsigned char *out = malloc(n + 1), *in = malloc(n + 1), *want = malloc(n + 1), s_out = 1, s_in = 0;
            fill(out, n, seed_of(rank, to, tag, n));
            fill(want, n, seed_of(from, rank, tag, n));
            parts_t p = {.buf = in, .want = want, .bytes = n, .in_order = 1, .landed = 1};
            gcoll__tp_req_t *r[4] = {NULL, NULL, NULL, NULL};
            gcoll_status_t st[4] = {0};
            int told = -1;
            if (!early)
                CHECK(T->irecv_landed(tp, from, tag, in, n, on_part, &p, &told, &r[0]) == GCOLL_SUCCESS,
                      "irecv_landed: %s", gcoll_last_error());
            MPI_Barrier(MPI_COMM_WORLD);
            CHECK(T->isend(tp, to, tag, out, n, &r[1]) == GCOLL_SUCCESS, "isend: %s", gcoll_last_error());
            if (early) { /* receiving a later message first sets this one aside */
                CHECK(T->isend(tp, to, 19, &s_out, 1, &r[2]) == GCOLL_SUCCESS, "isend: %s", gcoll_last_error());
                CHECK(T->irecv(tp, from, 19, &s_in, 1, &r[3]) == GCOLL_SUCCESS, "irecv: %s", gcoll_last_error());
                wait_all(tp, &r[3], &st[3], 1, "landed: the later message");
                CHECK(T->irecv_landed(tp, from, tag, in, n, on_part, &p, &told, &r[0]) == GCOLL_SUCCESS,
                      "irecv_landed: %s", gcoll_last_error());
            }
            wait_all(tp, r, st, 4, "landed");
            const char *when = early ? "set aside" : "posted first";
            CHECK(told == 1 && st[0] == GCOLL_SUCCESS && st[1] == GCOLL_SUCCESS,
                  "landed %zu bytes %s: parts %d, statuses %d %d", n, when, told, st[0], st[1]);
            CHECK(p.in_order && p.covered == n && p.parts >= 1,
                  "landed %zu bytes %s: %d parts, out of order or %zu bytes told", n, when, p.parts, p.covered);
            CHECK(p.landed, "landed %zu bytes %s: a part was told before its data was in place", n, when);
            if (single_copy && n > cell)
                CHECK((size_t)p.parts == (n + read_bytes - 1) / read_bytes,
                      "landed %zu bytes %s: single copy in %d reads, not of %zu bytes", n, when, p.parts, read_bytes);
            MPI_Barrier(MPI_COMM_WORLD); /* the peer is done reading out */
            free(out);
            free(in);
            free(want);
        }
}

/* ---- mismatch detection: every rank's operation under tag 7 is a count of 1000, the last
 * rank's 999; each path runs on a fresh endpoint (a mismatch fails it for good), whose local
 * ranks are named 100 + i (the communicator ranks the messages must use) ---- */

#define ODD_TAG 7

static gcoll__opdesc_t desc_of(int r)
{
    return (gcoll__opdesc_t){
        .coll = 1, .dtype = GCOLL_FLOAT32, .op = GCOLL_SUM, .root = -1, .count = r == size - 1 ? 999 : 1000};
}

static gcoll__tp_t *open_checked(gcoll__shm_t **s, const gcoll__optab_t *optab)
{
    int *ranks = malloc(sizeof(int) * (size_t)size);
    for (int i = 0; i < size; i++)
        ranks[i] = 100 + i;
    gcoll__tp_t *tp = NULL;
    *s = NULL;
    if (gcoll__shm_create(world_group(), s) != GCOLL_SUCCESS || !*s ||
        gcoll__shm_p2p_open(*s, optab, ranks, &tp) != GCOLL_SUCCESS)
        tp = NULL;
    free(ranks);
    CHECK(tp, "mismatch: no endpoint: %s", gcoll_last_error());
    return tp;
}

/* The endpoint's failure as this rank sees it (st, with gcoll_last_error() the message): it must
 * be the mismatch, naming both sides, with the odd rank by its communicator rank. */
static void check_failure(const char *path, gcoll_status_t st)
{
    const char *msg = gcoll_last_error();
    char odd[32];
    snprintf(odd, sizeof(odd), "rank %d", 100 + size - 1);
    CHECK(st == GCOLL_ERR_INVALID_USAGE && strstr(msg, "does not match") && strstr(msg, "count 999") &&
              strstr(msg, "count 1000") && strstr(msg, odd),
          "mismatch %s: got %s: %s", path, gcoll_status_name(st), msg);
}

/* A rank that found nothing itself learns of it from the notice: a receive that no one sends
 * to fails. */
static void check_told(gcoll__tp_t *tp, const char *path)
{
    static char byte;
    gcoll__tp_req_t *r = NULL;
    gcoll_status_t st = T->irecv(tp, from, 9, &byte, 1, &r);
    if (st == GCOLL_SUCCESS) {
        int left = wait_until(tp, &r, &st, 1, check_now() + WAIT_S);
        if (left) {
            T->cancel(tp, r);
            st = GCOLL_ERR_TIMEOUT;
        }
    }
    check_failure(path, st);
}

/* Path 1: the message arrives after the receiver's operation started: compared on arrival. */
static void test_mismatch_on_arrival(void)
{
    gcoll__optab_t *optab = calloc(1, sizeof(*optab));
    gcoll__opdesc_t d = desc_of(rank);
    gcoll__optab_put(optab, ODD_TAG, &d);
    gcoll__shm_t *s;
    gcoll__tp_t *tp = open_checked(&s, optab);
    if (tp) {
        MPI_Barrier(MPI_COMM_WORLD);
        char out[64] = {0}, in[64];
        gcoll__tp_req_t *r[2] = {NULL, NULL};
        gcoll_status_t st[2] = {0};
        CHECK(T->isend(tp, to, ODD_TAG, out, sizeof(out), &r[0]) == GCOLL_SUCCESS, "isend: %s", gcoll_last_error());
        CHECK(T->irecv(tp, from, ODD_TAG, in, sizeof(in), &r[1]) == GCOLL_SUCCESS, "irecv: %s", gcoll_last_error());
        wait_all(tp, r, st, 2, "mismatch on arrival");
        if (desc_of(from).count != d.count)
            check_failure("on arrival (the receive)", st[1]);
        check_told(tp, "on arrival");
        MPI_Barrier(MPI_COMM_WORLD);
        T->close(tp);
    }
    gcoll__shm_destroy(s);
    free(optab);
}

/* Paths 2 and 3: the message arrives before the receiver's operation starts (so it is set
 * aside unchecked), then the receiver receives (send_back 0) or sends back (1) under its tag. */
static void test_mismatch_early(int send_back)
{
    const char *path = send_back ? "sent before, then a send under its tag" : "sent before, then a receive";
    gcoll__optab_t *optab = calloc(1, sizeof(*optab));
    gcoll__shm_t *s;
    gcoll__tp_t *tp = open_checked(&s, optab);
    if (tp) {
        char out[64] = {0}, in[64], out2[64] = {0}, in2[64];
        gcoll__tp_req_t *r[3] = {NULL, NULL, NULL};
        gcoll_status_t st[3] = {0};
        /* the message carries this rank's operation, which has ended by the time its peer's
         * arrives here (sends only write to the ring: nothing arrives before the wait below) */
        gcoll__opdesc_t d = desc_of(rank), none = {0};
        gcoll__optab_put(optab, ODD_TAG, &d);
        CHECK(T->isend(tp, to, ODD_TAG, out, sizeof(out), &r[0]) == GCOLL_SUCCESS, "isend: %s", gcoll_last_error());
        gcoll__optab_put(optab, ODD_TAG, &none);
        CHECK(T->isend(tp, to, ODD_TAG + 1, out2, sizeof(out2), &r[1]) == GCOLL_SUCCESS, "isend: %s",
              gcoll_last_error());
        /* the tag-7 message ahead of it is set aside on the way */
        CHECK(T->irecv(tp, from, ODD_TAG + 1, in2, sizeof(in2), &r[2]) == GCOLL_SUCCESS, "irecv: %s",
              gcoll_last_error());
        wait_all(tp, r, st, 3, path);
        CHECK(st[0] == GCOLL_SUCCESS && st[1] == GCOLL_SUCCESS && st[2] == GCOLL_SUCCESS,
              "mismatch %s: the unchecked exchange failed: %s", path, gcoll_last_error());
        MPI_Barrier(MPI_COMM_WORLD); /* every rank holds its early message */
        gcoll__optab_put(optab, ODD_TAG, &d);
        gcoll__tp_req_t *q = NULL;
        gcoll_status_t got = send_back ? T->isend(tp, from, ODD_TAG, out, sizeof(out), &q)
                                       : T->irecv(tp, from, ODD_TAG, in, sizeof(in), &q);
        if (desc_of(from).count != d.count)
            check_failure(path, got);
        else if (got == GCOLL_SUCCESS && q)
            wait_all(tp, &q, &got, 1, path);
        check_told(tp, path);
        MPI_Barrier(MPI_COMM_WORLD);
        T->close(tp);
    }
    gcoll__shm_destroy(s);
    free(optab);
}

/* This rank's view of the channel that a build must not change. */
typedef struct {
    uint64_t issued, completed;
    gcoll__shm_ctrl_t mine;
} chan_state_t;

static chan_state_t chan_state(const gcoll__shm_t *s)
{
    chan_state_t c;
    memset(&c, 0, sizeof(c));
    c.issued = s->issued;
    c.completed = s->completed;
    memcpy(&c.mine, &s->ctrl[s->info.me], sizeof(c.mine));
    return c;
}

static int same_state(const chan_state_t *a, const chan_state_t *b)
{
    return a->issued == b->issued && a->completed == b->completed && memcmp(&a->mine, &b->mine, sizeof(a->mine)) == 0;
}

/* Builds schedule s of algorithm `name` (Adasum's when adasum) and checks the channel is
 * untouched; then, unless dry, issues it and checks it took rounds, and only sequence numbers. */
static void check_build(gcoll__shm_t *ch, const gcoll__coll_args_t *a, const char *name, int adasum, int dry,
                        const gcoll__algo_t *alg)
{
    gcoll__sched_t *s = gcoll__sched_new(a->dtype, adasum ? GCOLL_SUM : a->op, (unsigned)a->size, NULL);
    CHECK(s != NULL, "no schedule");
    if (!s)
        return;
    s->dry = dry;
    chan_state_t before = chan_state(ch);
    const char *used = name;
    if (adasum)
        CHECK(gcoll__adasum_build(s, a, NULL, 0, name, &used) == GCOLL_SUCCESS, "adasum %s: %s", name,
              gcoll_last_error());
    else
        alg->build(s, a);
    chan_state_t built = chan_state(ch);
    CHECK(s->status == GCOLL_SUCCESS && same_state(&before, &built),
          "%s%s of %zu elements (%s build) changed the channel: issued %llu -> %llu", adasum ? "adasum " : "", name,
          a->count, dry ? "dry" : "real", (unsigned long long)before.issued, (unsigned long long)built.issued);
    if (!dry) {
        gcoll__sched_issue(s);
        chan_state_t issued = chan_state(ch);
        CHECK(issued.issued > before.issued && issued.completed == before.completed &&
                  memcmp(&issued.mine, &before.mine, sizeof(issued.mine)) == 0,
              "%s%s: issuing took no rounds (issued %llu -> %llu) or touched more", adasum ? "adasum " : "", name,
              (unsigned long long)before.issued, (unsigned long long)issued.issued);
        /* run again (a rewind, then issued anew): the same number of fresh rounds */
        uint64_t took = issued.issued - before.issued;
        CHECK(gcoll__sched_rewindable(s), "%s%s: cannot be rewound", adasum ? "adasum " : "", name);
        gcoll__sched_rewind(s);
        gcoll__sched_issue(s);
        CHECK(ch->issued == issued.issued + took, "%s%s: issued again took %llu rounds, not %llu",
              adasum ? "adasum " : "", name, (unsigned long long)(ch->issued - issued.issued),
              (unsigned long long)took);
        ch->issued = before.issued; /* never run: the next operation takes these numbers again */
    }
    gcoll__sched_free(s);
}

static void test_build_is_pure(gcoll__shm_t *ch)
{
    float *in = calloc(5000, sizeof(float)), *out = calloc(5000, sizeof(float)); /* never read: nothing runs */
    CHECK(in && out, "no memory");
    size_t counts[] = {1, 7, 5000};
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++)
        for (int dry = 0; dry < 2; dry++) {
            gcoll__coll_args_t a = {.sendbuf = in,
                                    .recvbuf = out,
                                    .count = counts[k],
                                    .dtype = GCOLL_FLOAT32,
                                    .op = GCOLL_SUM,
                                    .rank = rank,
                                    .size = size,
                                    .esize = sizeof(float),
                                    .shm = ch};
            for (int i = 0; gcoll__algo_get(i); i++) {
                const gcoll__algo_t *alg = gcoll__algo_get(i);
                if (alg->family != GCOLL_FAMILY_PLAIN || !(alg->flags & GCOLL_ALGO_NODE))
                    continue;
                a.coll = alg->coll;
                a.count =
                    alg->coll == GCOLL_COLL_ALLREDUCE || alg->coll == GCOLL_COLL_BCAST || alg->coll == GCOLL_COLL_REDUCE
                    ? counts[k]
                    : (counts[k] + (size_t)size - 1) / (size_t)size;
                /* the vector collectives' blocks, as the cost model sizes them; a's arrays point at
                 * them only while this algorithm is built */
                // cppcheck-suppress variableScope ; a points into them past the if
                size_t vc[64], vd[64];
                if (gcoll__coll_vector(alg->coll) && size <= 64)
                    gcoll__cost_even(&a, counts[k], vc, vd);
                if (alg->usable(&a))
                    check_build(ch, &a, alg->name, 0, dry, alg);
            }
            a.coll = GCOLL_COLL_ALLREDUCE;
            a.count = counts[k];
            a.op = GCOLL_ADASUM;
            check_build(ch, &a, "shm_slots", 1, dry, NULL);
            if (gcoll__shm_info(ch)->cma)
                check_build(ch, &a, "shm_cma", 1, dry, NULL);
        }
    free(in);
    free(out);
}

int main(int argc, char **argv)
{
    tp_init(&argc, &argv);
    gcoll__log_set_identity(rank);
    if (gcoll__config_load() != GCOLL_SUCCESS) {
        fprintf(stderr, "test_shm: %s\n", gcoll_last_error());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    to = (rank + 1) % size;
    from = (rank + size - 1) % size;
    gcoll__shm_t *s = NULL;
    gcoll__tp_t *tp = NULL;
    if (size >= 2) {
        CHECK(gcoll__shm_create(world_group(), &s) == GCOLL_SUCCESS && s, "no node channel: %s", gcoll_last_error());
        if (s)
            CHECK(gcoll__shm_p2p_open(s, NULL, NULL, &tp) == GCOLL_SUCCESS, "open: %s", gcoll_last_error());
    }
    if (tp) {
        if (!s->info.cma && rank == 0) /* every path below still runs, through fragments */
            fprintf(stderr,
                    "test_shm: NOTE single copy is off here (GCOLL_SHM_SINGLE_COPY or ptrace "
                    "rules): the acknowledgement paths are not exercised\n");
        size_t big = 4 * s->cell_bytes + 3;
        test_not_held_back(tp, big);
        test_acks_out_of_order(tp, big, s->info.cma);
        test_many_in_flight(tp, 2 * s->cell_bytes);
        test_order_per_tag(tp, s->cell_bytes);
        test_landed(tp, s->cell_bytes, s->info.read_bytes, s->info.cma);
        test_build_is_pure(s);
        MPI_Barrier(MPI_COMM_WORLD); /* the peers are done reading this rank's buffers */
        T->close(tp);
    }
    gcoll__shm_destroy(s);
    if (size >= 2) {
        test_mismatch_on_arrival();
        test_mismatch_early(0);
        test_mismatch_early(1);
    }
    int rc = check_summary("shm", CHECK_NP);
    MPI_Finalize();
    return rc;
}
