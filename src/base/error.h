/* The thread-local error detail behind gcoll_last_error(), and the check macro that leaves a breadcrumb
 * (file:line -> status) at debug level as a failure travels upward, in NCCL's manner. */
#ifndef GCOLL_ERROR_H
#define GCOLL_ERROR_H

#include "gcoll.h"

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
