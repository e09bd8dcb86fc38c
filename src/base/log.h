/* Logging: one line per message, prefixed with host and rank, filtered by GCOLL_LOG_LEVEL before
 * the message is formatted. */
#ifndef GCOLL_LOG_H
#define GCOLL_LOG_H

typedef enum { GCOLL_LOG_ERROR, GCOLL_LOG_WARN, GCOLL_LOG_INFO, GCOLL_LOG_DEBUG, GCOLL_LOG_TRACE } gcoll__log_level_t;

extern int gcoll__log_level; /* messages above it are dropped before formatting */

void gcoll__log_set_identity(int rank);
void gcoll__log(gcoll__log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define GCOLL_LOG(level, ...)                 \
    do {                                      \
        if ((int)(level) <= gcoll__log_level) \
            gcoll__log((level), __VA_ARGS__); \
    } while (0)

#endif
