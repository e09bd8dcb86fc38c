/* A fake CUDA for tests on machines with no GPU: "device memory" is a memfd mapped twice, once
 * with no access at all (the addresses gcoll sees: any host access by gcoll crashes the test)
 * and once readable (the fake's own view); an IPC handle names the memfd, which a peer maps
 * the same two ways through /proc. Copies, reductions and waits queue on streams and
 * run only when an event after them is queried (one operation per query, so "not ready" is
 * seen) or synchronized, so code that reads a staging buffer before its copy's event has
 * completed reads stale data. The reductions run on the CPU. */
#ifndef GCOLL_FAKE_CUDA_H
#define GCOLL_FAKE_CUDA_H

#include <stddef.h>

#include "cuda/cuda.h"

extern const gcoll__cuda_ops_t fake_cuda_ops;

void fake_init(size_t arena_bytes);
void *fake_malloc(size_t bytes); /* device memory, 256-byte aligned */
void fake_reset(void);           /* frees every device allocation */
void *fake_stream(void);         /* a stream of the caller's, for the stream attribute */
/* Synchronous copies for the test's own use (no stream). */
void fake_to_device(void *dev, const void *host, size_t bytes);
void fake_to_host(void *host, const void *dev, size_t bytes);
/* Resources created and not destroyed: pinned blocks, events, streams, peers' arenas mapped. */
long fake_live_pinned(void), fake_live_events(void), fake_live_streams(void), fake_live_device(void),
    fake_live_mapped(void);
/* Adasum dot-product and fp32 <-> fp16/bf16 conversion kernels run so far (which tell the GPU's
 * Adasum and compression from the host's). */
long fake_dots_run(void), fake_converts_run(void);

#endif
