/* gcoll: collective communication for data-parallel deep-learning training.
 * The one public header of the C ABI: opaque handles, status codes, collectives in blocking
 * and nonblocking forms. It needs no MPI header; MPI interop lives in gcoll_mpi.h. */
#ifndef GCOLL_H
#define GCOLL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GCOLL_VERSION_MAJOR 0
#define GCOLL_VERSION_MINOR 2
#define GCOLL_VERSION_PATCH 0
#define GCOLL_VERSION_CODE(maj, min, pat) ((maj)*10000 + (min)*100 + (pat))
#define GCOLL_VERSION GCOLL_VERSION_CODE(GCOLL_VERSION_MAJOR, GCOLL_VERSION_MINOR, GCOLL_VERSION_PATCH)

#if defined(__GNUC__)
#define GCOLL_API __attribute__((visibility("default")))
#else
#define GCOLL_API
#endif

typedef struct gcoll_comm *gcoll_comm_t;
typedef struct gcoll_request *gcoll_request_t;

/* Status codes, each with the message gcoll_strerror returns: this one table generates the enum,
 * gcoll_status_name and gcoll_strerror. The order is part of the ABI: append only. */
#define GCOLL_STATUS_TABLE(X)                                                                              \
    X(GCOLL_SUCCESS, "success")                                                                            \
    X(GCOLL_ERR_INVALID_ARG, "invalid argument") /* gcoll_last_error() names the argument */               \
    X(GCOLL_ERR_INVALID_USAGE, "invalid usage")  /* a call out of order, or ranks that disagree */         \
    X(GCOLL_ERR_NOMEM, "out of memory")                                                                    \
    X(GCOLL_ERR_SYSTEM, "system call failed") /* an operating-system or CUDA call */                       \
    X(GCOLL_ERR_TRANSPORT, "transport error")                                                              \
    X(GCOLL_ERR_REMOTE, "remote peer failed")                                                              \
    X(GCOLL_ERR_TIMEOUT, "operation timed out") /* GCOLL_TIMEOUT passed before it completed */             \
    X(GCOLL_ERR_UNSUPPORTED, "unsupported")                                                                \
    X(GCOLL_ERR_ABORTED, "communicator failed or aborted") /* earlier, by a failure or gcoll_comm_abort */ \
    X(GCOLL_ERR_INTERNAL, "internal error")                /* a bug in gcoll */

#define GCOLL_STATUS_ENUM_(code, msg) code,
typedef enum {
    GCOLL_STATUS_TABLE(GCOLL_STATUS_ENUM_) GCOLL_STATUS_COUNT /* not a status: the number of statuses */
} gcoll_status_t;
#undef GCOLL_STATUS_ENUM_

typedef enum {
    GCOLL_INT8,
    GCOLL_UINT8,
    GCOLL_INT32,
    GCOLL_UINT32,
    GCOLL_INT64,
    GCOLL_UINT64,
    GCOLL_FLOAT16,
    GCOLL_BFLOAT16,
    GCOLL_FLOAT32,
    GCOLL_FLOAT64,
    GCOLL_INT16,
    GCOLL_UINT16,
    GCOLL_FLOAT8_E4M3, /* OCP 8-bit float: 4 exponent bits, saturates at +-448, one NaN (docs/dtypes.md) */
    GCOLL_FLOAT8_E5M2, /* OCP 8-bit float: 5 exponent bits, with infinities */
    GCOLL_DTYPE_COUNT  /* not a type: the number of types */
} gcoll_dtype_t;

/* GCOLL_AVG divides the sum by the communicator size (integers: truncating division).
 * GCOLL_ADASUM (floating-point types only) is adaptive summation (see gcoll_adasum); only
 * gcoll_allreduce (one tensor) and the gradient session take it. GCOLL_PREMUL_SUM multiplies each
 * rank's input by the scalar attr->premul (gcoll_session_set_premul in a session) before summing,
 * as NCCL's ncclRedOpCreatePreMulSum: only the nonblocking calls, which take an attr, accept it. */
typedef enum {
    GCOLL_SUM,
    GCOLL_PROD,
    GCOLL_MIN,
    GCOLL_MAX,
    GCOLL_AVG,
    GCOLL_ADASUM,
    GCOLL_PREMUL_SUM,
    GCOLL_OP_COUNT /* not an op: the number of ops */
} gcoll_op_t;

/* Gradient compression of an fp32 SUM/AVG allreduce (docs/compression.md).
 * FP16/BF16: what goes over the wire is 16-bit, every reduction is in fp32. TOPK: each rank
 * contributes only its floor(topk_density * count) largest-magnitude entries; the result is
 * the dense sum of what all ranks contributed. */
typedef enum {
    GCOLL_COMPRESS_NONE,
    GCOLL_COMPRESS_FP16,
    GCOLL_COMPRESS_BF16,
    GCOLL_COMPRESS_TOPK,
    GCOLL_COMPRESS_COUNT /* not a kind: the number of kinds */
} gcoll_compress_t;

/* Per-operation attributes. Always start from GCOLL_ATTR_INIT: it sets the header (size, magic,
 * version) by which the library reads only the fields the caller's header had and defaults the
 * rest, so fields appended later never change what an older binary gets. A struct without that
 * header (uninitialized) is refused; NULL in place of an attr pointer means all defaults. A
 * field appended later defaults to all-zero bytes and leaves no padding, so that an older
 * library accepts a newer caller that left it alone and refuses one that set it. */
typedef struct {
    size_t size;               /* sizeof(gcoll_attr_t) in the caller's header */
    unsigned magic;            /* GCOLL_ATTR_MAGIC */
    unsigned version;          /* GCOLL_VERSION of the caller's header */
    int priority;              /* higher runs first; default 0 */
    gcoll_compress_t compress; /* allreduce only; default GCOLL_COMPRESS_NONE */
    const char *name;          /* shown in logs and error messages; default NULL */
    const char *algorithm;     /* force an algorithm by name (docs/algorithms.md); NULL: the selection table */
    double topk_density;       /* GCOLL_COMPRESS_TOPK: fraction of entries kept, in (0, 1]; default 0.01 */
    void *stream;              /* a cudaStream_t: starts after the work queued on it, which then waits for the result */
    double premul;             /* GCOLL_PREMUL_SUM: this rank's input is multiplied by it; default 0 */
} gcoll_attr_t;
#define GCOLL_ATTR_MAGIC 0x67636174u /* "gcat" */
#define GCOLL_ATTR_INIT                                                                                            \
    {                                                                                                              \
        sizeof(gcoll_attr_t), GCOLL_ATTR_MAGIC, GCOLL_VERSION, 0, GCOLL_COMPRESS_NONE, NULL, NULL, 0.01, NULL, 0.0 \
    }

/* Library lifetime. gcoll_init initializes MPI with MPI_THREAD_MULTIPLE if the caller has not;
 * gcoll_finalize finalizes MPI only if gcoll_init initialized it. argc/argv may be NULL. */
GCOLL_API gcoll_status_t gcoll_init(int *argc, char ***argv);
GCOLL_API gcoll_status_t gcoll_finalize(void);

/* A key-value store every rank of a job reaches (a torch.distributed c10d store, etcd, a shared
 * directory), through which gcoll_init_store and gcoll_comm_create_store find the ranks instead of
 * MPI or gcoll's own rendezvous. set publishes value under key; get waits until key exists (for as
 * long as the store's own timeout allows), copies at most cap bytes of its value and sets *len to
 * the value's full length. Either returns GCOLL_SUCCESS, or a status and a line in why (whylen
 * bytes) that gcoll passes on; they may be called from any thread, one at a time. Keys are short
 * text under "gcoll/"; values are a few hundred bytes a rank (an allgather's whole result is one
 * value, read by every rank; each rank reads at most log2(size) + 1 keys a step). gcoll copies the
 * struct; ctx must stay valid while a communicator made from it lives. Start from
 * GCOLL_STORE_INIT, as for gcoll_attr_t. */
typedef struct {
    size_t size;      /* sizeof(gcoll_store_t) in the caller's header */
    unsigned magic;   /* GCOLL_STORE_MAGIC */
    unsigned version; /* GCOLL_VERSION of the caller's header */
    void *ctx;        /* passed to set and get */
    gcoll_status_t (*set)(void *ctx, const char *key, const void *value, size_t len, char *why, size_t whylen);
    gcoll_status_t (*get)(void *ctx, const char *key, void *value, size_t cap, size_t *len, char *why, size_t whylen);
} gcoll_store_t;
#define GCOLL_STORE_MAGIC 0x67637374u /* "gcst" */
#define GCOLL_STORE_INIT                                                          \
    {                                                                             \
        sizeof(gcoll_store_t), GCOLL_STORE_MAGIC, GCOLL_VERSION, NULL, NULL, NULL \
    }
/* gcoll_init for a job whose ranks meet through store: this process is rank of size, MPI is not
 * started, and the launcher's variables are not read. Nests as gcoll_init does: once gcoll is
 * initialized, it only counts (the world stays the first call's). Collective over the size ranks. */
GCOLL_API gcoll_status_t gcoll_init_store(int rank, int size, const gcoll_store_t *store);
/* A new communicator of size ranks that meet through store, this process its rank: collective
 * over those ranks only (other processes need not take part). Each communicator made from a
 * store needs its own key space: a fresh store, or one whose keys carry a prefix of its own. */
GCOLL_API gcoll_status_t gcoll_comm_create_store(int rank, int size, const gcoll_store_t *store, gcoll_comm_t *comm);

/* Communicators. Collectives on one communicator must be called in the same order on every
 * rank (MPI's rule); different communicators are independent. */
GCOLL_API gcoll_status_t gcoll_comm_world(gcoll_comm_t *comm);
GCOLL_API gcoll_status_t gcoll_comm_split(gcoll_comm_t comm, int color, int key, gcoll_comm_t *newcomm);
GCOLL_API gcoll_status_t gcoll_comm_dup(gcoll_comm_t comm, gcoll_comm_t *newcomm);
GCOLL_API gcoll_status_t gcoll_comm_free(gcoll_comm_t *comm);
GCOLL_API int gcoll_comm_rank(gcoll_comm_t comm); /* -1 for an invalid communicator */
GCOLL_API int gcoll_comm_size(gcoll_comm_t comm); /* -1 for an invalid communicator */

/* Blocking collectives. In-place is sendbuf == recvbuf, with MPI_IN_PLACE's meaning; count 0
 * is legal. Buffers need no alignment, and may be CUDA device memory (docs/cuda.md). */
GCOLL_API gcoll_status_t gcoll_allreduce(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype,
                                         gcoll_op_t op, gcoll_comm_t comm);
GCOLL_API gcoll_status_t gcoll_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount, gcoll_dtype_t dtype,
                                              gcoll_op_t op, gcoll_comm_t comm);
GCOLL_API gcoll_status_t gcoll_allgather(const void *sendbuf, void *recvbuf, size_t sendcount, gcoll_dtype_t dtype,
                                         gcoll_comm_t comm);
GCOLL_API gcoll_status_t gcoll_bcast(void *buf, size_t count, gcoll_dtype_t dtype, int root, gcoll_comm_t comm);
GCOLL_API gcoll_status_t gcoll_reduce(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype,
                                      gcoll_op_t op, int root, gcoll_comm_t comm);
GCOLL_API gcoll_status_t gcoll_alltoall(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype,
                                        gcoll_comm_t comm);
GCOLL_API gcoll_status_t gcoll_barrier(gcoll_comm_t comm);

/* Vector collectives (docs/api.md). Counts and displacements are in elements; displs NULL means
 * the blocks lie back to back in rank order; any count may be 0. In place (sendbuf == recvbuf)
 * follows MPI_IN_PLACE: allgatherv takes rank r's block from recvbuf + displs[r]; reduce_scatterv
 * reduces the whole vector in recvbuf, whose first recvcounts[rank] elements are the result;
 * alltoallv in place requires sendcounts == recvcounts and sdispls == rdispls on every rank;
 * gather(v) in place is at the root only (its block already in recvbuf), scatter(v) likewise
 * (the root's block stays in sendbuf). recvcounts and displs of gatherv, and sendcounts and
 * displs of scatterv, are read at the root only. */
GCOLL_API gcoll_status_t gcoll_allgatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                          const size_t *recvcounts, const size_t *displs, gcoll_dtype_t dtype,
                                          gcoll_comm_t comm);
/* Rank r's result is the reduction of block r, recvcounts[r] elements, of the blocks that lie
 * back to back in every rank's sendbuf. */
GCOLL_API gcoll_status_t gcoll_reduce_scatterv(const void *sendbuf, void *recvbuf, const size_t *recvcounts,
                                               gcoll_dtype_t dtype, gcoll_op_t op, gcoll_comm_t comm);
GCOLL_API gcoll_status_t gcoll_alltoallv(const void *sendbuf, const size_t *sendcounts, const size_t *sdispls,
                                         void *recvbuf, const size_t *recvcounts, const size_t *rdispls,
                                         gcoll_dtype_t dtype, gcoll_comm_t comm);
GCOLL_API gcoll_status_t gcoll_gather(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype, int root,
                                      gcoll_comm_t comm);
GCOLL_API gcoll_status_t gcoll_scatter(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype, int root,
                                       gcoll_comm_t comm);
GCOLL_API gcoll_status_t gcoll_gatherv(const void *sendbuf, size_t sendcount, void *recvbuf, const size_t *recvcounts,
                                       const size_t *displs, gcoll_dtype_t dtype, int root, gcoll_comm_t comm);
GCOLL_API gcoll_status_t gcoll_scatterv(const void *sendbuf, const size_t *sendcounts, const size_t *displs,
                                        void *recvbuf, size_t recvcount, gcoll_dtype_t dtype, int root,
                                        gcoll_comm_t comm);

/* Point-to-point. The n-th send from rank a to rank b on a communicator matches b's n-th receive
 * from a; counts and dtypes must agree (a receive of another length fails naming both). Sends
 * and receives need no order with collectives or with other peers' messages. A blocking send
 * may wait for its receive: pair them in a group (below) or use the nonblocking forms. */
GCOLL_API gcoll_status_t gcoll_send(const void *buf, size_t count, gcoll_dtype_t dtype, int peer, gcoll_comm_t comm);
GCOLL_API gcoll_status_t gcoll_recv(void *buf, size_t count, gcoll_dtype_t dtype, int peer, gcoll_comm_t comm);

/* Groups (ncclGroupStart/End): between them, this thread's calls are only posted, blocking ones
 * included; gcoll_group_end launches them together and waits for the blocking ones, so a batch
 * of sends and receives cannot deadlock whatever order each rank lists them in. Consecutive small
 * allreduces of one dtype and op on one communicator are fused into one operation. Requests of
 * nonblocking calls in a group are waited for individually, after gcoll_group_end. Groups nest:
 * only the outermost end launches. */
GCOLL_API gcoll_status_t gcoll_group_start(void);
GCOLL_API gcoll_status_t gcoll_group_end(void);

/* Nonblocking twins: the operation starts at once and completes through gcoll_wait or
 * gcoll_test. Buffers must stay untouched until then. */
GCOLL_API gcoll_status_t gcoll_iallreduce(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype,
                                          gcoll_op_t op, gcoll_comm_t comm, const gcoll_attr_t *attr,
                                          gcoll_request_t *req);
GCOLL_API gcoll_status_t gcoll_ireduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                               gcoll_dtype_t dtype, gcoll_op_t op, gcoll_comm_t comm,
                                               const gcoll_attr_t *attr, gcoll_request_t *req);
GCOLL_API gcoll_status_t gcoll_iallgather(const void *sendbuf, void *recvbuf, size_t sendcount, gcoll_dtype_t dtype,
                                          gcoll_comm_t comm, const gcoll_attr_t *attr, gcoll_request_t *req);
GCOLL_API gcoll_status_t gcoll_ibcast(void *buf, size_t count, gcoll_dtype_t dtype, int root, gcoll_comm_t comm,
                                      const gcoll_attr_t *attr, gcoll_request_t *req);
GCOLL_API gcoll_status_t gcoll_ireduce(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype,
                                       gcoll_op_t op, int root, gcoll_comm_t comm, const gcoll_attr_t *attr,
                                       gcoll_request_t *req);
GCOLL_API gcoll_status_t gcoll_ialltoall(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype,
                                         gcoll_comm_t comm, const gcoll_attr_t *attr, gcoll_request_t *req);
GCOLL_API gcoll_status_t gcoll_ibarrier(gcoll_comm_t comm, const gcoll_attr_t *attr, gcoll_request_t *req);
GCOLL_API gcoll_status_t gcoll_iallgatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                           const size_t *recvcounts, const size_t *displs, gcoll_dtype_t dtype,
                                           gcoll_comm_t comm, const gcoll_attr_t *attr, gcoll_request_t *req);
GCOLL_API gcoll_status_t gcoll_ireduce_scatterv(const void *sendbuf, void *recvbuf, const size_t *recvcounts,
                                                gcoll_dtype_t dtype, gcoll_op_t op, gcoll_comm_t comm,
                                                const gcoll_attr_t *attr, gcoll_request_t *req);
GCOLL_API gcoll_status_t gcoll_ialltoallv(const void *sendbuf, const size_t *sendcounts, const size_t *sdispls,
                                          void *recvbuf, const size_t *recvcounts, const size_t *rdispls,
                                          gcoll_dtype_t dtype, gcoll_comm_t comm, const gcoll_attr_t *attr,
                                          gcoll_request_t *req);
GCOLL_API gcoll_status_t gcoll_igather(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype, int root,
                                       gcoll_comm_t comm, const gcoll_attr_t *attr, gcoll_request_t *req);
GCOLL_API gcoll_status_t gcoll_iscatter(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype, int root,
                                        gcoll_comm_t comm, const gcoll_attr_t *attr, gcoll_request_t *req);
GCOLL_API gcoll_status_t gcoll_igatherv(const void *sendbuf, size_t sendcount, void *recvbuf, const size_t *recvcounts,
                                        const size_t *displs, gcoll_dtype_t dtype, int root, gcoll_comm_t comm,
                                        const gcoll_attr_t *attr, gcoll_request_t *req);
GCOLL_API gcoll_status_t gcoll_iscatterv(const void *sendbuf, const size_t *sendcounts, const size_t *displs,
                                         void *recvbuf, size_t recvcount, gcoll_dtype_t dtype, int root,
                                         gcoll_comm_t comm, const gcoll_attr_t *attr, gcoll_request_t *req);
GCOLL_API gcoll_status_t gcoll_isend(const void *buf, size_t count, gcoll_dtype_t dtype, int peer, gcoll_comm_t comm,
                                     const gcoll_attr_t *attr, gcoll_request_t *req);
GCOLL_API gcoll_status_t gcoll_irecv(void *buf, size_t count, gcoll_dtype_t dtype, int peer, gcoll_comm_t comm,
                                     const gcoll_attr_t *attr, gcoll_request_t *req);

/* Adasum (Maleki et al.): an allreduce that adds orthogonal gradients and averages parallel
 * ones, pairwise a, b -> (1 - a.b/2|a|^2) a + (1 - a.b/2|b|^2) b over a fixed binary tree of the
 * ranks (docs/adasum.md). The buffer holds ntensors tensors back to back whose element counts
 * tensor_counts lists (they add up to count); dot products and norms never cross a tensor
 * boundary. tensor_counts NULL (ntensors 0 or 1) means one tensor. fp16, bf16, fp32, fp64;
 * GCOLL_ADASUM=flat|hierarchical picks the algorithm across hosts. */
GCOLL_API gcoll_status_t gcoll_adasum(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype,
                                      const size_t *tensor_counts, size_t ntensors, gcoll_comm_t comm);
GCOLL_API gcoll_status_t gcoll_iadasum(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype,
                                       const size_t *tensor_counts, size_t ntensors, gcoll_comm_t comm,
                                       const gcoll_attr_t *attr, gcoll_request_t *req);

/* Completion. gcoll_wait frees the request and sets *req to NULL; gcoll_test does so once done.
 * The status returned is the operation's own. */
GCOLL_API gcoll_status_t gcoll_wait(gcoll_request_t *req);
GCOLL_API gcoll_status_t gcoll_test(gcoll_request_t *req, int *done);

/* The gradient session (MLSL-style): parameter sets are registered once, in forward order;
 * commit plans fusion buckets and priorities (earlier layers first, collectively on every
 * rank); then each iteration starts every set as its gradient becomes ready in backprop (any
 * order, the same sets on every rank) and waits before the values are used. The reduced
 * gradient replaces buf. No allocation per iteration. */
typedef struct gcoll_session *gcoll_session_t;
GCOLL_API gcoll_status_t gcoll_session_create(gcoll_comm_t comm, gcoll_session_t *session);
/* op: GCOLL_SUM, GCOLL_AVG, GCOLL_ADASUM (floating point; each set its own tensor) or
 * GCOLL_PREMUL_SUM (floating point; gcoll_session_set_premul).
 * *id numbers the sets 0, 1, ... in the order they are added. */
GCOLL_API gcoll_status_t gcoll_session_add(gcoll_session_t s, const char *name, size_t count, gcoll_dtype_t dtype,
                                           gcoll_op_t op, size_t *id);
/* Compression of set id (fp32, SUM or AVG), before commit; density matters for TOPK only. A
 * TOPK set keeps what it did not send (error feedback) and adds it to its next gradient. */
GCOLL_API gcoll_status_t gcoll_session_set_compress(gcoll_session_t s, size_t id, gcoll_compress_t compress,
                                                    double density);
/* This rank's scalar of a GCOLL_PREMUL_SUM set (default 1), applied to each gradient as it starts. */
GCOLL_API gcoll_status_t gcoll_session_set_premul(gcoll_session_t s, size_t id, double premul);
GCOLL_API gcoll_status_t gcoll_session_commit(gcoll_session_t s);
/* buf belongs to the session until set id is waited for: a set alone in its bucket is reduced
 * in place there, so neither read nor write it in between. */
GCOLL_API gcoll_status_t gcoll_session_start(gcoll_session_t s, size_t id, void *buf);
GCOLL_API gcoll_status_t gcoll_session_test(gcoll_session_t s, size_t id, int *done);
GCOLL_API gcoll_status_t gcoll_session_wait(gcoll_session_t s, size_t id);
GCOLL_API gcoll_status_t gcoll_session_wait_all(gcoll_session_t s);
/* The plan commit made: the number of fusion buckets and the bucket of set id. */
GCOLL_API gcoll_status_t gcoll_session_buckets(gcoll_session_t s, size_t *nbuckets);
GCOLL_API gcoll_status_t gcoll_session_bucket_of(gcoll_session_t s, size_t id, size_t *bucket);
GCOLL_API gcoll_status_t gcoll_session_free(gcoll_session_t *s);

/* Errors and introspection. */
GCOLL_API const char *gcoll_strerror(gcoll_status_t status);
GCOLL_API const char *gcoll_status_name(gcoll_status_t status); /* "GCOLL_ERR_TIMEOUT" */
GCOLL_API const char *gcoll_last_error(void);                   /* this thread's detail of its last failure, or "" */
GCOLL_API const char *gcoll_version(void);
GCOLL_API size_t gcoll_dtype_size(gcoll_dtype_t dtype); /* 0 for an invalid type */
GCOLL_API const char *gcoll_dtype_name(gcoll_dtype_t dtype);
GCOLL_API const char *gcoll_op_name(gcoll_op_t op);

/* The configuration registry: every GCOLL_* variable, defined once. Index 0..count-1. The library
 * writes gcoll_config_var_t into the caller's memory, so it never grows: a new fact about a
 * variable comes with a new call. */
typedef struct {
    const char *name;        /* "GCOLL_TIMEOUT" */
    const char *type;        /* what it accepts, e.g. "seconds (> 0)" */
    const char *default_str; /* the default as a string */
    const char *description; /* one line */
} gcoll_config_var_t;
GCOLL_API size_t gcoll_config_count(void);
GCOLL_API gcoll_status_t gcoll_config_var(size_t index, gcoll_config_var_t *var);
/* The value the library takes for variable name ("GCOLL_TIMEOUT"), as a string in buf (len bytes
 * with the terminating NUL), and its source: "environment" or "default" (source may be NULL).
 * Between gcoll_init and gcoll_finalize it is the value gcoll_init read; otherwise the value
 * gcoll_init would read now. A secret (GCOLL_JOB_SECRET) set in the environment reads
 * "(hidden)". Works before gcoll_init. */
GCOLL_API gcoll_status_t gcoll_config_get(const char *name, char *buf, size_t len, const char **source);

/* Gives comm a selection table of its own for a collective ("allreduce", ...), in the syntax of
 * GCOLL_<COLLECTIVE> ("ring", "direct:0-1K;ring:1K-max"; "auto": the built-in choice), which
 * replaces that variable's for calls on comm issued after it returns; NULL goes back to the
 * variable's. Every rank of comm sets the same table before the same call (as with the
 * variable); not while another thread issues calls on comm. */
GCOLL_API gcoll_status_t gcoll_comm_set_algorithm(gcoll_comm_t comm, const char *collective, const char *table);
/* The algorithm the selection table picks for a collective ("allreduce", ...) of count elements
 * of dtype on comm (count as in the collective's own call; for a vector collective, the total in
 * even blocks), and the transport comm uses.
 * "adasum" names the Adasum algorithm that GCOLL_ADASUM picks ("adasum/halving", ...). */
GCOLL_API gcoll_status_t gcoll_comm_algorithm(gcoll_comm_t comm, const char *collective, size_t count,
                                              gcoll_dtype_t dtype, const char **algorithm);
GCOLL_API gcoll_status_t gcoll_comm_transport(gcoll_comm_t comm, const char **name);

/* Local reduction with gcoll's kernels: inout[i] = inout[i] op in[i] (SUM, PROD, MIN, MAX).
 * Works before gcoll_init, with the portable kernels until then. */
GCOLL_API gcoll_status_t gcoll_reduce_local(void *inout, const void *in, size_t count, gcoll_dtype_t dtype,
                                            gcoll_op_t op);

/* Algorithm names of a collective ("allreduce", ..., "adasum"), for listing and for attr.algorithm. */
GCOLL_API gcoll_status_t gcoll_algorithms(const char *collective, const char *const **names, size_t *count);

/* Failure handling. A communicator fails when an operation on it fails: a peer that died
 * (GCOLL_ERR_REMOTE on every pending and later operation, naming the collective, its sequence
 * number and the dead rank), a timeout, or this call, which cancels everything pending on comm
 * at once and makes it and every later operation return GCOLL_ERR_ABORTED ("aborted by the
 * application"). Local: the other ranks learn of it through their own failure detection or
 * timeout. A failed communicator can only be freed. Aborting one that failed already succeeds. */
GCOLL_API gcoll_status_t gcoll_comm_abort(gcoll_comm_t comm);
/* Operations on comm started after this call fail with GCOLL_ERR_TIMEOUT (and fail comm) when
 * they have not completed within seconds (> 0); until then, GCOLL_TIMEOUT's. Local to this rank. */
GCOLL_API gcoll_status_t gcoll_comm_set_timeout(gcoll_comm_t comm, double seconds);

/* Payload bytes this rank has handed to the transport for comm's collectives so far (after any
 * compression): the difference around a call is what that call put on the wire. */
GCOLL_API gcoll_status_t gcoll_comm_bytes_sent(gcoll_comm_t comm, unsigned long long *bytes);

/* The flight recorder: writes comm's last operations (up to 256: sequence number, collective,
 * name, dtype, count, op, algorithm, priority, state and status, the round and the peers it
 * waits on, how long ago it was called, posted and ended) to path as JSON, %r in it becoming the
 * rank and %c the communicator's number. Works on a failed communicator; local to this rank.
 * GCOLL_FLIGHT_RECORDER writes the same file when comm fails; gcoll-info --trace reads the
 * ranks' files together and says which rank stopped where, waiting on whom. */
GCOLL_API gcoll_status_t gcoll_comm_dump(gcoll_comm_t comm, const char *path);

#ifdef __cplusplus
}
#endif
#endif /* GCOLL_H */
