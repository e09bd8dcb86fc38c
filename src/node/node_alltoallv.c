/* Intra-node alltoallv over the node channel, in one round. A rank whose outgoing blocks fit its
 * slot stages them there (one copy in, one out: no system call, and it need not wait for the
 * peers to finish); otherwise it publishes its send buffer's address and its send displacements,
 * and each peer reads its block straight into its output (process_vm_readv: one copy). Each rank
 * decides for itself from its own counts and says which in its slot, so the ranks need not agree
 * on sizes none of them knows whole. In place, blocks read from a peer's buffer wait in scratch
 * until every peer has read its own out of this rank's buffer. */
#include <string.h>

#include "node/node_op.h"

/* A slot: the header (whether staged, and each peer's block as an element offset, into the data
 * after the header when staged, else into the send buffer), then the staged blocks. */
#define HEADER(n) (((size_t)(n) + 1) * sizeof(size_t) + 63) / 64 * 64

int gcoll__node_alltoallv_usable(const gcoll__coll_args_t *a)
{
    return gcoll__node_cma_usable(a) && gcoll__shm_info(a->shm)->slot_bytes >= HEADER(a->size);
}

static gcoll_status_t publish(gcoll__node_op_t *op)
{
    const gcoll__coll_args_t *a = &op->a;
    size_t es = a->esize, *head = (size_t *)gcoll__shm_slot(op->shm, op->me, gcoll__node_seq(op)), at = 0;
    char *data = (char *)head + HEADER(op->n);
    head[0] = (size_t)op->staged;
    for (int q = 0; q < op->n; q++) {
        if (!op->staged) {
            head[1 + q] = a->sdispls[q];
            continue;
        }
        head[1 + q] = at;
        if (q != op->me) {
            memcpy(data + at * es, op->src + a->sdispls[q] * es, a->scounts[q] * es);
            at += a->scounts[q];
        }
    }
    if (!op->staged)
        gcoll__shm_publish(op->shm, op->src, NULL);
    return GCOLL_SUCCESS;
}

/* Where peer q's block lands: the output, or scratch in place while peers read this rank's buffer
 * (op->tab: its offset there). */
static char *landing(gcoll__node_op_t *op, int q)
{
    const gcoll__coll_args_t *a = &op->a;
    return op->scratch ? op->scratch + op->tab[q] * a->esize : (char *)a->recvbuf + a->displs[q] * a->esize;
}

static gcoll_status_t work(gcoll__node_op_t *op)
{
    const gcoll__coll_args_t *a = &op->a;
    size_t es = a->esize;
    int me = op->me;
    if (!op->inplace)
        memcpy((char *)a->recvbuf + a->displs[me] * es, (const char *)a->sendbuf + a->sdispls[me] * es,
               a->counts[me] * es);
    for (int q = 0; q < op->n; q++) {
        if (q == me || !a->counts[q])
            continue;
        const size_t *head = (const size_t *)gcoll__shm_slot(op->shm, q, gcoll__node_seq(op));
        size_t at = head[1 + me], bytes = a->counts[q] * es;
        if (head[0])
            memcpy(landing(op, q), (const char *)head + HEADER(op->n) + at * es, bytes);
        else
            GCOLL_CHECK(gcoll__shm_read(op->shm, q, landing(op, q), gcoll__shm_peer_src(op->shm, q) + at * es, bytes));
    }
    return GCOLL_SUCCESS;
}

static gcoll_status_t finish(gcoll__node_op_t *op)
{
    const gcoll__coll_args_t *a = &op->a;
    for (int q = 0; q < op->n; q++)
        if (q != op->me && a->counts[q])
            memcpy((char *)a->recvbuf + a->displs[q] * a->esize, landing(op, q), a->counts[q] * a->esize);
    return GCOLL_SUCCESS;
}

void gcoll__node_alltoallv_cma(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    size_t in = 0, out = 0; /* what arrives, what leaves */
    for (int q = 0; q < a->size; q++)
        if (q != a->rank) {
            in += a->counts[q];
            out += a->scounts[q];
        }
    int staged = HEADER(a->size) + out * a->esize <= gcoll__shm_info(a->shm)->slot_bytes;
    /* in place, a rank that publishes its buffer keeps what arrives aside until the peers are done */
    int aside = a->sendbuf == a->recvbuf && !staged && in;
    /* every rank runs it, its counts all zero or not: the channel's rounds are shared */
    gcoll__node_op_t *op = gcoll__node_vop(s, a, 1, 1, publish, work, aside ? in * a->esize : 0);
    if (!op)
        return;
    op->staged = staged;
    if (!aside)
        return;
    op->finish = finish;
    size_t at = 0;
    for (int q = 0; q < a->size; q++) {
        op->tab[q] = at;
        at += q == a->rank ? 0 : a->counts[q];
    }
}
