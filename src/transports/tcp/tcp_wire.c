/* The TCP transport's byte layout: frame headers and connection hellos, little-endian whatever
 * the host, and the check every header passes before a byte of its payload is read. */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "base/coll.h"
#include "base/error.h"
#include "transports/tcp/tcp.h"
#include "base/le.h"

#define HDR_MAGIC 0x33435447u   /* "GTC3": the header grew the channel */
#define HELLO_MAGIC 0x49435447u /* "GTCI": hellos name the process and the channel */

/* Layout: magic, type + 3 zero bytes, seq, tag, len, id, aux, then the operation's descriptor
 * (collective kind + 1, dtype, op, a zero byte, root, count), then the channel. */
void gcoll__tcp_hdr_pack(unsigned char *buf, const gcoll__tcp_hdr_t *h)
{
    gcoll__put32(buf, HDR_MAGIC);
    gcoll__put32(buf + 4, h->type);
    gcoll__put32(buf + 8, h->seq);
    gcoll__put32(buf + 12, h->tag);
    gcoll__put64(buf + 16, h->len);
    gcoll__put64(buf + 24, h->id);
    gcoll__put64(buf + 32, h->aux);
    buf[40] = h->desc.coll;
    buf[41] = h->desc.dtype;
    buf[42] = h->desc.op;
    buf[43] = h->desc.where;
    gcoll__put32(buf + 44, (uint32_t)h->desc.root);
    gcoll__put64(buf + 48, h->desc.count);
    gcoll__put64(buf + 56, h->chan);
}

void gcoll__tcp_hdr_unpack(const unsigned char *buf, gcoll__tcp_hdr_t *h)
{
    uint32_t type = gcoll__get32(buf + 4);
    h->magic = gcoll__get32(buf);
    /* the three zero bytes stay in `type`, so nonzero ones make it unknown */
    h->type = type > 0xff ? 0 : (uint8_t)type;
    h->seq = gcoll__get32(buf + 8);
    h->tag = gcoll__get32(buf + 12);
    h->len = gcoll__get64(buf + 16);
    h->id = gcoll__get64(buf + 24);
    h->aux = gcoll__get64(buf + 32);
    h->desc = (gcoll__opdesc_t){.coll = buf[40],
                                .dtype = buf[41],
                                .op = buf[42],
                                .where = buf[43],
                                .root = (int32_t)gcoll__get32(buf + 44),
                                .count = gcoll__get64(buf + 48)};
    h->chan = gcoll__get64(buf + 56);
}

gcoll_status_t gcoll__tcp_hdr_check(const gcoll__tcp_hdr_t *h, uint32_t seq, char *why, size_t len)
{
    if (h->magic != HDR_MAGIC)
        snprintf(why, len, "bad magic 0x%08x", (unsigned)h->magic);
    else if (h->seq != seq)
        snprintf(why, len, "frame sequence number %u where %u was due", (unsigned)h->seq, (unsigned)seq);
    else if (h->type < TCP_EAGER || h->type > TCP_IDLE_NO)
        snprintf(why, len, "unknown frame type %u", (unsigned)h->type);
    else if (h->type == TCP_EAGER && h->len > TCP_EAGER_MAX)
        snprintf(why, len, "an eager message of %llu bytes (the bound is %d)", (unsigned long long)h->len,
                 TCP_EAGER_MAX);
    else if (h->type == TCP_DATA && (h->len == 0 || h->len > TCP_CHUNK_MAX))
        snprintf(why, len, "a data frame of %llu bytes (the bound is %d)", (unsigned long long)h->len, TCP_CHUNK_MAX);
    else if ((h->type == TCP_RTS || h->type == TCP_CTS || h->type == TCP_BYE || TCP_IS_IDLE_FRAME(h->type)) &&
             h->len != 0)
        snprintf(why, len, "a control frame with %llu payload bytes", (unsigned long long)h->len);
    else if ((h->type == TCP_MISMATCH || h->type == TCP_DOWN) && (h->len == 0 || h->len > TCP_NOTICE_MAX))
        snprintf(why, len, "a %s notice of %llu bytes (the bound is %d)", h->type == TCP_DOWN ? "failure" : "mismatch",
                 (unsigned long long)h->len, TCP_NOTICE_MAX);
    else if (h->desc.coll > GCOLL_COLL_COUNT || h->desc.where > GCOLL_OPDESC_GPU)
        snprintf(why, len, "a malformed operation descriptor (kind %u, placement %u)", (unsigned)h->desc.coll,
                 (unsigned)h->desc.where);
    else
        return GCOLL_SUCCESS;
    return GCOLL_ERR_TRANSPORT;
}

uint64_t gcoll__tcp_key(const struct sockaddr_in *a)
{
    return (uint64_t)ntohl(a->sin_addr.s_addr) << 16 | ntohs(a->sin_port);
}

/* Layout: magic, socket index, the channel, the dialler's key, the channel's secret. */
void gcoll__tcp_hello_pack(unsigned char *buf, const unsigned char *secret, uint64_t chan, uint64_t from, int index)
{
    gcoll__put32(buf, HELLO_MAGIC);
    gcoll__put32(buf + 4, (uint32_t)index);
    gcoll__put64(buf + 8, chan);
    gcoll__put64(buf + 16, from);
    memcpy(buf + 24, secret, TCP_SECRET_BYTES);
}

int gcoll__tcp_hello_peek(const unsigned char *buf, uint64_t *chan, uint64_t *from)
{
    *chan = gcoll__get64(buf + 8);
    *from = gcoll__get64(buf + 16);
    return gcoll__get32(buf) == HELLO_MAGIC;
}

gcoll_status_t gcoll__tcp_hello_check(const unsigned char *buf, const unsigned char *secret, uint64_t me, int below,
                                      int nsocks, int *index, char *why, size_t len)
{
    unsigned char diff = 0;
    for (int i = 0; i < TCP_SECRET_BYTES; i++) /* constant time: no hint at how much matched */
        diff |= (unsigned char)(buf[24 + i] ^ secret[i]);
    uint32_t x = gcoll__get32(buf + 4);
    uint64_t from = gcoll__get64(buf + 16);
    if (gcoll__get32(buf) != HELLO_MAGIC)
        snprintf(why, len, "not a gcoll hello (magic 0x%08x)", (unsigned)gcoll__get32(buf));
    else if (diff)
        snprintf(why, len, "wrong secret");
    else if (from == me || (below && from > me) || from >> 48)
        snprintf(why, len, "process %012llx may not connect to process %012llx", (unsigned long long)from,
                 (unsigned long long)me);
    else if (x >= (uint32_t)nsocks)
        snprintf(why, len, "socket index %u out of range (GCOLL_TCP_NSOCKS=%d)", (unsigned)x, nsocks);
    else {
        *index = (int)x;
        return GCOLL_SUCCESS;
    }
    return GCOLL_ERR_TRANSPORT;
}

/* The acceptor's answer: magic and its key. */
void gcoll__tcp_ack_pack(unsigned char *buf, uint64_t key)
{
    gcoll__put32(buf, HELLO_MAGIC ^ 0xffffffffu);
    gcoll__put64(buf + 4, key);
}

int gcoll__tcp_ack_ok(const unsigned char *buf, uint64_t key)
{
    return gcoll__get32(buf) == (HELLO_MAGIC ^ 0xffffffffu) && gcoll__get64(buf + 4) == key;
}

/* The acceptor's other answer when both processes dialled each other: its own connection stands. */
void gcoll__tcp_decline_pack(unsigned char *buf, uint64_t key)
{
    gcoll__put32(buf, HELLO_MAGIC ^ 0xfffffffeu);
    gcoll__put64(buf + 4, key);
}

int gcoll__tcp_declined(const unsigned char *buf, uint64_t key)
{
    return gcoll__get32(buf) == (HELLO_MAGIC ^ 0xfffffffeu) && gcoll__get64(buf + 4) == key;
}
