/* The sockets this process holds (entries of /proc/self/fd that link to "socket:[...]"), for the
 * tests that bound how many a rank keeps open and for the set-up benchmark. */
#ifndef GCOLL_TEST_SOCKETS_H
#define GCOLL_TEST_SOCKETS_H

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static inline int count_sockets(void)
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
            n += strncmp(link, "socket:", 7) == 0;
        }
    }
    if (d)
        closedir(d);
    return n;
}

#endif
