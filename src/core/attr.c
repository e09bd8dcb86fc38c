/* Reading the caller's gcoll_attr_t by the size its header records (include/gcoll.h): a binary
 * built against an older header has fewer fields, which keep their defaults here; one built
 * against a newer header may have more, accepted while they hold their all-zero defaults. */
#include <stddef.h>
#include <string.h>

#include "core/attr.h"
#include "base/error.h"

/* The fields after the header, each copied only when the caller's struct holds all of it. */
#define GCOLL__ATTR_FIELDS(X) X(priority) X(compress) X(name) X(algorithm) X(topk_density) X(stream) X(premul)

#define GCOLL__ATTR_SAME(f) \
    _Static_assert(sizeof(((gcoll_attr_t *)0)->f) == sizeof(((gcoll__attr_t *)0)->f), "gcoll__attr_t." #f);
GCOLL__ATTR_FIELDS(GCOLL__ATTR_SAME)

/* The header: the smallest struct that can be valid. */
#define HEADER_BYTES offsetof(gcoll_attr_t, priority)
/* A larger size is garbage rather than a header from the future. */
#define MAX_BYTES 1024

static void take(gcoll__attr_t *out, const void *from, size_t size)
{
#define GCOLL__ATTR_TAKE(f)                                 \
    if (offsetof(gcoll_attr_t, f) + sizeof(out->f) <= size) \
        memcpy(&out->f, (const char *)from + offsetof(gcoll_attr_t, f), sizeof(out->f));
    GCOLL__ATTR_FIELDS(GCOLL__ATTR_TAKE)
#undef GCOLL__ATTR_TAKE
}

gcoll_status_t gcoll__attr_load(const gcoll_attr_t *user, gcoll__attr_t *out)
{
    static const gcoll_attr_t defaults = GCOLL_ATTR_INIT;
    take(out, &defaults, sizeof(defaults));
    if (!user)
        return GCOLL_SUCCESS;
    /* the header alone first: the caller's struct may be shorter than ours */
    size_t size;
    unsigned magic, version;
    memcpy(&size, (const char *)user + offsetof(gcoll_attr_t, size), sizeof(size));
    memcpy(&magic, (const char *)user + offsetof(gcoll_attr_t, magic), sizeof(magic));
    memcpy(&version, (const char *)user + offsetof(gcoll_attr_t, version), sizeof(version));
    if (magic != GCOLL_ATTR_MAGIC)
        return gcoll__error(GCOLL_ERR_INVALID_ARG,
                            "attr is not initialized (attr->magic is %#x, not GCOLL_ATTR_MAGIC): start from "
                            "GCOLL_ATTR_INIT",
                            magic);
    if (version < GCOLL_VERSION_CODE(0, 2, 0))
        return gcoll__error(GCOLL_ERR_INVALID_ARG,
                            "attr->version %u is older than the first header of gcoll_attr_t (0.2.0, 200): start "
                            "from GCOLL_ATTR_INIT",
                            version);
    if (size < HEADER_BYTES || size > MAX_BYTES)
        return gcoll__error(GCOLL_ERR_INVALID_ARG,
                            "attr->size %zu is no size of gcoll_attr_t (from its header's %zu bytes to %d): start "
                            "from GCOLL_ATTR_INIT",
                            size, (size_t)HEADER_BYTES, MAX_BYTES);
    for (size_t i = sizeof(gcoll_attr_t); i < size; i++)
        if (((const unsigned char *)user)[i])
            return gcoll__error(GCOLL_ERR_UNSUPPORTED,
                                "attr sets a field this library does not know: byte %zu of its %zu is not zero, and "
                                "gcoll %s knows %zu bytes of gcoll_attr_t (attr->version %u.%u.%u; HINT: run with a "
                                "libgcoll at least as new as the header it was built with)",
                                i, size, gcoll_version(), sizeof(gcoll_attr_t), version / 10000, version / 100 % 100,
                                version % 100);
    take(out, user, size);
    return GCOLL_SUCCESS;
}
