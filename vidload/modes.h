/* modes.h - the non-run modes of vidload: search, sample, materialize. */
#ifndef VL_MODES_H
#define VL_MODES_H

#include "run.h"

struct search_opts {
	double lo, hi, resolution, max_fail_pct;
	unsigned repeats;
	const char *between;   /* shell command run before each probe, or NULL */
};

/* Bisection for the maximum failure-free rate; 0 or 1 (setup error). */
int search_run(struct vl_config *cfg, const struct search_opts *o, const char *json_path);
/* Print `count` samples of zipf|arrivals|views; 0, 1 or 2 (usage). */
int sample_run(const struct vl_config *cfg, const char *kind, unsigned long count, size_t videos);
/* Write every file of the library under dir; 0 or 1. */
int materialize_run(const struct library *lib, const char *dir);

#endif
