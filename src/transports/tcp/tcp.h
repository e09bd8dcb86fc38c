/* The TCP transport's internals, shared by its files (tcp.c: the table and the endpoint's
 * lifecycle; tcp_send.c, tcp_recv.c: the send and receive paths; tcp_progress.c: progress and
 * test; tcp_req.c: requests and failures; tcp_conn.c: connections and the secret handshake;
 * tcp_if.c: interface choice; tcp_wire.c: the byte layout of frames and hellos) and by
 * tests/transport/test_tcp.c, which reaches into them. */
#ifndef GCOLL_TCP_H
#define GCOLL_TCP_H

#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "transports/mismatch.h"
#include "transports/transport.h"

extern const gcoll__transport_t gcoll__transport_tcp;

/* Wire format. Every frame starts with a fixed header; hellos open every connection. */
#define TCP_HDR_BYTES 56
#define TCP_HELLO_BYTES 32
#define TCP_ACK_BYTES 8
#define TCP_SECRET_BYTES 16
#define TCP_EAGER_MAX (16 * 1024 * 1024) /* the largest eager frame a receiver takes (GCOLL_TCP_EAGER's bound) */
#define TCP_CHUNK_MAX (512 * 1024)       /* payload of one DATA frame: control frames cut in between */
#define TCP_RBUF_BYTES (16 * 1024)       /* per socket: headers and small payloads in one recv */
#define TCP_NOTICE_MAX 320               /* text of a MISMATCH frame */

/* BYE: the peer closes its endpoint. MISMATCH: the peer found that ranks run different
 * operations under one tag; its payload is the message naming both, and it fails this endpoint.
 * DOWN (lazy endpoints): the peer lost rank aux (its process gone); the payload says how. */
enum { TCP_EAGER = 1, TCP_RTS, TCP_CTS, TCP_DATA, TCP_BYE, TCP_MISMATCH, TCP_DOWN };

typedef struct {
    uint32_t magic, seq, tag;
    uint8_t type;
    uint64_t len;         /* payload bytes after the header */
    uint64_t id;          /* RTS, CTS: the sender's message id; DATA: the receiver's id */
    uint64_t aux;         /* RTS: message size; CTS: receiver's id (0: declined); DATA: offset */
    gcoll__opdesc_t desc; /* EAGER, RTS: the sender's operation under this tag (zero: unknown) */
} gcoll__tcp_hdr_t;

void gcoll__tcp_hdr_pack(unsigned char *buf, const gcoll__tcp_hdr_t *h);
void gcoll__tcp_hdr_unpack(const unsigned char *buf, gcoll__tcp_hdr_t *h);
/* Checks a header that arrived from `peer` on a socket that expects sequence number `seq`
 * before any of its payload is read; on failure fills why and returns GCOLL_ERR_TRANSPORT. */
gcoll_status_t gcoll__tcp_hdr_check(const gcoll__tcp_hdr_t *h, uint32_t seq, char *why, size_t len);
void gcoll__tcp_hello_pack(unsigned char *buf, const unsigned char *secret, int rank, int index);
/* Verifies a hello received by rank `me`: magic, secret, a rank below `below` other than me (me
 * where lower ranks connect to higher ones, the size where any may dial), an index below nsocks. */
gcoll_status_t gcoll__tcp_hello_check(const unsigned char *buf, const unsigned char *secret, int me, int below,
                                      int nsocks, int *rank, int *index, char *why, size_t len);
void gcoll__tcp_ack_pack(unsigned char *buf, int rank);
int gcoll__tcp_ack_ok(const unsigned char *buf, int rank);
/* A hello declined because both ranks dialled each other at once: the lower rank's dial stands. */
void gcoll__tcp_decline_pack(unsigned char *buf, int rank);
int gcoll__tcp_declined(const unsigned char *buf, int rank);

/* One send or receive, on its peer's list of requests in flight (in posting order). */
enum { REQ_POSTED = 1, REQ_WAIT_UNEXP, REQ_EAGER_IN, REQ_RNDV_IN, REQ_EAGER_OUT, REQ_WAIT_CTS, REQ_DATA_OUT };

typedef struct tcp_frame {
    struct tcp_frame *next;
    gcoll__tcp_hdr_t hdr;
    const char *data;     /* EAGER payload, written straight from the user's buffer */
    gcoll__tp_req_t *req; /* completed when written (EAGER); NULL for control frames */
    int owned;            /* malloc'ed by the transport (a declining CTS): freed once taken */
    int prio;             /* its place in the queue: a message's operation's priority, CTS_PRIO, NOTICE_PRIO */
} tcp_frame_t;
/* A go-ahead matches no receive, so it may overtake queued messages (a sender waits on it); a
 * mismatch notice goes after everything queued. */
#define TCP_CTS_PRIO INT_MAX
#define TCP_NOTICE_PRIO INT_MIN

typedef struct tcp_stripe {
    struct tcp_stripe *next;
    gcoll__tp_req_t *req;
    size_t pos, end; /* bytes of the message still to frame on this socket */
} tcp_stripe_t;

struct tcp_peer;
typedef struct tcp_unexp tcp_unexp_t;

struct gcoll__tp_req {
    struct gcoll__tp_req *prev, *next;
    struct tcp_peer *peer;
    int is_recv, state, done;
    int prio; /* send: its data goes out before lower priorities' (isend_prio) */
    uint32_t tag;
    char *buf;
    size_t bytes, left; /* left: bytes not yet written (send) or read (receive) */
    uint64_t id;        /* send: its RTS id; receive: the id its DATA frames carry */
    tcp_frame_t frame;  /* its EAGER, RTS or CTS frame */
    tcp_stripe_t *stripes;
    tcp_unexp_t *waits_for; /* REQ_WAIT_UNEXP: the unexpected message still arriving */
    gcoll_status_t status;
    char why[200];
};

/* A message that arrived before its receive: an eager payload, or a rendezvous offer. */
struct tcp_unexp {
    tcp_unexp_t *next;
    int type, complete; /* complete: the eager payload is all here */
    uint32_t tag;
    size_t bytes;
    uint64_t sid;
    gcoll__opdesc_t desc;
    char *data;
    gcoll__tp_req_t *waiter; /* a receive that matched it while its payload was arriving */
};

/* What epoll's data pointer points at. */
enum { EV_LISTEN = 1, EV_SOCK, EV_PEND };
typedef struct {
    int kind, fd;
} tcp_ev_t;

typedef struct tcp_sock {
    tcp_ev_t ev;
    struct tcp_peer *peer;
    int index, rd_ready, wr_ready, eof;
    int dialing; /* our outgoing handshake for it is in flight */
    int hup;     /* epoll saw the peer's close: read to the end, a short read does not drain it */
    uint32_t rseq, wseq;
    /* input: header bytes and small payloads land in rbuf; large payloads go straight to dst */
    unsigned char *rbuf;
    size_t rlen, rpos;
    int in_payload;
    gcoll__tcp_hdr_t hdr;
    char *dst; /* NULL: the payload is discarded */
    size_t need;
    gcoll__tp_req_t *dst_req;
    tcp_unexp_t *dst_unexp;
    /* output: control frames first, then chunks of data stripes, highest priority first */
    tcp_frame_t *ctrl, *ctrl_tail;
    tcp_stripe_t *data;
    int busy; /* a frame is partly written: cur_* describe it */
    unsigned char cur_hdr[TCP_HDR_BYTES];
    const char *cur_data;
    size_t cur_len, cur_off; /* payload bytes; bytes of header + payload written */
    gcoll__tp_req_t *cur_req;
    char *cur_owned; /* the rest of an abandoned request's payload, copied so the frame ends whole */
} tcp_sock_t;

/* Queues st on s behind the stripes of its message's priority and before lower ones'. */
void gcoll__tcp_queue_stripe(tcp_sock_t *s, tcp_stripe_t *st);

typedef struct tcp_peer {
    int rank, nready, neof;
    gcoll_status_t failed; /* GCOLL_SUCCESS, or what its requests end with: GCOLL_ERR_REMOTE when it died */
    int left;              /* said BYE: it closed its endpoint on purpose, so what waits on it times out */
    tcp_sock_t *socks;
    struct sockaddr_in addr;
    gcoll__tp_req_t *reqs, *reqs_tail;
    tcp_unexp_t *unexp, *unexp_tail;
    uint64_t next_sid, next_rid;     /* ids given so far: an id above them was never issued */
    char why[200];                   /* why the peer failed */
    char notice[TCP_NOTICE_MAX + 1]; /* the text of a MISMATCH or DOWN frame arriving from it */
} tcp_peer_t;

typedef struct tcp_pend tcp_pend_t; /* a connection whose handshake is not finished */

struct gcoll__tp {
    int rank, size, nsocks, epfd;
    int lazy; /* GCOLL_TCP_CONNECT=lazy: a peer's sockets open when a request first names it */
    /* The sleeper: an epoll set holding epfd, readable while epfd has events. Waiting on it
     * takes no lock and consumes none of epfd's (edge-triggered) events. */
    int sleepfd;
    atomic_int leftover; /* the last progress pass left input or output for the next one */
    tcp_ev_t listen;
    struct sockaddr_in me;
    unsigned char secret[TCP_SECRET_BYTES];
    tcp_peer_t *peers;
    tcp_pend_t *pend;
    int npend;
    const gcoll__optab_t *optab; /* the communicator's operations by tag (NULL: unchecked) */
    /* once ranks were found running different operations under one tag, every request fails
     * with its why, whose start is also the MISMATCH frames' payload */
    gcoll__mismatch_t mm;
    unsigned long rejected;   /* connections closed by the handshake check (tests read them) */
    char last_rejection[160]; /* and why the last one was */
};

/* tcp_if.c: picks the interface (collective over boot->comm) and fills tp->me's address. */
gcoll_status_t gcoll__tcp_choose_if(const gcoll__bootstrap_t *boot, struct in_addr *addr);
typedef struct {
    char name[IFNAMSIZ];
    struct in_addr addr;
    int loopback;
} gcoll__tcp_iface_t;
/* The IPv4 interfaces that are up, one address per name, in the kernel's order (at most cap). */
int gcoll__tcp_list_ifaces(gcoll__tcp_iface_t *out, int cap);
/* For gcoll-info: the interface this rank would take in a job of one rank (the same decision,
 * GCOLL_TCP_IFNAME honoured), and why; an error naming the variable when it matches nothing. */
gcoll_status_t gcoll__tcp_probe(gcoll__tcp_iface_t *pick, char *why, size_t len);
/* tcp_conn.c */
gcoll_status_t gcoll__tcp_listen(gcoll__tp_t *tp);
gcoll_status_t gcoll__tcp_connect_all(gcoll__tp_t *tp, const void *all_addrs);
/* Lazy endpoints: dials peer's sockets not open nor being opened (either rank may dial; when both
 * do at once, the lower rank's connection stands). A peer that cannot be reached fails
 * (GCOLL_ERR_REMOTE), as one whose connection broke. */
void gcoll__tcp_reach(gcoll__tp_t *tp, int peer);
void gcoll__tcp_accept(gcoll__tp_t *tp);
gcoll_status_t gcoll__tcp_pend_event(gcoll__tp_t *tp, tcp_pend_t *p, unsigned events);
void gcoll__tcp_pend_expire(gcoll__tp_t *tp);
void gcoll__tcp_pend_free_all(gcoll__tp_t *tp);
void gcoll__tcp_sock_close(gcoll__tp_t *tp, tcp_sock_t *s);
double gcoll__tcp_now(void);

/* tcp_req.c: a request to peer, linked last among its requests; unlinking one. */
gcoll_status_t gcoll__tcp_req_new(gcoll__tp_t *tp, int peer, uint32_t tag, const void *buf, size_t bytes, int is_recv,
                                  gcoll__tp_req_t **out);
void gcoll__tcp_req_unlink(tcp_peer_t *p, gcoll__tp_req_t *r);
/* Ends a request with st (and the message fmt, unless NULL): test reports it. Nothing on the
 * sockets may point at it any more. */
void gcoll__tcp_complete(gcoll__tp_req_t *r, gcoll_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void gcoll__tcp_unexp_unlink(tcp_peer_t *p, tcp_unexp_t *u);
void gcoll__tcp_unexp_free(tcp_unexp_t *u);
/* Drops everything a socket holds; the requests it served are failed by the caller. */
void gcoll__tcp_sock_reset(gcoll__tp_t *tp, tcp_sock_t *s);
/* The peer is gone (GCOLL_ERR_REMOTE) or broke the protocol: its sockets close and what waits
 * on it fails with status and the message (logged as a warning where warn is set). */
void gcoll__tcp_fail_peer(gcoll__tp_t *tp, tcp_peer_t *p, gcoll_status_t status, int warn, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Socket s reached end of file or failed (err, naming what it was doing). */
void gcoll__tcp_sock_gone(gcoll__tp_t *tp, tcp_sock_t *s, const char *doing, int err);
void gcoll__tcp_cancel(gcoll__tp_t *tp, gcoll__tp_req_t *r); /* the table's cancel */
/* Mismatch detection (mismatch.h): a message from p under tag whose descriptor (theirs) did not
 * agree; the table's mismatch hook; a MISMATCH frame of len bytes has arrived in p->notice. */
void gcoll__tcp_found_mismatch(gcoll__tp_t *tp, tcp_peer_t *p, uint32_t tag, const gcoll__opdesc_t *theirs);
void gcoll__tcp_mismatch(gcoll__tp_t *tp, const char *why);
void gcoll__tcp_notice_arrived(gcoll__tp_t *tp, tcp_peer_t *p, size_t len);
/* A DOWN frame of len bytes from p, about rank dead, has arrived in p->notice. */
void gcoll__tcp_down_arrived(gcoll__tp_t *tp, tcp_peer_t *p, uint64_t dead, size_t len);

/* tcp_send.c: the table's isend and isend_prio; queueing a control frame on p's socket 0; the
 * stream of a rendezvous message once the receiver's CTS (its id rid) came; writing frames
 * until the socket's buffer is full or nothing is left. */
gcoll_status_t gcoll__tcp_isend(gcoll__tp_t *tp, int peer, uint32_t tag, const void *buf, size_t bytes,
                                gcoll__tp_req_t **out);
gcoll_status_t gcoll__tcp_isend_prio(gcoll__tp_t *tp, int peer, uint32_t tag, const void *buf, size_t bytes, int prio,
                                     gcoll__tp_req_t **out);
void gcoll__tcp_send_ctrl(gcoll__tp_t *tp, tcp_peer_t *p, tcp_frame_t *f);
void gcoll__tcp_start_stream(gcoll__tp_t *tp, gcoll__tp_req_t *r, uint64_t rid);
void gcoll__tcp_sock_write(gcoll__tp_t *tp, tcp_sock_t *s);

/* tcp_recv.c: the table's irecv; reading a socket until it runs dry. */
gcoll_status_t gcoll__tcp_irecv(gcoll__tp_t *tp, int peer, uint32_t tag, void *buf, size_t bytes,
                                gcoll__tp_req_t **out);
void gcoll__tcp_sock_read(gcoll__tp_t *tp, tcp_sock_t *s);

/* tcp_progress.c: waits up to timeout_ms for events and notes them (sockets) or handles them
 * (handshakes); the table's test, wait, dead_peer and check. */
gcoll_status_t gcoll__tcp_poll(gcoll__tp_t *tp, int timeout_ms);
gcoll_status_t gcoll__tcp_test(gcoll__tp_t *tp, gcoll__tp_req_t *r, int *done);
gcoll_status_t gcoll__tcp_wait(gcoll__tp_t *tp, long usec);
int gcoll__tcp_dead_peer(gcoll__tp_t *tp, char *why, size_t len);
gcoll_status_t gcoll__tcp_check(gcoll__tp_t *tp);

#endif
