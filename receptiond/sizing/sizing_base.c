/*
 * sizing_base.c - the part every sizing policy has: its stream table, its
 * accounting, per-bitrate scaling, and the arguments for them.
 */
#include "sizing.h"
#include "json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t sz_clamp_page(uint64_t v, uint64_t lo, uint64_t hi)
{
	if (v < lo)
		v = lo;
	if (v > hi)
		v = hi;
	v = (v + SZ_PAGE / 2) & ~(uint64_t)(SZ_PAGE - 1);
	return v ? v : SZ_PAGE;
}

void sz_base_defaults(struct sz_base *b, const char *policy, const struct rd_device_info *dev)
{
	memset(b, 0, sizeof *b);
	b->scale = SZ_SCALE_NONE;
	b->min_size = 128u << 10;
	b->max_size = 64u << 20;
	b->stream_cap = 4096;
	b->ref_pct = 95;
	snprintf(b->who, sizeof b->who, "%s %s", policy, dev->name ? dev->name : "?");
}

int sz_base_arg(struct sz_base *b, const char *key, const char *val, char *err, size_t errlen)
{
	uint64_t v;
	if (strcmp(key, "scale") == 0) {
		if (sz_scale_parse(val, &b->scale) == 0)
			return 1;
		snprintf(err, errlen, "%s: scale=\"%s\": expected none, sqrt or linear", b->who, val);
		return -1;
	}
	if (strcmp(key, "ref") == 0) {
		double pct;
		if (sz_parse_fraction(val, &pct) || pct < 0.5) {
			snprintf(err, errlen, "%s: ref=\"%s\": expected a percentile, 50%% to 100%%",
			         b->who, val);
			return -1;
		}
		b->ref_pct = pct * 100;
		return 1;
	}
	if (strcmp(key, "min") == 0 || strcmp(key, "max") == 0) {
		if (rd_parse_size(val, &v) || v < SZ_PAGE || v > (1ull << 30)) {
			snprintf(err, errlen, "%s: %s=\"%s\": expected a size, 4K to 1G", b->who, key, val);
			return -1;
		}
		*(key[1] == 'i' ? &b->min_size : &b->max_size) = v;
		return 1;
	}
	if (strcmp(key, "streams") == 0) {
		if (rd_parse_size(val, &v) || v < 16 || v > 1000000) {
			snprintf(err, errlen, "%s: streams=\"%s\": expected 16 to 1000000", b->who, val);
			return -1;
		}
		b->stream_cap = (unsigned)v;
		return 1;
	}
	return 0;
}

int sz_base_start(struct sz_base *b, unsigned concurrency, uint64_t now, char *err, size_t errlen)
{
	if (b->min_size > b->max_size) {
		snprintf(err, errlen, "%s: min is above max", b->who);
		return -1;
	}
	if (sz_streams_init(&b->streams, b->stream_cap)) {
		snprintf(err, errlen, "%s: out of memory", b->who);
		return -1;
	}
	sz_account_init(&b->acct, concurrency, now);
	b->streams.ref_pct = b->ref_pct;
	b->streams.ended = sz_account_stream_ended;
	b->streams.ended_ctx = &b->acct;
	return 0;
}

void sz_base_free(struct sz_base *b)
{
	sz_streams_free(&b->streams);
}

/* How far beyond where a stream was told data is resident its next ask
 * may land and still continue it (the library asks again at the end of
 * the resident window; programs read ahead a little). */
static uint64_t slack(const struct sz_base *b)
{
	(void)b;
	return 1u << 20;
}

struct sz_stream *sz_base_stream(struct sz_base *b, const struct rd_request_info *req)
{
	return sz_stream_find(&b->streams, req->dev, req->ino, req->offset, slack(b));
}

uint64_t sz_base_scaled(struct sz_base *b, const struct sz_stream *s, uint64_t size)
{
	double rate = s ? s->bitrate : 0;
	return sz_scale_size(b->scale, size, rate, b->streams.ref_bitrate, b->min_size);
}

struct sz_stream *sz_base_observe(struct sz_base *b, const struct rd_completion *c)
{
	return sz_account_observe(&b->acct, &b->streams, c, slack(b));
}

void sz_base_tick(struct sz_base *b, uint64_t now)
{
	sz_streams_expire(&b->streams, now);
	sz_account_recheck(&b->acct, &b->streams, now);
}

void sz_policy_prefetch_use(struct rd_policy *p, uint64_t *useful, uint64_t *wasted,
                            uint64_t *evicted)
{
	const struct sz_base *b = p->priv;
	*useful = b->acct.total.useful;
	*wasted = b->acct.total.wasted;
	*evicted = b->acct.total.evicted;
}

void sz_base_describe(struct sz_base *b, struct rd_json *j)
{
	rd_json_str(j, "scale", sz_scale_name(b->scale));
	rd_json_u64(j, "streams", b->streams.live);
	rd_json_dbl(j, "ref_pct", b->ref_pct);
	rd_json_dbl(j, "ref_bitrate", b->streams.ref_bitrate);
	rd_json_dbl(j, "mean_bitrate", sz_streams_mean_bitrate(&b->streams));
	sz_account_describe(&b->acct, j, rd_now_ns());
	sz_streams_describe(&b->streams, j, rd_now_ns());
}
