/* The configuration registry: strict parsing, messages that name the variable, selection
 * tables, the public listing, and the values gcoll_config_get reports; the algorithm registry's
 * flags and the lists built from it. */
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "unit.h"
#include "collectives/adasum.h"
#include "collectives/cost.h"
#include "collectives/select.h"
#include "transports/choose.h"

static void clear_env(void)
{
    for (size_t i = 0; i < gcoll_config_count(); i++) {
        gcoll_config_var_t v;
        gcoll_config_var(i, &v);
        unsetenv(v.name);
    }
}

static void expect_bad(const char *var, const char *value, const char *in_message)
{
    clear_env();
    setenv(var, value, 1);
    ck_assert_int_eq(gcoll__config_load(), GCOLL_ERR_INVALID_ARG);
    ck_assert_msg(strstr(gcoll_last_error(), var), "message '%s' does not name %s", gcoll_last_error(), var);
    ck_assert_msg(strstr(gcoll_last_error(), in_message), "message '%s' lacks '%s'", gcoll_last_error(), in_message);
    unsetenv(var);
}

START_TEST(defaults_load)
{
    clear_env();
    ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
    ck_assert(gcoll__config.timeout_s == 300);
    ck_assert_int_eq(gcoll__config.log_level, 1);
    ck_assert_int_eq(gcoll__algo_tables[GCOLL_COLL_ALLREDUCE].nranges, 0);
    ck_assert_uint_eq(gcoll__config.tcp_sndbuf, 256 << 10);
    ck_assert_uint_eq(gcoll__config.tcp_rcvbuf, 4 << 20);
    ck_assert_uint_eq(gcoll__config.shm_read_chunk, 0); /* auto */
    setenv("GCOLL_SHM_READ_CHUNK", "512K", 1);
    ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
    ck_assert_uint_eq(gcoll__config.shm_read_chunk, 512 << 10);
    unsetenv("GCOLL_SHM_READ_CHUNK");
    setenv("GCOLL_TCP_SNDBUF", "auto", 1);
    ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
    ck_assert_uint_eq(gcoll__config.tcp_sndbuf, 0);
    unsetenv("GCOLL_TCP_SNDBUF");
}
END_TEST

START_TEST(malformed_values_name_the_variable)
{
    expect_bad("GCOLL_TIMEOUT", "abc", "seconds");
    expect_bad("GCOLL_TIMEOUT", "0", "seconds > 0");
    expect_bad("GCOLL_TIMEOUT", "-3", "seconds");
    expect_bad("GCOLL_TIMEOUT", "5s", "seconds");
    expect_bad("GCOLL_TIMEOUT", "", "seconds");
    expect_bad("GCOLL_LOG_LEVEL", "verbose", "error|warn|info|debug|trace");
    expect_bad("GCOLL_TRANSPORT_INTER", "carrier-pigeon", "auto|ofi|tcp|mpi");
    expect_bad("GCOLL_TCP_NSOCKS", "0", "from 1 to 1024");
    expect_bad("GCOLL_TCP_NSOCKS", "two", "from 1 to 1024");
    expect_bad("GCOLL_TCP_SNDBUF", "1K", "auto, or bytes");
    expect_bad("GCOLL_TCP_SNDBUF", "0", "auto, or bytes");
    expect_bad("GCOLL_TCP_RCVBUF", "big", "auto, or bytes");
    expect_bad("GCOLL_TCP_IFNAME", "eth0,,eth1", "interface names");
    expect_bad("GCOLL_TCP_IFNAME", "^", "interface names");
    expect_bad("GCOLL_TCP_IFNAME", "eth0 eth1", "interface names");
    expect_bad("GCOLL_REDUCE_ISA", "sse9", "auto|generic|avx2|avx512");
    expect_bad("GCOLL_ALLREDUCE", "fastest", "ring|recursive_doubling|rabenseifner|direct|shm_slots|shm_cma");
    expect_bad("GCOLL_SHM_SLOT_SIZE", "1K", "from 4K to 1G");
    expect_bad("GCOLL_SHM_CHUNK_SIZE", "lots", "K/M/G");
    expect_bad("GCOLL_SHM_SINGLE_COPY", "maybe", "auto|on|off");
    expect_bad("GCOLL_SHM_READ_CHUNK", "2K", "auto, or bytes");
    expect_bad("GCOLL_ADASUM_PUSH", "yes", "auto|on|off");
    expect_bad("GCOLL_TRANSPORT_INTRA", "nvlink", "shm|inter|mpi");
    expect_bad("GCOLL_ALLREDUCE", "ring:8K-1K", "LO < HI");
    expect_bad("GCOLL_ALLREDUCE", "ring:8K", "LO-HI");
    expect_bad("GCOLL_ALLREDUCE", "ring:1X-2M", "K/M/G");
    expect_bad("GCOLL_ALLREDUCE", ";", "empty");
    expect_bad("GCOLL_BCAST", "ring", "binomial");
    expect_bad("GCOLL_STALL_WARN_S", "-1", "seconds >= 0 (0: off)");
    expect_bad("GCOLL_STALL_WARN_S", "soon", "seconds");
}
END_TEST

START_TEST(stall_warnings_default_and_off)
{
    clear_env();
    ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
    ck_assert(gcoll__config.stall_warn_s == 30);
    setenv("GCOLL_STALL_WARN_S", "0", 1);
    ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
    ck_assert(gcoll__config.stall_warn_s == 0);
    unsetenv("GCOLL_STALL_WARN_S");
}
END_TEST

START_TEST(selection_table_parses_and_selects)
{
    clear_env();
    setenv("GCOLL_ALLREDUCE", "recursive_doubling:0-8K;ring:8K-max", 1);
    setenv("GCOLL_TIMEOUT", "2.5", 1);
    ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
    ck_assert(gcoll__config.timeout_s == 2.5);
    const gcoll__algo_table_t *t = &gcoll__algo_tables[GCOLL_COLL_ALLREDUCE];
    ck_assert_int_eq(t->nranges, 2);
    ck_assert_uint_eq(t->range[0].hi, 8192);
    ck_assert_uint_eq(t->range[1].lo, 8192);
    ck_assert_uint_eq(t->range[1].hi, SIZE_MAX);

    gcoll__coll_args_t a = {.coll = GCOLL_COLL_ALLREDUCE, .dtype = GCOLL_FLOAT32, .esize = 4, .size = 4};
    const gcoll__algo_t *algo;
    a.count = 2047; /* 8188 bytes */
    ck_assert_int_eq(gcoll__algo_select(&a, NULL, &algo), GCOLL_SUCCESS);
    ck_assert_str_eq(algo->name, "recursive_doubling");
    a.count = 2048; /* 8 KiB: the second range */
    ck_assert_int_eq(gcoll__algo_select(&a, NULL, &algo), GCOLL_SUCCESS);
    ck_assert_str_eq(algo->name, "ring");
    ck_assert_int_eq(gcoll__algo_select(&a, "recursive_doubling", &algo), GCOLL_SUCCESS);
    ck_assert_str_eq(algo->name, "recursive_doubling");
    ck_assert_int_eq(gcoll__algo_select(&a, "binomial", &algo), GCOLL_ERR_INVALID_ARG);
    ck_assert(strstr(gcoll_last_error(), "attr->algorithm") != NULL);
    clear_env();
}
END_TEST

START_TEST(uncovered_sizes_use_builtin_choice)
{
    clear_env();
    setenv("GCOLL_ALLREDUCE", "ring:1M-2M", 1);
    ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
    static gcoll__links_t links = {.intra = {1e-6, 5e9}, .inter = {10e-6, 1e9}};
    gcoll__coll_args_t a = {
        .coll = GCOLL_COLL_ALLREDUCE, .dtype = GCOLL_FLOAT32, .esize = 4, .size = 2, .count = 16, .links = &links};
    const gcoll__algo_t *algo;
    ck_assert_int_eq(gcoll__algo_select(&a, NULL, &algo), GCOLL_SUCCESS);
    ck_assert_str_ne(algo->name, "ring"); /* the cost model's pick for 64 bytes: one round, not two */
    clear_env();
}
END_TEST

START_TEST(sizes_parse_strictly)
{
    size_t v;
    ck_assert_int_eq(gcoll__parse_size("0", &v), GCOLL_SUCCESS);
    ck_assert_uint_eq(v, 0);
    ck_assert_int_eq(gcoll__parse_size("64K", &v), GCOLL_SUCCESS);
    ck_assert_uint_eq(v, 65536);
    ck_assert_int_eq(gcoll__parse_size("3M", &v), GCOLL_SUCCESS);
    ck_assert_uint_eq(v, 3u << 20);
    ck_assert_int_eq(gcoll__parse_size("2G", &v), GCOLL_SUCCESS);
    ck_assert_uint_eq(v, (size_t)2 << 30);
    ck_assert_int_eq(gcoll__parse_size("max", &v), GCOLL_SUCCESS);
    ck_assert_uint_eq(v, SIZE_MAX);
    ck_assert_int_eq(gcoll__parse_size("", &v), GCOLL_ERR_INVALID_ARG);
    ck_assert_int_eq(gcoll__parse_size("-1", &v), GCOLL_ERR_INVALID_ARG);
    ck_assert_int_eq(gcoll__parse_size("1KB", &v), GCOLL_ERR_INVALID_ARG);
    ck_assert_int_eq(gcoll__parse_size("99999999999999999999", &v), GCOLL_ERR_INVALID_ARG);
    ck_assert_int_eq(gcoll__parse_size("17179869184G", &v), GCOLL_ERR_INVALID_ARG);
}
END_TEST

START_TEST(pipeline_variables_parse)
{
    clear_env();
    ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
    ck_assert_uint_eq(gcoll__config.chunk_bytes, 1024 * 1024);
    ck_assert_int_eq(gcoll__config.pipeline_depth, 8);
    setenv("GCOLL_CHUNK_BYTES", "4K", 1);
    setenv("GCOLL_PIPELINE_DEPTH", "1", 1);
    ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
    ck_assert_uint_eq(gcoll__config.chunk_bytes, 4096);
    ck_assert_int_eq(gcoll__config.pipeline_depth, 1);
    setenv("GCOLL_CHUNK_BYTES", "5000", 1);
    setenv("GCOLL_PIPELINE_DEPTH", "1024", 1);
    ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
    ck_assert_uint_eq(gcoll__config.chunk_bytes, 5000);
    ck_assert_int_eq(gcoll__config.pipeline_depth, 1024);
    setenv("GCOLL_CHUNK_BYTES", "1g", 1);
    ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
    ck_assert_uint_eq(gcoll__config.chunk_bytes, (size_t)1 << 30);
    const char *bad_chunk[] = {"", "0", "4095", "1K", "2G", "max", "-4K", "4KB", "4 K", " 4K", "lots", "1.5M", NULL};
    for (int i = 0; bad_chunk[i]; i++)
        expect_bad("GCOLL_CHUNK_BYTES", bad_chunk[i], "accepts bytes with K/M/G suffixes from 4K to 1G");
    const char *bad_depth[] = {"", "0", "-1", "1025", "2.5", " 3", "3 ", "four", "0x4", NULL};
    for (int i = 0; bad_depth[i]; i++)
        expect_bad("GCOLL_PIPELINE_DEPTH", bad_depth[i], "accepts an integer from 1 to 1024");
    clear_env();
}
END_TEST

/* GCOLL_LIBRARY belongs to the Python package: listed (so not warned about) and checked. */
START_TEST(python_library_variable)
{
    clear_env();
    setenv("GCOLL_LIBRARY", "/opt/gcoll/lib/libgcoll.so.1", 1);
    ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
    unsetenv("GCOLL_LIBRARY");
    expect_bad("GCOLL_LIBRARY", "", "accepts none or a file path");
}
END_TEST

START_TEST(registry_listing)
{
    ck_assert_uint_ge(gcoll_config_count(), 4);
    gcoll_config_var_t v;
    ck_assert_int_eq(gcoll_config_var(0, &v), GCOLL_SUCCESS);
    ck_assert(strncmp(v.name, "GCOLL_", 6) == 0);
    ck_assert_int_eq(gcoll_config_var(gcoll_config_count(), &v), GCOLL_ERR_INVALID_ARG);
    ck_assert_int_eq(gcoll_config_var(0, NULL), GCOLL_ERR_INVALID_ARG);
    ck_assert(strstr(gcoll_last_error(), "var") != NULL);
    const char *const *names;
    size_t n;
    ck_assert_int_eq(gcoll_algorithms("allreduce", &names, &n), GCOLL_SUCCESS);
    ck_assert_uint_eq(n, 7);
    ck_assert_str_eq(names[0], "ring");
    ck_assert_str_eq(names[2], "rabenseifner");
    ck_assert_str_eq(names[3], "direct");
    ck_assert_str_eq(names[5], "shm_cma");
    ck_assert_str_eq(names[6], "hierarchical");
    char list[GCOLL_ALGO_LIST_LEN];
    ck_assert_str_eq(gcoll__algo_list(list, sizeof(list), GCOLL_COLL_REDUCE, GCOLL_FAMILY_PLAIN, 0),
                     "binomial|rabenseifner|chain|shm_slots");
    ck_assert_int_eq(gcoll_algorithms("allsorts", &names, &n), GCOLL_ERR_INVALID_ARG);
    /* Adasum's family (docs/adasum.md), listed under "adasum"; top-k's under no name */
    static const char *const adasum[] = {"halving", "shm_slots", "shm_cma", "hierarchical"};
    ck_assert_int_eq(gcoll_algorithms("adasum", &names, &n), GCOLL_SUCCESS);
    ck_assert_uint_eq(n, 4);
    for (size_t i = 0; i < 4; i++)
        ck_assert_str_eq(names[i], adasum[i]);
    ck_assert_int_eq(gcoll_algorithms("topk", &names, &n), GCOLL_ERR_INVALID_ARG);
}
END_TEST

/* The registry's flags against what the documentation says of each algorithm, and the lists
 * that messages and gcoll_algorithms build from them. */
START_TEST(registry_flags)
{
    char list[GCOLL_ALGO_LIST_LEN];
    /* docs/compression.md: fp16/bf16 ride ring, rabenseifner and hierarchical */
    ck_assert_str_eq(gcoll__algo_list(list, sizeof(list), GCOLL_COLL_ALLREDUCE, GCOLL_FAMILY_PLAIN, GCOLL_ALGO_WIRE16),
                     "ring|rabenseifner|hierarchical");
    ck_assert_str_eq(gcoll__algo_list(list, sizeof(list), GCOLL_COLL_ALLREDUCE, GCOLL_FAMILY_TOPK, 0), "topk");
    int nplain = 0, nadasum = 0, ntopk = 0;
    for (int i = 0; gcoll__algo_get(i); i++) {
        const gcoll__algo_t *e = gcoll__algo_get(i);
        int node = strncmp(e->name, "shm_", 4) == 0; /* docs/algorithms.md: the node channel's are shm_* */
        ck_assert_msg(!!(e->flags & GCOLL_ALGO_NODE) == node, "%s: node flag", e->name);
        ck_assert_msg(!!(e->flags & GCOLL_ALGO_CMA) == (strcmp(e->name, "shm_cma") == 0), "%s: cma flag", e->name);
        ck_assert_msg(!!(e->flags & GCOLL_ALGO_HIER) == (strcmp(e->name, "hierarchical") == 0), "%s: hier flag",
                      e->name);
        /* docs/adasum.md: Adasum's shm_cma runs only when named */
        ck_assert_msg(!!(e->flags & GCOLL_ALGO_FORCED) ==
                          (e->family == GCOLL_FAMILY_ADASUM && strcmp(e->name, "shm_cma") == 0),
                      "%s: forced flag", e->name);
        ck_assert_int_eq(gcoll__algo_find(e->coll, e->family, e->name), i);
        if (e->family == GCOLL_FAMILY_ADASUM) {
            nadasum++;
            ck_assert(e->coll == GCOLL_COLL_ALLREDUCE && e->adasum && !e->build);
            ck_assert(strncmp(e->label, "adasum/", 7) == 0 && strcmp(e->label + 7, e->name) == 0);
        } else {
            nplain += e->family == GCOLL_FAMILY_PLAIN;
            ntopk += e->family == GCOLL_FAMILY_TOPK;
            ck_assert(e->build && !e->adasum && strcmp(e->label, e->name) == 0);
        }
    }
    ck_assert_int_eq(nplain, 44);
    ck_assert_int_eq(nadasum, 4);
    ck_assert_int_eq(ntopk, 1);
    ck_assert_str_eq(gcoll__family_name(GCOLL_FAMILY_ADASUM), "adasum");
    ck_assert_ptr_null(gcoll__family_name(GCOLL_FAMILY_PLAIN));

    /* forced names that the call's family lacks: the message lists the family */
    gcoll__coll_args_t a = {.coll = GCOLL_COLL_ALLREDUCE, .dtype = GCOLL_FLOAT32, .esize = 4, .size = 2, .count = 8};
    const gcoll__algo_t *algo;
    a.compress = GCOLL_COMPRESS_TOPK;
    a.density = 0.5;
    ck_assert_int_eq(gcoll__algo_select(&a, "ring", &algo), GCOLL_ERR_INVALID_ARG);
    ck_assert_msg(strstr(gcoll_last_error(), "attr->algorithm 'ring'") && strstr(gcoll_last_error(), "accepts topk"),
                  "%s", gcoll_last_error());
    ck_assert_int_eq(gcoll__algo_select(&a, "topk", &algo), GCOLL_SUCCESS);
    ck_assert_str_eq(algo->name, "topk");
    ck_assert_int_eq(gcoll__algo_select(&a, NULL, &algo), GCOLL_SUCCESS);
    ck_assert_str_eq(algo->name, "topk");
    a.compress = GCOLL_COMPRESS_BF16;
    ck_assert_int_eq(gcoll__algo_select(&a, "direct", &algo), GCOLL_ERR_INVALID_ARG);
    ck_assert_msg(strstr(gcoll_last_error(), "accepts ring|rabenseifner|hierarchical"), "%s", gcoll_last_error());
    a.compress = GCOLL_COMPRESS_NONE;
    ck_assert_int_eq(gcoll__algo_select(&a, "topk", &algo), GCOLL_ERR_INVALID_ARG);
    ck_assert_int_eq(gcoll__algo_select(&a, "halving", &algo), GCOLL_ERR_INVALID_ARG);
    ck_assert_msg(strstr(gcoll_last_error(),
                         "accepts ring|recursive_doubling|rabenseifner|direct|shm_slots|shm_cma|hierarchical"),
                  "%s", gcoll_last_error());
    a.op = GCOLL_ADASUM;
    gcoll__sched_t *s = gcoll__sched_new(a.dtype, GCOLL_SUM, 2, NULL);
    const char *label;
    ck_assert_int_eq(gcoll__adasum_build(s, &a, NULL, 0, "ring", &label), GCOLL_ERR_INVALID_ARG);
    ck_assert_msg(strstr(gcoll_last_error(),
                         "'ring' is not an adasum algorithm: accepts "
                         "halving|shm_slots|shm_cma|hierarchical"),
                  "%s", gcoll_last_error());
    gcoll__sched_free(s);
}
END_TEST

/* GCOLL_ADASUM's choice among Adasum's family, as docs/adasum.md states it: hierarchical where
 * some host of several holds several ranks (auto) or always (hierarchical), halving otherwise
 * off the node channel; never the forced-only shm_cma. */
START_TEST(adasum_choice_follows_gcoll_adasum)
{
    static int h22[4] = {0, 0, 1, 1}, l22[4] = {0, 1, 0, 1}, f22[3] = {0, 2, 4}, b22[4] = {0, 1, 2, 3};
    static int h41[4] = {0, 1, 2, 3}, l41[4] = {0, 0, 0, 0}, f41[5] = {0, 1, 2, 3, 4}, b41[4] = {0, 1, 2, 3};
    static const gcoll__nodemap_t two_by_two = {2, 1, h22, l22, f22, b22, 0, 0, 0},
                                  four_by_one = {4, 1, h41, l41, f41, b41, 0, 0, 0};
    static const struct {
        const char *mode;
        const gcoll__nodemap_t *map;
        const char *want;
    } cases[] = {
        {"auto", &two_by_two, "adasum/hierarchical"},
        {"auto", &four_by_one, "adasum/halving"},
        {"flat", &two_by_two, "adasum/halving"},
        {"hierarchical", &four_by_one, "adasum/hierarchical"},
        {"auto", NULL, "adasum/halving"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        clear_env();
        setenv("GCOLL_ADASUM", cases[i].mode, 1);
        ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
        gcoll__coll_args_t a = {.coll = GCOLL_COLL_ALLREDUCE,
                                .dtype = GCOLL_FLOAT32,
                                .op = GCOLL_ADASUM,
                                .esize = 4,
                                .size = 4,
                                .count = 1000,
                                .map = cases[i].map};
        ck_assert_msg(strcmp(gcoll__adasum_choice(&a), cases[i].want) == 0, "GCOLL_ADASUM=%s, case %zu: %s, want %s",
                      cases[i].mode, i, gcoll__adasum_choice(&a), cases[i].want);
    }
    clear_env();
}
END_TEST

/* GCOLL_TRANSPORT_INTER and GCOLL_TRANSPORT_INTRA take their names from the transport list:
 * each name picks its entry, auto and inter none (the automatic choice between hosts). */
START_TEST(transport_variables_name_list_entries)
{
    static const char *const inter[] = {"auto", "ofi", "tcp", "mpi"}, *const intra[] = {"shm", "inter", "mpi"};
    clear_env();
    ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
    ck_assert_ptr_null(gcoll__transport_inter());
    ck_assert_str_eq(gcoll__transport_intra()->name, "shm");
    for (size_t i = 0; i < sizeof(inter) / sizeof(inter[0]); i++) {
        setenv("GCOLL_TRANSPORT_INTER", inter[i], 1);
        ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
        const gcoll__tp_entry_t *e = gcoll__transport_inter();
        ck_assert_str_eq(e ? e->name : "auto", inter[i]);
        ck_assert(!e || e == gcoll__tp_find(inter[i]));
    }
    unsetenv("GCOLL_TRANSPORT_INTER");
    for (size_t i = 0; i < sizeof(intra) / sizeof(intra[0]); i++) {
        setenv("GCOLL_TRANSPORT_INTRA", intra[i], 1);
        ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
        const gcoll__tp_entry_t *e = gcoll__transport_intra();
        ck_assert_str_eq(e ? e->name : "inter", intra[i]);
    }
    unsetenv("GCOLL_TRANSPORT_INTRA");
    expect_bad("GCOLL_TRANSPORT_INTER", "plugin", "auto|ofi|tcp|mpi");
    expect_bad("GCOLL_TRANSPORT_INTRA", "tcp", "shm|inter|mpi");
    for (size_t i = 0; i < gcoll_config_count(); i++) {
        gcoll_config_var_t v;
        ck_assert_int_eq(gcoll_config_var(i, &v), GCOLL_SUCCESS);
        if (strcmp(v.name, "GCOLL_TRANSPORT_INTER") == 0)
            ck_assert_str_eq(v.description,
                             "between hosts: auto takes the plugin if one is loaded, else libfabric on "
                             "a real NIC, else TCP");
        if (strcmp(v.name, "GCOLL_TRANSPORT_INTRA") == 0)
            ck_assert_str_eq(v.description,
                             "between ranks of one host: shared memory, the transport used between hosts, or MPI");
    }
}
END_TEST

START_TEST(mpi_colls_parse_strictly)
{
    clear_env();
    ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
    ck_assert_uint_eq(gcoll__config.mpi_colls, 0xfffffff); /* all 28 calls */
    setenv("GCOLL_MPI_COLLS", "none", 1);
    ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
    ck_assert_uint_eq(gcoll__config.mpi_colls, 0);
    setenv("GCOLL_MPI_COLLS", "barrier,allreduce,reduce_scatter_block", 1);
    ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
    ck_assert_uint_eq(gcoll__config.mpi_colls, 1u << 6 | 1u << 0 | 1u << 2);
    unsetenv("GCOLL_MPI_COLLS");
    expect_bad("GCOLL_MPI_COLLS", "", "accepts all, none, or names");
    expect_bad("GCOLL_MPI_COLLS", "allreduce,", "'' is not a call");
    expect_bad("GCOLL_MPI_COLLS", ",bcast", "'' is not a call");
    expect_bad("GCOLL_MPI_COLLS", "Allreduce", "'Allreduce' is not a call");
    expect_bad("GCOLL_MPI_COLLS", "all,bcast", "'all' is not a call");
    expect_bad("GCOLL_MPI_COLLS", "alltoallw", "'alltoallw' is not a call");
    expect_bad("GCOLL_MPI_COLLS", "bcast reduce", "'bcast reduce' is not a call");
}
END_TEST

/* The variables of a launch without MPI: unset by default, strict, the secret never echoed. */
START_TEST(boot_variables_parse)
{
    clear_env();
    ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
    ck_assert_int_eq(gcoll__config.boot, 0);
    ck_assert_int_eq(gcoll__config.boot_rank, -1);
    ck_assert_int_eq(gcoll__config.boot_size, -1);
    ck_assert_str_eq(gcoll__config.root_addr, "");
    ck_assert_int_eq(gcoll__config.has_job_secret, 0);
    setenv("GCOLL_RANK", "0", 1);
    setenv("GCOLL_SIZE", "16777216", 1);
    setenv("GCOLL_ROOT_ADDR", "node-1.cluster:29500", 1);
    setenv("GCOLL_JOB_SECRET", "000102030405060708090a0b0c0d0eFF", 1);
    setenv("GCOLL_BOOT", "env", 1);
    ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
    ck_assert_int_eq(gcoll__config.boot, 2);
    ck_assert_int_eq(gcoll__config.boot_rank, 0);
    ck_assert_int_eq(gcoll__config.boot_size, 16777216);
    ck_assert_str_eq(gcoll__config.root_addr, "node-1.cluster:29500");
    ck_assert_int_eq(gcoll__config.has_job_secret, 1);
    ck_assert_int_eq(gcoll__config.job_secret[0], 0);
    ck_assert_int_eq(gcoll__config.job_secret[10], 10);
    ck_assert_int_eq(gcoll__config.job_secret[15], 255);
    const char *bad_rank[] = {"", "-1", "16777216", "1.0", " 1", "one", NULL};
    for (int i = 0; bad_rank[i]; i++)
        expect_bad("GCOLL_RANK", bad_rank[i], "accepts none or an integer from 0 to 16777215");
    expect_bad("GCOLL_SIZE", "0", "accepts none or an integer from 1 to 16777216");
    const char *bad_addr[] = {"",         "10.0.0.1", ":29500",   "10.0.0.1:", "10.0.0.1:0", "10.0.0.1:65536",
                              "[::1]:80", "a b:80",   "host:80x", NULL};
    for (int i = 0; bad_addr[i]; i++)
        expect_bad("GCOLL_ROOT_ADDR", bad_addr[i], "accepts none or HOST:PORT");
    const char *bad_secret[] = {"", "0011", "000102030405060708090a0b0c0d0e0f00", "000102030405060708090a0b0c0d0eZZ",
                                NULL};
    for (int i = 0; bad_secret[i]; i++) {
        expect_bad("GCOLL_JOB_SECRET", bad_secret[i], "accepts none or exactly 32 hex digits");
        ck_assert_msg(!bad_secret[i][0] || !strstr(gcoll_last_error(), bad_secret[i]), "the secret was echoed: %s",
                      gcoll_last_error());
    }
    expect_bad("GCOLL_BOOT", "slurm", "auto|mpi|env");
    clear_env();
}
END_TEST

/* gcoll_config_get: the value the library takes and its source, before a load (the environment
 * as it is) and after one (what the load read), for the base's variables and a group's. */
static void expect_value(const char *name, const char *value, const char *source)
{
    char buf[64] = "unwritten";
    const char *from = NULL;
    ck_assert_int_eq(gcoll_config_get(name, buf, sizeof(buf), &from), GCOLL_SUCCESS);
    ck_assert_str_eq(buf, value);
    ck_assert_ptr_nonnull(from);
    ck_assert_str_eq(from, source);
}

START_TEST(config_get_reads_the_registry)
{
    gcoll__config_unload();
    clear_env();
    expect_value("GCOLL_TIMEOUT", "300", "default");
    expect_value("GCOLL_ALLREDUCE", "auto", "default"); /* a group's (the selection's) */
    expect_value("GCOLL_JOB_SECRET", "none", "default");
    setenv("GCOLL_TIMEOUT", "12.5", 1);
    setenv("GCOLL_ALLREDUCE", "ring", 1);
    expect_value("GCOLL_TIMEOUT", "12.5", "environment"); /* before any load: as it is now */
    expect_value("GCOLL_ALLREDUCE", "ring", "environment");
    /* an exact fit, one byte short, and no source wanted */
    char buf[5] = "----"; /* a stale value the call must replace */
    ck_assert_int_eq(gcoll_config_get("GCOLL_TIMEOUT", buf, 5, NULL), GCOLL_SUCCESS);
    ck_assert_str_eq(buf, "12.5");
    ck_assert_int_eq(gcoll_config_get("GCOLL_TIMEOUT", buf, 4, NULL), GCOLL_ERR_INVALID_ARG);
    ck_assert_msg(strstr(gcoll_last_error(), "len 4") && strstr(gcoll_last_error(), "needs 5"), "message: %s",
                  gcoll_last_error());
    ck_assert_str_eq(buf, "");
    ck_assert_int_eq(gcoll_config_get("GCOLL_TIME_OUT", buf, sizeof(buf), NULL), GCOLL_ERR_INVALID_ARG);
    ck_assert_msg(strstr(gcoll_last_error(), "name 'GCOLL_TIME_OUT'"), "message: %s", gcoll_last_error());
    ck_assert_int_eq(gcoll_config_get("TIMEOUT", buf, sizeof(buf), NULL), GCOLL_ERR_INVALID_ARG);

    /* after a load: what it read, whatever the environment does next, until the unload */
    ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
    setenv("GCOLL_TIMEOUT", "99", 1);
    unsetenv("GCOLL_ALLREDUCE");
    setenv("GCOLL_LOG_LEVEL", "debug", 1);
    expect_value("GCOLL_TIMEOUT", "12.5", "environment");
    expect_value("GCOLL_ALLREDUCE", "ring", "environment");
    expect_value("GCOLL_LOG_LEVEL", "warn", "default");
    gcoll__config_unload();
    expect_value("GCOLL_TIMEOUT", "99", "environment");
    expect_value("GCOLL_ALLREDUCE", "auto", "default");
    expect_value("GCOLL_LOG_LEVEL", "debug", "environment");
    /* a failed load keeps nothing of what it read */
    setenv("GCOLL_TCP_NSOCKS", "0", 1);
    ck_assert_int_eq(gcoll__config_load(), GCOLL_ERR_INVALID_ARG);
    setenv("GCOLL_TIMEOUT", "7", 1);
    expect_value("GCOLL_TIMEOUT", "7", "environment");
    expect_value("GCOLL_TCP_NSOCKS", "0", "environment");
    clear_env();
}
END_TEST

/* The job secret never comes back in clear, before a load or after one. */
START_TEST(config_get_hides_the_secret)
{
    static const char secret[] = "0123456789abcdef0123456789ABCDEF";
    gcoll__config_unload();
    clear_env();
    setenv("GCOLL_JOB_SECRET", secret, 1);
    expect_value("GCOLL_JOB_SECRET", "(hidden)", "environment");
    ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
    expect_value("GCOLL_JOB_SECRET", "(hidden)", "environment");
    char small[4];
    ck_assert_int_eq(gcoll_config_get("GCOLL_JOB_SECRET", small, sizeof(small), NULL), GCOLL_ERR_INVALID_ARG);
    ck_assert_msg(!strstr(gcoll_last_error(), "0123456789"), "the secret was echoed: %s", gcoll_last_error());
    gcoll__config_unload();
    clear_env();
}
END_TEST

Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("registry");
    tcase_add_test(tc, defaults_load);
    tcase_add_test(tc, malformed_values_name_the_variable);
    tcase_add_test(tc, stall_warnings_default_and_off);
    tcase_add_test(tc, selection_table_parses_and_selects);
    tcase_add_test(tc, uncovered_sizes_use_builtin_choice);
    tcase_add_test(tc, sizes_parse_strictly);
    tcase_add_test(tc, pipeline_variables_parse);
    tcase_add_test(tc, registry_listing);
    tcase_add_test(tc, registry_flags);
    tcase_add_test(tc, adasum_choice_follows_gcoll_adasum);
    tcase_add_test(tc, python_library_variable);
    tcase_add_test(tc, transport_variables_name_list_entries);
    tcase_add_test(tc, mpi_colls_parse_strictly);
    tcase_add_test(tc, boot_variables_parse);
    tcase_add_test(tc, config_get_reads_the_registry);
    tcase_add_test(tc, config_get_hides_the_secret);
    suite_add_tcase(s, tc);
    return s;
}
