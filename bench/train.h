/* `gcoll_bench train`: data-parallel training steps of a real model (bench/models.c), back to
 * back. Each tensor has a share of a step's compute: forward runs part of it layer by layer,
 * backprop the rest in reverse, the tensor's gradient ready after its share. */
#ifndef GCOLL_BENCH_TRAIN_H
#define GCOLL_BENCH_TRAIN_H

#include "compute.h"
#include "options.h"
#include "report.h"

/* The gradients are reduced in four ways, each measured in the same run:
 *   after        one blocking gcoll_allreduce per tensor once backprop is done (ready order)
 *   after-fused  one blocking gcoll_allreduce of all gradients (one flat buffer) after backprop
 *   per-tensor   gcoll_iallreduce per tensor as it is ready, priority -index (earlier layers
 *                first), each waited for just before its layer's next forward computation
 *   session      the gradient session: sets added once in forward order, committed, started as
 *                ready, each waited for (gcoll_session_wait) before its next forward computation
 * Runs every mode over comm and prints the table on rank 0. Returns the exit status: 0 when
 * every mode's gradients matched the reference, 1 otherwise or when an output file could not be
 * written; a failing gcoll call aborts the job after printing why. */
int train_run(const bench_opts_t *o, gcoll_comm_t comm, const bench_env_t *env, const bench_compute_t *c);

#endif
