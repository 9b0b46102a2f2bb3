/*
 * metrics.c - the statistics as Prometheus text (exposition format 0.0.4).
 *
 * Names follow Prometheus' conventions: a libception_ prefix, base units
 * (bytes, seconds), _total on counters.  Per-device series carry
 * device="NAME"; the library's per-call series call="NAME".  Histograms:
 * the daemon's queue wait and service time are kept in common/hist.h's
 * log-linear buckets (6% wide) and given here at fixed bounds, each
 * counting the buckets that lie wholly under it (so a bound may count up
 * to 6% of values just under it in the next one); the libraries' call
 * latency is reported in power-of-two microsecond buckets, given exactly.
 *
 * Called from the metrics thread as well as the main thread: device
 * counters are read under each device's lock, and the main thread's own
 * counters with relaxed atomic loads (a scrape may see one counter a
 * message ahead of another, never a torn value).
 */
#include "metrics.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "device.h"
#include "stats.h"
#include "watch.h"

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

/* The bounds of the daemon's histograms, seconds: 100 us to 10 s. */
static const double bounds_s[] = { 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                   0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10 };

static const char *const call_names[LC_CALL_COUNT] = {
	[LC_CALL_READ] = "read", [LC_CALL_PREAD] = "pread", [LC_CALL_READV] = "readv",
	[LC_CALL_PREADV] = "preadv", [LC_CALL_SENDFILE] = "sendfile",
	[LC_CALL_COPY_FILE_RANGE] = "copy_file_range", [LC_CALL_SPLICE] = "splice",
};

static void head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value: \, " and newline escaped. */
static void label(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fputc('\\', f);
		if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

/* A snapshot of one device, taken under its lock. */
struct dev_snap {
	char name[64];
	char policy[32];
	struct rd_dev_stats st;
	uint64_t queue, inflight;
	uint64_t busy_ns;
	int has_use;
	uint64_t useful, wasted, evicted;
};

static void snap_device(struct rd_device *d, struct dev_snap *s, uint64_t now)
{
	pthread_mutex_lock(&d->lock);
	snprintf(s->name, sizeof s->name, "%s", d->name);
	snprintf(s->policy, sizeof s->policy, "%s", d->policy.ops->name);
	s->st = d->st;
	s->queue = d->q.len;
	s->inflight = d->inflight;
	s->busy_ns = d->st.busy_ns + (d->inflight ? now - d->st.busy_since : 0);
	s->has_use = d->policy.ops->prefetch_use != NULL;
	if (s->has_use)
		d->policy.ops->prefetch_use(&d->policy, &s->useful, &s->wasted, &s->evicted);
	pthread_mutex_unlock(&d->lock);
}

/* The per-device series that are one number each, by their place in
 * struct dev_snap; use: only on devices whose policy keeps the sizing
 * accounting (docs/prefetch-sizing.md). */
#define SNAP(field) offsetof(struct dev_snap, field)
static const struct {
	const char *metric, *type, *help;
	size_t off;
	int use;
} dev_values[] = {
	{ "libception_device_requests_total", "counter",
	  "ENSURE requests for files on the device.", SNAP(st.requests), 0 },
	{ "libception_device_hits_total", "counter",
	  "Requests found resident by the daemon, nothing read.", SNAP(st.hits), 0 },
	{ "libception_device_misses_total", "counter",
	  "Requests queued or joined to a queued or running read.", SNAP(st.misses), 0 },
	{ "libception_device_merged_total", "counter",
	  "Requests joined to another one's read.", SNAP(st.merged), 0 },
	{ "libception_device_busy_rejected_total", "counter",
	  "Requests refused because the queue was full.", SNAP(st.busy), 0 },
	{ "libception_device_abandoned_total", "counter",
	  "Queued requests dropped unread: nobody waited for them any more.",
	  SNAP(st.abandoned), 0 },
	{ "libception_device_read_errors_total", "counter", "Window reads that failed.",
	  SNAP(st.errors), 0 },
	{ "libception_device_windows_total", "counter",
	  "Prefetch windows read (requests after merging).", SNAP(st.reads), 0 },
	{ "libception_device_asked_bytes_total", "counter", "Bytes the programs asked for.",
	  SNAP(st.bytes_asked), 0 },
	{ "libception_device_read_bytes_total", "counter", "Bytes the daemon read from the device.",
	  SNAP(st.bytes_read), 0 },
	{ "libception_device_window_bytes_total", "counter", "Bytes of the windows made resident.",
	  SNAP(st.bytes_window), 0 },
	{ "libception_device_library_hits_total", "counter",
	  "Calls the libraries found resident themselves (reported).", SNAP(st.lib_hits), 0 },
	{ "libception_device_user_turns_total", "counter",
	  "Windows chosen among the requests of several users (QUEUE ORDER).",
	  SNAP(st.order.user_turns), 0 },
	{ "libception_device_deadline_misses_total", "counter",
	  "Waited-for requests taken after waiting longer than --deadline.",
	  SNAP(st.order.deadline_misses), 0 },
	{ "libception_device_window_cuts_total", "counter",
	  "Long windows cut after a share, for another user.", SNAP(st.order.cuts), 0 },
	{ "libception_device_head_travel_bytes_total", "counter",
	  "Bytes between one placed window's end and the next one's start.",
	  SNAP(st.order.head_travel), 0 },
	{ "libception_device_queue_depth", "gauge", "Requests queued now, not yet being read.",
	  SNAP(queue), 0 },
	{ "libception_device_inflight_reads", "gauge", "Window reads running now.",
	  SNAP(inflight), 0 },
	{ "libception_device_prefetch_useful_bytes_total", "counter",
	  "Prefetched bytes later asked for.", SNAP(useful), 1 },
	{ "libception_device_prefetch_wasted_bytes_total", "counter",
	  "Prefetched bytes never asked for before their stream ended.", SNAP(wasted), 1 },
	{ "libception_device_prefetch_evicted_bytes_total", "counter",
	  "Prefetched bytes evicted from the page cache before they were asked for.",
	  SNAP(evicted), 1 },
};

/* The start of a device's series: "METRICSUFFIX{device="NAME"", open for
 * more labels; the caller closes it. */
static void device_series(FILE *f, const char *metric, const char *suffix,
                          const struct dev_snap *s)
{
	fprintf(f, "%s%s{device=\"", metric, suffix);
	label(f, s->name);
	fputc('"', f);
}

static void hist_series(FILE *f, const char *name, const struct dev_snap *s, const struct hist *h)
{
	uint64_t below = 0;
	unsigned b = 0;
	for (size_t i = 0; i < sizeof bounds_s / sizeof *bounds_s; i++) {
		uint64_t bound_ns = (uint64_t)(bounds_s[i] * 1e9);
		for (; b < HIST_BUCKETS && hist_bucket_top(b) <= bound_ns; b++)
			below += h->count[b];
		device_series(f, name, "_bucket", s);
		fprintf(f, ",le=\"%g\"} %llu\n", bounds_s[i], (unsigned long long)below);
	}
	device_series(f, name, "_bucket", s);
	fprintf(f, ",le=\"+Inf\"} %llu\n", (unsigned long long)h->total);
	device_series(f, name, "_sum", s);
	fprintf(f, "} %.9f\n", (double)h->sum / 1e9);
	device_series(f, name, "_count", s);
	fprintf(f, "} %llu\n", (unsigned long long)h->total);
}

static void devices(FILE *f, const struct dev_snap *d, size_t n)
{
	head(f, "libception_device_info", "gauge", "A device the daemon serves, with its policy.");
	for (size_t i = 0; i < n; i++) {
		device_series(f, "libception_device_info", "", &d[i]);
		fputs(",policy=\"", f);
		label(f, d[i].policy);
		fputs("\"} 1\n", f);
	}
	size_t nuse = 0;
	for (size_t i = 0; i < n; i++)
		nuse += d[i].has_use;
	for (size_t v = 0; v < sizeof dev_values / sizeof *dev_values; v++) {
		if (dev_values[v].use && !nuse)
			continue;
		head(f, dev_values[v].metric, dev_values[v].type, dev_values[v].help);
		for (size_t i = 0; i < n; i++) {
			if (dev_values[v].use && !d[i].has_use)
				continue;
			uint64_t x;
			memcpy(&x, (const char *)&d[i] + dev_values[v].off, sizeof x);
			device_series(f, dev_values[v].metric, "", &d[i]);
			fprintf(f, "} %llu\n", (unsigned long long)x);
		}
	}
	head(f, "libception_device_busy_seconds_total", "counter",
	     "Time at least one window read was running.");
	for (size_t i = 0; i < n; i++) {
		device_series(f, "libception_device_busy_seconds_total", "", &d[i]);
		fprintf(f, "} %.6f\n", (double)d[i].busy_ns / 1e9);
	}
	head(f, "libception_device_queue_wait_seconds", "histogram",
	     "Time a request waited in the queue before its window read started.");
	for (size_t i = 0; i < n; i++)
		hist_series(f, "libception_device_queue_wait_seconds", &d[i], &d[i].st.wait);
	head(f, "libception_device_service_seconds", "histogram", "Time one window read took.");
	for (size_t i = 0; i < n; i++)
		hist_series(f, "libception_device_service_seconds", &d[i], &d[i].st.service);
}

static void calls(FILE *f)
{
	head(f, "libception_library_calls_total", "counter",
	     "Intercepted calls, from the libraries' reports.");
	for (int c = 0; c < LC_CALL_COUNT; c++)
		fprintf(f, "libception_library_calls_total{call=\"%s\"} %llu\n", call_names[c],
		        (unsigned long long)LOAD(rd_stats.calls[c].calls));
	head(f, "libception_library_call_hits_total", "counter",
	     "Intercepted calls the library found resident, from its reports.");
	for (int c = 0; c < LC_CALL_COUNT; c++)
		fprintf(f, "libception_library_call_hits_total{call=\"%s\"} %llu\n", call_names[c],
		        (unsigned long long)LOAD(rd_stats.calls[c].hits));
	/* protocol.h: bucket i counts calls under 2^i us, the last the rest;
	 * the reports carry no sum, so the histogram has none either. */
	head(f, "libception_library_call_seconds", "histogram",
	     "Time intercepted calls took, waiting for the daemon included (no _sum: not reported).");
	for (int c = 0; c < LC_CALL_COUNT; c++) {
		uint64_t below = 0;
		for (int b = 0; b < LC_HIST_BUCKETS - 1; b++) {
			below += LOAD(rd_stats.calls[c].hist[b]);
			fprintf(f, "libception_library_call_seconds_bucket{call=\"%s\",le=\"%g\"} %llu\n",
			        call_names[c], (double)(1ull << b) / 1e6, (unsigned long long)below);
		}
		below += LOAD(rd_stats.calls[c].hist[LC_HIST_BUCKETS - 1]);
		fprintf(f, "libception_library_call_seconds_bucket{call=\"%s\",le=\"+Inf\"} %llu\n",
		        call_names[c], (unsigned long long)below);
		fprintf(f, "libception_library_call_seconds_count{call=\"%s\"} %llu\n", call_names[c],
		        (unsigned long long)below);
	}
}

char *rd_metrics_text(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return NULL;
	uint64_t now = rd_now_ns();
	size_t n = 0, cap = 0;
	struct dev_snap *devs = NULL;
	rd_device_walk_begin();
	for (struct rd_device *d = rd_device_list(); d; d = __atomic_load_n(&d->next, __ATOMIC_ACQUIRE)) {
		if (n == cap) {
			struct dev_snap *more = realloc(devs, (cap = cap ? cap * 2 : 8) * sizeof *devs);
			if (!more)
				break;
			devs = more;
		}
		snap_device(d, &devs[n++], now);
	}
	rd_device_walk_end();
	head(f, "libception_build_info", "gauge", "The running receptiond's version.");
	fprintf(f, "libception_build_info{version=\"%s\"} 1\n", LC_VERSION);
	head(f, "libception_uptime_seconds", "gauge", "Time since the daemon started.");
	fprintf(f, "libception_uptime_seconds %.3f\n", (double)(now - LOAD(rd_stats.started_ns)) / 1e9);
	head(f, "libception_connections", "gauge", "Client connections open now.");
	fprintf(f, "libception_connections %llu\n", (unsigned long long)LOAD(rd_stats.conns_now));
	head(f, "libception_connections_total", "counter", "Client connections accepted.");
	fprintf(f, "libception_connections_total %llu\n", (unsigned long long)LOAD(rd_stats.conns_total));
	head(f, "libception_connections_refused_total", "counter",
	     "Client connections refused (limit reached).");
	fprintf(f, "libception_connections_refused_total %llu\n",
	        (unsigned long long)LOAD(rd_stats.conns_refused));
	head(f, "libception_malformed_messages_total", "counter", "Messages dropped as malformed.");
	fprintf(f, "libception_malformed_messages_total %llu\n",
	        (unsigned long long)LOAD(rd_stats.malformed));
	head(f, "libception_bad_requests_total", "counter",
	     "Well-formed requests that could not be served (bad descriptor, not a regular file).");
	fprintf(f, "libception_bad_requests_total %llu\n",
	        (unsigned long long)LOAD(rd_stats.bad_requests));
	devices(f, devs, n);
	calls(f);
	rd_watch_metrics(f);
	free(devs);
	if (fclose(f)) {
		free(text);
		return NULL;
	}
	return text;
}
