/* See options.h: gcoll_bench's usage text and its strict parser; an option the subcommand
 * would ignore is refused. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "models.h"
#include "options.h"

void bench_usage(FILE *f, const char *prog)
{
    fprintf(
        f,
        "usage: mpirun -np N %s COLLECTIVE [options]\n"
        "       mpirun -np N %s iallreduce [options]\n"
        "       mpirun -np N %s train [options]\n"
        "       %s membw\n"
        "collectives: allreduce reduce_scatter allgather bcast reduce alltoall barrier\n"
        "             allgatherv reduce_scatterv alltoallv gather scatter gatherv scatterv\n"
        "       adasum: gcoll_adasum (one tensor) beside gcoll_allreduce sum on the same buffers,\n"
        "               instead of MPI (float16 bfloat16 float32 float64; --algo halving|shm_slots|shm_cma|hierarchical)\n"
        "       sendrecv: a ring exchange (gcoll_send right, gcoll_recv left, in a group) beside MPI_Sendrecv\n"
        "       group: a batch of --batch allreduces of each size in one gcoll group, beside the same\n"
        "              blocking calls one by one and MPI_Iallreduce + MPI_Waitall (default -m 4K:4K)\n"
        "  -m MIN:MAX      message sizes in bytes, K/M/G suffixes (default 4:4M); the whole vector\n"
        "                  (alltoall(v): what a rank sends in all; group: each allreduce)\n"
        "  -f FACTOR       size step factor, an integer >= 2 (default 2)\n"
        "  -i ITERS        timed iterations per size (default: 1000, fewer for large sizes)\n"
        "  -x WARMUP       untimed iterations per size (default: ITERS/10, at least 2)\n"
        "  -d DTYPE        int8 uint8 int32 uint32 int64 uint64 float16 bfloat16 float32 float64\n"
        "                  (default float32)\n"
        "  -d cuda         buffers in GPU memory (also --device cuda|host), validated after a copy\n"
        "                  to the host; NCCL's collective beside it where NCCL runs (not MPI:\n"
        "                  that needs a CUDA-aware MPI); refused when\n"
        "                  no GPU is visible. GCOLL_CUDA_STAGE_CHUNK=1G: stage everything first\n"
        "  -o OP           sum prod min max avg (default sum)\n"
        "  -r ROOT         root of bcast and reduce (default 0)\n"
        "  --inplace       sendbuf == recvbuf\n"
        "  -c              validate every iteration (default: once per size)\n"
        "  --baseline B    mpi, nccl (-d cuda) or none (default mpi; -d cuda: nccl where it runs):\n"
        "                  the other library's own collective in the same run\n"
        "                  (adasum: mpi means gcoll's sum allreduce)\n"
        "  --csv FILE      also write the rows as CSV\n"
        "  --json FILE     also write the rows as JSON\n"
        "  --algo LIST     gcoll algorithms, comma-separated (see gcoll-info, docs/algorithms.md), and\n"
        "                  auto for the selection's own choice: one row each per size, the\n"
        "                  algorithms interleaved block by block in the same run\n"
        "  --compress C    allreduce: none, fp16, bf16 or topk:DENSITY (float32, sum or avg; the\n"
        "                  MPI side stays dense) and a column of gcoll's bytes on the wire per call\n"
        "  --skew K        v collectives: how each size is split into per-rank counts: even\n"
        "                  (default), half (one rank holds half: rank 0; alltoallv: rank r sends\n"
        "                  half to r+1), zipf:S (shares 1/k^S in a seeded random order, for\n"
        "                  alltoallv per sender); the same counts on MPI's side\n"
        "  --seed N        zipf's draws (default 1)\n"
        "  --batch K       group: allreduces per batch (default 64)\n"
        "  -h              this help\n"
        "iallreduce: OSU's overlap of gcoll_iallreduce and MPI_Iallreduce with computation;\n"
        "  -m -f -i -x -d -o -c --baseline --csv --json --algo as above, and\n"
        "  --compute MODE  spin (a calibrated busy loop) or sleep (nanosleep) (default spin)\n"
        "train: training steps of a real model, gradients reduced after backprop, per tensor\n"
        "  as they are ready, and through the gradient session; -i (10) -x (1) -o sum|avg\n"
        "  --compute --csv --json as above, and\n"
        "  --model NAME    resnet50 or bert (default resnet50)\n"
        "  --scale F       multiply every tensor's element count by F > 0 (default 1)\n"
        "  --compute-ms T  compute per step (forward and backprop) in ms, spread over the\n"
        "                  tensors by size (default: the time of one allreduce of all gradients)\n"
        "  --forward F     the forward pass's part of that compute, 0 to 0.9 (default 1/3:\n"
        "                  backprop about twice the forward pass); 0: backprop only\n",
        prog, prog, prog, prog);
}

int bench_parse_bytes(const char *s, size_t *out)
{
    char *end;
    if (s[0] < '0' || s[0] > '9')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    unsigned shift = *end == 'K' || *end == 'k' ? 10
        : *end == 'M' || *end == 'm'            ? 20
        : *end == 'G' || *end == 'g'            ? 30
                                                : 0;
    if (shift)
        end++;
    if (errno || *end || v > (SIZE_MAX >> shift))
        return -1;
    *out = (size_t)v << shift;
    return 0;
}

static int fail(char *err, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
    return -1;
}

static int parse_int(const char *s, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

int bench_algo_by_table(const bench_opts_t *o)
{
    return o->subcmd < B_NCOLL && o->subcmd != B_ADASUM && !o->compress_set;
}

int bench_skewed(int subcmd)
{
    return subcmd == B_ALLGATHERV || subcmd == B_REDUCE_SCATTERV || subcmd == B_ALLTOALLV || subcmd == B_GATHERV ||
        subcmd == B_SCATTERV;
}

/* The collectives that reduce, for the dtypes MPI cannot reduce. */
static int reduces(int subcmd)
{
    return subcmd == B_ALLREDUCE || subcmd == B_REDUCE_SCATTER || subcmd == B_REDUCE || subcmd == B_REDUCE_SCATTERV ||
        subcmd == B_GROUP;
}

/* "ring,auto" -> two names, pointing into a copy of the argument. */
static int parse_algos(const char *arg, bench_opts_t *o)
{
    static char copy[512];
    if (strlen(arg) >= sizeof(copy))
        return -1;
    strcpy(copy, arg);
    o->algo = arg;
    o->nalgos = 0;
    for (char *p = copy, *comma; p; p = comma ? comma + 1 : NULL) {
        if ((comma = strchr(p, ',')))
            *comma = '\0';
        if (!*p || o->nalgos == BENCH_MAX_ALGOS)
            return -1;
        o->algos[o->nalgos++] = p;
    }
    return 0;
}

/* An option the subcommand would ignore is refused, so that no run measures something else
 * than its command line says. */
static int check_applicable(const bench_opts_t *o, const char *seen, char *err, size_t errlen)
{
    static const struct {
        char ch;
        const char *name;
    } names[] = {{'m', "-m"},        {'f', "-f"},           {'r', "-r"},        {'c', "-c"},         {'d', "-d"},
                 {'I', "--inplace"}, {'B', "--baseline"},   {'A', "--algo"},    {'P', "--compute"},  {'M', "--model"},
                 {'S', "--scale"},   {'T', "--compute-ms"}, {'W', "--forward"}, {'Z', "--compress"}, {'D', "-d cuda"},
                 {'K', "--skew"},    {'E', "--seed"},       {'G', "--batch"}};
    const char *allowed = o->subcmd == BENCH_TRAIN ? "ixoPMSTWCJ"
        : o->subcmd == BENCH_IALLREDUCE            ? "mfixdocBCJAP"
        : o->subcmd == B_ALLREDUCE                 ? "mfixdorcIBCJAZD"
        : bench_skewed(o->subcmd)                  ? "mfixdorcIBCJADKE"
        : o->subcmd == B_SENDRECV                  ? "mfixdcBCJD"
        : o->subcmd == B_GROUP                     ? "mfixdocIBCJDG"
                                                   : "mfixdorcIBCJAD";
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (seen[(int)names[i].ch] && !strchr(allowed, names[i].ch))
            return fail(err, errlen, "%s does not apply to %s", names[i].name,
                        o->subcmd == BENCH_TRAIN            ? "train"
                            : o->subcmd == BENCH_IALLREDUCE ? "iallreduce"
                            : o->subcmd == BENCH_MEMBW      ? "membw"
                                                            : bench_coll_name((bench_coll_t)o->subcmd));
    if (o->subcmd == BENCH_TRAIN && o->op != GCOLL_SUM && o->op != GCOLL_AVG)
        return fail(err, errlen, "-o %s: train reduces gradients with sum or avg", gcoll_op_name(o->op));
    if (o->nalgos > 1 && !bench_algo_by_table(o))
        return fail(err, errlen, "--algo '%s': %s takes one algorithm", o->algo,
                    o->compress_set                     ? "--compress"
                        : o->subcmd == BENCH_IALLREDUCE ? "iallreduce"
                                                        : "adasum");
    if (o->compress != GCOLL_COMPRESS_NONE && (o->dtype != GCOLL_FLOAT32 || (o->op != GCOLL_SUM && o->op != GCOLL_AVG)))
        return fail(err, errlen, "--compress: takes -d float32 and -o sum or avg");
    if (seen['E'] && o->skew.kind != BENCH_SKEW_ZIPF)
        return fail(err, errlen, "--seed: only with --skew zipf:S");
    if (o->subcmd == B_ALLTOALLV && o->inplace && o->skew.kind != BENCH_SKEW_EVEN)
        return fail(err, errlen,
                    "--inplace: alltoallv in place needs sendcounts == recvcounts, which only --skew even gives");
    if (o->baseline_on && !o->baseline_nccl && reduces(o->subcmd) &&
        (o->dtype == GCOLL_FLOAT8_E4M3 || o->dtype == GCOLL_FLOAT8_E5M2))
        return fail(err, errlen, "-d %s: MPI cannot reduce 8-bit floats; use --baseline none",
                    gcoll_dtype_name(o->dtype));
    if (o->op == GCOLL_PREMUL_SUM)
        return fail(err, errlen, "-o premul_sum: gcoll_bench measures the blocking calls, which do not take it");
    return 0;
}

int bench_parse(int argc, char **argv, bench_opts_t *o, char *err, size_t errlen)
{
    *o = (bench_opts_t){.min_bytes = 4,
                        .max_bytes = 4 << 20,
                        .factor = 2,
                        .warmup = -1,
                        .dtype = GCOLL_FLOAT32,
                        .op = GCOLL_SUM,
                        .baseline_on = 1,
                        .compute = BENCH_COMPUTE_SPIN,
                        .model = "resnet50",
                        .scale = 1,
                        .compute_ms = -1,
                        .forward = 1.0 / 3,
                        .skew = {.kind = BENCH_SKEW_EVEN, .seed = 1},
                        .batch = 64};
    if (argc < 2)
        return fail(err, errlen, "a subcommand is needed");
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)
        return 1;
    o->subcmd = strcmp(argv[1], "membw") == 0 ? BENCH_MEMBW
        : strcmp(argv[1], "iallreduce") == 0  ? BENCH_IALLREDUCE
        : strcmp(argv[1], "train") == 0       ? BENCH_TRAIN
                                              : bench_coll_find(argv[1]);
    if (o->subcmd < 0)
        return fail(err, errlen, "unknown subcommand '%s'", argv[1]);
    static const struct option longopts[] = {{"inplace", no_argument, NULL, 'I'},
                                             {"baseline", required_argument, NULL, 'B'},
                                             {"csv", required_argument, NULL, 'C'},
                                             {"json", required_argument, NULL, 'J'},
                                             {"algo", required_argument, NULL, 'A'},
                                             {"help", no_argument, NULL, 'h'},
                                             {"compute", required_argument, NULL, 'P'},
                                             {"model", required_argument, NULL, 'M'},
                                             {"scale", required_argument, NULL, 'S'},
                                             {"compute-ms", required_argument, NULL, 'T'},
                                             {"forward", required_argument, NULL, 'W'},
                                             {"compress", required_argument, NULL, 'Z'},
                                             {"device", required_argument, NULL, 'D'},
                                             {"skew", required_argument, NULL, 'K'},
                                             {"seed", required_argument, NULL, 'E'},
                                             {"batch", required_argument, NULL, 'G'},
                                             {NULL, 0, NULL, 0}};
    /* the options after the subcommand, which stands as their argv[0]: optind 0 makes GNU getopt
     * start afresh, whatever an earlier parse left in its state */
    int ac = argc - 1;
    char **av = argv + 1;
    optind = 0;
    opterr = 0;
    int ch, f;
    char seen[128] = {0}; /* which options were given, to refuse those a subcommand ignores */
    while ((ch = getopt_long(ac, av, "m:f:i:x:d:o:r:ch", longopts, NULL)) != -1) {
        if (ch > 0 && ch < 128)
            seen[ch] = 1;
        switch (ch) {
        case 'm': {
            const char *colon = strchr(optarg, ':');
            char lo[64];
            if (!colon || (size_t)(colon - optarg) >= sizeof(lo))
                return fail(err, errlen, "-m '%s': expected MIN:MAX, e.g. 4:64M", optarg);
            memcpy(lo, optarg, (size_t)(colon - optarg));
            lo[colon - optarg] = '\0';
            if (bench_parse_bytes(lo, &o->min_bytes) || bench_parse_bytes(colon + 1, &o->max_bytes) ||
                o->min_bytes > o->max_bytes)
                return fail(err, errlen, "-m '%s': expected MIN:MAX in bytes with MIN <= MAX, e.g. 4:64M", optarg);
            break;
        }
        case 'f':
            if (parse_int(optarg, 2, 1 << 20, &f))
                return fail(err, errlen, "-f '%s': expected an integer >= 2", optarg);
            o->factor = (unsigned)f;
            break;
        case 'i':
            if (parse_int(optarg, 1, 100000000, &o->iters))
                return fail(err, errlen, "-i '%s': expected an integer >= 1", optarg);
            break;
        case 'x':
            if (parse_int(optarg, 0, 100000000, &o->warmup))
                return fail(err, errlen, "-x '%s': expected an integer >= 0", optarg);
            break;
        case 'r':
            if (parse_int(optarg, 0, 1 << 30, &o->root))
                return fail(err, errlen, "-r '%s': expected a rank >= 0", optarg);
            break;
        case 'D':
            if (strcmp(optarg, "cuda") && strcmp(optarg, "host"))
                return fail(err, errlen, "--device '%s': expected host or cuda", optarg);
            o->device = strcmp(optarg, "cuda") == 0;
            break;
        case 'd': {
            if (strcmp(optarg, "cuda") == 0) { /* OSU's -d cuda: the buffers' device, not a dtype */
                o->device = 1;
                seen['D'] = 1;
                break;
            }
            int d = 0;
            const char *name; /* NULL: a type this libgcoll does not know */
            while (d < GCOLL_DTYPE_COUNT && (!(name = gcoll_dtype_name((gcoll_dtype_t)d)) || strcmp(optarg, name)))
                d++;
            if (d == GCOLL_DTYPE_COUNT)
                return fail(err, errlen, "-d '%s': unknown dtype", optarg);
            o->dtype = (gcoll_dtype_t)d;
            break;
        }
        case 'o': {
            int op = 0;
            const char *name;
            while (op < GCOLL_OP_COUNT && (!(name = gcoll_op_name((gcoll_op_t)op)) || strcmp(optarg, name)))
                op++;
            if (op == GCOLL_OP_COUNT)
                return fail(err, errlen, "-o '%s': unknown op", optarg);
            if (op == GCOLL_ADASUM)
                return fail(err, errlen, "-o adasum: use the adasum subcommand");
            o->op = (gcoll_op_t)op;
            break;
        }
        case 'c': o->check_each = 1; break;
        case 'I': o->inplace = 1; break;
        case 'B':
            if (strcmp(optarg, "mpi") && strcmp(optarg, "nccl") && strcmp(optarg, "none"))
                return fail(err, errlen, "--baseline '%s': expected mpi, nccl or none", optarg);
            o->baseline_on = strcmp(optarg, "none") != 0;
            o->baseline_nccl = strcmp(optarg, "nccl") == 0;
            break;
        case 'C': o->csv = optarg; break;
        case 'J': o->json = optarg; break;
        case 'A':
            if (parse_algos(optarg, o) != 0)
                return fail(err, errlen, "--algo '%s': expected 1 to %d comma-separated names", optarg,
                            BENCH_MAX_ALGOS);
            break;
        case 'P':
            if (strcmp(optarg, "spin") && strcmp(optarg, "sleep"))
                return fail(err, errlen, "--compute '%s': expected spin or sleep", optarg);
            o->compute = strcmp(optarg, "sleep") == 0 ? BENCH_COMPUTE_SLEEP : BENCH_COMPUTE_SPIN;
            break;
        case 'M':
            if (!bench_model_find(optarg))
                return fail(err, errlen, "--model '%s': expected resnet50 or bert", optarg);
            o->model = optarg;
            break;
        case 'S':
            if (parse_double(optarg, &o->scale) || !(o->scale > 0) || o->scale > 16)
                return fail(err, errlen, "--scale '%s': expected a number > 0 and <= 16", optarg);
            break;
        case 'T':
            if (parse_double(optarg, &o->compute_ms) || !(o->compute_ms >= 0) || o->compute_ms > 1e7)
                return fail(err, errlen, "--compute-ms '%s': expected milliseconds >= 0", optarg);
            break;
        case 'W':
            if (parse_double(optarg, &o->forward) || !(o->forward >= 0) || o->forward > 0.9)
                return fail(err, errlen, "--forward '%s': expected a fraction from 0 to 0.9", optarg);
            break;
        case 'Z':
            o->compress_set = 1;
            o->compress = strcmp(optarg, "none") == 0 ? GCOLL_COMPRESS_NONE
                : strcmp(optarg, "fp16") == 0         ? GCOLL_COMPRESS_FP16
                : strcmp(optarg, "bf16") == 0         ? GCOLL_COMPRESS_BF16
                                                      : GCOLL_COMPRESS_TOPK;
            if (o->compress == GCOLL_COMPRESS_TOPK &&
                (strncmp(optarg, "topk:", 5) != 0 || parse_double(optarg + 5, &o->density) ||
                 !(o->density > 0 && o->density <= 1)))
                return fail(err, errlen,
                            "--compress '%s': expected none, fp16, bf16 or topk:DENSITY with DENSITY "
                            "in (0, 1]",
                            optarg);
            break;
        case 'K':
            if (bench_skew_parse(optarg, &o->skew))
                return fail(err, errlen, "--skew '%s': expected even, half or zipf:S with S > 0", optarg);
            break;
        case 'E': {
            char *end;
            errno = 0;
            o->skew.seed = strtoul(optarg, &end, 10);
            if (errno || end == optarg || *end || optarg[0] == '-')
                return fail(err, errlen, "--seed '%s': expected an integer >= 0", optarg);
            break;
        }
        case 'G':
            if (parse_int(optarg, 1, 1 << 20, &o->batch))
                return fail(err, errlen, "--batch '%s': expected an integer >= 1", optarg);
            break;
        case 'h': return 1;
        default: return fail(err, errlen, "unknown or incomplete option '%s'", av[optind - 1]);
        }
    }
    if (optind < ac)
        return fail(err, errlen, "unexpected argument '%s'", av[optind]);
    if (o->subcmd == B_GROUP && !seen['m']) /* small allreduces, as a batch of gradients of small layers */
        o->min_bytes = o->max_bytes = 4 << 10;
    if (o->subcmd == B_ADASUM) {
        if (o->dtype != GCOLL_FLOAT16 && o->dtype != GCOLL_BFLOAT16 && o->dtype != GCOLL_FLOAT32 &&
            o->dtype != GCOLL_FLOAT64)
            return fail(err, errlen, "-d %s: adasum takes float16, bfloat16, float32 or float64",
                        gcoll_dtype_name(o->dtype));
        o->op = GCOLL_ADASUM;
    }
    if (o->baseline_nccl && (!o->device || o->subcmd >= B_NCOLL || o->subcmd == B_ADASUM))
        return fail(err, errlen, "--baseline nccl: only for a collective on GPU buffers (-d cuda)");
    if (o->device && o->subcmd != B_ADASUM) { /* adasum's other side is gcoll's own sum */
        if (seen['B'] && o->baseline_on && !o->baseline_nccl)
            return fail(err, errlen,
                        "--baseline mpi: MPI on GPU buffers needs a CUDA-aware MPI; use --baseline "
                        "nccl or none");
        if (!seen['B'] && o->subcmd < B_NCOLL) /* NCCL where it can run */
            o->baseline_nccl = 2;
        o->baseline_on = o->baseline_nccl != 0;
    }
    if (o->device && o->compress == GCOLL_COMPRESS_TOPK)
        return fail(err, errlen, "--compress topk does not apply with -d cuda: gcoll refuses top-k on device buffers");
    return check_applicable(o, seen, err, errlen);
}
