/*
 * policy_bitrate.c - per-bitrate prefetch sizes (SYSTOR 2014, section 5).
 *
 * Minimizing seeks over streams of bitrates b_i under a memory budget
 * gives sizes proportional to sqrt(b_i); the highest bitrate gets the
 * policy's size and lower ones scale down.  Gill and Bathen's rule (size
 * proportional to bitrate) is here as "linear" for comparison.  Bitrates
 * come from the pacing of each stream's requests (sizing_stream.c).
 *
 * The scaling is used by every sizing policy (scale=...); the "bitrate"
 * policy is a fixed base size with it, and with the full accounting, so
 * fixed-size sweeps report evictions and waste too:
 *     --policy bitrate:size=4M,scale=sqrt
 */
#include "sizing.h"
#include "json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sz_scale_parse(const char *s, enum sz_scale *out)
{
	if (strcmp(s, "none") == 0)
		*out = SZ_SCALE_NONE;
	else if (strcmp(s, "sqrt") == 0)
		*out = SZ_SCALE_SQRT;
	else if (strcmp(s, "linear") == 0)
		*out = SZ_SCALE_LINEAR;
	else
		return -1;
	return 0;
}

const char *sz_scale_name(enum sz_scale s)
{
	return s == SZ_SCALE_SQRT ? "sqrt" : s == SZ_SCALE_LINEAR ? "linear" : "none";
}

uint64_t sz_scale_size(enum sz_scale mode, uint64_t size, double b, double ref, uint64_t min)
{
	if (mode == SZ_SCALE_NONE || b <= 0 || ref <= 0 || b >= ref)
		return size;
	double f = b / ref;
	if (mode == SZ_SCALE_SQRT)
		f = sqrt(f);
	uint64_t v = (uint64_t)((double)size * f);
	if (v < min)
		v = min < size ? min : size;
	return sz_clamp_page(v, SZ_PAGE, size);
}

/* ---- the "bitrate" policy: a fixed base size, scaled per stream ---- */

struct bitrate {
	struct sz_base b;
	uint64_t size;
	uint64_t last;
};

static int bitrate_init(struct rd_policy *p, char *err, size_t errlen)
{
	struct bitrate *br = calloc(1, sizeof *br);
	if (!br) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	sz_base_defaults(&br->b, "bitrate", p->dev);
	br->b.scale = SZ_SCALE_SQRT;
	br->size = p->dev->default_size;
	const char *cur = p->dev->args;
	char key[32], val[96];
	int r;
	while ((r = sz_args_next(&cur, key, sizeof key, val, sizeof val)) > 0) {
		int taken = sz_base_arg(&br->b, key, val, err, errlen);
		if (taken < 0)
			goto fail;
		if (taken)
			continue;
		if (strcmp(key, "size") == 0 && rd_parse_size(val, &br->size) == 0 && br->size >= SZ_PAGE)
			continue;
		snprintf(err, errlen, "%s: bad argument \"%s=%s\" (size=, scale=, ref=, min=, max=, streams=)",
		         br->b.who, key, val);
		goto fail;
	}
	if (r < 0) {
		snprintf(err, errlen, "%s: arguments \"%s\": expected key=value,...", br->b.who,
		         p->dev->args);
		goto fail;
	}
	if (br->size > br->b.max_size)
		br->b.max_size = br->size;
	if (sz_base_start(&br->b, 1, rd_now_ns(), err, errlen))
		goto fail;
	p->priv = br;
	p->tick_ms = 1000;
	char s[32];
	rd_log("%s: size %s for the %gth percentile bitrate, scaled by %s", br->b.who,
	       sz_fmt_size(br->size, s, sizeof s), br->b.ref_pct, sz_scale_name(br->b.scale));
	return 0;
fail:
	free(br);
	return -1;
}

static uint64_t bitrate_size(struct rd_policy *p, const struct rd_request_info *req)
{
	struct bitrate *br = p->priv;
	br->last = sz_base_scaled(&br->b, sz_base_stream(&br->b, req), br->size);
	return br->last;
}

static void bitrate_observe(struct rd_policy *p, const struct rd_completion *c)
{
	struct bitrate *br = p->priv;
	sz_base_observe(&br->b, c);
}

static void bitrate_tick(struct rd_policy *p, uint64_t now)
{
	struct bitrate *br = p->priv;
	sz_base_tick(&br->b, now);
}

static void bitrate_describe(struct rd_policy *p, struct rd_json *j)
{
	struct bitrate *br = p->priv;
	rd_json_u64(j, "size", br->size);
	rd_json_u64(j, "last_size", br->last);
	sz_base_describe(&br->b, j);
}

static void bitrate_destroy(struct rd_policy *p)
{
	struct bitrate *br = p->priv;
	if (br)
		sz_base_free(&br->b);
	free(br);
	p->priv = NULL;
}

const struct rd_policy_ops rd_policy_bitrate = {
	.name = "bitrate",
	.init = bitrate_init,
	.size = bitrate_size,
	.observe = bitrate_observe,
	.tick = bitrate_tick,
	.describe = bitrate_describe,
	.prefetch_use = sz_policy_prefetch_use,
	.destroy = bitrate_destroy,
};
