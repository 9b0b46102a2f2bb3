/*
 * adaptive_config.c - the adaptive policy's arguments (--policy
 * adaptive:...) and its start size: the competitive size from the
 * device's profile, else the daemon's --prefetch.
 */
#include "adaptive.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

int adaptive_config(struct rd_policy *p, struct adaptive *a, char *err, size_t errlen)
{
	const char *cur = p->dev->args;
	char key[32], val[256], profile_path[256] = "";
	double sw = -1, rate = -1;
	int have_ramp = 0, r;
	while ((r = sz_args_next(&cur, key, sizeof key, val, sizeof val)) > 0) {
		int taken = sz_base_arg(&a->b, key, val, err, errlen);
		if (taken < 0)
			return -1;
		if (taken)
			continue;
		uint64_t ns;
		double num;
		if (strcmp(key, "interval") == 0 && sz_parse_duration(val, &a->interval_ns) == 0 &&
		    a->interval_ns >= 100000000u)
			;
		else if (strcmp(key, "ramp") == 0 && sz_parse_duration(val, &a->ramp_ns) == 0)
			have_ramp = 1;
		else if (strcmp(key, "step") == 0 && rd_parse_size(val, &a->step) == 0 &&
		         a->step >= SZ_PAGE)
			;
		else if (strcmp(key, "start") == 0 && rd_parse_size(val, &a->start) == 0 &&
		         a->start >= SZ_PAGE)
			;
		else if (strcmp(key, "deflate") == 0 && sz_parse_fraction(val, &a->deflate) == 0)
			;
		else if (strcmp(key, "busy") == 0 && sz_parse_fraction(val, &a->busy_min) == 0)
			;
		else if (strcmp(key, "evict") == 0 && sz_parse_fraction(val, &a->evict_max) == 0)
			;
		else if (strcmp(key, "compare") == 0 &&
		         (strcmp(val, "side-by-side") == 0 || strcmp(val, "intervals") == 0 ||
		          strcmp(val, "aa") == 0)) {
			a->side_by_side = val[0] != 'i';
			a->aa = val[0] == 'a';
		}
		else if (strcmp(key, "trial") == 0 && sz_parse_fraction(val, &a->trial) == 0 &&
		         a->trial > 0 && a->trial <= 1.0 / 3)
			;
		else if (strcmp(key, "held") == 0 && sz_parse_fraction(val, &a->held) == 0 &&
		         a->held > 0)
			;
		else if (strcmp(key, "sigma") == 0 && sz_parse_number(val, &a->sigma) == 0 &&
		         a->sigma >= 0)
			;
		else if (strcmp(key, "score") == 0 &&
		         (strcmp(val, "paper") == 0 || strcmp(val, "disk") == 0))
			a->miss_power = val[0] == 'p';
		else if (strcmp(key, "escape") == 0 && sz_parse_number(val, &num) == 0 &&
		         num >= 0 && num <= 1000 && num == floor(num))
			a->escape = (unsigned)num;
		else if (strcmp(key, "switch") == 0 && sz_parse_duration(val, &ns) == 0)
			sw = (double)ns / 1e9;
		else if (strcmp(key, "rate") == 0 && sz_parse_bytes(val, &rate) == 0 && rate > 0)
			;
		else if (strcmp(key, "profile") == 0)
			snprintf(profile_path, sizeof profile_path, "%s", val);
		else {
			snprintf(err, errlen,
			         "%s: bad argument \"%s=%s\" (interval=, step=, deflate=, busy=, evict=, "
			         "ramp=, start=, compare=side-by-side|intervals|aa, trial= up to 33%%, held=, sigma=, "
			         "escape=, score=paper|disk, switch=, rate=, profile=, scale=, ref=, min=, "
			         "max=, streams=)",
			         a->b.who, key, val);
			return -1;
		}
	}
	if (r < 0) {
		snprintf(err, errlen, "%s: arguments \"%s\": expected key=value,...", a->b.who,
		         p->dev->args);
		return -1;
	}
	if (!have_ramp)
		a->ramp_ns = a->interval_ns / 3;
	if (a->held == 0)
		a->held = a->trial / 4;
	if (a->held > a->trial) {
		snprintf(err, errlen, "%s: held must be at most trial", a->b.who);
		return -1;
	}
	if (a->ramp_ns >= a->interval_ns) {
		snprintf(err, errlen, "%s: ramp must be shorter than interval", a->b.who);
		return -1;
	}
	if (a->step > a->b.max_size) {
		snprintf(err, errlen, "%s: step is above max", a->b.who);
		return -1;
	}

	/* The profile gives the start (competitive size) and the concurrency. */
	struct sz_profile prof;
	int have_prof = sz_profile_load(p->dev->disk, profile_path[0] ? profile_path : NULL, &prof);
	if (have_prof == -2 || (have_prof == -1 && profile_path[0])) {
		snprintf(err, errlen, "%s: profile %s: %s", a->b.who,
		         profile_path[0] ? profile_path : prof.path,
		         have_prof == -2 ? "malformed" : strerror(errno));
		return -1;
	}
	p->concurrency = have_prof == 0 ? prof.concurrency : 1;
	if (have_prof == 0) {
		if (sw < 0)
			sw = prof.switch_s;
		if (rate < 0)
			rate = prof.rate;
	}
	if (a->start) {
		snprintf(a->start_source, sizeof a->start_source, "start argument");
	} else if (sw >= 0 && rate > 0) {
		a->start = (uint64_t)(sw * rate);
		snprintf(a->start_source, sizeof a->start_source,
		         "competitive size: switch %.2f ms x %.1f MB/s (%s)", sw * 1e3, rate / 1e6,
		         have_prof == 0 ? prof.path : "arguments");
	} else {
		a->start = p->dev->default_size;
		snprintf(a->start_source, sizeof a->start_source,
		         "no profile for this device: the daemon's --prefetch");
	}
	return 0;
}
