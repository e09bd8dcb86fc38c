/* See liveness.h: a pid that kill() no longer finds, or a zombie, is gone; the pid space is a
 * hash of the kernel's boot id and this pid namespace. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "transports/liveness.h"

/* A process that has exited but whose parent has not yet reaped it still answers kill(). */
static int is_zombie(pid_t pid)
{
    char path[32], buf[256];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *end = strrchr(buf, ')'); /* the command name in parentheses may hold anything */
    return end && end[1] == ' ' && (end[2] == 'Z' || end[2] == 'X');
}

int gcoll__process_gone(pid_t pid)
{
    return (kill(pid, 0) != 0 && errno == ESRCH) || is_zombie(pid);
}

uint64_t gcoll__pid_space(void)
{
    char boot[64] = "";
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (!f)
        return 0;
    size_t n = fread(boot, 1, sizeof(boot) - 1, f);
    fclose(f);
    struct stat ns;
    if (n == 0 || stat("/proc/self/ns/pid", &ns) != 0)
        return 0;
    uint64_t h = 1469598103934665603ull; /* FNV-1a over the boot id, then the namespace's inode */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)boot[i]) * 1099511628211ull;
    h = (h ^ (uint64_t)ns.st_ino) * 1099511628211ull;
    h = (h ^ (uint64_t)ns.st_dev) * 1099511628211ull;
    return h ? h : 1;
}
