/* Adasum's shm_slots algorithm (adasum.h): every rank computes the whole tree from the inputs
 * the node channel's slots hold (small vectors: up to a few KiB this beats halving's rounds). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/config.h"
#include "base/copy.h"
#include "base/dtype.h"
#include "base/log.h"
#include "collectives/adasum.h"
#include "collectives/halving.h"
#include "collectives/select.h"
#include "node/node_op.h"

typedef struct {
    const gcoll__adasum_shape_t *sh;
    char *tmp;    /* [P][count]: the intermediate vectors of ranks 0..P-1 */
    double *sums; /* 3 nt */
} slots_ada_t;

static gcoll_status_t slots_publish(gcoll__node_op_t *op)
{
    memcpy(gcoll__node_input(op, op->me), op->src, op->a.count * op->a.esize);
    return GCOLL_SUCCESS;
}

/* dst = adasum(a, b) over the whole buffer. */
static void combine_whole(const slots_ada_t *st, char *dst, const char *a, const char *b, size_t count)
{
    memset(st->sums, 0, 3 * st->sh->nt * sizeof(double));
    gcoll__adasum_partials(st->sh, a, b, 0, count, st->sums);
    gcoll__adasum_apply(st->sh, dst, a, b, 0, count, st->sums);
}

static gcoll_status_t slots_work(gcoll__node_op_t *op)
{
    slots_ada_t *st = (slots_ada_t *)op->scratch;
    int n = op->n, P = gcoll__adasum_pow2(n);
    size_t cnt = op->a.count, bytes = cnt * op->a.esize;
    const char **v = (const char **)(st->sums + 3 * st->sh->nt); /* [n]: where each vector is now */
    for (int q = 0; q < n; q++)
        v[q] = gcoll__node_input(op, q);
    for (int q = P; q < n; q++) {
        combine_whole(st, st->tmp + (size_t)(q - P) * bytes, v[q - P], v[q], cnt);
        v[q - P] = st->tmp + (size_t)(q - P) * bytes;
    }
    for (int d = 1; d < P; d <<= 1)
        for (int i = 0; i < P; i += 2 * d) {
            char *out = 2 * d == P ? op->a.recvbuf : st->tmp + (size_t)i * bytes;
            combine_whole(st, out, v[i], v[i + d], cnt);
            v[i] = out;
        }
    return GCOLL_SUCCESS;
}

void gcoll__node_adasum_slots(gcoll__sched_t *s, const gcoll__coll_args_t *a, const gcoll__adasum_shape_t *sh)
{
    if (gcoll__alone(s, a))
        return;
    gcoll__node_op_t *op = gcoll__node_op(s, a, 0, 1, slots_publish, slots_work, sizeof(slots_ada_t));
    if (!op)
        return;
    op->tiny = a->count * a->esize <= GCOLL_SHM_INLINE;
    slots_ada_t *st = (slots_ada_t *)op->scratch;
    st->sh = sh;
    st->tmp = gcoll__sched_scratch(s, (size_t)gcoll__adasum_pow2(a->size) * a->count * a->esize);
    st->sums = gcoll__sched_scratch(s, 3 * sh->nt * sizeof(double) + (size_t)a->size * sizeof(char *));
}
