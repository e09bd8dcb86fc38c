/* Log sink: stderr, one formatted line at a time so lines from threads never interleave, each
 * prefixed with the host and the rank. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"

int gcoll__log_level = GCOLL_LOG_WARN;
static char host[64] = "?";
static int my_rank = -1;

void gcoll__log_set_identity(int rank)
{
    if (gethostname(host, sizeof(host)) != 0)
        strcpy(host, "?");
    host[sizeof(host) - 1] = '\0';
    my_rank = rank;
}

void gcoll__log(gcoll__log_level_t level, const char *fmt, ...)
{
    static const char *const names[] = {"ERROR", "WARN", "INFO", "DEBUG", "TRACE"};
    char line[1024];
    int n = snprintf(line, sizeof(line), "[%s:%d] gcoll %s: ", host, my_rank, names[level]);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < sizeof(line))
        vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", line);
}
