/*
 * policy_competitive.c - competitive prefetching (Li, Shen et al.,
 * EuroSys 2007, section 2): prefetch as much as the device transfers in
 * the time of one switch between streams (seek plus rotation), which
 * bounds the disk time spent at twice the optimal offline strategy's.
 *
 * The switch cost and transfer rate come from the device's profile
 * (`libception profile`), or from arguments.  Each stream starts small and
 * doubles its window with every read until it reaches that size (slow
 * start), so short or random readers are not punished.  The profile also
 * says how many reads may run at once on the device.
 *
 * A device the profile found without a mechanical switch cost (under
 * SZ_MECHANICAL_SWITCH_S) and faster with parallel reads (flash, a fast
 * virtual disk) gains nothing from the daemon: neither a window beyond
 * the ask nor serialization.  Such a device is "direct": the daemon
 * answers at once and the library reads on its own, so the program pays
 * one cachestat per call and no round trip.
 *
 *   --policy competitive[:switch=12ms,rate=120M,size=2M,first=64K,
 *                         slowstart=0|1,concurrency=N,direct=0|1,profile=FILE,
 *                         scale=none|sqrt|linear,ref=,min=,max=,streams=]
 */
#include "sizing.h"
#include "json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct competitive {
	struct sz_base b;
	uint64_t size;            /* switch cost x transfer rate */
	uint64_t first;           /* a new stream's first window */
	int slow_start;
	double switch_s, rate;
	char source[640];         /* where the figures came from */
	uint64_t last;
	uint64_t windows_full, windows_slow;
};

/* Parse the arguments and find the figures; fills c and p->concurrency. */
static int competitive_config(struct rd_policy *p, struct competitive *c, char *err,
                              size_t errlen)
{
	const char *cur = p->dev->args;
	char key[32], val[256], profile_path[256] = "";
	double sw = -1, rate = -1;
	uint64_t size = 0;
	unsigned concurrency = 0;
	int direct = -1;   /* -1: decided by the figures */
	int r;
	while ((r = sz_args_next(&cur, key, sizeof key, val, sizeof val)) > 0) {
		int taken = sz_base_arg(&c->b, key, val, err, errlen);
		if (taken < 0)
			return -1;
		if (taken)
			continue;
		uint64_t ns, v;
		if (strcmp(key, "switch") == 0 && sz_parse_duration(val, &ns) == 0)
			sw = (double)ns / 1e9;
		else if (strcmp(key, "rate") == 0 && sz_parse_bytes(val, &rate) == 0 && rate > 0)
			;
		else if (strcmp(key, "size") == 0 && rd_parse_size(val, &size) == 0 && size >= SZ_PAGE)
			;
		else if (strcmp(key, "first") == 0 && rd_parse_size(val, &c->first) == 0 &&
		         c->first >= SZ_PAGE)
			;
		else if (strcmp(key, "slowstart") == 0 && (!strcmp(val, "0") || !strcmp(val, "1")))
			c->slow_start = val[0] == '1';
		else if (strcmp(key, "direct") == 0 && (!strcmp(val, "0") || !strcmp(val, "1")))
			direct = val[0] == '1';
		else if (strcmp(key, "concurrency") == 0 && rd_parse_size(val, &v) == 0 && v >= 1 &&
		         v <= 64)
			concurrency = (unsigned)v;
		else if (strcmp(key, "profile") == 0)
			snprintf(profile_path, sizeof profile_path, "%s", val);
		else {
			snprintf(err, errlen,
			         "%s: bad argument \"%s=%s\" (switch=, rate=, size=, first=, slowstart=, "
			         "concurrency=, direct=, profile=, scale=, ref=, min=, max=, streams=)", c->b.who,
			         key, val);
			return -1;
		}
	}
	if (r < 0) {
		snprintf(err, errlen, "%s: arguments \"%s\": expected key=value,...", c->b.who,
		         p->dev->args);
		return -1;
	}

	struct sz_profile prof;
	int have_prof = sz_profile_load(p->dev->disk, profile_path[0] ? profile_path : NULL, &prof);
	if (have_prof == -2) {
		snprintf(err, errlen, "%s: profile %s: malformed (run libception profile again)", c->b.who,
		         prof.path);
		return -1;
	}
	if (have_prof == -1 && profile_path[0]) {
		snprintf(err, errlen, "%s: profile %s: %s", c->b.who, profile_path, strerror(errno));
		return -1;
	}
	if (have_prof == 0) {
		if (sw < 0)
			sw = prof.switch_s;
		if (rate < 0)
			rate = prof.rate;
		if (!concurrency)
			concurrency = prof.concurrency;
	}
	p->concurrency = concurrency ? concurrency : 1;
	if (size) {
		c->size = size;
		snprintf(c->source, sizeof c->source, "size argument");
	} else if (sw >= 0 && rate > 0) {
		c->size = (uint64_t)(sw * rate);
		c->switch_s = sw;
		c->rate = rate;
		snprintf(c->source, sizeof c->source, "switch %.2f ms x %.1f MB/s (%s)", sw * 1e3,
		         rate / 1e6, have_prof == 0 ? prof.path : "arguments");
	} else {
		c->size = p->dev->default_size;
		snprintf(c->source, sizeof c->source,
		         "no profile for this device: the daemon's --prefetch (run libception profile)");
	}
	/* Direct: no mechanical switch to save and parallel reads are faster,
	 * so the daemon would only add a round trip (and, with one read at a
	 * time, a queue).  Not judged by switch x rate against min=: on this
	 * VM's disk that product came out at 50 to 190 KB in three profiles,
	 * either side of the 128 KiB floor, while the switch stayed under
	 * 0.07 ms. */
	if (direct < 0)
		direct = !size && c->rate > 0 && c->switch_s < SZ_MECHANICAL_SWITCH_S &&
		         p->concurrency > 1;
	p->direct = direct;
	if (c->size > c->b.max_size)
		c->b.max_size = c->size < (1ull << 30) ? c->size : (1ull << 30);
	/* Not below min: on a device without a mechanical switch cost the
	 * formula gives a few KiB, and every window is a round trip to the
	 * daemon. */
	c->size = sz_clamp_page(c->size, c->b.min_size < c->b.max_size ? c->b.min_size : SZ_PAGE,
	                        c->b.max_size);
	if (c->first > c->size)
		c->first = c->size;
	return 0;
}

static int competitive_init(struct rd_policy *p, char *err, size_t errlen)
{
	struct competitive *c = calloc(1, sizeof *c);
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	sz_base_defaults(&c->b, "competitive", p->dev);
	/* EuroSys 2007 starts from the kernel's initial 16 pages. */
	c->first = 64u << 10;
	c->slow_start = 1;
	if (competitive_config(p, c, err, errlen) ||
	    sz_base_start(&c->b, p->concurrency, rd_now_ns(), err, errlen)) {
		free(c);
		return -1;
	}
	p->priv = c;
	p->tick_ms = 1000;
	char s[32], f[32];
	rd_log("%s: size %s = %s; slow start %s from %s; %u read%s at once; scale %s%s", c->b.who,
	       sz_fmt_size(c->size, s, sizeof s), c->source, c->slow_start ? "on" : "off",
	       sz_fmt_size(c->first, f, sizeof f), p->concurrency, p->concurrency == 1 ? "" : "s",
	       sz_scale_name(c->b.scale),
	       p->direct ? "; direct: nothing to add here, the library reads on its own" : "");
	return 0;
}

static uint64_t competitive_size(struct rd_policy *p, const struct rd_request_info *req)
{
	struct competitive *c = p->priv;
	struct sz_stream *s = sz_base_stream(&c->b, req);
	uint64_t target = sz_base_scaled(&c->b, s, c->size);
	uint64_t size = target;
	if (c->slow_start) {
		uint64_t step = s && s->next_size ? s->next_size : c->first;
		if (step < size)
			size = step;
	}
	if (size == target)
		c->windows_full++;
	else
		c->windows_slow++;
	c->last = size;
	return size;
}

static void competitive_observe(struct rd_policy *p, const struct rd_completion *c)
{
	struct competitive *cp = p->priv;
	struct sz_stream *s = sz_base_observe(&cp->b, c);
	/* Slow start: every window a stream gets doubles the next one. */
	if (s && !c->was_resident && c->window_length) {
		uint64_t cur = s->next_size ? s->next_size : cp->first;
		s->next_size = cur * 2 < cp->size ? cur * 2 : cp->size;
	}
}

static void competitive_tick(struct rd_policy *p, uint64_t now)
{
	struct competitive *c = p->priv;
	sz_base_tick(&c->b, now);
}

static void competitive_describe(struct rd_policy *p, struct rd_json *j)
{
	struct competitive *c = p->priv;
	rd_json_u64(j, "size", c->size);
	rd_json_u64(j, "last_size", c->last);
	rd_json_str(j, "source", c->source);
	rd_json_dbl(j, "switch_s", c->switch_s);
	rd_json_dbl(j, "rate", c->rate);
	rd_json_u64(j, "first", c->first);
	rd_json_bool(j, "slow_start", c->slow_start);
	rd_json_u64(j, "concurrency", p->concurrency);
	rd_json_u64(j, "windows_full", c->windows_full);
	rd_json_u64(j, "windows_slow_start", c->windows_slow);
	sz_base_describe(&c->b, j);
}

static void competitive_destroy(struct rd_policy *p)
{
	struct competitive *c = p->priv;
	if (c)
		sz_base_free(&c->b);
	free(c);
	p->priv = NULL;
}

const struct rd_policy_ops rd_policy_competitive = {
	.name = "competitive",
	.init = competitive_init,
	.size = competitive_size,
	.observe = competitive_observe,
	.tick = competitive_tick,
	.describe = competitive_describe,
	.prefetch_use = sz_policy_prefetch_use,
	.destroy = competitive_destroy,
};
