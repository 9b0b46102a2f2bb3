/*
 * stats.c - per-call counters and latency histograms, process-wide.
 *
 * Lock-free: every intercepted call adds to relaxed atomics (threads of one
 * process contend only on these cache lines, never on a lock).  At most
 * once a second, whichever thread passes by first sends the daemon the
 * deltas since the last report that got through (LC_MSG_REPORT), and the
 * destructor sends the rest at exit.  The histogram is the protocol's:
 * bucket i counts calls shorter than 2^i microseconds.  Per device
 * (devices.c: LC_REPORT_DEVS slots and "other") it counts calls, hits and
 * the bytes hits asked for, the same way.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"

static const char *const call_names[LC_CALL_COUNT] = {
	[LC_CALL_READ] = "read", [LC_CALL_PREAD] = "pread", [LC_CALL_READV] = "readv",
	[LC_CALL_PREADV] = "preadv", [LC_CALL_SENDFILE] = "sendfile",
	[LC_CALL_COPY_FILE_RANGE] = "copy_file_range", [LC_CALL_SPLICE] = "splice",
};

struct counters {
	uint64_t calls[LC_CALL_COUNT];
	uint64_t hits[LC_CALL_COUNT];
	uint64_t bytes[LC_CALL_COUNT];
	uint64_t hist[LC_CALL_COUNT][LC_HIST_BUCKETS];
	uint64_t dev_calls[LC_REPORT_DEVS + 1];
	uint64_t dev_hits[LC_REPORT_DEVS + 1];
	uint64_t dev_hit_bytes[LC_REPORT_DEVS + 1];
};

static struct counters now_c;      /* atomics */
static struct counters sent;       /* guarded by `reporting` */
static int reporting;              /* 1 while a thread builds a report */
static uint64_t last_report_ns;

static unsigned bucket(uint64_t ns)
{
	uint64_t us = ns / 1000;
	unsigned b = us ? 64u - (unsigned)__builtin_clzll(us) : 0;
	return b < LC_HIST_BUCKETS ? b : LC_HIST_BUCKETS - 1;
}

void shim_stats_record(int call, int hit, uint64_t bytes, uint64_t ns, int dev)
{
	__atomic_add_fetch(&now_c.calls[call], 1, __ATOMIC_RELAXED);
	if (hit)
		__atomic_add_fetch(&now_c.hits[call], 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&now_c.bytes[call], bytes, __ATOMIC_RELAXED);
	__atomic_add_fetch(&now_c.hist[call][bucket(ns)], 1, __ATOMIC_RELAXED);
	if (dev < 0 || dev > LC_REPORT_DEVS)
		return;
	__atomic_add_fetch(&now_c.dev_calls[dev], 1, __ATOMIC_RELAXED);
	if (hit) {
		__atomic_add_fetch(&now_c.dev_hits[dev], 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&now_c.dev_hit_bytes[dev], bytes, __ATOMIC_RELAXED);
	}
}

static void dev_delta(struct lc_report_dev *e, const struct counters *cur, int d)
{
	e->calls = cur->dev_calls[d] - sent.dev_calls[d];
	e->hits = cur->dev_hits[d] - sent.dev_hits[d];
	e->hit_bytes = cur->dev_hit_bytes[d] - sent.dev_hit_bytes[d];
}

static void snapshot(struct counters *into)
{
	const uint64_t *src = (const uint64_t *)&now_c;
	uint64_t *dst = (uint64_t *)into;
	for (size_t i = 0; i < sizeof *into / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}

/* Caller holds `reporting`. */
static void report(void)
{
	struct counters cur;
	snapshot(&cur);
	struct lc_report r;
	memset(&r, 0, sizeof r);
	r.h.magic = LC_PROTO_MAGIC;
	r.h.version = LC_PROTO_VERSION;
	r.h.type = LC_MSG_REPORT;
	r.pid = (uint32_t)getpid();
	uint64_t any = 0;
	for (int c = 0; c < LC_CALL_COUNT; c++) {
		r.calls[c] = cur.calls[c] - sent.calls[c];
		r.hits[c] = cur.hits[c] - sent.hits[c];
		r.bytes[c] = cur.bytes[c] - sent.bytes[c];
		for (int b = 0; b < LC_HIST_BUCKETS; b++)
			r.hist[c][b] = cur.hist[c][b] - sent.hist[c][b];
		any |= r.calls[c];
	}
	for (int d = 0; d < LC_REPORT_DEVS; d++) {
		/* a slot counts only after it is claimed, so it has its dev */
		if (shim_dev_id(d, &r.devs[d].dev) == 0)
			dev_delta(&r.devs[d], &cur, d);
	}
	dev_delta(&r.other, &cur, LC_REPORT_DEVS);
	/* Unsent deltas stay pending for the next report. */
	if (any && shim_client_send_report(&r) == 0)
		sent = cur;
}

void shim_stats_maybe_report(uint64_t now)
{
	if (now - __atomic_load_n(&last_report_ns, __ATOMIC_RELAXED) < 1000000000ull)
		return;
	if (__atomic_exchange_n(&reporting, 1, __ATOMIC_ACQUIRE))
		return;
	__atomic_store_n(&last_report_ns, now, __ATOMIC_RELAXED);
	report();
	__atomic_store_n(&reporting, 0, __ATOMIC_RELEASE);
}

void shim_stats_final(void)
{
	if (shim_cfg.mode == SHIM_MODE_OFF)
		return;
	if (!__atomic_exchange_n(&reporting, 1, __ATOMIC_ACQUIRE)) {
		report();
		__atomic_store_n(&reporting, 0, __ATOMIC_RELEASE);
	}
	if (!shim_cfg.debug[0])
		return;
	char line[400];
	size_t n = 0;
	line[0] = '\0';
	for (int c = 0; c < LC_CALL_COUNT; c++) {
		uint64_t calls = __atomic_load_n(&now_c.calls[c], __ATOMIC_RELAXED);
		if (calls && n < sizeof line)
			n += (size_t)snprintf(line + n, sizeof line - n, " %s=%llu/%llu", call_names[c],
					      (unsigned long long)calls,
					      (unsigned long long)__atomic_load_n(&now_c.hits[c], __ATOMIC_RELAXED));
	}
	shim_debug("exit: calls/hits%s", n ? line : " none");
}

/* A forked child reports only its own calls. */
void shim_stats_atfork_child(void)
{
	snapshot(&sent);
	reporting = 0;
	last_report_ns = 0;
}
