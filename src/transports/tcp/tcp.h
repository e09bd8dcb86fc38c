/* The TCP transport's internals, shared by its files (tcp.c: the table and the endpoint's
 * lifecycle; tcp_pool.c: the process's connections, shared by its endpoints; tcp_send.c,
 * tcp_recv.c: the send and receive paths; tcp_progress.c: progress and test; tcp_req.c: requests
 * and failures; tcp_conn.c: connections and the secret handshake; tcp_if.c: interface choice;
 * tcp_wire.c: the byte layout of frames and hellos) and by tests/transport/test_tcp.c. */
#ifndef GCOLL_TCP_H
#define GCOLL_TCP_H

#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "transports/mismatch.h"
#include "transports/transport.h"

extern const gcoll__transport_t gcoll__transport_tcp;

/* Wire format. Every frame starts with a fixed header; hellos open every connection. */
#define TCP_HDR_BYTES 64
#define TCP_HELLO_BYTES 40
#define TCP_ACK_BYTES 12
#define TCP_SECRET_BYTES 16
#define TCP_EAGER_MAX (16 * 1024 * 1024) /* the largest eager frame a receiver takes (GCOLL_TCP_EAGER's bound) */
#define TCP_CHUNK_MAX (512 * 1024)       /* payload of one DATA frame: control frames cut in between */
#define TCP_RBUF_BYTES (16 * 1024)       /* per socket: headers and small payloads in one recv */
#define TCP_NOTICE_MAX 320               /* text of a MISMATCH frame */
#define TCP_GONE_MAX 4096                /* closed channels a pool still accepts dials for */

/* Every frame names its channel: the communicator whose endpoints exchange it, since one
 * connection between two processes carries all of them.
 * BYE: the peer closes its endpoint. MISMATCH: the peer found that ranks run different
 * operations under one tag; its payload is the message naming both, and it fails this endpoint.
 * DOWN (lazy endpoints): the peer lost rank aux (its process gone); the payload says how.
 * IDLE, IDLE_OK, IDLE_NO belong to the link, not to a channel (chan 0, socket 0, no payload):
 * a process over GCOLL_TCP_MAX_CONNS asks to close an idle link (id: frames it sent, aux: frames
 * it received, neither counting these three), and the peer agrees when both counts match its own
 * and it has nothing to send or to read, or declines (tcp_idle.c). */
enum { TCP_EAGER = 1, TCP_RTS, TCP_CTS, TCP_DATA, TCP_BYE, TCP_MISMATCH, TCP_DOWN, TCP_IDLE, TCP_IDLE_OK, TCP_IDLE_NO };
#define TCP_IS_IDLE_FRAME(type) ((type) >= TCP_IDLE && (type) <= TCP_IDLE_NO)

typedef struct {
    uint32_t magic, seq, tag;
    uint8_t type;
    uint64_t chan;        /* the channel: the communicator's, the same on every rank */
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
/* A process is known by its listening address, as a number (address << 16 | port, host order):
 * what decides which of two processes dials (eager) or whose dial stands (both at once). */
uint64_t gcoll__tcp_key(const struct sockaddr_in *a);
/* A hello names the dialling process (its key), the socket index and the channel it dials for,
 * whose secret it carries. */
void gcoll__tcp_hello_pack(unsigned char *buf, const unsigned char *secret, uint64_t chan, uint64_t from, int index);
/* Reads a hello's magic, channel, key and index (0 where it is no hello); the caller finds the
 * channel's secret and calls hello_check. */
int gcoll__tcp_hello_peek(const unsigned char *buf, uint64_t *chan, uint64_t *from);
/* Verifies a hello received by the process of key `me` for a channel whose secret is `secret`:
 * magic, secret, a key other than me and, where only lower keys dial (below: 1), below me, an
 * index below nsocks. */
gcoll_status_t gcoll__tcp_hello_check(const unsigned char *buf, const unsigned char *secret, uint64_t me, int below,
                                      int nsocks, int *index, char *why, size_t len);
void gcoll__tcp_ack_pack(unsigned char *buf, uint64_t key);
int gcoll__tcp_ack_ok(const unsigned char *buf, uint64_t key);
/* A hello declined because both processes dialled each other at once: the lower key's stands. */
void gcoll__tcp_decline_pack(unsigned char *buf, uint64_t key);
int gcoll__tcp_declined(const unsigned char *buf, uint64_t key);

/* One send or receive, on its peer's list of requests in flight (in posting order). */
enum { REQ_POSTED = 1, REQ_WAIT_UNEXP, REQ_EAGER_IN, REQ_RNDV_IN, REQ_EAGER_OUT, REQ_WAIT_CTS, REQ_DATA_OUT };

typedef struct tcp_frame {
    struct tcp_frame *next;
    gcoll__tcp_hdr_t hdr;
    const char *data;     /* EAGER payload, written straight from the user's buffer */
    gcoll__tp_req_t *req; /* completed when written (EAGER); NULL for control frames */
    int owned;            /* malloc'ed by the transport (a declining CTS, a notice with its text after it):
                             freed once written */
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
struct tcp_link;
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
    struct tcp_link *link;
    struct tcp_peer *rpeer; /* the endpoint's peer the frame being read is for (NULL: discarded) */
    int index, rd_ready, wr_ready, eof;
    int dialing; /* our outgoing handshake for it is in flight */
    int held;    /* a frame for an endpoint not yet routed waits at the head of rbuf */
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

/* One rank of an endpoint: its requests and unexpected messages, over the connection (link) to
 * its process, which the process's other endpoints share. */
typedef struct tcp_peer {
    int rank;
    gcoll_status_t failed; /* GCOLL_SUCCESS, or what its requests end with: GCOLL_ERR_REMOTE when it died */
    int left;              /* said BYE: it closed its endpoint on purpose, so what waits on it times out */
    struct gcoll__tp *tp;  /* the endpoint it belongs to */
    struct tcp_link *link; /* its process's connection (NULL: this rank itself, or not yet routed) */
    tcp_sock_t *socks;     /* the link's sockets (NULL: no link) */
    gcoll__tp_req_t *reqs, *reqs_tail;
    tcp_unexp_t *unexp, *unexp_tail;
    uint64_t next_sid, next_rid;     /* ids given so far: an id above them was never issued */
    char why[200];                   /* why the peer failed */
    char notice[TCP_NOTICE_MAX + 1]; /* the text of a MISMATCH or DOWN frame arriving from it */
} tcp_peer_t;

/* The connection to one other process: GCOLL_TCP_NSOCKS sockets that carry the frames of every
 * endpoint (channel) the two share. A link that fails is never used again: a later endpoint's
 * route to that address gets a new one. */
typedef struct tcp_link {
    uint64_t key; /* the process's listening address (gcoll__tcp_key) */
    struct sockaddr_in addr;
    tcp_sock_t *socks;
    int nready, neof;
    int down;            /* its sockets failed or closed: every route over it has failed or left */
    tcp_peer_t **routes; /* each endpoint's peer that is this process */
    int nroutes, caproutes;
    /* Closing it while idle (tcp_idle.c). closing: we asked, and write nothing else until the
     * answer; retiring: we agreed to the peer's asking, and write nothing until its sockets
     * close. Frames queued meanwhile go out on the next connection. */
    int closing, retiring;
    uint64_t sent, recvd; /* frames since it connected, but the three idle ones */
    uint64_t used;        /* the pool's clock at its last frame: the least recently used closes first */
} tcp_link_t;

typedef struct tcp_pend tcp_pend_t; /* a connection whose handshake is not finished */

/* The process's connections: one listening socket, one epoll set and one link per peer process,
 * shared by every endpoint (communicator) that reaches that process. Everything in it and in its
 * endpoints is guarded by lock, which every entry of the table takes. */
typedef struct tcp_pool {
    pthread_mutex_t lock;
    int refs; /* endpoints */
    int nsocks, lazy;
    int epfd;
    /* The sleeper: an epoll set holding epfd, readable while epfd has events. Waiting on it
     * takes no lock and consumes none of epfd's (edge-triggered) events. */
    int sleepfd;
    atomic_int leftover; /* the last progress pass left input or output for the next one */
    tcp_ev_t listen;
    struct sockaddr_in me;
    uint64_t key;
    struct gcoll__tp *eps; /* its endpoints, by tp->next */
    tcp_link_t **links;    /* every link made, until the pool ends */
    int nlinks, caplinks;
    tcp_pend_t *pend;
    int npend;
    /* The channels of endpoints closed here, with their secrets: a peer may still dial for one
     * (its hello waited in the backlog), and the connection then serves the others. The latest
     * TCP_GONE_MAX. */
    struct tcp_gone {
        uint64_t chan;
        unsigned char secret[TCP_SECRET_BYTES];
    } * gone;
    int ngone;
    int max_links;             /* GCOLL_TCP_MAX_CONNS (0: no limit): open links beyond it close when idle */
    uint64_t clock;            /* counts frames: links' use times */
    unsigned long idle_closed; /* links closed while idle (tests read them) */
    unsigned long rejected;    /* connections closed by the handshake check (tests read them) */
    char last_rejection[160];  /* and why the last one was */
} tcp_pool_t;

struct gcoll__tp {
    tcp_pool_t *pool;
    struct gcoll__tp *next; /* the pool's next endpoint */
    uint64_t chan;          /* its channel: drawn by rank 0 with the secret, the same on every rank */
    int routed;             /* its peers have links: frames on its channel can be delivered */
    int rank, size, nsocks;
    int lazy; /* GCOLL_TCP_CONNECT=lazy: a link opens when a request first names its process */
    unsigned char secret[TCP_SECRET_BYTES];
    tcp_peer_t *peers;
    const gcoll__optab_t *optab; /* the communicator's operations by tag (NULL: unchecked) */
    /* once ranks were found running different operations under one tag, every request fails
     * with its why, whose start is also the MISMATCH frames' payload */
    gcoll__mismatch_t mm;
};

/* tcp_pool.c: the process's pool, made by its first endpoint (listening on addr, that endpoint's
 * choice) and freed with its last; joining it registers the endpoint's channel, leaving
 * unregisters it and its routes. Called under no lock. */
gcoll_status_t gcoll__tcp_pool_join(gcoll__tp_t *tp, const struct in_addr *addr);
void gcoll__tcp_pool_leave(gcoll__tp_t *tp);
/* A service pass over the process's pool, if it has one and no thread is in a pass now. */
void gcoll__tcp_service(void);
/* The live link to the process at addr, made (unconnected) if there is none. NULL: no memory. */
tcp_link_t *gcoll__tcp_link_get(tcp_pool_t *pool, const struct sockaddr_in *addr);
/* Routes p over link; the endpoint whose channel is chan (NULL: none); the peer of tp's endpoint
 * whose process is link (NULL: none). */
gcoll_status_t gcoll__tcp_route_add(tcp_link_t *link, tcp_peer_t *p);
gcoll__tp_t *gcoll__tcp_endpoint(tcp_pool_t *pool, uint64_t chan);
/* The secret of channel chan, of an endpoint open or closed here (NULL: never had it). */
const unsigned char *gcoll__tcp_chan_secret(tcp_pool_t *pool, uint64_t chan);
tcp_peer_t *gcoll__tcp_route(tcp_link_t *link, const gcoll__tp_t *tp);

/* tcp_if.c: picks the interface (collective over boot->comm): its address in *addr. */
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
gcoll_status_t gcoll__tcp_listen(tcp_pool_t *pool);
/* Routes the endpoint's peers over their processes' links (all_addrs: every rank's listening
 * address); eager endpoints then wait for every link to be up. Takes the pool's lock itself. */
gcoll_status_t gcoll__tcp_connect_all(gcoll__tp_t *tp, const void *all_addrs);
/* Lazy endpoints: dials the sockets of peer's link not open nor being opened (either process may
 * dial; when both do at once, the lower key's connection stands). A process that cannot be
 * reached fails its link (GCOLL_ERR_REMOTE), as one whose connection broke. */
void gcoll__tcp_reach(gcoll__tp_t *tp, int peer);
/* Dials the sockets of link l not open nor being opened, with tp's credentials. */
void gcoll__tcp_link_dial(gcoll__tp_t *tp, tcp_link_t *l);
void gcoll__tcp_accept(tcp_pool_t *pool);
void gcoll__tcp_pend_event(tcp_pool_t *pool, tcp_pend_t *p, unsigned events);
void gcoll__tcp_pend_expire(tcp_pool_t *pool);
void gcoll__tcp_pend_free_all(tcp_pool_t *pool);
void gcoll__tcp_sock_close(tcp_pool_t *pool, tcp_sock_t *s);
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
/* A control frame of the transport's own (owned) carrying a copy of text (len bytes). */
tcp_frame_t *gcoll__tcp_notice_frame(int type, uint64_t aux, const char *text, size_t len, int prio);
/* Closes a socket and forgets where its streams stood (read state, sequence numbers, a frame half
 * written), keeping what is queued to send: as if never connected. */
void gcoll__tcp_sock_rewind(tcp_pool_t *pool, tcp_sock_t *s);
/* Drops everything a socket holds and closes it; the requests it served are failed by the caller. */
void gcoll__tcp_sock_reset(tcp_pool_t *pool, tcp_sock_t *s);
/* One endpoint's peer failed (GCOLL_ERR_REMOTE: its process is gone) or broke the endpoint's
 * protocol: what waits on it fails with status and the message (logged as a warning where warn
 * is set). The link stays: other endpoints' traffic on it is whole. */
void gcoll__tcp_fail_peer(tcp_peer_t *p, gcoll_status_t status, int warn, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The link is lost or its stream broken: its sockets close and every endpoint's peer over it
 * fails with status and "tcp: rank R <what>" (R: its rank there), but for those that said BYE. */
void gcoll__tcp_fail_link(tcp_pool_t *pool, tcp_link_t *l, gcoll_status_t status, int warn, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Socket s reached end of file or failed (err, naming what it was doing). */
void gcoll__tcp_sock_gone(tcp_pool_t *pool, tcp_sock_t *s, const char *doing, int err);
void gcoll__tcp_cancel(gcoll__tp_t *tp, gcoll__tp_req_t *r); /* the table's cancel, lock held */
/* The endpoint closes (lock held): a goodbye on each link, its requests abandoned, and nothing
 * on the links points into it any more (its unexpected messages are the caller's to free). */
void gcoll__tcp_ep_drop(gcoll__tp_t *tp);
/* Mismatch detection (mismatch.h): a message from p under tag whose descriptor (theirs) did not
 * agree; the table's mismatch hook; a MISMATCH frame of len bytes has arrived in p->notice. */
void gcoll__tcp_found_mismatch(gcoll__tp_t *tp, tcp_peer_t *p, uint32_t tag, const gcoll__opdesc_t *theirs);
void gcoll__tcp_mismatch(gcoll__tp_t *tp, const char *why);
void gcoll__tcp_notice_arrived(gcoll__tp_t *tp, tcp_peer_t *p, size_t len);
/* p's link has just come up: what p's endpoint learnt before (a mismatch, lazy: peers lost)
 * goes to it too, since the notices went only to the peers connected then. */
void gcoll__tcp_catch_up(tcp_peer_t *p);
/* A DOWN frame of len bytes from p, about rank dead, has arrived in p->notice. */
void gcoll__tcp_down_arrived(gcoll__tp_t *tp, tcp_peer_t *p, uint64_t dead, size_t len);

/* tcp_send.c: the table's isend and isend_prio; queueing a control frame on socket 0 of p's
 * link, marked with p's channel; the stream of a rendezvous message once the receiver's CTS
 * (its id rid) came; writing frames until the socket's buffer is full or nothing is left. */
gcoll_status_t gcoll__tcp_isend(gcoll__tp_t *tp, int peer, uint32_t tag, const void *buf, size_t bytes,
                                gcoll__tp_req_t **out);
gcoll_status_t gcoll__tcp_isend_prio(gcoll__tp_t *tp, int peer, uint32_t tag, const void *buf, size_t bytes, int prio,
                                     gcoll__tp_req_t **out);
void gcoll__tcp_send_ctrl(tcp_peer_t *p, tcp_frame_t *f);
void gcoll__tcp_start_stream(gcoll__tp_t *tp, gcoll__tp_req_t *r, uint64_t rid);
void gcoll__tcp_sock_write(tcp_pool_t *pool, tcp_sock_t *s);

/* tcp_recv.c: the table's irecv; reading a socket until it runs dry (or until a frame for an
 * endpoint not yet routed waits at its head). */
gcoll_status_t gcoll__tcp_irecv(gcoll__tp_t *tp, int peer, uint32_t tag, void *buf, size_t bytes,
                                gcoll__tp_req_t **out);
void gcoll__tcp_sock_read(tcp_pool_t *pool, tcp_sock_t *s);

/* tcp_idle.c: the limit on open links. trim asks the peer of the least recently used idle link
 * to close it when more than GCOLL_TCP_MAX_CONNS are open (one request at a time); frame acts
 * on an IDLE, IDLE_OK or IDLE_NO header read from s; gone takes a socket of a retiring link that
 * closed (1) or leaves it to the failure path (0); retire ends a retiring link's old sockets at
 * once (the peer dials it again). */
void gcoll__tcp_idle_trim(tcp_pool_t *pool);
void gcoll__tcp_idle_frame(tcp_pool_t *pool, tcp_sock_t *s);
int gcoll__tcp_idle_gone(tcp_pool_t *pool, tcp_sock_t *s);
void gcoll__tcp_idle_retire(tcp_pool_t *pool, tcp_link_t *l);
/* Whether s has a frame it may write now (a link closing while idle holds all but its own). */
int gcoll__tcp_sock_pending(const tcp_sock_t *s);

/* tcp_progress.c: waits up to timeout_ms for events and notes them (sockets) or handles them
 * (handshakes); a pass over every link of the pool; the table's test, wait, dead_peer and check
 * (lock held, but for wait). */
gcoll_status_t gcoll__tcp_poll(tcp_pool_t *pool, int timeout_ms);
gcoll_status_t gcoll__tcp_progress(tcp_pool_t *pool);
gcoll_status_t gcoll__tcp_test(gcoll__tp_t *tp, gcoll__tp_req_t *r, int *done);
gcoll_status_t gcoll__tcp_wait(gcoll__tp_t *tp, long usec);
int gcoll__tcp_dead_peer(gcoll__tp_t *tp, char *why, size_t len);
gcoll_status_t gcoll__tcp_check(gcoll__tp_t *tp);
void gcoll__tcp_service_pass(tcp_pool_t *pool); /* lock held */

#endif
