/* Status names and messages, and the per-thread detail string behind gcoll_last_error(); the
 * breadcrumb that GCOLL_CHECK logs as a failure travels upward. */
#include <stdarg.h>
#include <stdio.h>

#include "base/error.h"
#include "base/log.h"

static _Thread_local char last_error[512];

#define GCOLL_STATUS_NAME(code, msg) [code] = #code,
#define GCOLL_STATUS_MSG(code, msg) [code] = msg,
static const char *const status_names[] = {GCOLL_STATUS_TABLE(GCOLL_STATUS_NAME)};
static const char *const status_msgs[] = {GCOLL_STATUS_TABLE(GCOLL_STATUS_MSG)};
#define NSTATUS (sizeof(status_names) / sizeof(status_names[0]))
_Static_assert(NSTATUS == GCOLL_STATUS_COUNT && sizeof(status_msgs) / sizeof(status_msgs[0]) == GCOLL_STATUS_COUNT,
               "gcoll.h's status table names every status");

GCOLL_API const char *gcoll_strerror(gcoll_status_t status)
{
    if ((unsigned)status >= NSTATUS)
        return "unknown status";
    return status_msgs[status];
}

GCOLL_API const char *gcoll_status_name(gcoll_status_t status)
{
    if ((unsigned)status >= NSTATUS)
        return "GCOLL_STATUS_UNKNOWN";
    return status_names[status];
}

GCOLL_API const char *gcoll_last_error(void)
{
    return last_error;
}

gcoll_status_t gcoll__error(gcoll_status_t status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
    GCOLL_LOG(GCOLL_LOG_DEBUG, "%s: %s", gcoll_status_name(status), last_error);
    return status;
}

void gcoll__error_clear(void)
{
    last_error[0] = '\0';
}

void gcoll__breadcrumb(const char *file, int line, gcoll_status_t status)
{
    GCOLL_LOG(GCOLL_LOG_DEBUG, "%s:%d -> %s", file, line, gcoll_status_name(status));
}
