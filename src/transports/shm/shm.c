/* See shm.h: the channel's creation, its counters and sleeps, and single copy. The segment exists under its name only between its creation and the moment every
 * local rank has mapped it (one barrier later), so neither a normal exit nor kill -9 of any
 * rank afterwards can leave it behind. */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"
#include "base/topo.h"
#include "transports/liveness.h"
#include "transports/shm/shm_internal.h"

#define NAME_LEN 48

/* header | ctrl[n] | slots[n][2] | rings[n][n] (each: acknowledgement slots, depth cells) */
static size_t layout(const gcoll__shm_t *s, size_t *ctrl_off, size_t *slots_off, size_t *rings_off)
{
    *ctrl_off = sizeof(gcoll__shm_hdr_t);
    *slots_off = *ctrl_off + (size_t)s->info.n * sizeof(gcoll__shm_ctrl_t);
    *slots_off = (*slots_off + 4095) & ~(size_t)4095;
    *rings_off = *slots_off + (size_t)s->info.n * 2 * s->info.slot_bytes;
    return *rings_off + (size_t)s->info.n * (size_t)s->info.n * s->pair_bytes;
}

/* The leader creates the segment and broadcasts its name; "" means it failed. */
static int create_segment(const char *name, size_t bytes)
{
    int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0)
        return -1;
    if (ftruncate(fd, (off_t)bytes) != 0) {
        close(fd);
        shm_unlink(name);
        return -1;
    }
    return fd;
}

static void random_name(char *name)
{
    unsigned char r[16];
    if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
        struct timespec ts; /* a weaker id beats none; O_EXCL still refuses a clash */
        clock_gettime(CLOCK_REALTIME, &ts);
        for (size_t i = 0; i < sizeof(r); i++)
            r[i] = (unsigned char)((ts.tv_nsec >> (i % 4 * 8)) ^ (getpid() >> (i % 3 * 8)) ^ (int)i);
    }
    int n = snprintf(name, NAME_LEN, "/gcoll-");
    for (size_t i = 0; i < sizeof(r); i++)
        n += snprintf(name + n, (size_t)(NAME_LEN - n), "%02x", r[i]);
}

/* Every rank reads a word from every peer with process_vm_readv; all must succeed. */
static int probe_cma(gcoll__shm_t *s, gcoll__boot_t *node)
{
    static const uint64_t magic = 0x67636f6c6c434d41ull; /* "gcollCMA" */
    uint64_t mine = (uint64_t)(uintptr_t)&magic, *addrs = calloc((size_t)s->info.n, sizeof(uint64_t));
    int ok = addrs != NULL, all = 0;
    if (ok && gcoll__boot_allgather(node, &mine, addrs, sizeof(mine)) != GCOLL_SUCCESS)
        ok = 0;
    for (int q = 0; ok && q < s->info.n; q++) {
        uint64_t v = 0;
        ok = q == s->info.me || (gcoll__shm_read(s, q, &v, addrs[q], sizeof(v)) == GCOLL_SUCCESS && v == magic);
    }
    free(addrs);
    all = ok;
    if (gcoll__boot_min_int(node, &all) != GCOLL_SUCCESS)
        all = 0;
    gcoll__error_clear();
    return all;
}

gcoll_status_t gcoll__shm_create(gcoll__boot_t *node, gcoll__shm_t **out)
{
    *out = NULL;
    gcoll__shm_t *s = calloc(1, sizeof(*s));
    if (!s)
        return gcoll__error(GCOLL_ERR_NOMEM, "shm: no memory for the channel");
    s->info.me = node->rank;
    s->info.n = node->size;
    s->info.slot_bytes = (gcoll__config.shm_slot_size + 63) & ~(size_t)63;
    s->info.chunk_bytes = gcoll__config.shm_chunk_size;
    s->info.read_bytes = gcoll__config.shm_read_chunk ? gcoll__config.shm_read_chunk
        : gcoll__topo()->l2                           ? gcoll__topo()->l2
                                                      : (size_t)1 << 20;
    s->cell_bytes = (gcoll__config.shm_cell_size + 63) & ~(size_t)63;
    s->depth = gcoll__config.shm_ring_depth;
    s->pair_bytes = GCOLL_SHM_ACK_BYTES + (size_t)s->depth * (sizeof(gcoll__shm_cell_t) + s->cell_bytes);
    size_t ctrl_off, slots_off, rings_off, bytes = layout(s, &ctrl_off, &slots_off, &rings_off);

    char name[NAME_LEN] = "";
    int fd = -1;
    if (s->info.me == 0) {
        random_name(name);
        fd = create_segment(name, bytes);
        if (fd < 0) {
            GCOLL_LOG(GCOLL_LOG_WARN,
                      "shm: cannot create %s (%zu bytes): %s; this node's ranks use the point-to-point "
                      "transport instead (GCOLL_TRANSPORT_INTRA) (HINT: check /dev/shm)",
                      name, bytes, strerror(errno));
            name[0] = '\0';
        }
    }
    gcoll_status_t st = gcoll__boot_bcast(node, name, NAME_LEN, 0);
    if (st != GCOLL_SUCCESS && fd >= 0) { /* rank 0 made it: nobody else will unlink it */
        close(fd);
        shm_unlink(name);
    }
    if (st != GCOLL_SUCCESS || !name[0]) {
        free(s);
        return st;
    }
    if (s->info.me != 0)
        fd = shm_open(name, O_RDWR, 0600);
    void *base = fd >= 0 ? mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    int mapped = base != MAP_FAILED, all = mapped;
    if (fd >= 0)
        close(fd);
    st = gcoll__boot_min_int(node, &all);
    if (s->info.me == 0)
        shm_unlink(name); /* every rank has it mapped, or the channel is abandoned */
    if (st != GCOLL_SUCCESS) {
        if (mapped)
            munmap(base, bytes);
        free(s);
        return st;
    }
    if (!all) {
        GCOLL_LOG(GCOLL_LOG_WARN,
                  "shm: a local rank could not map the segment; this node's ranks use the "
                  "point-to-point transport instead (GCOLL_TRANSPORT_INTRA)");
        if (mapped)
            munmap(base, bytes);
        free(s);
        return GCOLL_SUCCESS;
    }
    s->base = base;
    s->map_bytes = bytes;
    s->hdr = base;
    s->ctrl = (gcoll__shm_ctrl_t *)((char *)base + ctrl_off);
    s->slots = (char *)base + slots_off;
    s->rings = (char *)base + rings_off;
    s->pids = calloc((size_t)s->info.n, sizeof(pid_t));
    s->tmp_stride = (s->info.chunk_bytes + 63) & ~(size_t)63;
    s->tmp = aligned_alloc(GCOLL_SHM_LINE, 2 * s->tmp_stride);
    if (!s->pids || !s->tmp) {
        gcoll__shm_destroy(s);
        return gcoll__error(GCOLL_ERR_NOMEM, "shm: no memory for the channel");
    }
    pid_t me = getpid();
    st = gcoll__boot_allgather(node, &me, s->pids, sizeof(me));
    if (st != GCOLL_SUCCESS) {
        gcoll__shm_destroy(s);
        return st;
    }
    int mode = gcoll__config.shm_single_copy; /* 0 auto, 1 on, 2 off */
    s->info.cma = mode != 2 && probe_cma(s, node);
    if (mode == 1 && !s->info.cma)
        GCOLL_LOG(GCOLL_LOG_WARN,
                  "shm: GCOLL_SHM_SINGLE_COPY=on but process_vm_readv is not permitted "
                  "between these processes; copying through the segment (HINT: ptrace_scope, containers)");
    GCOLL_LOG(GCOLL_LOG_INFO, "shm: %d local ranks, segment %zu bytes, slots %zu bytes, single copy %s", s->info.n,
              bytes, s->info.slot_bytes, s->info.cma ? "on" : "off");
    *out = s;
    return GCOLL_SUCCESS;
}

void gcoll__shm_destroy(gcoll__shm_t *s)
{
    if (!s)
        return;
    if (s->base)
        munmap(s->base, s->map_bytes);
    free(s->p2p);
    free(s->pids);
    free(s->tmp);
    free(s);
}

static long futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
    return syscall(SYS_futex, (uint32_t *)addr, op, val, ts, NULL, 0);
}

/* Sleepers and setters follow Dekker's pattern: a setter stores its counter and then reads
 * the sleeper counts; a sleeper counts itself and then re-reads the counters. Sequential
 * consistency makes at least one of them see the other, so a wake is never lost, and the
 * common case (nobody asleep) costs the setter no shared write beyond its own counter. */
static void wake_rank(gcoll__shm_t *s, int q)
{
    gcoll__shm_ctrl_t *c = &s->ctrl[q];
    if (atomic_load(&c->asleep)) {
        atomic_fetch_add(&c->wake, 1);
        futex(&c->wake, FUTEX_WAKE, INT32_MAX, NULL);
    }
}

void gcoll__shm_set(gcoll__shm_t *s, _Atomic uint64_t *counter, uint64_t v)
{
    atomic_store(counter, v);
    if (!atomic_load(&s->hdr->sleepers))
        return;
    /* sequentially consistent loads: of two ranks that complete v at once, one sees the other */
    size_t at = (size_t)((char *)counter - (char *)&s->ctrl[s->info.me]);
    for (int q = 0; q < s->info.n; q++)
        if (atomic_load((_Atomic uint64_t *)((char *)&s->ctrl[q] + at)) < v)
            return;
    for (int q = 0; q < s->info.n; q++)
        wake_rank(s, q);
}

void gcoll__shm_ring_event(gcoll__shm_t *s, uint64_t events, int peer)
{
    atomic_store(&s->ctrl[s->info.me].rings, events);
    if (!atomic_load(&s->hdr->sleepers))
        return;
    for (int q = 0; q < s->info.n; q++)
        if (peer < 0 || q == peer)
            wake_rank(s, q);
}

static int all_reached(gcoll__shm_t *s, uint64_t seq, int ready)
{
    for (int q = 0; q < s->info.n; q++) {
        _Atomic uint64_t *c = ready ? &s->ctrl[q].ready : &s->ctrl[q].arrive;
        if (atomic_load_explicit(c, memory_order_acquire) < seq)
            return 0;
    }
    return 1;
}

int gcoll__shm_all_arrived(gcoll__shm_t *s, uint64_t seq)
{
    return all_reached(s, seq, 0);
}

int gcoll__shm_all_ready(gcoll__shm_t *s, uint64_t seq)
{
    return all_reached(s, seq, 1);
}

/* A digest of every counter of the node: it changes whenever one does. */
uint32_t gcoll__shm_ticket(gcoll__shm_t *s)
{
    uint64_t sum = 0;
    for (int q = 0; q < s->info.n; q++)
        sum += atomic_load(&s->ctrl[q].arrive) + atomic_load(&s->ctrl[q].ready) + atomic_load(&s->ctrl[q].rings);
    return (uint32_t)sum;
}

void gcoll__shm_sleep(gcoll__shm_t *s, uint32_t ticket, long timeout_us)
{
    struct timespec ts = {timeout_us / 1000000, (timeout_us % 1000000) * 1000};
    gcoll__shm_ctrl_t *c = &s->ctrl[s->info.me];
    atomic_fetch_add(&c->asleep, 1);
    atomic_fetch_add(&s->hdr->sleepers, 1);
    uint32_t w = atomic_load(&c->wake);
    if (gcoll__shm_ticket(s) == ticket) /* nothing moved since the caller last looked */
        futex(&c->wake, FUTEX_WAIT, w, &ts);
    atomic_fetch_sub(&s->hdr->sleepers, 1);
    atomic_fetch_sub(&c->asleep, 1);
}

void gcoll__shm_laggards(gcoll__shm_t *s, uint64_t seq, int ready, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int q = 0; q < s->info.n; q++) {
        _Atomic uint64_t *c = ready ? &s->ctrl[q].ready : &s->ctrl[q].arrive;
        if (atomic_load_explicit(c, memory_order_acquire) < seq) {
            size_t used = strlen(buf);
            snprintf(buf + used, len - used, "%s%d", used ? ", " : "", q);
        }
    }
}

int gcoll__shm_dead_peer(gcoll__shm_t *s, char *why, size_t len)
{
    for (int q = 0; q < s->info.n; q++) {
        if (q == s->info.me)
            continue;
        if (gcoll__process_gone(s->pids[q])) {
            snprintf(why, len, "its process (pid %d on this host) has exited", (int)s->pids[q]);
            return q;
        }
    }
    return -1;
}

static gcoll_status_t cma(gcoll__shm_t *s, int peer, void *local, uint64_t remote, size_t bytes, int write)
{
    while (bytes) {
        struct iovec l = {local, bytes}, r = {(void *)(uintptr_t)remote, bytes};
        ssize_t got = write ? process_vm_writev(s->pids[peer], &l, 1, &r, 1, 0)
                            : process_vm_readv(s->pids[peer], &l, 1, &r, 1, 0);
        if (got <= 0 && errno == ESRCH) /* named by communicator rank: the engine may not see it gone yet */
            return gcoll__error(GCOLL_ERR_REMOTE,
                                "shm: rank %d's process (pid %d on this host) has exited: "
                                "process_vm_%sv: %s",
                                gcoll__shm_rank_of(s, peer), (int)s->pids[peer], write ? "write" : "read",
                                strerror(ESRCH));
        if (got <= 0)
            return gcoll__error(GCOLL_ERR_TRANSPORT, "shm: process_vm_%sv with rank %d (pid %d) failed: %s",
                                write ? "write" : "read", gcoll__shm_rank_of(s, peer), (int)s->pids[peer],
                                strerror(errno));
        local = (char *)local + got;
        remote += (uint64_t)got;
        bytes -= (size_t)got;
    }
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll__shm_read(gcoll__shm_t *s, int peer, void *dst, uint64_t remote_src, size_t bytes)
{
    return cma(s, peer, dst, remote_src, bytes, 0);
}

gcoll_status_t gcoll__shm_write(gcoll__shm_t *s, int peer, uint64_t remote_dst, const void *src, size_t bytes)
{
    return cma(s, peer, (void *)src, remote_dst, bytes, 1);
}
