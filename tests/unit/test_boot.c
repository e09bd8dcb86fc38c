/* The bootstrap tree of a launch without MPI (src/base/boot_tcp*.c), in processes forked by the
 * test (9 ranks: a tree three levels deep, not a power of two): each rank checks that it holds at
 * most ceil(log2 n) + 1 connections, what every operation gave it against what the ranks'
 * contributions must make (allgather, bcast from every root, min/max, split with reversed keys
 * and an absent rank, the host split, dup), then that a step the ranks disagree on (at a leaf of
 * rank 0, three levels down) or a rank that leaves fails every rank with the reason, and leaves
 * the group failed. */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
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

Suite *boot_suite(void)
{
    Suite *s = suite_create("boot");
    TCase *tc = tcase_create("tcp tree");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, tree_serves_a_job);
    suite_add_tcase(s, tc);
    return s;
}
