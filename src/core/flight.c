/* See flight.h. A ring of fixed records per communicator, filled under the lane lock as
 * operations start and end; in flight, a record points at its request, whose round and waited-on
 * peers are read when the file is written. One operation per line in the file, so that a
 * reader without a JSON parser (gcoll-info --trace) finds each one's fields. Times come from the
 * coarse monotonic clock (a few milliseconds' resolution, a few nanoseconds a reading): the
 * recorder runs on every operation, and what it answers is seconds long. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"
#include "core/comm.h"
#include "core/context.h"
#include "core/flight.h"
#include "core/lane.h"
#include "core/request.h"

typedef struct {
    uint64_t id;          /* the n-th record of the communicator, + 1: 0 is an empty slot */
    gcoll_request_t live; /* while in flight */
    uint64_t seq;
    int coll, p2p, member, priority;
    gcoll__opdesc_t desc; /* coll 0: nothing known beyond the collective */
    const char *algo;
    char name[64];                      /* attr.name, as the request keeps it */
    double t_called, t_posted, t_ended; /* coarse clock; 0: not yet */
    gcoll_status_t status;
    size_t round, rounds; /* where it ended */
    char waiting[64];     /* peers its round still waited on, when it ended unfinished */
} rec_t;

struct gcoll__flight {
    uint64_t n; /* records made so far */
    int written;
    rec_t rec[GCOLL_FLIGHT_SLOTS];
};

static double coarse(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

gcoll_status_t gcoll__flight_new(gcoll__flight_t **out)
{
    *out = calloc(1, sizeof(**out));
    return *out ? GCOLL_SUCCESS : gcoll__error(GCOLL_ERR_NOMEM, "no memory for the flight recorder");
}

void gcoll__flight_free(gcoll__flight_t *f)
{
    free(f);
}

void gcoll__flight_start(gcoll_request_t r)
{
    gcoll__flight_t *f = r->comm->flight;
    if (!f) /* a communicator the engine's unit tests make by hand */
        return;
    rec_t *x = &f->rec[f->n % GCOLL_FLIGHT_SLOTS];
    if (x->live) /* a request still in flight whose slot is reused: it ends unrecorded */
        x->live->flight = 0;
    /* field by field, no formatting: this runs on every operation */
    x->id = ++f->n;
    x->live = r;
    x->seq = r->seq;
    x->coll = r->coll;
    x->p2p = r->sched->tag & GCOLL_TAG_P2P ? 1 : 0;
    x->member = r->member;
    x->priority = r->priority;
    x->desc = r->sched->desc;
    x->algo = r->algo;
    memcpy(x->name, r->name, sizeof(x->name));
    x->t_called = coarse();
    x->t_posted = x->t_ended = 0;
    x->status = GCOLL_SUCCESS;
    x->round = x->rounds = 0;
    x->waiting[0] = '\0';
    r->flight = x->id;
}

static rec_t *record_of(gcoll_request_t r)
{
    if (!r->flight || !r->comm || !r->comm->flight)
        return NULL;
    rec_t *x = &r->comm->flight->rec[(r->flight - 1) % GCOLL_FLIGHT_SLOTS];
    return x->id == r->flight ? x : NULL;
}

void gcoll__flight_posted(gcoll_request_t r)
{
    rec_t *x = record_of(r);
    if (x)
        x->t_posted = coarse();
}

void gcoll__flight_end(gcoll_request_t r)
{
    rec_t *x = record_of(r);
    if (!x)
        return;
    x->live = NULL;
    x->t_ended = coarse();
    x->status = r->status;
    x->rounds = r->sched->nrounds;
    x->round = r->sched->cur < x->rounds ? r->sched->cur : x->rounds;
    if (r->status != GCOLL_SUCCESS)
        gcoll__request_peers(r, x->waiting, sizeof(x->waiting));
}

/* s, made safe inside a JSON string: quotes, backslashes, control characters and bytes past
 * ASCII become '_' (a name cut at its length may end inside a UTF-8 character). */
static void put_text(FILE *out, const char *s)
{
    for (; *s; s++)
        fputc(*s == '"' || *s == '\\' || (unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e ? '_' : *s, out);
}

static void put_ago(FILE *out, const char *key, double t, double now)
{
    if (t > 0)
        fprintf(out, ", \"%s\": %.6f", key, now - t);
    else
        fprintf(out, ", \"%s\": null", key);
}

static void put_record(FILE *out, const rec_t *x, double now)
{
    size_t round = x->round, rounds = x->rounds;
    char waiting[sizeof(x->waiting)];
    snprintf(waiting, sizeof(waiting), "%s", x->waiting);
    const char *state = x->t_ended == 0 ? "in flight" : x->status == GCOLL_SUCCESS ? "done" : "failed";
    if (x->live) { /* where it is now; failing, when its failure is what writes the file */
        if (x->live->status != GCOLL_SUCCESS)
            state = "failed";
        const gcoll__sched_t *s = x->live->sched;
        rounds = s->nrounds;
        round = s->cur < rounds ? s->cur : rounds;
        gcoll__request_peers(x->live, waiting, sizeof(waiting));
    }
    /* a fused allreduce's member shows its leader's sequence number only in the leader's entry */
    fprintf(out, "  {\"seq\": %" PRIu64 ", \"kind\": \"%s\", \"p2p\": %s, \"member\": %s, \"name\": \"", x->seq,
            gcoll__coll_name(x->coll), x->p2p ? "true" : "false", x->member ? "true" : "false");
    put_text(out, x->name);
    fprintf(out, "\", \"algorithm\": \"%s\", \"priority\": %d, \"state\": \"%s\", \"status\": \"%s\"",
            x->algo ? x->algo : "", x->priority, state, gcoll_status_name(x->status));
    if (x->desc.coll && x->desc.dtype != GCOLL_OPDESC_NONE)
        fprintf(out, ", \"dtype\": \"%s\", \"count\": %" PRIu64, gcoll_dtype_name((gcoll_dtype_t)x->desc.dtype),
                x->desc.count);
    if (x->desc.coll && x->desc.op != GCOLL_OPDESC_NONE)
        fprintf(out, ", \"op\": \"%s\"", gcoll_op_name((gcoll_op_t)x->desc.op));
    if (x->desc.coll && x->desc.root >= 0)
        fprintf(out, ", \"root\": %d", (int)x->desc.root);
    /* rounds counted from 1; a finished operation shows its last */
    fprintf(out, ", \"round\": %zu, \"rounds\": %zu, \"waiting_on\": \"", round + (round < rounds), rounds);
    put_text(out, waiting);
    fputs("\"", out);
    put_ago(out, "called_s_ago", x->t_called, now);
    put_ago(out, "posted_s_ago", x->t_posted, now);
    put_ago(out, "ended_s_ago", x->t_ended, now);
    fputs("}", out);
}

/* Writes comm's record to path. Lane lock held. */
static gcoll_status_t write_file(gcoll_comm_t comm, const char *path, const char *why)
{
    FILE *out = fopen(path, "w");
    if (!out)
        return gcoll__error(GCOLL_ERR_SYSTEM, "flight recorder: cannot write %s: %s", path, strerror(errno));
    char host[256] = "";
    (void)gethostname(host, sizeof(host) - 1);
    const gcoll__flight_t *f = comm->flight;
    double now = coarse();
    fprintf(out, "{\"gcoll_flight_recorder\": 1, \"rank\": %d, \"size\": %d, \"comm\": %u, \"host\": \"", comm->rank,
            comm->size, comm->id);
    put_text(out, host);
    fprintf(out, "\", \"pid\": %ld, \"why\": \"%s\", \"status\": \"%s\", \"reason\": \"", (long)getpid(), why,
            gcoll_status_name(comm->failed));
    put_text(out, comm->failed != GCOLL_SUCCESS ? comm->failmsg : "");
    fprintf(out, "\",\n \"issued\": %" PRIu64 ", \"recorded\": %" PRIu64 ", \"ops\": [\n", comm->seq, f->n);
    uint64_t first = f->n > GCOLL_FLIGHT_SLOTS ? f->n - GCOLL_FLIGHT_SLOTS : 0;
    for (uint64_t i = first; i < f->n; i++) {
        put_record(out, &f->rec[i % GCOLL_FLIGHT_SLOTS], now);
        fputs(i + 1 < f->n ? ",\n" : "\n", out);
    }
    fputs(" ]}\n", out);
    int bad = ferror(out);
    if (fclose(out) != 0 || bad)
        return gcoll__error(GCOLL_ERR_SYSTEM, "flight recorder: cannot write %s: %s", path, strerror(errno));
    return GCOLL_SUCCESS;
}

/* spec with %r as comm's rank and %c as its number. */
static gcoll_status_t expand(const char *spec, gcoll_comm_t comm, char *path, size_t len)
{
    size_t k = 0;
    for (const char *p = spec; *p && k < len; p++) {
        int n;
        if (p[0] == '%' && (p[1] == 'r' || p[1] == 'c')) {
            n = snprintf(path + k, len - k, "%u", p[1] == 'r' ? (unsigned)comm->rank : comm->id);
            p++;
        } else {
            n = snprintf(path + k, len - k, "%c", *p);
        }
        k += (size_t)n;
    }
    if (k >= len)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "path is longer than %zu bytes once expanded", len - 1);
    path[k] = '\0';
    return GCOLL_SUCCESS;
}

void gcoll__flight_failed(gcoll_comm_t comm)
{
    const char *spec = gcoll__config.flight_recorder;
    if (!comm->flight || comm->flight->written || strcmp(spec, "none") == 0)
        return;
    comm->flight->written = 1;
    /* one file per rank and communicator, whatever the path names */
    char full[sizeof(gcoll__config.flight_recorder) + 16], path[4096];
    int r = strstr(spec, "%r") != NULL, c = strstr(spec, "%c") != NULL;
    snprintf(full, sizeof(full), "%s%s%s%s", spec, c ? "" : ".c%c", r ? "" : ".r%r", r || c ? "" : ".json");
    if (expand(full, comm, path, sizeof(path)) == GCOLL_SUCCESS && write_file(comm, path, "failed") == GCOLL_SUCCESS)
        GCOLL_LOG(GCOLL_LOG_ERROR, "comm %u: flight recorder written to %s", comm->id, path);
    else
        GCOLL_LOG(GCOLL_LOG_ERROR, "comm %u: %s", comm->id, gcoll_last_error());
}

GCOLL_API gcoll_status_t gcoll_comm_dump(gcoll_comm_t comm, const char *path)
{
    gcoll_status_t st = gcoll__comm_check(comm, "comm");
    /* a failed communicator is the one worth looking at */
    if (st != GCOLL_SUCCESS && st != GCOLL_ERR_ABORTED && st != GCOLL_ERR_REMOTE && st != GCOLL_ERR_INVALID_USAGE)
        return st;
    if (st == GCOLL_ERR_INVALID_USAGE && !gcoll__context.initialized)
        return st;
    if (!path || !*path)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "path is %s", path ? "empty" : "NULL");
    char full[4096];
    GCOLL_CHECK(expand(path, comm, full, sizeof(full)));
    gcoll__lane_t *l = comm->lane;
    pthread_mutex_lock(&l->lock);
    st = write_file(comm, full, "gcoll_comm_dump");
    pthread_mutex_unlock(&l->lock);
    if (st == GCOLL_SUCCESS)
        gcoll__error_clear(); /* the check's word on the failed communicator is not this call's */
    return st;
}
