/* The fake CUDA table (fake_cuda.h). One lock serializes every call: gcoll calls it from the
 * application's threads and its progress threads. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fake_cuda.h"

enum { OP_COPY, OP_REDUCE, OP_WAIT };

typedef struct fop {
    struct fop *next;
    int kind;
    void *dst;
    const void *a, *b;
    size_t n;
    int dtype, op;
    struct fstream *on; /* OP_WAIT: the stream and count of operations the event stood for, */
    uint64_t seq;       /* taken when the wait is queued, as CUDA does (the event may go) */
} fop_t;

typedef struct fstream {
    fop_t *head, *tail;
    uint64_t queued, run; /* operations queued so far, and run so far */
    struct fstream *next; /* in the list of live streams */
} fstream_t;

typedef struct fevent {
    fstream_t *stream; /* NULL: never recorded, or recorded on an idle stream: complete */
    uint64_t seq;
} fevent_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *dev_base, *shadow;
static size_t arena, used, lib_used; /* the test's allocations from the bottom, gcoll's from the top */
static fstream_t default_stream;
static fstream_t *streams = &default_stream;
static long live_pinned, live_events, live_streams, live_dev;

static void die(const char *what)
{
    fprintf(stderr, "fake_cuda: %s\n", what);
    abort();
}

void fake_init(size_t bytes)
{
    int fd = memfd_create("fake_cuda", 0);
    if (fd < 0 || ftruncate(fd, (off_t)bytes) != 0)
        die("memfd");
    dev_base = mmap(NULL, bytes, PROT_NONE, MAP_SHARED, fd, 0);
    shadow = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (dev_base == MAP_FAILED || shadow == MAP_FAILED)
        die("mmap");
    close(fd);
    arena = bytes;
}

static int in_dev(const void *p)
{
    return (const char *)p >= dev_base && (const char *)p < dev_base + arena;
}

/* The fake's own view of p: device addresses move to the readable mapping. */
static void *view(const void *p)
{
    return in_dev(p) ? shadow + ((const char *)p - dev_base) : (void *)p;
}

void *fake_malloc(size_t bytes)
{
    pthread_mutex_lock(&lock);
    size_t at = (used + 255) & ~(size_t)255;
    if (at + bytes > arena - lib_used)
        die("device arena exhausted");
    used = at + bytes;
    pthread_mutex_unlock(&lock);
    return dev_base + at;
}

void fake_reset(void)
{
    pthread_mutex_lock(&lock);
    used = 0;
    pthread_mutex_unlock(&lock);
}

void fake_to_device(void *dev, const void *host, size_t bytes)
{
    memcpy(view(dev), host, bytes);
}

void fake_to_host(void *host, const void *dev, size_t bytes)
{
    memcpy(host, view(dev), bytes);
}

static long live(const long *v)
{
    pthread_mutex_lock(&lock);
    long n = *v;
    pthread_mutex_unlock(&lock);
    return n;
}
long fake_live_pinned(void) { return live(&live_pinned); }
long fake_live_device(void) { return live(&live_dev); }
long fake_live_events(void) { return live(&live_events); }
long fake_live_streams(void) { return live(&live_streams); }

static fstream_t *S(void *s)
{
    return s ? s : &default_stream;
}

static void run_to(fstream_t *s, uint64_t seq);

/* Runs the oldest queued operation of s. */
static void run_one(fstream_t *s)
{
    fop_t *o = s->head;
    s->head = o->next;
    if (!s->head)
        s->tail = NULL;
    switch (o->kind) {
    case OP_COPY:
        memcpy(view(o->dst), view(o->a), o->n);
        break;
    case OP_REDUCE: /* gcoll's public host reduction on the fake's readable views */
        if (o->dst != o->a)
            memmove(view(o->dst), view(o->a), o->n * gcoll_dtype_size(o->dtype));
        if (gcoll_reduce_local(view(o->dst), view(o->b), o->n, o->dtype, o->op == GCOLL_AVG ? GCOLL_SUM : o->op))
            die("reduce_local");
        break;
    case OP_WAIT:
        if (o->on)
            run_to(o->on, o->seq);
        break;
    }
    s->run++;
    free(o);
}

static void run_to(fstream_t *s, uint64_t seq)
{
    while (s->run < seq)
        run_one(s);
}

static void enqueue(void *stream, fop_t o)
{
    fop_t *p = malloc(sizeof(*p));
    if (!p)
        die("out of memory");
    *p = o;
    p->next = NULL;
    fstream_t *s = S(stream);
    if (s->tail)
        s->tail->next = p;
    else
        s->head = p;
    s->tail = p;
    s->queued++;
}

#define LOCKED(body)                 \
    do {                             \
        pthread_mutex_lock(&lock);   \
        body;                        \
        pthread_mutex_unlock(&lock); \
    } while (0)

static int f_is_device(const void *p, int *device)
{
    *device = 0;
    return in_dev(p);
}
static int f_set_device(int device)
{
    return device == 0 ? 0 : 101; /* cudaErrorInvalidDevice */
}
static int f_stream_create(void **s)
{
    fstream_t *n = calloc(1, sizeof(fstream_t));
    if (!n)
        return 2;
    LOCKED(live_streams++; n->next = streams; streams = n);
    *s = n;
    return 0;
}
/* Runs what s holds; waits on s queued elsewhere are then satisfied. */
static int f_stream_destroy(void *s)
{
    fstream_t *d = s;
    LOCKED({
        run_to(d, d->queued);
        live_streams--;
        for (fstream_t **p = &streams; *p; p = &(*p)->next)
            if (*p == d) {
                *p = d->next;
                break;
            }
        for (fstream_t *o = streams; o; o = o->next)
            for (fop_t *op = o->head; op; op = op->next)
                if (op->kind == OP_WAIT && op->on == d)
                    op->on = NULL;
    });
    free(d);
    return 0;
}
static int f_stream_wait_event(void *s, void *ev)
{
    fevent_t *e = ev;
    LOCKED(enqueue(s, (fop_t){.kind = OP_WAIT, .on = e->stream, .seq = e->seq}));
    return 0;
}
static int f_event_create(void **ev)
{
    LOCKED(live_events++);
    *ev = calloc(1, sizeof(fevent_t));
    return *ev ? 0 : 2;
}
static int f_event_destroy(void *ev)
{
    LOCKED(live_events--);
    free(ev);
    return 0;
}
static int f_event_record(void *ev, void *s)
{
    fevent_t *e = ev;
    LOCKED(e->stream = S(s); e->seq = e->stream->queued);
    return 0;
}
static int f_event_query(void *ev)
{
    fevent_t *e = ev;
    int r = 0;
    LOCKED(if (e->stream && e->stream->run < e->seq) {
        run_one(e->stream);
        r = GCOLL_CUDA_NOT_READY;
    });
    return r;
}
static int f_event_sync(void *ev)
{
    fevent_t *e = ev;
    LOCKED(if (e->stream) run_to(e->stream, e->seq));
    return 0;
}
static int f_memcpy_async(void *dst, const void *src, size_t n, void *s)
{
    LOCKED(enqueue(s, (fop_t){.kind = OP_COPY, .dst = dst, .a = src, .n = n}));
    return 0;
}
static int f_host_alloc(void **p, size_t n)
{
    LOCKED(live_pinned++);
    *p = malloc(n);
    return *p ? 0 : 2;
}
static int f_host_free(void *p)
{
    LOCKED(live_pinned--);
    free(p);
    return 0;
}
static int f_dev_alloc(void **p, size_t n)
{
    LOCKED({
        size_t top = (arena - lib_used - n) & ~(size_t)255;
        if (n > arena - lib_used || top < used)
            die("device arena exhausted");
        lib_used = arena - top;
        live_dev++;
        *p = dev_base + top;
    });
    return 0;
}
static int f_dev_free(void *p)
{
    if (!in_dev(p))
        die("dev_free of memory that is not the device's");
    LOCKED(if (--live_dev == 0) lib_used = 0);
    return 0;
}
static const char *f_error_string(int err)
{
    return err == GCOLL_CUDA_NOT_READY ? "not ready" : "fake CUDA error";
}
static int f_reduce(void *dst, const void *a, const void *b, size_t n, int dtype, int op, void *s)
{
    LOCKED(enqueue(s, (fop_t){.kind = OP_REDUCE, .dst = dst, .a = a, .b = b, .n = n, .dtype = dtype, .op = op}));
    return 0;
}

void *fake_stream(void)
{
    void *s;
    if (f_stream_create(&s))
        die("stream");
    return s;
}

const gcoll__cuda_ops_t fake_cuda_ops = {
    .name = "fake", .is_device = f_is_device, .set_device = f_set_device, .stream_create = f_stream_create,
    .stream_destroy = f_stream_destroy, .stream_wait_event = f_stream_wait_event, .event_create = f_event_create,
    .event_destroy = f_event_destroy, .event_record = f_event_record, .event_query = f_event_query,
    .event_sync = f_event_sync, .memcpy_async = f_memcpy_async, .host_alloc = f_host_alloc,
    .host_free = f_host_free, .dev_alloc = f_dev_alloc, .dev_free = f_dev_free, .error_string = f_error_string,
    .reduce = f_reduce,
};
