/* report.c - summary lines and JSON; see report.h. */
#include "report.h"

#define MS(ns) ((double)(ns) / 1e6)

void report_summary(FILE *f, const struct vl_result *r)
{
	double d = r->elapsed > 0 ? r->elapsed : 1;
	fprintf(f, "vidload: sessions offered %.3f/s achieved %.3f/s: started %llu finished %llu "
		"active-at-end %llu failed %llu (%.3f%%)\n",
		r->rate, (double)r->started / d, (unsigned long long)r->started,
		(unsigned long long)r->finished, (unsigned long long)r->active_at_end,
		(unsigned long long)r->failed, vl_failed_pct(r));
	fprintf(f, "vidload: data %.1f MB/s (%llu segments, %llu bytes in %.1f s), "
		"peak %llu concurrent sessions, client CPU %.1f%%\n",
		(double)r->bytes / d / 1e6, (unsigned long long)r->segments,
		(unsigned long long)r->bytes, r->elapsed, (unsigned long long)r->max_active,
		100.0 * r->cpu_seconds / d);
	fprintf(f, "vidload: segment latency from scheduled send: p50 %.1f ms p90 %.1f ms "
		"p99 %.1f ms max %.1f ms\n",
		MS(hist_quantile(&r->latency, 0.5)), MS(hist_quantile(&r->latency, 0.9)),
		MS(hist_quantile(&r->latency, 0.99)), MS(r->latency.total ? r->latency.max : 0));
	fprintf(f, "vidload: late starts %llu of %llu requests (send lateness p99 %.2f ms max %.2f ms), "
		"reconnects %llu\n",
		(unsigned long long)r->late_sends, (unsigned long long)r->requests,
		MS(hist_quantile(&r->lateness, 0.99)), MS(r->lateness.total ? r->lateness.max : 0),
		(unsigned long long)r->reconnects);
	if (r->warmup > 0)
		fprintf(f, "vidload: warm-up %g s before the judged window: %llu sessions started, "
			"%llu failed (not judged)\n", r->warmup, (unsigned long long)r->warmup_started,
			(unsigned long long)r->warmup_failed);
	if (r->past > 0)
		fprintf(f, "vidload: started as if after %g s of arrivals: %llu sessions carried on, "
			"%llu failed (not judged)\n", r->past, (unsigned long long)r->past_running,
			(unsigned long long)r->past_failed);
	fprintf(f, "vidload: errors:");
	for (int k = 0; k < VL_ERR_KINDS; k++)
		fprintf(f, " %s %llu", vl_error_names[k], (unsigned long long)r->errors[k]);
	fprintf(f, "\n");
	if (r->first_error[0])
		fprintf(f, "vidload: first error: %s\n", r->first_error);
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

void report_json_settings(FILE *f, const struct vl_config *c)
{
	fprintf(f, "{\"url\": ");
	json_str(f, c->url);
	fprintf(f, ", \"library\": ");
	json_str(f, c->library_path);
	fprintf(f, ", \"videos\": %zu, \"rate\": %g, \"duration\": %g, \"seed\": %llu, "
		"\"zipf\": %g, \"views\": [%g, %g], \"segment_s\": %g, \"burst\": %u, "
		"\"shuffle\": %s, \"deadline\": %g, \"warmup\": %g, \"past\": %g, \"timeline_s\": %g, "
		"\"links\": [",
		c->lib.count, c->rate, c->duration, (unsigned long long)c->seed, c->wl.zipf_alpha,
		c->wl.early_share, c->wl.early_span, c->wl.segment_s, c->wl.burst,
		c->wl.shuffle ? "true" : "false", c->deadline, c->warmup, c->past, c->timeline);
	for (unsigned i = 0; i < c->nlinks; i++)
		fprintf(f, "%s%g", i ? ", " : "", c->links[i]);
	fprintf(f, "], \"delay_ms\": %g, \"tick_ms\": %g, \"rcvbuf\": %d, \"mss\": %d, \"late_ms\": %g}",
		c->delay * 1e3, c->tick * 1e3, c->rcvbuf, c->mss, c->late * 1e3);
}

/* Closes the timeline's array before it and opens NAME's, with its n counts. */
static void json_counts(FILE *f, const char *name, const uint64_t *v, size_t n)
{
	fprintf(f, "], \"%s\": [", name);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s%llu", i ? ", " : "", (unsigned long long)v[i]);
}

static void json_hist(FILE *f, const char *name, const struct hist *h)
{
	fprintf(f, "\"%s\": {\"count\": %llu, \"p50\": %.3f, \"p90\": %.3f, \"p99\": %.3f, "
		"\"max\": %.3f, \"mean\": %.3f}", name, (unsigned long long)h->total,
		MS(hist_quantile(h, 0.5)), MS(hist_quantile(h, 0.9)), MS(hist_quantile(h, 0.99)),
		MS(h->total ? h->max : 0), h->total ? MS(h->sum) / (double)h->total : 0.0);
}

void report_json_result(FILE *f, const struct vl_result *r)
{
	double d = r->elapsed > 0 ? r->elapsed : 1;
	fprintf(f, "{\"rate\": %g, \"seed\": %llu, \"elapsed\": %.3f, \"offered_rate\": %g, "
		"\"achieved_rate\": %.4f, \"started\": %llu, \"finished\": %llu, "
		"\"active_at_end\": %llu, \"completed\": %llu, \"failed\": %llu, \"failed_pct\": %.4f, "
		"\"segments\": %llu, \"bytes\": %llu, \"mb_per_s\": %.3f, \"requests\": %llu, "
		"\"late_starts\": %llu, \"reconnects\": %llu, \"max_active\": %llu, "
		"\"cpu_seconds\": %.3f, \"cpu_pct\": %.2f, \"errors\": {",
		r->rate, (unsigned long long)r->seed, r->elapsed, r->rate, (double)r->started / d,
		(unsigned long long)r->started, (unsigned long long)r->finished,
		(unsigned long long)r->active_at_end,
		(unsigned long long)(r->finished + r->active_at_end), (unsigned long long)r->failed,
		vl_failed_pct(r), (unsigned long long)r->segments, (unsigned long long)r->bytes,
		(double)r->bytes / d / 1e6, (unsigned long long)r->requests,
		(unsigned long long)r->late_sends, (unsigned long long)r->reconnects,
		(unsigned long long)r->max_active, r->cpu_seconds, 100.0 * r->cpu_seconds / d);
	for (int k = 0; k < VL_ERR_KINDS; k++)
		fprintf(f, "%s\"%s\": %llu", k ? ", " : "", vl_error_names[k],
			(unsigned long long)r->errors[k]);
	fprintf(f, "}, ");
	json_hist(f, "latency_ms", &r->latency);
	fprintf(f, ", ");
	json_hist(f, "lateness_ms", &r->lateness);
	fprintf(f, ", \"warmup\": %g, \"warmup_started\": %llu, \"warmup_failed\": %llu, "
		"\"past\": %g, \"past_running\": %llu, \"past_failed\": %llu, "
		"\"timeline\": {\"t_s\": [", r->warmup, (unsigned long long)r->warmup_started,
		(unsigned long long)r->warmup_failed, r->past, (unsigned long long)r->past_running,
		(unsigned long long)r->past_failed);
	for (size_t i = 0; i < r->timeline.n; i++)
		fprintf(f, "%s%.1f", i ? ", " : "", r->timeline.t[i]);
	json_counts(f, "active", r->timeline.active, r->timeline.n);
	json_counts(f, "failed", r->timeline.failed, r->timeline.n);
	json_counts(f, "past_failed", r->timeline.past_failed, r->timeline.n);
	fprintf(f, "]}, \"first_error\": ");
	json_str(f, r->first_error);
	fprintf(f, "}");
}
