/* Adasum's entry (adasum.h): the argument check, the usable functions of the registry's Adasum
 * family (algo.h; one file per algorithm), the choice among them, and the build that runs it.
 * docs/design.md describes each algorithm. */
#include <stdint.h>
#include <stdio.h>

#include "base/config.h"
#include "base/copy.h"
#include "base/dtype.h"
#include "base/error.h"
#include "base/log.h"
#include "collectives/adasum.h"
#include "collectives/halving.h"
#include "collectives/select.h"
#include "transports/shm/channel.h"

gcoll_status_t gcoll__adasum_check(size_t count, gcoll_dtype_t dtype, const size_t *tensor_counts, size_t ntensors)
{
    if (dtype != GCOLL_FLOAT16 && dtype != GCOLL_BFLOAT16 && dtype != GCOLL_FLOAT32 && dtype != GCOLL_FLOAT64)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "dtype %s: Adasum takes float16, bfloat16, float32 or float64",
                            gcoll_dtype_name(dtype));
    if (!tensor_counts) {
        if (ntensors > 1)
            return gcoll__error(GCOLL_ERR_INVALID_ARG,
                                "tensor_counts is NULL with ntensors %zu (NULL means one tensor)", ntensors);
        return GCOLL_SUCCESS;
    }
    if (ntensors == 0)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "ntensors is 0 with tensor_counts given");
    size_t sum = 0;
    for (size_t t = 0; t < ntensors; t++) {
        if (tensor_counts[t] > count - sum)
            return gcoll__error(GCOLL_ERR_INVALID_ARG,
                                "tensor_counts: tensors 0..%zu hold more than count %zu elements", t, count);
        sum += tensor_counts[t];
    }
    if (sum != count)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "tensor_counts add up to %zu, not count %zu", sum, count);
    return GCOLL_SUCCESS;
}

/* shm_slots while a vector fits a slot in one round. The built-in choice takes it only up to 1/16
 * of the slot (4 KiB by default): every rank combines all n vectors, so halving wins above that. */
int gcoll__adasum_slots_usable(const gcoll__coll_args_t *a)
{
    return a->shm != NULL && a->count * a->esize <= gcoll__shm_info(a->shm)->slot_bytes;
}

/* hierarchical walks the hosts of the node map, which a sub-group has not. */
int gcoll__adasum_hier_usable(const gcoll__coll_args_t *a)
{
    return a->map != NULL;
}

/* The Adasum entry whose flags, masked by what tells the algorithms apart, are want. */
static const gcoll__algo_t *entry(unsigned want)
{
    const unsigned kind = GCOLL_ALGO_NODE | GCOLL_ALGO_CMA | GCOLL_ALGO_HIER | GCOLL_ALGO_FORCED;
    return gcoll__algo_get(gcoll__algo_flagged(GCOLL_COLL_ALLREDUCE, GCOLL_FAMILY_ADASUM, kind, want));
}

/* The algorithm GCOLL_ADASUM asks for on these arguments: the hierarchical one, the node
 * channel's slots for small vectors, else the flat one. Never shm_cma (GCOLL_ALGO_FORCED):
 * halving, over the node channel's single-copy messages, is faster at every size. */
static const gcoll__algo_t *choose(const gcoll__coll_args_t *a)
{
    int spans = a->map && a->map->nhosts > 1, crowded = 0;
    for (int k = 0; spans && k < a->map->nhosts; k++)
        crowded |= a->map->first[k + 1] - a->map->first[k] > 1;
    int mode = gcoll__config.adasum; /* 0 auto, 1 flat, 2 hierarchical */
    if (mode == 2 || (mode == 0 && spans && crowded))
        return entry(GCOLL_ALGO_HIER);
    const gcoll__algo_t *slots = entry(GCOLL_ALGO_NODE);
    if (gcoll__algo_usable(slots, a) && a->count * a->esize <= gcoll__shm_info(a->shm)->slot_bytes / 16)
        return slots;
    return entry(0);
}

gcoll_status_t gcoll__adasum_build(gcoll__sched_t *s, const gcoll__coll_args_t *a, const size_t *tensor_counts,
                                   size_t ntensors, const char *forced, const char **algo)
{
    GCOLL_CHECK(gcoll__adasum_check(a->count, a->dtype, tensor_counts, ntensors));
    const gcoll__algo_t *e =
        forced ? gcoll__algo_get(gcoll__algo_find(GCOLL_COLL_ALLREDUCE, GCOLL_FAMILY_ADASUM, forced)) : choose(a);
    if (!e) {
        char list[GCOLL_ALGO_LIST_LEN];
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "attr->algorithm '%s' is not an adasum algorithm: accepts %s",
                            forced, gcoll__algo_list(list, sizeof(list), GCOLL_COLL_ALLREDUCE, GCOLL_FAMILY_ADASUM, 0));
    }
    /* as for the other collectives, an algorithm that cannot serve gives way to the built-in choice */
    if (!gcoll__algo_usable(e, a)) {
        GCOLL_LOG(GCOLL_LOG_INFO,
                  "adasum: %s cannot serve this communicator (attr->algorithm); using the built-in "
                  "choice",
                  e->name);
        e = choose(a);
    }
    *algo = e->label;
    if (a->count == 0)
        return GCOLL_SUCCESS;
    size_t nt = tensor_counts ? ntensors : 1;
    gcoll__adasum_shape_t *sh = gcoll__sched_scratch(s, sizeof(*sh));
    size_t *off = gcoll__sched_scratch(s, (nt + 1) * sizeof(size_t));
    if (!sh || !off)
        return gcoll__error(GCOLL_ERR_NOMEM, "adasum: no memory for %zu tensors", nt);
    off[0] = 0;
    for (size_t t = 0; t < nt; t++)
        off[t + 1] = off[t] + (tensor_counts ? tensor_counts[t] : a->count);
    *sh = (gcoll__adasum_shape_t){.dtype = a->dtype, .es = a->esize, .nt = nt, .off = off};
    e->adasum(s, a, sh);
    if (s->status != GCOLL_SUCCESS)
        return gcoll__error(s->status, "adasum: the schedule of %zu elements could not be built (%s)", a->count,
                            gcoll_status_name(s->status));
    return GCOLL_SUCCESS;
}

const char *gcoll__adasum_choice(const gcoll__coll_args_t *a)
{
    return choose(a)->label;
}
