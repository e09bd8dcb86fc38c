/* See trace.h. The files hold one operation per line (src/core/flight.c writes them so), which
 * is all this reader relies on besides the keys: no JSON parser needed. The verdict, in order:
 * ranks that called different collectives under one sequence number (a mismatch); ranks that
 * called fewer collectives than the others (behind: the others wait for them); ranks that left
 * no file (dead, or never written); else where every rank stands. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

#define MAX_RANKS 65536
#define MAX_OPS 256

typedef struct {
    unsigned long long seq;
    int aside; /* outside the collectives' sequence: point-to-point, or a fused allreduce's member */
    char kind[32], name[64], state[16], status[40], dtype[24], op[16], waiting[64];
    long long count, root;
    long round, rounds;
    double called_ago;
} op_t;

typedef struct {
    int rank, size;
    long comm;
    unsigned long long issued;
    char status[40], reason[400];
    op_t ops[MAX_OPS];
    int nops;
    const char *file;
} rank_t;

/* The value of "key": in line: a string's text (without quotes) or a number's digits; 0 when the
 * key is absent or its value is null. */
static int field(const char *line, const char *key, char *out, size_t len)
{
    char pat[48];
    snprintf(pat, sizeof(pat), "\"%s\": ", key);
    const char *p = strstr(line, pat);
    if (!p)
        return 0;
    p += strlen(pat);
    size_t n = 0;
    if (*p == '"') {
        for (p++; *p && *p != '"' && n + 1 < len; p++)
            out[n++] = *p;
    } else {
        if (strncmp(p, "null", 4) == 0)
            return 0;
        for (; *p && *p != ',' && *p != '}' && n + 1 < len; p++)
            out[n++] = *p;
    }
    out[n] = '\0';
    return 1;
}

static long long number(const char *line, const char *key, long long dflt)
{
    char v[32];
    return field(line, key, v, sizeof(v)) ? strtoll(v, NULL, 10) : dflt;
}

static int read_file(const char *path, rank_t *r)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return -1;
    }
    memset(r, 0, sizeof(*r));
    r->file = path;
    r->rank = -1;
    char line[2048];
    while (fgets(line, sizeof(line), f)) {
        if (strstr(line, "\"gcoll_flight_recorder\"")) {
            r->rank = (int)number(line, "rank", -1);
            r->size = (int)number(line, "size", 0);
            r->comm = (long)number(line, "comm", -1);
            field(line, "status", r->status, sizeof(r->status));
            field(line, "reason", r->reason, sizeof(r->reason));
        }
        if (strstr(line, "\"issued\": "))
            r->issued = (unsigned long long)number(line, "issued", 0);
        if (strncmp(line, "  {\"seq\": ", 10) != 0)
            continue;
        op_t *o = &r->ops[r->nops % MAX_OPS];
        r->nops++;
        memset(o, 0, sizeof(*o));
        o->seq = (unsigned long long)number(line, "seq", 0);
        o->aside = strstr(line, "\"p2p\": true") != NULL || strstr(line, "\"member\": true") != NULL;
        field(line, "kind", o->kind, sizeof(o->kind));
        field(line, "name", o->name, sizeof(o->name));
        field(line, "state", o->state, sizeof(o->state));
        field(line, "status", o->status, sizeof(o->status));
        field(line, "dtype", o->dtype, sizeof(o->dtype));
        field(line, "op", o->op, sizeof(o->op));
        field(line, "waiting_on", o->waiting, sizeof(o->waiting));
        o->count = number(line, "count", -1);
        o->root = number(line, "root", -1);
        o->round = (long)number(line, "round", 0);
        o->rounds = (long)number(line, "rounds", 0);
        char v[32];
        o->called_ago = field(line, "called_s_ago", v, sizeof(v)) ? strtod(v, NULL) : -1;
    }
    fclose(f);
    if (r->rank < 0 || r->size <= 0 || r->rank >= r->size || r->size > MAX_RANKS) {
        fprintf(stderr, "%s: not a gcoll flight recorder file (no rank and size)\n", path);
        return -1;
    }
    if (r->nops > MAX_OPS)
        r->nops = MAX_OPS; /* the file holds at most that many */
    return 0;
}

/* "allreduce #7 'grad' (float32 sum, count 1000)" */
static void describe(const op_t *o, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s #%llu", o->kind, o->seq);
    if (o->name[0] && n > 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, " '%s'", o->name);
    if (o->dtype[0] && n > 0 && (size_t)n < len) {
        char root[32] = "";
        if (o->root >= 0)
            snprintf(root, sizeof(root), ", root %lld", o->root);
        snprintf(buf + n, len - (size_t)n, " (%s%s%s, count %lld%s)", o->dtype, o->op[0] ? " " : "", o->op, o->count,
                 root);
    }
}

static const op_t *find(const rank_t *r, unsigned long long seq)
{
    for (int i = 0; i < r->nops; i++)
        if (!r->ops[i].aside && r->ops[i].seq == seq)
            return &r->ops[i];
    return NULL;
}

/* The oldest collective of r not done: where it stands. */
static const op_t *stuck(const rank_t *r)
{
    for (int i = 0; i < r->nops; i++)
        if (!r->ops[i].aside && strcmp(r->ops[i].state, "done") != 0)
            return &r->ops[i];
    return NULL;
}

/* Appends rank numbers as "1, 2 and 5" to buf. */
static void list_ranks(const int *ranks, int n, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s%d", i == 0 ? "" : i == n - 1 ? " and " : ", ", ranks[i]);
    }
}

static void print_table(rank_t *const *by, int size)
{
    printf("%-5s %-7s %-14s %-72s %s\n", "rank", "issued", "status", "oldest unfinished collective", "waiting on");
    for (int k = 0; k < size; k++) {
        if (!by[k]) {
            printf("%-5d %-7s %-14s %s\n", k, "-", "-", "no file: dead, or never written");
            continue;
        }
        const op_t *o = stuck(by[k]);
        char what[160] = "none: every one recorded is done";
        if (o) {
            char d[128];
            describe(o, d, sizeof(d));
            snprintf(what, sizeof(what), "%s, %s, round %ld of %ld", d, o->state, o->round, o->rounds);
        }
        const char *st = strncmp(by[k]->status, "GCOLL_ERR_", 10) == 0 ? by[k]->status + 10
            : strcmp(by[k]->status, "GCOLL_SUCCESS") == 0              ? "healthy"
                                                                       : by[k]->status;
        printf("%-5d %-7llu %-14s %-72s %s\n", k, by[k]->issued, st, what, o && o->waiting[0] ? o->waiting : "-");
    }
}

static int by_seq(const void *a, const void *b)
{
    unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
    return x < y ? -1 : x > y;
}

/* Ranks that called different collectives under one sequence number: the first such number. */
static int verdict_mismatch(rank_t *const *by, int size)
{
    size_t n = 0, cap = 1;
    for (int k = 0; k < size; k++)
        cap += by[k] ? (size_t)by[k]->nops : 0;
    unsigned long long *seqs = malloc(cap * sizeof(*seqs));
    if (!seqs)
        return 0;
    for (int k = 0; k < size; k++)
        for (int i = 0; by[k] && i < by[k]->nops; i++)
            if (!by[k]->ops[i].aside)
                seqs[n++] = by[k]->ops[i].seq;
    qsort(seqs, n, sizeof(*seqs), by_seq);
    for (size_t j = 0; j < n; j++) {
        if (j && seqs[j] == seqs[j - 1])
            continue;
        unsigned long long seq = seqs[j];
        const op_t *first = NULL;
        int differ = 0;
        for (int k = 0; k < size; k++) {
            const op_t *o = by[k] ? find(by[k], seq) : NULL;
            if (!o)
                continue;
            if (!first)
                first = o;
            else if (strcmp(o->kind, first->kind) || strcmp(o->dtype, first->dtype) || strcmp(o->op, first->op) ||
                     o->count != first->count || o->root != first->root)
                differ = 1;
        }
        if (!differ)
            continue;
        printf("verdict: the ranks called different collectives as #%llu:", seq);
        for (int k = 0; k < size; k++) {
            const op_t *o = by[k] ? find(by[k], seq) : NULL;
            if (o) {
                char d[128];
                describe(o, d, sizeof(d));
                printf(" rank %d %s;", k, d);
            }
        }
        printf(" every rank must call a communicator's collectives in the same order\n");
        free(seqs);
        return 1;
    }
    free(seqs);
    return 0;
}

int print_trace(int nfiles, char **files)
{
    if (nfiles < 1) {
        fprintf(stderr, "usage: gcoll-info --trace FILE... (the flight recorder files of one communicator)\n");
        return 2;
    }
    rank_t *ranks = calloc((size_t)nfiles, sizeof(*ranks));
    if (!ranks)
        return 1;
    int size = 0, rc = 0;
    for (int i = 0; i < nfiles && rc == 0; i++) {
        if (read_file(files[i], &ranks[i]) != 0)
            rc = 1;
        else if (i && (ranks[i].size != ranks[0].size || ranks[i].comm != ranks[0].comm))
            fprintf(stderr, "%s: rank %d of %d on comm %ld, where %s is of %d on comm %ld\n", files[i], ranks[i].rank,
                    ranks[i].size, ranks[i].comm, files[0], ranks[0].size, ranks[0].comm),
                rc = 1;
        size = ranks[0].size;
    }
    rank_t **by = rc ? NULL : calloc((size_t)size, sizeof(*by));
    int *list = rc ? NULL : calloc((size_t)size, sizeof(*list));
    if (rc || !by || !list) {
        free(ranks);
        free(by);
        free(list);
        return 1;
    }
    for (int i = 0; i < nfiles && rc == 0; i++) {
        if (by[ranks[i].rank]) {
            fprintf(stderr, "%s and %s are both rank %d's\n", by[ranks[i].rank]->file, files[i], ranks[i].rank);
            rc = 1;
        }
        by[ranks[i].rank] = &ranks[i];
    }
    if (rc) {
        free(ranks);
        free(by);
        free(list);
        return 1;
    }
    printf("communicator %ld, %d ranks, %d files\n", ranks[0].comm, size, nfiles);
    print_table(by, size);
    for (int k = 0; k < size; k++)
        if (by[k] && by[k]->reason[0])
            printf("rank %d: %s\n", k, by[k]->reason);

    char names[512];
    unsigned long long lo = ~0ULL, hi = 0;
    for (int k = 0; k < size; k++)
        if (by[k]) {
            lo = by[k]->issued < lo ? by[k]->issued : lo;
            hi = by[k]->issued > hi ? by[k]->issued : hi;
        }
    int missing = 0;
    for (int k = 0; k < size; k++)
        if (!by[k])
            list[missing++] = k;
    if (verdict_mismatch(by, size)) {
    } else if (lo < hi) {
        int n = 0;
        for (int k = 0; k < size; k++)
            if (by[k] && by[k]->issued == lo)
                list[n++] = k;
        list_ranks(list, n, names, sizeof(names));
        const op_t *o = NULL;
        for (int k = 0; k < size && !o; k++)
            if (by[k] && by[k]->issued > lo)
                o = find(by[k], lo);
        char d[128] = "it";
        if (o)
            describe(o, d, sizeof(d));
        printf("verdict: rank%s %s %s behind: %s called %llu collectives, the others up to %llu; they wait in %s, "
               "which %s never called\n",
               n > 1 ? "s" : "", names, n > 1 ? "are" : "is", n > 1 ? "they" : "it", lo, hi, d, n > 1 ? "those" : "it");
    } else if (missing) {
        list_ranks(list, missing, names, sizeof(names));
        const op_t *o = NULL;
        for (int k = 0; k < size && !o; k++)
            if (by[k])
                o = stuck(by[k]);
        char d[128] = "";
        if (o)
            describe(o, d, sizeof(d));
        printf("verdict: rank%s %s left no record (dead, or never written)%s%s\n", missing > 1 ? "s" : "", names,
               o ? "; the others stopped in " : "", d);
    } else {
        const op_t *o = NULL;
        for (int k = 0; k < size && !o; k++)
            o = stuck(by[k]);
        char d[128] = "";
        if (o)
            describe(o, d, sizeof(d));
        if (o)
            printf("verdict: no rank is behind (each called %llu collectives); the oldest unfinished is %s\n", hi, d);
        else
            printf("verdict: no rank is behind; every rank completed the %llu collectives it called\n", hi);
    }
    free(list);
    free(by);
    free(ranks);
    return 0;
}
