/* libFuzzer harness for the TCP transport's wire decoders (src/transports/tcp/tcp_wire.c), called by
 * name on raw bytes so that it holds whatever the header's layout: received frame headers, hellos,
 * acks and header fields, each against the properties stated above its function. */
#include "fuzz.h"
#include "transports/tcp/tcp.h"

/* Bytes from the input at *off, zeros past its end. */
static void take(const uint8_t *data, size_t size, size_t *off, void *out, size_t n)
{
    size_t have = *off < size ? size - *off : 0;
    if (have > n)
        have = n;
    memset(out, 0, n);
    if (have)
        memcpy(out, data + *off, have);
    *off += n;
}

/* A reason buffer of the size the input asks for (1..128), heap-allocated so that a write past
 * its end is caught. */
static char *why_buf(const uint8_t *data, size_t size, size_t *off, size_t *len)
{
    uint8_t b;
    take(data, size, off, &b, 1);
    *len = 1 + b % 128;
    char *why = malloc(*len);
    if (!why)
        abort();
    memset(why, 0, *len);
    return why;
}

static void check_rejection(const char *why, size_t len, const char *what)
{
    PROPERTY(memchr(why, '\0', len) != NULL, "a rejected %s leaves its reason unterminated", what);
    PROPERTY(len == 1 || why[0] != '\0', "a rejected %s gives no reason", what);
}

/* A received header (unpack + check) that passes has the sequence number due, a payload within its
 * type's bound, and re-packed gives back the bytes received (no field the check ignores); a
 * rejection says why within the caller's buffer. */
static void fuzz_header(const uint8_t *data, size_t size, size_t off)
{
    unsigned char buf[TCP_HDR_BYTES];
    uint32_t seq;
    size_t len;
    take(data, size, &off, &seq, sizeof(seq));
    char *why = why_buf(data, size, &off, &len);
    take(data, size, &off, buf, sizeof(buf));
    gcoll__tcp_hdr_t h;
    gcoll__tcp_hdr_unpack(buf, &h);
    if (gcoll__tcp_hdr_check(&h, seq, why, len) != GCOLL_SUCCESS) {
        check_rejection(why, len, "header");
    } else {
        uint64_t bound = TCP_EAGER_MAX > TCP_CHUNK_MAX ? TCP_EAGER_MAX : TCP_CHUNK_MAX;
        PROPERTY(h.seq == seq, "a header with sequence number %u passes where %u is due", (unsigned)h.seq,
                 (unsigned)seq);
        PROPERTY(h.len <= bound, "a header of %llu payload bytes passes (the bound is %llu)", (unsigned long long)h.len,
                 (unsigned long long)bound);
        PROPERTY(h.type != TCP_EAGER || h.len <= TCP_EAGER_MAX, "an eager frame of %llu bytes passes",
                 (unsigned long long)h.len);
        PROPERTY(h.type != TCP_DATA || (h.len > 0 && h.len <= TCP_CHUNK_MAX), "a data frame of %llu bytes passes",
                 (unsigned long long)h.len);
        PROPERTY((h.type != TCP_RTS && h.type != TCP_CTS && h.type != TCP_BYE && !TCP_IS_IDLE_FRAME(h.type)) ||
                     h.len == 0,
                 "a control frame with %llu payload bytes passes", (unsigned long long)h.len);
        unsigned char again[TCP_HDR_BYTES];
        gcoll__tcp_hdr_pack(again, &h);
        PROPERTY(memcmp(buf, again, sizeof(buf)) == 0, "an accepted header does not re-pack to its bytes");
    }
    free(why);
}

/* An accepted hello names another process's key (below 2^48; below this process's where only
 * lower keys dial) and a socket index below the count, and is exactly what pack makes of its
 * channel, key and index; what pack makes of a lower key passes, of a key not lower does not
 * where only lower keys dial, and where any may dial a higher key passes but this process's own
 * and one past 48 bits do not. */
static void fuzz_hello(const uint8_t *data, size_t size, size_t off)
{
    unsigned char buf[TCP_HELLO_BYTES], secret[TCP_SECRET_BYTES], again[TCP_HELLO_BYTES];
    uint8_t ns_b, flags;
    uint64_t me, chan, from;
    size_t len;
    take(data, size, &off, &me, sizeof(me));
    take(data, size, &off, &ns_b, 1);
    take(data, size, &off, &flags, 1);
    char *why = why_buf(data, size, &off, &len);
    take(data, size, &off, buf, sizeof(buf));
    me = 1 + me % ((1ull << 48) - 2); /* a key has room below and above it */
    int nsocks = 1 + ns_b % 16, below = flags & 2;
    take(data, size, &off, secret, sizeof(secret));
    /* the fuzzer could never find the secret byte by byte (the compare is constant-time), so half
     * the inputs are a packed hello with the input's bytes XORed in, mostly zeros */
    if (flags & 1) {
        uint64_t fields[3];
        memcpy(fields, buf, sizeof(fields));
        unsigned char mask[TCP_HELLO_BYTES];
        memcpy(mask, buf + sizeof(fields), sizeof(buf) - sizeof(fields));
        memset(mask + sizeof(buf) - sizeof(fields), 0, sizeof(fields));
        gcoll__tcp_hello_pack(buf, secret, fields[0], fields[1] % (1ull << 48), (int)(fields[2] % 32));
        for (size_t i = 0; i < sizeof(buf); i++)
            buf[i] ^= mask[i];
    }
    int index = -1;
    if (gcoll__tcp_hello_check(buf, secret, me, below, nsocks, &index, why, len) != GCOLL_SUCCESS) {
        check_rejection(why, len, "hello");
    } else {
        PROPERTY(gcoll__tcp_hello_peek(buf, &chan, &from), "an accepted hello has no hello's magic");
        PROPERTY(from != me && from >> 48 == 0 && (!below || from < me), "a hello from key %llx passes at key %llx%s",
                 (unsigned long long)from, (unsigned long long)me, below ? " (lower keys only)" : "");
        PROPERTY(index >= 0 && index < nsocks, "a hello for socket %d passes with %d sockets", index, nsocks);
        gcoll__tcp_hello_pack(again, secret, chan, from, index);
        PROPERTY(memcmp(buf, again, sizeof(buf)) == 0, "an accepted hello does not re-pack to its bytes");
    }
    uint64_t lower = (uint64_t)flags % me, higher = me + 1 + (uint64_t)(flags >> 2) % ((1ull << 48) - 1 - me);
    int x = (int)(flags >> 4) % nsocks;
    gcoll__tcp_hello_pack(again, secret, me ^ 5, lower, x);
    PROPERTY(gcoll__tcp_hello_check(again, secret, me, 1, nsocks, &index, why, len) == GCOLL_SUCCESS && index == x,
             "a packed hello from key %llx socket %d is refused at key %llx: %s", (unsigned long long)lower, x,
             (unsigned long long)me, why);
    gcoll__tcp_hello_pack(again, secret, me, higher, 0);
    PROPERTY(gcoll__tcp_hello_check(again, secret, me, 1, nsocks, &index, why, len) != GCOLL_SUCCESS,
             "a hello from the higher key %llx passes at %llx where lower keys dial", (unsigned long long)higher,
             (unsigned long long)me);
    PROPERTY(gcoll__tcp_hello_check(again, secret, me, 0, nsocks, &index, why, len) == GCOLL_SUCCESS,
             "a hello from key %llx is refused at %llx dialling freely: %s", (unsigned long long)higher,
             (unsigned long long)me, why);
    gcoll__tcp_hello_pack(again, secret, me, me, 0);
    PROPERTY(gcoll__tcp_hello_check(again, secret, me, 0, nsocks, &index, why, len) != GCOLL_SUCCESS,
             "a hello from key %llx itself passes", (unsigned long long)me);
    gcoll__tcp_hello_pack(again, secret, me, higher | 1ull << 48, 0);
    PROPERTY(gcoll__tcp_hello_check(again, secret, me, 0, nsocks, &index, why, len) != GCOLL_SUCCESS,
             "a hello from a key of 49 bits passes");
    free(why);
}

static void fuzz_ack(const uint8_t *data, size_t size, size_t off)
{
    unsigned char buf[TCP_ACK_BYTES], want[TCP_ACK_BYTES];
    uint64_t key;
    take(data, size, &off, &key, sizeof(key));
    take(data, size, &off, buf, sizeof(buf));
    gcoll__tcp_ack_pack(want, key);
    PROPERTY(!!gcoll__tcp_ack_ok(buf, key) == (memcmp(buf, want, sizeof(buf)) == 0),
             "an ack is taken or refused for key %llx other than by its exact bytes", (unsigned long long)key);
    PROPERTY(gcoll__tcp_ack_ok(want, key), "the ack packed for key %llx is refused", (unsigned long long)key);
    gcoll__tcp_decline_pack(want, key);
    PROPERTY(!!gcoll__tcp_declined(buf, key) == (memcmp(buf, want, sizeof(buf)) == 0),
             "a decline is taken or refused for key %llx other than by its exact bytes", (unsigned long long)key);
    PROPERTY(gcoll__tcp_declined(want, key) && !gcoll__tcp_ack_ok(want, key),
             "the decline packed for key %llx is not one, or passes as an ack", (unsigned long long)key);
}

static void fuzz_fields(const uint8_t *data, size_t size, size_t off)
{
    gcoll__tcp_hdr_t h, back;
    memset(&h, 0, sizeof(h));
    take(data, size, &off, &h.seq, sizeof(h.seq));
    take(data, size, &off, &h.tag, sizeof(h.tag));
    take(data, size, &off, &h.type, sizeof(h.type));
    take(data, size, &off, &h.len, sizeof(h.len));
    take(data, size, &off, &h.id, sizeof(h.id));
    take(data, size, &off, &h.aux, sizeof(h.aux));
    take(data, size, &off, &h.desc.coll, sizeof(h.desc.coll));
    take(data, size, &off, &h.desc.dtype, sizeof(h.desc.dtype));
    take(data, size, &off, &h.desc.op, sizeof(h.desc.op));
    take(data, size, &off, &h.desc.root, sizeof(h.desc.root));
    take(data, size, &off, &h.desc.count, sizeof(h.desc.count));
    take(data, size, &off, &h.chan, sizeof(h.chan));
    unsigned char buf[TCP_HDR_BYTES];
    gcoll__tcp_hdr_pack(buf, &h);
    gcoll__tcp_hdr_unpack(buf, &back);
    PROPERTY(back.seq == h.seq && back.tag == h.tag && back.type == h.type && back.len == h.len && back.id == h.id &&
                 back.aux == h.aux && back.desc.coll == h.desc.coll && back.desc.dtype == h.desc.dtype &&
                 back.desc.op == h.desc.op && back.desc.root == h.desc.root && back.desc.count == h.desc.count &&
                 back.chan == h.chan,
             "a header's fields do not survive pack and unpack");
    char why[128];
    PROPERTY(gcoll__tcp_hdr_check(&back, h.seq + 1, why, sizeof(why)) != GCOLL_SUCCESS,
             "a header passes with sequence number %u where %u is due", (unsigned)h.seq, (unsigned)(h.seq + 1));
}

/* The first byte picks what is fuzzed: a frame header, a hello, an ack, or header fields (pack +
 * unpack). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    switch (data[0] % 4) {
    case 0: fuzz_header(data, size, 1); break;
    case 1: fuzz_hello(data, size, 1); break;
    case 2: fuzz_ack(data, size, 1); break;
    default: fuzz_fields(data, size, 1); break;
    }
    return 0;
}
