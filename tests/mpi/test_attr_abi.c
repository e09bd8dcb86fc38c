/* Binaries built against another gcoll.h keep working: gcoll_attr_t as a header with fewer fields
 * laid it out (the bytes after it in memory are garbage that the library must not read), as a
 * newer header with more fields would (accepted while those fields are zero, refused when set),
 * and without GCOLL_ATTR_INIT's header (refused, naming attr). Results are checked against
 * reference/ (plain arithmetic), never against gcoll. */
#include <stddef.h>
#include <string.h>

#include "harness.h"
#include "reference.h"

#define N 1000

/* The fields of 0.2.0 up to algorithm, which every layout below begins with. */
#define FIELDS_TO_ALGORITHM    \
    size_t size;               \
    unsigned magic, version;   \
    int priority;              \
    gcoll_compress_t compress; \
    const char *name, *algorithm;
/* The header of 0.2.0 without its last field, stream; and without its last two. */
typedef struct {
    FIELDS_TO_ALGORITHM
    double topk_density;
} attr_no_stream_t;
typedef struct {
    FIELDS_TO_ALGORITHM
} attr_no_density_t;
/* A newer header's, with two fields appended. */
typedef struct {
    FIELDS_TO_ALGORITHM
    double topk_density;
    void *stream;
    double premul; // cppcheck-suppress unusedStructMember ; there to place later_flags past it
    unsigned long long later_flags;
    const void *later_ptr;
} attr_newer_t;

/* the older and newer structs agree with this header on every field they share */
#define SAME_AT(t, f) _Static_assert(offsetof(t, f) == offsetof(gcoll_attr_t, f), #t "." #f);
SAME_AT(attr_no_stream_t, topk_density)
SAME_AT(attr_no_density_t, algorithm)
SAME_AT(attr_newer_t, stream)
_Static_assert(sizeof(attr_no_stream_t) == offsetof(gcoll_attr_t, stream), "no_stream ends where stream starts");
_Static_assert(sizeof(attr_no_density_t) == offsetof(gcoll_attr_t, topk_density), "ends where topk_density starts");
_Static_assert(offsetof(attr_newer_t, later_flags) == sizeof(gcoll_attr_t), "appended after this header's end");

/* An older struct at the start of bytes that continue as garbage: a library reading past the
 * struct's recorded size finds a non-NULL stream (which refuses the call on a host without CUDA
 * and breaks it elsewhere) or a NaN density (refused). */
typedef union {
    attr_no_stream_t no_stream;
    attr_no_density_t no_density;
    unsigned char bytes[sizeof(gcoll_attr_t) + 64];
} older_t;

static float in[N], out[N], want[N];

/* An iallreduce (SUM, fp32) of the reference inputs with attributes a, checked against the exact
 * sum, or with top-k at density against the reference's top-k sum. */
static void allreduce(gcoll_comm_t c, const void *a, double density, const char *what)
{
    ref_fill_values(in, N, h_rank, GCOLL_FLOAT32, GCOLL_SUM);
    if (density > 0)
        ref_topk_expected(want, N, density, GCOLL_SUM, h_size);
    else
        ref_fill_expected(want, 0, N, GCOLL_FLOAT32, GCOLL_SUM, h_size);
    memset(out, 0xff, sizeof(out));
    gcoll_request_t req;
    gcoll_status_t st = gcoll_iallreduce(in, out, N, GCOLL_FLOAT32, GCOLL_SUM, c, a, &req);
    CHECK(st == GCOLL_SUCCESS, "%s: iallreduce -> %s: %s", what, gcoll_status_name(st), gcoll_last_error());
    if (st != GCOLL_SUCCESS)
        return;
    CHECK_OK(gcoll_wait(&req));
    size_t bad = 0, first = 0;
    for (size_t i = N; i-- > 0;)
        if (memcmp(&out[i], &want[i], sizeof(float)) != 0) {
            bad++;
            first = i;
        }
    CHECK(bad == 0, "%s: %zu of %d elements differ (first %zu: %g, want %g)", what, bad, N, first, (double)out[first],
          (double)want[first]);
}

/* An ibcast from the last rank with attributes a: every rank ends with the root's bytes. */
static void bcast(gcoll_comm_t c, const void *a, const char *what)
{
    unsigned char buf[N], root[N];
    ref_fill_bytes(root, N, h_size - 1, 7);
    ref_fill_bytes(buf, N, h_rank, 7);
    gcoll_request_t req;
    gcoll_status_t st = gcoll_ibcast(buf, N, GCOLL_UINT8, h_size - 1, c, a, &req);
    CHECK(st == GCOLL_SUCCESS, "%s: ibcast -> %s: %s", what, gcoll_status_name(st), gcoll_last_error());
    if (st == GCOLL_SUCCESS) {
        CHECK_OK(gcoll_wait(&req));
        CHECK(memcmp(buf, root, N) == 0, "%s: ibcast delivered other bytes than the root's", what);
    }
}

static void refused(gcoll_comm_t c, const void *a, gcoll_status_t want_st, const char *needle, const char *what)
{
    gcoll_request_t req = (gcoll_request_t)(void *)out;
    gcoll_status_t st = gcoll_iallreduce(in, out, N, GCOLL_FLOAT32, GCOLL_SUM, c, a, &req);
    CHECK(st == want_st, "%s: got %s, want %s (%s)", what, gcoll_status_name(st), gcoll_status_name(want_st),
          gcoll_last_error());
    CHECK(req == NULL, "%s: a refused start left a request", what);
    CHECK(strstr(gcoll_last_error(), "attr") && strstr(gcoll_last_error(), needle),
          "%s: message '%s' does not name attr and '%s'", what, gcoll_last_error(), needle);
}

/* This header's struct, and the header alone (every field defaulted). */
static void current(gcoll_comm_t c)
{
    gcoll_attr_t a = GCOLL_ATTR_INIT;
    a.priority = 3;
    a.name = "current";
    a.algorithm = "ring";
    allreduce(c, &a, 0, "this header, ring");
    a.algorithm = NULL;
    a.compress = GCOLL_COMPRESS_TOPK;
    a.topk_density = 0.05;
    allreduce(c, &a, 0.05, "this header, top-k 0.05");
    older_t o;
    memset(&o, 0xff, sizeof(o));
    gcoll_attr_t h = GCOLL_ATTR_INIT;
    h.size = offsetof(gcoll_attr_t, priority);
    memcpy(o.bytes, &h, h.size);
    allreduce(c, o.bytes, 0, "the header alone");
    bcast(c, o.bytes, "the header alone");
}

/* Binaries of older headers: what they set is read, what they lack is defaulted. */
static void older(gcoll_comm_t c)
{
    older_t o;
    memset(&o, 0xff, sizeof(o));
    o.no_stream = (attr_no_stream_t){sizeof(attr_no_stream_t), GCOLL_ATTR_MAGIC, GCOLL_VERSION, 1,
                                     GCOLL_COMPRESS_NONE,      "no stream",      "ring",        0.01};
    allreduce(c, &o, 0, "without stream");
    o.no_stream.algorithm = "chain";
    bcast(c, &o, "without stream");
    o.no_stream.algorithm = "no_such_algorithm"; /* read from the old struct: refused by name */
    refused(c, &o, GCOLL_ERR_INVALID_ARG, "no_such_algorithm", "without stream, an unknown algorithm");
    o.no_stream.algorithm = NULL;
    o.no_stream.compress = GCOLL_COMPRESS_TOPK;
    o.no_stream.topk_density = 0.1;
    allreduce(c, &o, 0.1, "without stream, top-k 0.1");

    memset(&o, 0xff, sizeof(o));
    o.no_density = (attr_no_density_t){sizeof(attr_no_density_t), GCOLL_ATTR_MAGIC, GCOLL_VERSION, 0,
                                       GCOLL_COMPRESS_TOPK,       "no density",     NULL};
    allreduce(c, &o, 0.01, "without topk_density, top-k at its default 0.01");
}

/* Binaries of a newer header: fields this library does not know are accepted while zero. */
static void newer(gcoll_comm_t c)
{
    attr_newer_t a;
    memset(&a, 0, sizeof(a));
    a.size = sizeof(a);
    a.magic = GCOLL_ATTR_MAGIC;
    a.version = GCOLL_VERSION_CODE(0, 3, 0);
    a.priority = 1;
    a.compress = GCOLL_COMPRESS_NONE;
    a.name = "newer";
    a.algorithm = "ring";
    a.topk_density = 0.01;
    a.stream = NULL;
    allreduce(c, &a, 0, "a newer header, its fields zero");
    a.algorithm = "chain";
    bcast(c, &a, "a newer header, its fields zero");
    a.algorithm = NULL; /* the call is refused for the newer field alone */
    a.later_flags = 1;
    refused(c, &a, GCOLL_ERR_UNSUPPORTED, "does not know", "a newer header, a field set");
    a.later_flags = 0;
    a.later_ptr = &a;
    refused(c, &a, GCOLL_ERR_UNSUPPORTED, "does not know", "a newer header, its last field set");
}

/* Structs that never were initialized. */
static void uninitialized(gcoll_comm_t c)
{
    gcoll_attr_t a;
    memset(&a, 0x5a, sizeof(a));
    refused(c, &a, GCOLL_ERR_INVALID_ARG, "GCOLL_ATTR_INIT", "uninitialized (0x5a bytes)");
    memset(&a, 0, sizeof(a));
    a.priority = 2; /* the fields set by hand, the header forgotten */
    refused(c, &a, GCOLL_ERR_INVALID_ARG, "GCOLL_ATTR_INIT", "the header left zero");
    gcoll_attr_t huge = GCOLL_ATTR_INIT;
    huge.size = (size_t)1 << 20;
    refused(c, &huge, GCOLL_ERR_INVALID_ARG, "attr->size", "a size no header has");
}

int main(int argc, char **argv)
{
    gcoll_comm_t world = h_init(&argc, &argv);
    current(world);
    older(world);
    newer(world);
    uninitialized(world);
    return h_finish("attr_abi");
}
