/* See opdesc.h: what a collective's messages say about it, and the message that names both
 * sides of a mismatch. */
#include <stdio.h>

#include "base/coll.h"
#include "base/error.h"
#include "base/opdesc.h"

gcoll__opdesc_t gcoll__opdesc_of(int coll, gcoll_dtype_t dtype, gcoll_op_t op, size_t count, int root)
{
    int reduces = coll == GCOLL_COLL_ALLREDUCE || coll == GCOLL_COLL_REDUCE_SCATTER || coll == GCOLL_COLL_REDUCE ||
        coll == GCOLL_COLL_REDUCE_SCATTERV;
    int rooted = coll == GCOLL_COLL_BCAST || coll == GCOLL_COLL_REDUCE || coll == GCOLL_COLL_GATHER ||
        coll == GCOLL_COLL_GATHERV || coll == GCOLL_COLL_SCATTER || coll == GCOLL_COLL_SCATTERV;
    int barrier = coll == GCOLL_COLL_BARRIER;
    return (gcoll__opdesc_t){.coll = (uint8_t)(coll + 1),
                             .dtype = barrier ? GCOLL_OPDESC_NONE : (uint8_t)dtype,
                             .op = reduces ? (uint8_t)op : GCOLL_OPDESC_NONE,
                             .root = rooted ? root : -1,
                             .count = barrier ? 0 : (uint64_t)count};
}

void gcoll__opdesc_str(const gcoll__opdesc_t *d, uint32_t tag, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s #%u", d->coll ? gcoll__coll_name(d->coll - 1) : "an operation", (unsigned)tag);
    if (n < 0 || (size_t)n >= len || !d->coll || d->dtype == GCOLL_OPDESC_NONE)
        return;
    char op[24] = "";
    if (d->op != GCOLL_OPDESC_NONE)
        snprintf(op, sizeof(op), " %s", gcoll_op_name((gcoll_op_t)d->op));
    char root[24] = "";
    if (d->root >= 0)
        snprintf(root, sizeof(root), ", root %d", (int)d->root);
    snprintf(buf + n, len - (size_t)n, " (%s%s, count %llu%s)", gcoll_dtype_name((gcoll_dtype_t)d->dtype), op,
             (unsigned long long)d->count, root);
}

static const char *device_path(int where)
{
    return where == GCOLL_OPDESC_IPC ? "moves it over CUDA IPC"
        : where == GCOLL_OPDESC_GPU  ? "stages it and reduces on the GPU"
                                     : "stages it";
}

gcoll_status_t gcoll__opdesc_mismatch(uint32_t tag, const gcoll__opdesc_t *mine, int me, const gcoll__opdesc_t *theirs,
                                      int peer)
{
    char a[96], b[96];
    gcoll__opdesc_t same = *theirs;
    same.where = mine->where;
    if (mine->where != theirs->where && gcoll__opdesc_agree(mine, &same)) {
        gcoll__opdesc_str(mine, tag, a, sizeof(a));
        if (mine->where && theirs->where) /* both device memory, one path each */
            return gcoll__error(GCOLL_ERR_INVALID_USAGE,
                                "%s: rank %d %s and rank %d %s; every rank must pass device memory for every "
                                "buffer, with the same GCOLL_CUDA_IPC and GCOLL_CUDA_REDUCE_MIN",
                                a, me, device_path(mine->where), peer, device_path(theirs->where));
        return gcoll__error(GCOLL_ERR_INVALID_USAGE,
                            "%s: rank %d passed %s memory and rank %d %s memory; every rank's buffers must be on "
                            "the GPU, or every rank's in host memory",
                            a, me, mine->where ? "device" : "host", peer, theirs->where ? "device" : "host");
    }
    gcoll__opdesc_str(mine, tag, a, sizeof(a));
    gcoll__opdesc_str(theirs, tag, b, sizeof(b));
    return gcoll__error(GCOLL_ERR_INVALID_USAGE,
                        "%s on rank %d does not match %s from rank %d: the ranks called different collectives "
                        "(or counts, dtypes, ops, roots) in the same order",
                        a, me, b, peer);
}

void gcoll__opdesc_printable(char *text)
{
    for (char *c = text; *c; c++)
        if (*c < 0x20 || *c > 0x7e)
            *c = '?';
}
