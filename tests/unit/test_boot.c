/* The bootstrap tree of a launch without MPI (src/base/boot_tcp*.c), in processes forked by the
 * test (9 ranks: a tree three levels deep, not a power of two): each rank checks that it holds at
 * most ceil(log2 n) + 1 connections, what every operation gave it against what the ranks'
 * contributions must make (allgather, bcast from every root, min/max, split with reversed keys
 * and an absent rank, the host split, dup), then that a step the ranks disagree on (at a leaf of
 * rank 0, three levels down) or a rank that leaves fails every rank with the reason, and leaves
 * the group failed. And the store group (boot_store.c) over a store in memory, a thread a rank:
 * the same results, with each rank's reads counted against its place in the tree. */
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/boot.h"
#include "base/config.h"
#include "unit.h"
#include "../common/sockets.h"

#define NRANKS 9

/* A failed check in a forked rank is printed with its line, so that a failure names its check. */
#define BAD_IF(cond)                                                                                                \
    do {                                                                                                            \
        if (cond) {                                                                                                 \
            bad++;                                                                                                  \
            fprintf(stderr, "rank %d: check at line %d failed: %s (%s)\n", r, __LINE__, #cond, gcoll_last_error()); \
        }                                                                                                           \
    } while (0)

/* Runs rank r of the job; returns the number of checks that failed (the exit status). */
static int rank_main(int r, const char *root)
{
    gcoll__boot_t *b = NULL, *sub = NULL, *node = NULL, *dup = NULL;
    int before = count_sockets();
    if (gcoll__config_load() != GCOLL_SUCCESS || gcoll__boot_tcp_world(r, NRANKS, root, &b) != GCOLL_SUCCESS)
        return 100;
    int bad = b->rank != r || b->size != NRANKS;
    int log2n = 0;
    while ((1 << log2n) < NRANKS)
        log2n++;
    unsigned char mine[3] = {(unsigned char)r, (unsigned char)(r * 7), 0x5a}, all[3 * NRANKS];
    BAD_IF(gcoll__boot_allgather(b, mine, all, sizeof(mine)) != GCOLL_SUCCESS);
    BAD_IF(count_sockets() - before > log2n + 1); /* a star gives rank 0 one a rank */
    for (int q = 0; q < NRANKS; q++)
        BAD_IF(all[3 * q] != q || all[3 * q + 1] != q * 7 || all[3 * q + 2] != 0x5a);
    for (int root_rank = 0; root_rank < NRANKS; root_rank++) {
        int v = r == root_rank ? 1000 + root_rank : -1;
        BAD_IF(gcoll__boot_bcast(b, &v, sizeof(v), root_rank) != GCOLL_SUCCESS || v != 1000 + root_rank);
    }
    int lo = r + 10, hi = lo;
    BAD_IF(gcoll__boot_min_int(b, &lo) != GCOLL_SUCCESS || lo != 10);
    BAD_IF(gcoll__boot_max_int(b, &hi) != GCOLL_SUCCESS || hi != NRANKS + 9);
    /* even and odd ranks, keys reversed; the last rank joins none */
    int color = r == NRANKS - 1 ? -1 : r % 2;
    BAD_IF(gcoll__boot_split(b, color, -r, &sub) != GCOLL_SUCCESS);
    if (color < 0) {
        BAD_IF(sub != NULL);
    } else {
        int size = 0, rank = 0;
        for (int q = 0; q < NRANKS - 1; q++) {
            size += q % 2 == color;
            rank += q % 2 == color && q > r;
        }
        BAD_IF(!sub || sub->size != size || sub->rank != rank);
        int parents[NRANKS];
        BAD_IF(!sub || gcoll__boot_allgather(sub, &r, parents, sizeof(int)) != GCOLL_SUCCESS);
        for (int q = NRANKS - 2, i = 0; sub && q >= 0; q--) /* the highest parent rank first */
            if (q % 2 == color)
                BAD_IF(parents[i++] != q);
    }
    BAD_IF(gcoll__boot_split_node(b, &node) != GCOLL_SUCCESS || !node || node->size != NRANKS || node->rank != r);
    BAD_IF(gcoll__boot_dup(b, &dup) != GCOLL_SUCCESS || !dup || dup->size != NRANKS || dup->rank != r);
    BAD_IF(!dup || gcoll__boot_barrier(dup) != GCOLL_SUCCESS);
    if (!dup || !node)
        return bad + 1;
    /* rank 7, three levels down, takes another step in dup: its parent 6 names it, the rest of the
     * tree hears it from 6 */
    char big[8] = {0}, out[8 * NRANKS];
    gcoll_status_t st = gcoll__boot_allgather(dup, big, out, r == 7 ? 4 : 8);
    BAD_IF(st == GCOLL_SUCCESS);
    BAD_IF(!strstr(gcoll_last_error(), r == 6 ? "rank 7 sent 4 bytes for setup step" : "rank 6 gave up"));
    /* rank 5 leaves the host group: its parent 4 sees the connection close, and the others hear */
    if (r == 5) {
        gcoll__boot_free(node);
        node = NULL;
    } else {
        BAD_IF(gcoll__boot_barrier(node) == GCOLL_SUCCESS);
        BAD_IF(!strstr(gcoll_last_error(), r == 4 ? "rank 5: it closed the connection" : "rank 4 gave up"));
    }
    /* rank 1 takes another step than the others: everyone fails, and the group stays failed */
    st = gcoll__boot_allgather(b, big, out, r == 1 ? 4 : 8);
    BAD_IF(st == GCOLL_SUCCESS);
    if (r == 0)
        BAD_IF(!strstr(gcoll_last_error(), "rank 1 sent 4 bytes for setup step"));
    else
        BAD_IF(!strstr(gcoll_last_error(), "rank 0 gave up"));
    BAD_IF(gcoll__boot_barrier(b) == GCOLL_SUCCESS || !strstr(gcoll_last_error(), "failed earlier"));
    gcoll__boot_free(dup);
    gcoll__boot_free(node);
    gcoll__boot_free(sub);
    gcoll__boot_free(b);
    return bad;
}

START_TEST(tree_serves_a_job)
{
    setenv("GCOLL_TIMEOUT", "20", 1);
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    ck_assert(bind(s, (struct sockaddr *)&a, sizeof(a)) == 0 && getsockname(s, (struct sockaddr *)&a, &len) == 0);
    close(s); /* a port free a moment ago: rank 0 takes it */
    char root[64];
    snprintf(root, sizeof(root), "127.0.0.1:%d", ntohs(a.sin_port));
    pid_t pid[NRANKS];
    for (int r = 0; r < NRANKS; r++)
        if ((pid[r] = fork()) == 0)
            _exit(rank_main(r, root));
    for (int r = 0; r < NRANKS; r++) {
        int status = -1;
        waitpid(pid[r], &status, 0);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "rank %d: status 0x%x (%d checks failed)", r,
                      status, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    unsetenv("GCOLL_TIMEOUT");
}
END_TEST

/* A key-value store in memory, shared by the rank threads; each rank's calls are counted. */
#define STORE_RANKS 13 /* four levels, not a power of two */
#define STORE_KEYS 1024
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t grown;
    int n;
    char key[STORE_KEYS][200];
    unsigned char *val[STORE_KEYS];
    size_t len[STORE_KEYS];
} mem_store_t;
static mem_store_t mem = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, {{0}}, {0}, {0}};
typedef struct {
    int rank, sets, gets, bad;
} mem_rank_t;

static gcoll_status_t mem_set(void *ctx, const char *key, const void *value, size_t len, char *why, size_t whylen)
{
    mem_rank_t *me = ctx;
    pthread_mutex_lock(&mem.lock);
    gcoll_status_t st = GCOLL_SUCCESS;
    if (mem.n == STORE_KEYS) {
        snprintf(why, whylen, "the test's store is full");
        st = GCOLL_ERR_NOMEM;
    } else {
        snprintf(mem.key[mem.n], sizeof(mem.key[0]), "%s", key);
        mem.val[mem.n] = malloc(len ? len : 1);
        memcpy(mem.val[mem.n], value, len);
        mem.len[mem.n++] = len;
        me->sets++;
        pthread_cond_broadcast(&mem.grown);
    }
    pthread_mutex_unlock(&mem.lock);
    return st;
}

static gcoll_status_t mem_get(void *ctx, const char *key, void *value, size_t cap, size_t *len, char *why,
                              size_t whylen)
{
    mem_rank_t *me = ctx;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 20;
    pthread_mutex_lock(&mem.lock);
    for (;;) {
        for (int i = 0; i < mem.n; i++)
            if (strcmp(mem.key[i], key) == 0) {
                memcpy(value, mem.val[i], mem.len[i] < cap ? mem.len[i] : cap);
                *len = mem.len[i];
                me->gets++;
                pthread_mutex_unlock(&mem.lock);
                return GCOLL_SUCCESS;
            }
        if (pthread_cond_timedwait(&mem.grown, &mem.lock, &until) != 0)
            break;
    }
    pthread_mutex_unlock(&mem.lock);
    snprintf(why, whylen, "no key %s after 20 s", key);
    return GCOLL_ERR_TIMEOUT;
}

/* A rank's children in a binomial tree of n ranks (its parent clears its lowest set bit). */
static int tree_kids(int r, int n)
{
    int kids = 0;
    for (int bit = 1; bit < n && !(r & bit) && r + bit < n; bit <<= 1)
        kids++;
    return kids;
}

#define MEM_BAD_IF(cond)                                                                             \
    do {                                                                                             \
        if (cond) {                                                                                  \
            me->bad++;                                                                               \
            fprintf(stderr, "store rank %d: check at line %d failed: %s (%s)\n", r, __LINE__, #cond, \
                    gcoll_last_error());                                                             \
        }                                                                                            \
    } while (0)

static void *store_rank(void *arg)
{
    mem_rank_t *me = arg;
    int r = me->rank, n = STORE_RANKS;
    gcoll_store_t store = GCOLL_STORE_INIT;
    store.ctx = me;
    store.set = mem_set;
    store.get = mem_get;
    gcoll__boot_t *b = NULL, *sub = NULL;
    if (gcoll__boot_store(&store, r, n, &b) != GCOLL_SUCCESS) {
        me->bad++;
        return NULL;
    }
    static const size_t lens[] = {0, 1, 5, 13};
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        unsigned char mine[13], all[13 * STORE_RANKS];
        for (size_t j = 0; j < lens[i]; j++)
            mine[j] = (unsigned char)(r * 31 + j);
        int gets = me->gets, sets = me->sets;
        MEM_BAD_IF(gcoll__boot_allgather(b, mine, all, lens[i]) != GCOLL_SUCCESS);
        for (int q = 0; q < n; q++)
            for (size_t j = 0; j < lens[i]; j++)
                MEM_BAD_IF(all[(size_t)q * lens[i] + j] != (unsigned char)(q * 31 + j));
        /* its children's subtrees, then the whole: never every rank's key */
        MEM_BAD_IF(me->gets - gets != tree_kids(r, n) + (r != 0));
        MEM_BAD_IF(me->sets - sets != 1);
    }
    for (int root = 0; root < n; root++) {
        int v = r == root ? 500 + root : -1;
        MEM_BAD_IF(gcoll__boot_bcast(b, &v, sizeof(v), root) != GCOLL_SUCCESS || v != 500 + root);
    }
    /* thirds, keys reversed; the last rank joins none */
    int color = r == n - 1 ? -1 : r % 3;
    MEM_BAD_IF(gcoll__boot_split(b, color, -r, &sub) != GCOLL_SUCCESS);
    if (color < 0) {
        MEM_BAD_IF(sub != NULL);
    } else {
        int size = 0, rank = 0;
        for (int q = 0; q < n - 1; q++) {
            size += q % 3 == color;
            rank += q % 3 == color && q > r;
        }
        MEM_BAD_IF(!sub || sub->size != size || sub->rank != rank);
        int parents[STORE_RANKS];
        MEM_BAD_IF(!sub || gcoll__boot_allgather(sub, &r, parents, sizeof(int)) != GCOLL_SUCCESS);
        for (int q = n - 2, i = 0; sub && q >= 0; q--) /* the highest parent rank first */
            if (q % 3 == color)
                MEM_BAD_IF(parents[i++] != q);
    }
    gcoll__boot_free(sub);
    gcoll__boot_free(b);
    return NULL;
}

START_TEST(store_group_reads_log_n)
{
    pthread_t t[STORE_RANKS];
    mem_rank_t ranks[STORE_RANKS];
    for (int r = 0; r < STORE_RANKS; r++) {
        ranks[r] = (mem_rank_t){.rank = r};
        ck_assert(pthread_create(&t[r], NULL, store_rank, &ranks[r]) == 0);
    }
    int gets = 0;
    for (int r = 0; r < STORE_RANKS; r++) {
        pthread_join(t[r], NULL);
        ck_assert_msg(ranks[r].bad == 0, "store rank %d: %d checks failed", r, ranks[r].bad);
        gets += ranks[r].gets;
    }
    /* an allgather of m ranks costs the store 2 (m - 1) reads, not m (m - 1): five of the world's
     * (four and the split's), one in each third; a bcast's n - 1 readers of its root's key */
    int n = STORE_RANKS, want = 5 * 2 * (n - 1) + n * (n - 1);
    for (int color = 0; color < 3; color++)
        want += 2 * ((n - 1 - color + 2) / 3 - 1);
    ck_assert_msg(gets == want, "%d reads in all, not %d", gets, want);
    for (int i = 0; i < mem.n; i++)
        free(mem.val[i]);
}
END_TEST

Suite *boot_suite(void)
{
    Suite *s = suite_create("boot");
    TCase *tc = tcase_create("tcp tree");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, tree_serves_a_job);
    suite_add_tcase(s, tc);
    tc = tcase_create("store group");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, store_group_reads_log_n);
    suite_add_tcase(s, tc);
    return s;
}
