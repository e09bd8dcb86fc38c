/* The sockets this process holds (entries of /proc/self/fd that link to "socket:[...]"), or all
 * its descriptors, for the tests that bound how many a rank keeps open and for the set-up
 * benchmark. */
#ifndef GCOLL_TEST_SOCKETS_H
#define GCOLL_TEST_SOCKETS_H

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The descriptors whose link starts with prefix ("": all of them but the one reading the list). */
static inline int count_fds(const char *prefix)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char path[300], link[64];
        snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
        ssize_t len = readlink(path, link, sizeof(link) - 1);
        if (len > 0) {
            link[len] = '\0';
            n += strncmp(link, prefix, strlen(prefix)) == 0;
        }
    }
    if (d)
        closedir(d);
    return prefix[0] ? n : n - 1; /* the directory's own descriptor */
}

static inline int count_sockets(void)
{
    return count_fds("socket:");
}

#endif
