/*
 * test_sizing.h - what the unit tests of the sizing policies share: the
 * check macro, the daemon's log as sizing_stubs.c keeps it, synthetic
 * requests and devices, and the model server of model.c.
 *
 *   test_sizing.c    main; arguments, profiles, scaling, competitive, bitrate
 *   test_streams.c   the stream table and the accounting
 *   model.c          a model server and disk the adaptive policy runs against
 *   test_adaptive.c  the adaptive policy on the model
 *
 * SIZING_VERBOSE=1 prints the policies' log lines.
 */
#ifndef SZ_TEST_SIZING_H
#define SZ_TEST_SIZING_H

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "json.h"
#include "sizing.h"

extern char sz_test_last_log[1024];
extern unsigned sz_test_logs;
extern int sz_test_verbose;
extern void (*sz_test_log_hook)(const char *line);

extern int failures;
#define CHECK(cond) do { if (!(cond)) { failures++; \
	fprintf(stderr, "test_sizing: %s:%d: failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)

#define MiB (1ull << 20)
#define SEC 1000000000ull

/* A synthetic answered request, and a device with policy arguments
 * (test_sizing.c). */
struct rd_completion completion(ino_t ino, uint64_t off, uint64_t len, uint64_t win,
                                uint64_t read, uint64_t service, uint64_t now);
struct rd_device_info dev_info(const char *args);

void test_args(void);
void test_profile(void);
void test_scale(void);
void test_competitive(void);
void test_bitrate_policy(void);

/* test_streams.c */
void test_streams_and_accounting(void);
void test_evictions_needed(void);
void test_evictions_before_a_cut(void);
void test_pacing_skips_the_opening_burst(void);
void test_reference_bitrate_is_a_percentile(void);
void test_stream_continues_inside_its_ask(void);
void test_busy_union(void);
void test_recheck(void);

/* ---- model.c ---- */

/*
 * The adaptive policy against a model server: n streams at bitrate b read
 * windows of the policy's size from a disk with a switch cost and a rate;
 * memory holds mem bytes of prefetched data, and the share of windows that
 * does not fit is read twice (evictions).  Score per size is then
 *   (switch + W(1+e)/rate) / W * (1+e),  e = max(0, 1 - mem/(n W)),
 * lowest at W = mem/n.  One second of traffic per tick.  With session= set,
 * viewers leave: each stream stops after a length drawn uniformly from
 * [session/3, 5 session/3] and a new one starts on another file, so the
 * last window of every session is read but not all of it watched.
 */
struct model {
	unsigned n;
	double bitrate, rate, switch_s, mem;
	double busy_scale;   /* scales service times (load) */
	double noise;        /* and varies by up to this share every 20 s */
	double window_noise; /* and each window's by up to this share (seeks) */
	double bump_lo, bump_hi, bump;   /* windows in [lo, hi] cost 1 + bump times more */
	double session;      /* mean bytes a viewer watches (0: forever) */
	unsigned slow;       /* the first this many viewers are slow: */
	double slow_bitrate; /* their bitrate */
	double slow_cost;    /* and their windows' disk time scaled by this */
	unsigned seed;
	uint64_t follow;     /* if set, viewer 0 watches one file for good
	                        from FOLLOWED_FROM x this, and every eighth
	                        viewer (i % 8 == 7) watches it too, each
	                        session from 2-50 MiB before that (2 MiB
	                        apart), then finding what viewer 0 read
	                        resident: one popular video */
};

/* The mean window over the second half of the run; the number of size
 * changes in *changes. */
double adaptive_run(const char *args, const struct model *m, unsigned seconds, uint64_t *changes);
/* compare=aa on a model: no move, every trial group near the current one. */
void check_aa(const char *what, const char *args, const struct model *m, unsigned seconds);
/* The disk time per MiB the viewers consumed over the second half of the
 * last run (trial groups included). */
extern double model_disk_ms_per_mib;
/* How many sizes the last adaptive_run() scored. */
extern unsigned model_sizes_scored;
/* A log hook counting side-by-side decisions that left a group unscored. */
extern unsigned too_few;
void count_too_few(const char *line);

/* test_adaptive.c */
void test_adaptive(void);
void test_adaptive_evictions(void);

#endif
