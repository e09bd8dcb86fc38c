/* Recursive halving and doubling among the P ranks left after the fold (P the largest power of
 * two <= n; each even rank of the first 2(n-P) hands its data to the odd one above and sits out).
 * The vector is cut into P ranges; halving from distance 1 leaves each vrank one range reduced,
 * doubling undoes it. Rabenseifner's allreduce and reduce, the recursive-halving reduce-scatter
 * and the recursive-doubling allgather are built from these. */
#ifndef GCOLL_HALVING_H
#define GCOLL_HALVING_H

#include "collectives/algo.h"

typedef struct {
    int P, rem;
    int vr;            /* this rank's vrank; -1 when folded out */
    int lo, hi;        /* the ranges [lo, hi) this vrank holds */
    size_t cnt;        /* elements of the vector */
    size_t per;        /* 0: P near-equal ranges of cnt; else ranges of whole blocks of per elements,
                  * one per real rank, so that vrank v covers the blocks of the ranks it stands for */
    const size_t *pre; /* set after init: blocks of uneven sizes instead, real rank i's block at
                          element pre[i] of the packed vector (n + 1 entries, pre[n] = cnt) */
} gcoll__halving_t;

void gcoll__halving_init(gcoll__halving_t *h, int n, int rank, size_t cnt, size_t per);
int gcoll__halving_rank(const gcoll__halving_t *h, int vrank);   /* the real rank of a vrank */
size_t gcoll__halving_off(const gcoll__halving_t *h, int range); /* element offset, range 0..P */
/* The fold, then the halving, for a rank that is not folded out: an odd rank of the first
 * 2(n-P) first receives its even partner's vector and reduces it with src into work; then the
 * vector is halved log2(P) times into work, which holds [lo, hi) at the end (tmp receives; both
 * as large as the vector). From distance 1 (the big halves stay near) vrank v ends with the
 * ranges gcoll__halving_final names; from distance P/2 (from_top) with its own range v. */
void gcoll__halving_fold_reduce(gcoll__sched_t *s, gcoll__halving_t *h, int rank, const char *src, char *work,
                                char *tmp, size_t es, int from_top);
/* The ranges [lo, hi) vrank v holds after gcoll__halving_fold_reduce from distance 1. */
void gcoll__halving_final(const gcoll__halving_t *h, int v, int *lo, int *hi);
/* Gathers every range of work from [lo, hi), by doubling: after gcoll__halving_fold_reduce from
 * distance 1 (after_halving), or from vrank order (each vrank holding its own range, lo = vr). */
void gcoll__doubling_gather(gcoll__sched_t *s, gcoll__halving_t *h, char *work, size_t es, int after_halving);

#endif
