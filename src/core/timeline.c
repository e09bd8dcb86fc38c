/* See timeline.h. Events go straight to the file with one pwrite each (the bracket that ends
 * the array included), so threads of different lanes need only the file offset's lock. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/comm.h"
#include "base/config.h"
#include "core/context.h"
#include "base/error.h"
#include "core/lane.h"
#include "base/log.h"
#include "core/timeline.h"

int gcoll__timeline_on;
static int fd = -1;
static off_t end;   /* where the next event goes: over the closing bracket */
static int nevents; /* events written: the first has no comma before it */
static int rank;
static double t_zero;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

double gcoll__timeline_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 - t_zero;
}

/* Appends one event (a JSON object without braces) and the array's end after it. */
static void emit(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void emit(const char *fmt, ...)
{
    char buf[512];
    pthread_mutex_lock(&lock);
    int n = snprintf(buf, sizeof(buf), "%s{", nevents ? ",\n" : "");
    va_list ap;
    va_start(ap, fmt);
    n += vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof(buf) - 4)
        n = (int)sizeof(buf) - 4; /* a name cut short: still closed below */
    n += snprintf(buf + n, sizeof(buf) - (size_t)n, "}\n]");
    if (pwrite(fd, buf, (size_t)n, end) == n) {
        end += n - 1; /* the next event starts on the bracket */
        nevents++;
    }
    pthread_mutex_unlock(&lock);
}

/* Thread ids of the trace: per communicator, its operations, its messages and its local work. */
enum { TID_OPS, TID_MSGS, TID_LOCAL, TID_KINDS };

static void name_threads(unsigned comm_id)
{
    static const char *what[TID_KINDS] = {"operations", "message slices", "reductions and copies"};
    for (int k = 0; k < TID_KINDS; k++)
        emit("\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"args\":{\"name\":\"comm %u %s\"}", rank,
             comm_id * TID_KINDS + (unsigned)k, comm_id, what[k]);
}

gcoll_status_t gcoll__timeline_open(void)
{
    const char *spec = gcoll__config.timeline;
    if (strcmp(spec, "none") == 0)
        return GCOLL_SUCCESS;
    rank = gcoll__context.boot->rank;
    char path[sizeof(gcoll__config.timeline) + 16];
    const char *mark = strstr(spec, "%r");
    if (mark)
        snprintf(path, sizeof(path), "%.*s%d%s", (int)(mark - spec), spec, rank, mark + 2);
    else
        snprintf(path, sizeof(path), "%s.%d", spec, rank);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return gcoll__error(GCOLL_ERR_SYSTEM, "GCOLL_TIMELINE: cannot write %s: %s", path, strerror(errno));
    if (pwrite(fd, "[\n]", 3, 0) != 3) {
        close(fd);
        fd = -1;
        return gcoll__error(GCOLL_ERR_SYSTEM, "GCOLL_TIMELINE: cannot write %s: %s", path, strerror(errno));
    }
    end = 2;
    nevents = 0;
    t_zero = 0;
    t_zero = gcoll__timeline_now();
    gcoll__timeline_on = 1;
    emit("\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"rank %d\"}", rank, rank);
    GCOLL_LOG(GCOLL_LOG_INFO, "timeline: writing %s", path);
    return GCOLL_SUCCESS;
}

void gcoll__timeline_close(void)
{
    if (fd >= 0)
        close(fd);
    fd = -1;
    gcoll__timeline_on = 0;
}

static const char *step_name(gcoll__step_kind_t k)
{
    switch (k) {
    case GCOLL_STEP_SEND: return "send";
    case GCOLL_STEP_RECV: return "recv";
    case GCOLL_STEP_REDUCE: return "reduce";
    case GCOLL_STEP_COPY: return "copy";
    case GCOLL_STEP_DIV: return "divide";
    case GCOLL_STEP_ROUND: return "round to the wire format";
    default: return "node channel";
    }
}

void gcoll__timeline_step(gcoll_request_t r, const gcoll__step_t *st, double t0)
{
    int msg = st->kind == GCOLL_STEP_SEND || st->kind == GCOLL_STEP_RECV;
    double t = gcoll__timeline_now();
    size_t bytes = st->kind == GCOLL_STEP_REDUCE || st->kind == GCOLL_STEP_DIV || st->kind == GCOLL_STEP_ROUND
        ? st->n * gcoll_dtype_size(r->sched->dtype)
        : st->n;
    char peer[24] = "";
    if (msg)
        snprintf(peer, sizeof(peer), ",\"peer\":%d", st->peer);
    emit("\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%u,"
         "\"args\":{\"op\":\"%s #%" PRIu64 "\",\"bytes\":%zu%s}",
         step_name(st->kind), msg ? "transfer" : "reduction", t0 * 1e6, (t - t0) * 1e6, rank,
         r->comm->id * TID_KINDS + (msg ? TID_MSGS : TID_LOCAL), gcoll__coll_name(r->coll), r->seq, bytes, peer);
}

void gcoll__timeline_op(gcoll_request_t r)
{
    double t = gcoll__timeline_now();
    if (r->seq == 0)
        name_threads(r->comm->id);
    double run = r->t_post > 0 ? r->t_post : t;
    unsigned tid = r->comm->id * TID_KINDS + TID_OPS;
    char label[112];
    snprintf(label, sizeof(label), "%s #%" PRIu64 "%s%s", gcoll__coll_name(r->coll), r->seq, r->name[0] ? " " : "",
             r->name);
    for (char *p = label; *p; p++) /* names come from the user: keep the JSON well formed */
        if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20)
            *p = '_';
    if (run > r->t_start)
        emit("\"name\":\"queued\",\"cat\":\"queue\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%u,"
             "\"args\":{\"op\":\"%s\"}",
             r->t_start * 1e6, (run - r->t_start) * 1e6, rank, tid, label);
    emit("\"name\":\"%s\",\"cat\":\"operation\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%u,"
         "\"args\":{\"algorithm\":\"%s\",\"priority\":%d,\"status\":\"%s\"}",
         label, run * 1e6, (t - run) * 1e6, rank, tid, r->algo, r->priority, gcoll_status_name(r->status));
}
