/* Framing for transports that carry raw tagged bytes (mpi, ofi, plugins): frame.c wraps an
 * endpoint of the raw table so that its messages carry their operation's descriptor and size,
 * for mismatch detection. Each such transport keeps its raw table and defines the framed one,
 * which the core uses, in its own folder with GCOLL_FRAMED. */
#ifndef GCOLL_FRAME_H
#define GCOLL_FRAME_H

#include "transports/transport.h"

#define GCOLL_FRAME_CTL_BYTES 256 /* a control message (header and inline payload) of a transport of exact sizes */
#define GCOLL_FRAME_CTL_MAX 8192  /* the most a control message carries where receives take shorter messages */

/* The framed endpoint over an endpoint of inner. ctl_max: the longest control message where
 * inner's receives take shorter messages (irecv_upto), at most GCOLL_FRAME_CTL_MAX, so that
 * messages up to it less the header travel as one; else control messages take
 * GCOLL_FRAME_CTL_BYTES. */
gcoll_status_t gcoll__frame_create(const gcoll__transport_t *inner, const gcoll__bootstrap_t *boot, size_t ctl_max,
                                   gcoll__tp_t **tp);

/* The framed table's entries (transport.h says what each does). */
size_t gcoll__frame_addr_len(gcoll__tp_t *tp);
gcoll_status_t gcoll__frame_addr(gcoll__tp_t *tp, void *buf);
gcoll_status_t gcoll__frame_connect(gcoll__tp_t *tp, const void *all);
gcoll_status_t gcoll__frame_isend(gcoll__tp_t *tp, int peer, uint32_t tag, const void *buf, size_t bytes,
                                  gcoll__tp_req_t **out);
gcoll_status_t gcoll__frame_irecv(gcoll__tp_t *tp, int peer, uint32_t tag, void *buf, size_t bytes,
                                  gcoll__tp_req_t **out);
gcoll_status_t gcoll__frame_test(gcoll__tp_t *tp, gcoll__tp_req_t *r, int *done);
void gcoll__frame_cancel(gcoll__tp_t *tp, gcoll__tp_req_t *r);
void gcoll__frame_mismatch(gcoll__tp_t *tp, const char *why);
gcoll_status_t gcoll__frame_check(gcoll__tp_t *tp);
void gcoll__frame_close(gcoll__tp_t *tp);
/* Pass-throughs to inner's reg_mem, dereg_mem and dead_peer, for an inner table that has them. */
gcoll_status_t gcoll__frame_reg_mem(gcoll__tp_t *tp, void *buf, size_t bytes, void **handle);
void gcoll__frame_dereg_mem(gcoll__tp_t *tp, void *handle);
int gcoll__frame_dead_peer(gcoll__tp_t *tp, char *why, size_t len);

/* A framed table named NAME whose create (CREATE) calls gcoll__frame_create; the optional hooks
 * it passes through follow as designated initializers. Without them it registers no memory,
 * waits on nothing and tells of no dead peers. */
#define GCOLL_FRAMED(NAME, CREATE, ...)                                                               \
    {                                                                                                 \
        .name = NAME, .create = CREATE, .addr_len = gcoll__frame_addr_len, .addr = gcoll__frame_addr, \
        .connect = gcoll__frame_connect, .isend = gcoll__frame_isend, .irecv = gcoll__frame_irecv,    \
        .test = gcoll__frame_test, .cancel = gcoll__frame_cancel, .mismatch = gcoll__frame_mismatch,  \
        .check = gcoll__frame_check, .close = gcoll__frame_close, __VA_ARGS__                         \
    }

#endif
