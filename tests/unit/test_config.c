/* The configuration registry: strict parsing, messages that name the variable, selection
 * tables, and the public listing. */
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "unit.h"
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
    setenv("GCOLL_LIBRARY", "/opt/gcoll/lib/libgcoll.so.0", 1);
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
    ck_assert_str_eq(gcoll__algo_list(GCOLL_COLL_REDUCE), "binomial|rabenseifner|chain|shm_slots");
    ck_assert_int_eq(gcoll_algorithms("allsorts", &names, &n), GCOLL_ERR_INVALID_ARG);
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
    ck_assert_uint_eq(gcoll__config.mpi_colls, 0x7f); /* all seven calls */
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
    expect_bad("GCOLL_MPI_COLLS", "alltoall", "reduce_scatter_block, allgather, bcast, reduce, barrier");
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
    tcase_add_test(tc, python_library_variable);
    tcase_add_test(tc, transport_variables_name_list_entries);
    tcase_add_test(tc, mpi_colls_parse_strictly);
    tcase_add_test(tc, boot_variables_parse);
    suite_add_tcase(s, tc);
    return s;
}
