/* GCOLL_TIMELINE: a Chrome trace (the JSON array format, loadable in Perfetto and
 * chrome://tracing) of every operation (queued, then running), every message slice (posted to
 * complete) and every local reduction or copy, per rank. Each event is written with the
 * closing bracket after it and the next one overwrites that bracket, so the file is valid JSON
 * whenever the process stops. */
#ifndef GCOLL_TIMELINE_H
#define GCOLL_TIMELINE_H

#include "core/request.h"

extern int gcoll__timeline_on;

gcoll_status_t gcoll__timeline_open(void); /* at init: opens the file when GCOLL_TIMELINE names one */
void gcoll__timeline_close(void);
double gcoll__timeline_now(void); /* seconds on the trace's clock */
/* A step of r that ran from t0 until now; an operation that ended now. Lane lock held. */
void gcoll__timeline_step(gcoll_request_t r, const gcoll__step_t *st, double t0);
void gcoll__timeline_op(gcoll_request_t r);

#endif
