/* The bootstrap group's calls, the reductions the setup code needs (built on allgather: the
 * groups carry a few integers), and the choice of how the job was launched: under an MPI
 * launcher (or after the application started MPI) the world is MPI_COMM_WORLD; with GCOLL_RANK,
 * GCOLL_SIZE, GCOLL_ROOT_ADDR or torchrun's RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT and no MPI
 * launcher, the TCP rendezvous; otherwise an MPI singleton. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/boot.h"
#include "base/config.h"
#include "base/error.h"
#include "base/log.h"

gcoll_status_t gcoll__boot_allgather(gcoll__boot_t *b, const void *mine, void *all, size_t len)
{
    return b->ops->allgather(b, mine, all, len);
}

gcoll_status_t gcoll__boot_bcast(gcoll__boot_t *b, void *buf, size_t len, int root)
{
    return b->ops->bcast(b, buf, len, root);
}

gcoll_status_t gcoll__boot_barrier(gcoll__boot_t *b)
{
    return b->ops->barrier(b);
}

gcoll_status_t gcoll__boot_split(gcoll__boot_t *b, int color, int key, gcoll__boot_t **out)
{
    *out = NULL;
    return b->ops->split(b, color, key, out);
}

gcoll_status_t gcoll__boot_split_node(gcoll__boot_t *b, gcoll__boot_t **out)
{
    *out = NULL;
    return b->ops->split_node(b, out);
}

gcoll_status_t gcoll__boot_split_by_host(gcoll__boot_t *b, gcoll__boot_t **out)
{
    char mine[GCOLL_HOST_KEY_BYTES] = {0}, *all = malloc(GCOLL_HOST_KEY_BYTES * (size_t)b->size);
    if (!all)
        return gcoll__error(GCOLL_ERR_NOMEM, "bootstrap: no memory for the host keys");
    gcoll__boot_host_key(mine, sizeof(mine));
    gcoll_status_t st = gcoll__boot_allgather(b, mine, all, sizeof(mine));
    int color = 0; /* the first rank of this host */
    while (st == GCOLL_SUCCESS && memcmp(all + (size_t)color * GCOLL_HOST_KEY_BYTES, mine, GCOLL_HOST_KEY_BYTES) != 0)
        color++;
    free(all);
    return st == GCOLL_SUCCESS ? b->ops->split(b, color, b->rank, out) : st;
}

gcoll_status_t gcoll__boot_dup(gcoll__boot_t *b, gcoll__boot_t **out)
{
    return gcoll__boot_split(b, 0, b->rank, out);
}

void gcoll__boot_free(gcoll__boot_t *b)
{
    if (b)
        b->ops->free(b);
}

gcoll_status_t gcoll__boot_reduce_i64(gcoll__boot_t *b, int64_t *v, int n, int max)
{
    int64_t *all = malloc(sizeof(int64_t) * (size_t)n * (size_t)b->size);
    if (!all)
        return gcoll__error(GCOLL_ERR_NOMEM, "bootstrap: no memory for a reduction of %d values", n);
    gcoll_status_t st = gcoll__boot_allgather(b, v, all, sizeof(int64_t) * (size_t)n);
    for (int r = 0; st == GCOLL_SUCCESS && r < b->size; r++)
        for (int i = 0; i < n; i++) {
            int64_t x = all[(size_t)r * (size_t)n + (size_t)i];
            if (max ? x > v[i] : x < v[i])
                v[i] = x;
        }
    free(all);
    return st;
}

static gcoll_status_t reduce_int(gcoll__boot_t *b, int *v, int max)
{
    int64_t x = *v;
    GCOLL_CHECK(gcoll__boot_reduce_i64(b, &x, 1, max));
    *v = (int)x;
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll__boot_min_int(gcoll__boot_t *b, int *v)
{
    return reduce_int(b, v, 0);
}

gcoll_status_t gcoll__boot_max_int(gcoll__boot_t *b, int *v)
{
    return reduce_int(b, v, 1);
}

void gcoll__boot_host_key(char *buf, size_t len)
{
    char host[256] = "?", boot[64] = "";
    if (gethostname(host, sizeof(host)) != 0)
        strcpy(host, "?");
    host[sizeof(host) - 1] = '\0';
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f) {
        if (!fgets(boot, sizeof(boot), f))
            boot[0] = '\0';
        fclose(f);
    }
    boot[strcspn(boot, "\n")] = '\0';
    /* network namespaces of one machine are hosts of their own (containers, the test cluster) */
    struct stat st;
    unsigned long long ns = stat("/proc/self/ns/net", &st) == 0 ? (unsigned long long)st.st_ino : 0;
    snprintf(buf, len, "%s/%s/%llu", host, boot, ns);
}

/* ---- how the job was launched ---- */

/* A variable of the launch: the launchers' own from the environment, gcoll's through the
 * registry (which reads them before gcoll__config_load too). */
static const char *launch_var(const char *name, char *buf, size_t len)
{
    if (strncmp(name, "GCOLL_", 6) != 0)
        return getenv(name);
    return gcoll__config_get(name, buf, len, NULL) == GCOLL_SUCCESS ? buf : NULL;
}

int gcoll__boot_env_rank(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "GCOLL_RANK", "RANK"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        char buf[64];
        const char *s = launch_var(vars[i], buf, sizeof(buf));
        char *end;
        long v = s && isdigit((unsigned char)*s) ? strtol(s, &end, 10) : -1;
        if (v >= 0 && v <= INT32_MAX && !*end)
            return (int)v;
    }
    return -1;
}

static int mpi_launcher(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

/* A torchrun variable: a decimal integer from lo to hi. */
static gcoll_status_t torch_int(const char *var, long lo, long hi, long *out)
{
    const char *s = getenv(var);
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!isdigit((unsigned char)*s) || *end || errno || v < lo || v > hi)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s='%s' is not valid: accepts an integer from %ld to %ld", var, s,
                            lo, hi);
    *out = v;
    return GCOLL_SUCCESS;
}

/* The rank, size and root address of an MPI-free job: GCOLL_* all three, else torchrun's four. */
static gcoll_status_t env_job(int *rank, int *size, char *root, size_t len)
{
    const gcoll__config_t *c = &gcoll__config;
    if (c->boot_rank >= 0 || c->boot_size >= 0 || c->root_addr[0]) {
        const char *missing = c->boot_rank < 0 ? "GCOLL_RANK"
            : c->boot_size < 0                 ? "GCOLL_SIZE"
            : !c->root_addr[0]                 ? "GCOLL_ROOT_ADDR"
                                               : NULL;
        if (missing)
            return gcoll__error(GCOLL_ERR_INVALID_ARG,
                                "%s is not set: a launch without MPI needs GCOLL_RANK, "
                                "GCOLL_SIZE and GCOLL_ROOT_ADDR together (or torchrun's RANK, WORLD_SIZE, "
                                "MASTER_ADDR and MASTER_PORT)",
                                missing);
        if (c->boot_rank >= c->boot_size)
            return gcoll__error(GCOLL_ERR_INVALID_ARG, "GCOLL_RANK=%d is not below GCOLL_SIZE=%d", c->boot_rank,
                                c->boot_size);
        *rank = c->boot_rank;
        *size = c->boot_size;
        snprintf(root, len, "%.*s", (int)sizeof(c->root_addr) - 1, c->root_addr);
        return GCOLL_SUCCESS;
    }
    if (!getenv("RANK") || !getenv("WORLD_SIZE") || !getenv("MASTER_ADDR") || !getenv("MASTER_PORT"))
        return gcoll__error(GCOLL_ERR_INVALID_ARG,
                            "GCOLL_BOOT=env, but neither GCOLL_RANK, GCOLL_SIZE and "
                            "GCOLL_ROOT_ADDR nor RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT are all set");
    long r, n, port;
    GCOLL_CHECK(torch_int("WORLD_SIZE", 1, 1 << 24, &n));
    GCOLL_CHECK(torch_int("RANK", 0, n - 1, &r));
    /* torchrun's own store listens on MASTER_PORT: gcoll's root takes the next port */
    GCOLL_CHECK(torch_int("MASTER_PORT", 1, 65534, &port));
    const char *host = getenv("MASTER_ADDR");
    if (!*host || strlen(host) > 200 || strchr(host, ':'))
        return gcoll__error(GCOLL_ERR_INVALID_ARG,
                            "MASTER_ADDR='%s' is not valid: accepts an IPv4 address or a "
                            "host name",
                            host);
    *rank = (int)r;
    *size = (int)n;
    snprintf(root, len, "%s:%ld", host, port + 1);
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll__boot_world(int *argc, char ***argv, gcoll__boot_mode_t *mode, int *mpi_owned, gcoll__boot_t **out)
{
    const gcoll__config_t *c = &gcoll__config;
    int inited = 0, env = c->boot == 2;
    MPI_Initialized(&inited);
    if (c->boot == 0) {
        int ours = c->boot_rank >= 0 || c->boot_size >= 0 || c->root_addr[0];
        int torch = getenv("RANK") && getenv("WORLD_SIZE") && getenv("MASTER_ADDR") && getenv("MASTER_PORT");
        env = (ours || torch) && !inited && !mpi_launcher();
        if (ours && !env)
            GCOLL_LOG(GCOLL_LOG_WARN,
                      "GCOLL_RANK, GCOLL_SIZE or GCOLL_ROOT_ADDR ignored: %s (HINT: GCOLL_BOOT=env "
                      "to launch without MPI anyway)",
                      inited ? "the application started MPI" : "an MPI launcher started this process");
    }
    *mode = env ? GCOLL_BOOT_ENV : GCOLL_BOOT_MPI;
    *mpi_owned = 0;
    if (!env)
        return gcoll__boot_mpi_world(argc, argv, mpi_owned, out);
    if (inited)
        return gcoll__error(GCOLL_ERR_INVALID_USAGE,
                            "GCOLL_BOOT=env, but the application started MPI: "
                            "gcoll would not use it (HINT: GCOLL_BOOT=auto)");
    int rank = 0, size = 0;
    char root[300];
    GCOLL_CHECK(env_job(&rank, &size, root, sizeof(root)));
    gcoll__log_set_identity(rank);
    return gcoll__boot_tcp_world(rank, size, root, out);
}
