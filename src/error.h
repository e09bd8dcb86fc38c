/* Status codes, the thread-local error detail, and the check macro that leaves a breadcrumb
 * (file:line -> status) at debug level as a failure travels upward, in NCCL's manner. */
#ifndef GCOLL_ERROR_H
#define GCOLL_ERROR_H

#include "gcoll.h"

/* One table: status, name and message come from it together. */
#define GCOLL_STATUS_TABLE(X)                              \
    X(GCOLL_SUCCESS, "success")                            \
    X(GCOLL_ERR_INVALID_ARG, "invalid argument")           \
    X(GCOLL_ERR_INVALID_USAGE, "invalid usage")            \
    X(GCOLL_ERR_NOMEM, "out of memory")                    \
    X(GCOLL_ERR_SYSTEM, "system call failed")              \
    X(GCOLL_ERR_TRANSPORT, "transport error")              \
    X(GCOLL_ERR_REMOTE, "remote peer failed")              \
    X(GCOLL_ERR_TIMEOUT, "operation timed out")            \
    X(GCOLL_ERR_UNSUPPORTED, "unsupported")                \
    X(GCOLL_ERR_ABORTED, "communicator failed or aborted") \
    X(GCOLL_ERR_INTERNAL, "internal error")

/* Records a detail for gcoll_last_error() and logs it at debug level; returns status. */
gcoll_status_t gcoll__error(gcoll_status_t status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gcoll__error_clear(void);
void gcoll__breadcrumb(const char *file, int line, gcoll_status_t status);

#define GCOLL_CHECK(expr)                                     \
    do {                                                      \
        gcoll_status_t gcoll__st = (expr);                    \
        if (gcoll__st != GCOLL_SUCCESS) {                     \
            gcoll__breadcrumb(__FILE__, __LINE__, gcoll__st); \
            return gcoll__st;                                 \
        }                                                     \
    } while (0)

#endif
