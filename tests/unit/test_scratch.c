/* The scratch buffer cache: a freed buffer serves the next request that it fits (at most twice
 * its size), the newest are kept within its slots and GCOLL_SCRATCH_CACHE, and every buffer,
 * kept or fresh, holds what was asked (the sanitizers watch the writes). That a buffer is freed
 * shows only as the page faults of the next one: test_soak counts them. */
#include <stdint.h>
#include <string.h>

#include "base/config.h"
#include "base/schedule.h"
#include "base/scratch.h"
#include "unit.h"

static void *filled(size_t bytes)
{
    unsigned char *p = gcoll__scratch_get(bytes);
    ck_assert_ptr_nonnull(p);
    memset(p, 0xa5, bytes);
    return p;
}

/* Each test starts from an empty cache and leaves none behind (under CK_FORK=no the suites share
 * one process: other tests' schedules fill the cache while the bound allows it). */
static void empty_cache(size_t bound)
{
    gcoll__scratch_drain();
    gcoll__config.scratch_cache = bound;
}

START_TEST(a_freed_buffer_serves_the_next_request_it_fits)
{
    empty_cache((size_t)256 << 20);
    void *a = filled((size_t)1 << 20);
    gcoll__scratch_put(a);
    void *b = filled((size_t)1 << 20);
    ck_assert_ptr_eq(a, b);
    gcoll__scratch_put(b);
    void *c = filled((size_t)600 << 10); /* fits: at most twice its size */
    ck_assert_ptr_eq(a, c);
    gcoll__scratch_put(c);
    void *d = filled((size_t)300 << 10); /* a small request does not pin the large buffer */
    ck_assert_ptr_ne(a, d);
    void *e = filled(((size_t)1 << 20) + 1); /* nor does a larger one take it */
    ck_assert_ptr_ne(a, e);
    void *f = filled((size_t)1 << 20);
    ck_assert_ptr_eq(a, f);
    gcoll__scratch_put(d);
    gcoll__scratch_put(e);
    gcoll__scratch_put(f);
    void *g = filled(0), *h = filled(100); /* small ones come and go through malloc */
    gcoll__scratch_put(g);
    gcoll__scratch_put(h);
    gcoll__scratch_put(NULL);
    empty_cache(0);
}
END_TEST

/* Takes n buffers of bytes each, gives them all back, then takes n again: how many of the
 * second ones are among the last `newest` given back. */
static int kept_of(int n, size_t bytes, int newest)
{
    void *first[40], *again[40];
    for (int i = 0; i < n; i++)
        first[i] = filled(bytes);
    for (int i = 0; i < n; i++)
        gcoll__scratch_put(first[i]);
    int hits = 0;
    for (int i = 0; i < n; i++) {
        again[i] = filled(bytes);
        for (int j = n - newest; j < n; j++)
            hits += again[i] == first[j];
    }
    for (int i = 0; i < n; i++)
        gcoll__scratch_put(again[i]);
    gcoll__scratch_drain();
    return hits;
}

START_TEST(the_newest_are_kept_within_the_bound)
{
    size_t mib = (size_t)1 << 20;
    empty_cache(3 * mib);
    ck_assert_int_eq(kept_of(4, mib, 3), 3); /* the bytes bound: the three newest */
    empty_cache(256 * mib);
    ck_assert_int_eq(kept_of(33, (size_t)64 << 10, 32), 32); /* the slots: the 32 newest */
    empty_cache(0);
}
END_TEST

START_TEST(dry_schedules_leave_the_cache_alone)
{
    /* a schedule built only to be priced never writes its scratch: had it taken the kept buffer,
     * or left its own untouched one behind, a real operation would fault its pages in */
    size_t mib = (size_t)1 << 20;
    empty_cache(mib);
    void *kept = filled(mib);
    gcoll__scratch_put(kept);
    gcoll__sched_t *s = gcoll__sched_new(GCOLL_FLOAT32, GCOLL_SUM, 2, NULL);
    ck_assert_ptr_nonnull(s);
    s->dry = 1;
    void *dry = gcoll__sched_scratch(s, 4 * mib);
    ck_assert_ptr_nonnull(dry);
    ck_assert_ptr_ne(dry, kept);
    gcoll__sched_free(s);
    void *again = filled(mib);
    ck_assert_ptr_eq(again, kept);
    gcoll__scratch_put(again);
    empty_cache(0);
}
END_TEST

Suite *scratch_suite(void)
{
    Suite *s = suite_create("scratch");
    TCase *tc = tcase_create("scratch");
    tcase_add_test(tc, a_freed_buffer_serves_the_next_request_it_fits);
    tcase_add_test(tc, the_newest_are_kept_within_the_bound);
    tcase_add_test(tc, dry_schedules_leave_the_cache_alone);
    suite_add_tcase(s, tc);
    return s;
}
