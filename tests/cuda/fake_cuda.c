/* The fake CUDA table (fake_cuda.h). One lock serializes every call: gcoll calls it from the
 * application's threads and its progress threads. */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fake_cuda.h"
#include "base/reduce.h"
#include "base/dtype.h"
#include "collectives/adasum.h"

enum { OP_COPY, OP_REDUCE, OP_WAIT, OP_MULTI, OP_DOTS, OP_AXPBY, OP_CONVERT };

typedef struct fop {
    struct fop *next;
    int kind;
    void *dst;
    const void *a, *b;
    size_t n;
    int dtype, op;
    struct fstream *on;               /* OP_WAIT: the stream and count of operations the event stood for, */
    uint64_t seq;                     /* taken when the wait is queued, as CUDA does (the event may go) */
    void *dsts[GCOLL_CUDA_MULTI_MAX]; /* OP_MULTI */
    const void *srcs[GCOLL_CUDA_MULTI_MAX];
    int ndst, nsrc;
    unsigned divisor;
    double ca, cb; /* OP_AXPBY */
    int to;        /* OP_CONVERT: dst's dtype (dtype: src's) */
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

/* A peer's arena mapped by ipc_open: base for gcoll (no access), shadow for the fake. */
typedef struct fmap {
    struct fmap *next;
    char *base, *shadow;
    size_t bytes;
    int32_t pid, fd;
} fmap_t;

/* What an IPC handle holds: the exporter's arena, reachable through /proc. */
typedef struct {
    int32_t pid, fd;
} fhandle_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER, map_lock = PTHREAD_MUTEX_INITIALIZER;
static char *dev_base, *shadow;
static int arena_fd;
static long dots_run, converts_run;       /* Adasum dot-product and conversion kernels run */
static size_t arena, used, lib_used;      /* the test's allocations from the bottom, gcoll's from the top */
static unsigned long long generation = 1; /* fake_reset frees everything: new allocations, new ids */
static fmap_t *maps;
static long live_maps;
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
    arena_fd = fd; /* kept open: peers map it through /proc/<pid>/fd */
    arena = bytes;
}

/* Under map_lock of its own: gcoll asks is_device from inside the fake's queued reductions. */
static fmap_t *mapped(const void *p)
{
    fmap_t *hit = NULL;
    pthread_mutex_lock(&map_lock);
    for (fmap_t *m = maps; m && !hit; m = m->next)
        if ((const char *)p >= m->base && (const char *)p < m->base + m->bytes)
            hit = m;
    pthread_mutex_unlock(&map_lock);
    return hit;
}

static int in_dev(const void *p)
{
    return ((const char *)p >= dev_base && (const char *)p < dev_base + arena) || mapped(p);
}

/* The fake's own view of p: device addresses move to the readable mapping. */
static void *view(const void *p)
{
    fmap_t *m;
    if ((const char *)p >= dev_base && (const char *)p < dev_base + arena)
        return shadow + ((const char *)p - dev_base);
    if ((m = mapped(p)) != NULL)
        return m->shadow + ((const char *)p - m->base);
    return (void *)p;
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
    generation++;
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
long fake_live_pinned(void)
{
    return live(&live_pinned);
}
long fake_live_device(void)
{
    return live(&live_dev);
}
long fake_live_events(void)
{
    return live(&live_events);
}
long fake_live_streams(void)
{
    return live(&live_streams);
}
long fake_dots_run(void)
{
    return live(&dots_run);
}
long fake_converts_run(void)
{
    return live(&converts_run);
}
long fake_live_mapped(void)
{
    pthread_mutex_lock(&map_lock);
    long n = live_maps;
    pthread_mutex_unlock(&map_lock);
    return n;
}

static fstream_t *S(void *s)
{
    return s ? s : &default_stream;
}

static void run_to(fstream_t *s, uint64_t seq);

/* dst = ca a + cb b, each element in double and rounded once, as the GPU kernel does. */
static void axpby(const fop_t *o)
{
    char *d = view(o->dst);
    const char *a = view(o->a), *b = view(o->b);
    for (size_t i = 0; i < o->n; i++) {
        double x, y;
        switch (o->dtype) {
        case GCOLL_FLOAT64:
            memcpy(&x, a + 8 * i, 8);
            memcpy(&y, b + 8 * i, 8);
            x = o->ca * x + o->cb * y;
            memcpy(d + 8 * i, &x, 8);
            break;
        case GCOLL_FLOAT32: {
            float fx, fy;
            memcpy(&fx, a + 4 * i, 4);
            memcpy(&fy, b + 4 * i, 4);
            fx = (float)(o->ca * fx + o->cb * fy);
            memcpy(d + 4 * i, &fx, 4);
            break;
        }
        default: {
            uint16_t hx, hy;
            memcpy(&hx, a + 2 * i, 2);
            memcpy(&hy, b + 2 * i, 2);
            int f16 = o->dtype == GCOLL_FLOAT16;
            float v = (float)(o->ca * (f16 ? gcoll__f16_to_f32(hx) : gcoll__bf16_to_f32(hx)) +
                              o->cb * (f16 ? gcoll__f16_to_f32(hy) : gcoll__bf16_to_f32(hy)));
            hx = f16 ? gcoll__f32_to_f16(v) : gcoll__f32_to_bf16(v);
            memcpy(d + 2 * i, &hx, 2);
            break;
        }
        }
    }
}

/* dst = src in the other format, with gcoll's scalar conversions (round to nearest even). */
static void convert(const fop_t *o)
{
    for (size_t i = 0; i < o->n; i++) {
        char *d = (char *)view(o->dst) + i * gcoll_dtype_size(o->to);
        const char *x = (const char *)view(o->a) + i * gcoll_dtype_size(o->dtype);
        float f;
        uint16_t h;
        if (o->to == GCOLL_FLOAT32) {
            memcpy(&h, x, 2);
            f = o->dtype == GCOLL_FLOAT16 ? gcoll__f16_to_f32(h) : gcoll__bf16_to_f32(h);
            memcpy(d, &f, 4);
        } else {
            memcpy(&f, x, 4);
            h = o->to == GCOLL_FLOAT16 ? gcoll__f32_to_f16(f) : gcoll__f32_to_bf16(f);
            memcpy(d, &h, 2);
        }
    }
}

/* Runs the oldest queued operation of s. */
static void run_one(fstream_t *s)
{
    fop_t *o = s->head;
    s->head = o->next;
    if (!s->head)
        s->tail = NULL;
    switch (o->kind) {
    case OP_COPY: memcpy(view(o->dst), view(o->a), o->n); break;
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
    case OP_DOTS: { /* gcoll's host kernel over one tensor */
        dots_run++;
        size_t off[2] = {0, o->n};
        gcoll__adasum_shape_t sh = {.dtype = o->dtype, .es = gcoll_dtype_size(o->dtype), .nt = 1, .off = off};
        double *out = view(o->dst);
        out[0] = out[1] = out[2] = 0;
        gcoll__adasum_partials(&sh, view(o->a), view(o->b), 0, o->n, out);
        break;
    }
    case OP_AXPBY: axpby(o); break;
    case OP_CONVERT:
        converts_run++;
        convert(o);
        break;
    case OP_MULTI: { /* into a temporary first: a destination may be a source */
        size_t bytes = o->n * gcoll_dtype_size(o->dtype);
        char *t = malloc(bytes ? bytes : 1);
        if (!t)
            die("out of memory");
        memcpy(t, view(o->srcs[0]), bytes);
        for (int i = 1; i < o->nsrc; i++)
            gcoll__reduce(t, t, view(o->srcs[i]), o->n, o->dtype, o->op);
        if (o->divisor > 1)
            gcoll__kernels->div[o->dtype](t, o->n, o->divisor);
        for (int i = 0; i < o->ndst; i++)
            memcpy(view(o->dsts[i]), t, bytes);
        free(t);
        break;
    }
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
    return err == GCOLL_CUDA_NOT_READY ? "not ready"
        : err == 208                   ? "resource already mapped"
        : err == 217                   ? "peer access is not supported between these two devices"
                                       : "fake CUDA error";
}
static int f_reduce(void *dst, const void *a, const void *b, size_t n, int dtype, int op, void *s)
{
    LOCKED(enqueue(s, (fop_t){.kind = OP_REDUCE, .dst = dst, .a = a, .b = b, .n = n, .dtype = dtype, .op = op}));
    return 0;
}

static int f_reduce_multi(void *const *dst, int ndst, const void *const *src, int nsrc, size_t n, int dtype, int op,
                          unsigned divisor, void *s)
{
    if (ndst < 1 || nsrc < 1 || ndst > GCOLL_CUDA_MULTI_MAX || nsrc > GCOLL_CUDA_MULTI_MAX)
        return 1; /* cudaErrorInvalidValue */
    fop_t o = {.kind = OP_MULTI, .n = n, .dtype = dtype, .op = op, .ndst = ndst, .nsrc = nsrc, .divisor = divisor};
    memcpy(o.dsts, dst, (size_t)ndst * sizeof(void *));
    memcpy(o.srcs, src, (size_t)nsrc * sizeof(void *));
    LOCKED(enqueue(s, o));
    return 0;
}

static int f_adasum_dots(const void *a, const void *b, size_t n, int dtype, double *out, void *s)
{
    if (dtype != GCOLL_FLOAT16 && dtype != GCOLL_BFLOAT16 && dtype != GCOLL_FLOAT32 && dtype != GCOLL_FLOAT64)
        return 1; /* cudaErrorInvalidValue */
    LOCKED(enqueue(s, (fop_t){.kind = OP_DOTS, .dst = out, .a = a, .b = b, .n = n, .dtype = dtype}));
    return 0;
}

static int f_scaled_add(void *dst, double ca, const void *a, double cb, const void *b, size_t n, int dtype, void *s)
{
    if (dtype != GCOLL_FLOAT16 && dtype != GCOLL_BFLOAT16 && dtype != GCOLL_FLOAT32 && dtype != GCOLL_FLOAT64)
        return 1;
    LOCKED(
        enqueue(s, (fop_t){.kind = OP_AXPBY, .dst = dst, .a = a, .b = b, .n = n, .dtype = dtype, .ca = ca, .cb = cb}));
    return 0;
}

static int f_convert(void *dst, int to, const void *src, int from, size_t n, void *s)
{
    int half = from == GCOLL_FLOAT16 || from == GCOLL_BFLOAT16, half_to = to == GCOLL_FLOAT16 || to == GCOLL_BFLOAT16;
    if (!((from == GCOLL_FLOAT32 && half_to) || (half && to == GCOLL_FLOAT32)))
        return 1; /* cudaErrorInvalidValue */
    if ((uintptr_t)dst % gcoll_dtype_size(to) || (uintptr_t)src % gcoll_dtype_size(from))
        return 716; /* cudaErrorMisalignedAddress: a kernel reads and writes whole elements */
    LOCKED(enqueue(s, (fop_t){.kind = OP_CONVERT, .dst = dst, .a = src, .n = n, .dtype = from, .to = to}));
    return 0;
}

/* The whole arena is one allocation, whose id changes with every fake_reset. */
static int f_ipc_export(const void *p, gcoll__cuda_ipc_handle_t *h, size_t *offset, unsigned long long *id)
{
    if (!((const char *)p >= dev_base && (const char *)p < dev_base + arena) || getenv("FAKE_CUDA_EXPORT_REFUSED"))
        return 400; /* cudaErrorInvalidResourceHandle: as for memory of a cudaMallocAsync pool */
    fhandle_t fh = {.pid = (int32_t)getpid(), .fd = arena_fd};
    memset(h, 0, sizeof(*h));
    memcpy(h->bytes, &fh, sizeof(fh));
    *offset = (size_t)((const char *)p - dev_base);
    LOCKED(*id = generation);
    return 0;
}

static int f_ipc_open(const gcoll__cuda_ipc_handle_t *h, void **base)
{
    fhandle_t fh;
    char path[64];
    struct stat st;
    memcpy(&fh, h->bytes, sizeof(fh));
    if (getenv("FAKE_CUDA_IPC_REFUSED")) /* as between GPUs without peer access */
        return 217;                      /* cudaErrorPeerAccessUnsupported */
    int again = 0;                       /* as the driver: memory already mapped here cannot be mapped twice */
    pthread_mutex_lock(&map_lock);
    for (fmap_t *m = maps; m; m = m->next)
        again |= m->pid == fh.pid && m->fd == fh.fd;
    pthread_mutex_unlock(&map_lock);
    if (again)
        return 208; /* cudaErrorAlreadyMapped */
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)fh.pid, (int)fh.fd);
    int fd = open(path, O_RDWR);
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0)
            close(fd);
        return 400;
    }
    fmap_t *m = calloc(1, sizeof(*m));
    size_t bytes = (size_t)st.st_size;
    char *b = mmap(NULL, bytes, PROT_NONE, MAP_SHARED, fd, 0),
         *sh = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (!m || b == MAP_FAILED || sh == MAP_FAILED)
        die("mapping a peer's arena");
    m->base = b;
    m->shadow = sh;
    m->bytes = bytes;
    m->pid = fh.pid;
    m->fd = fh.fd;
    pthread_mutex_lock(&map_lock);
    m->next = maps;
    maps = m;
    live_maps++;
    pthread_mutex_unlock(&map_lock);
    *base = b;
    return 0;
}

// cppcheck-suppress constParameter ; cudaIpcCloseMemHandle's signature, which the table holds
static int f_ipc_close(void *base)
{
    fmap_t *m = NULL;
    pthread_mutex_lock(&map_lock);
    for (fmap_t **p = &maps; *p; p = &(*p)->next)
        if ((*p)->base == base) {
            m = *p;
            *p = m->next;
            live_maps--;
            break;
        }
    pthread_mutex_unlock(&map_lock);
    if (!m)
        die("ipc_close of an address ipc_open did not return");
    munmap(m->base, m->bytes);
    munmap(m->shadow, m->bytes);
    free(m);
    return 0;
}

/* One GPU for every process, unless FAKE_CUDA_GPUS=distinct gives each its own. */
static int f_bus_id(int device, char *buf, int len)
{
    const char *g = getenv("FAKE_CUDA_GPUS");
    if (g && strcmp(g, "distinct") == 0)
        snprintf(buf, (size_t)len, "fake:%d:%d", (int)getpid(), device);
    else
        snprintf(buf, (size_t)len, "fake:%d", device);
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
    .name = "fake",
    .is_device = f_is_device,
    .set_device = f_set_device,
    .stream_create = f_stream_create,
    .stream_destroy = f_stream_destroy,
    .stream_wait_event = f_stream_wait_event,
    .event_create = f_event_create,
    .event_destroy = f_event_destroy,
    .event_record = f_event_record,
    .event_query = f_event_query,
    .event_sync = f_event_sync,
    .memcpy_async = f_memcpy_async,
    .host_alloc = f_host_alloc,
    .host_free = f_host_free,
    .dev_alloc = f_dev_alloc,
    .dev_free = f_dev_free,
    .error_string = f_error_string,
    .reduce = f_reduce,
    .ipc_export = f_ipc_export,
    .ipc_open = f_ipc_open,
    .ipc_close = f_ipc_close,
    .reduce_multi = f_reduce_multi,
    .bus_id = f_bus_id,
    .adasum_dots = f_adasum_dots,
    .scaled_add = f_scaled_add,
    .convert = f_convert,
};
