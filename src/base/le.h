/* Little-endian stores and loads of the fixed-width fields of gcoll's wire formats (the tcp
 * transport's frames, the MPI-free launch's messages): one byte order on every host. */
#ifndef GCOLL_LE_H
#define GCOLL_LE_H
#include <endian.h>
#include <stdint.h>
#include <string.h>

static inline void gcoll__put32(unsigned char *p, uint32_t v)
{
    v = htole32(v);
    memcpy(p, &v, 4);
}

static inline void gcoll__put64(unsigned char *p, uint64_t v)
{
    v = htole64(v);
    memcpy(p, &v, 8);
}

static inline uint32_t gcoll__get32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return le32toh(v);
}

static inline uint64_t gcoll__get64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return le64toh(v);
}
#endif
