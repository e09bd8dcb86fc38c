/* Whether a process of this machine is gone: the liveness check of peers that share the
 * machine (the node channel's ranks, and an ofi peer on the same kernel and pid namespace). */
#ifndef GCOLL_LIVENESS_H
#define GCOLL_LIVENESS_H

#include <stdint.h>
#include <sys/types.h>

/* 1 when pid has exited (gone, or a zombie its parent has not reaped yet). */
int gcoll__process_gone(pid_t pid);
/* An id of the space that pids of this process live in (this boot of the kernel and this pid
 * namespace): two processes with one id can check each other's pids. 0: unknown. */
uint64_t gcoll__pid_space(void);

#endif
