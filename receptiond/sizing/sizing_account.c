/*
 * sizing_account.c - what the sizing policies measure, per device.
 *
 * From each completion: bytes asked for, bytes read, bytes read beyond the
 * ask (prefetched), and each stream's progress through the file (bytes
 * consumed, "demanded").  A prefetched window is useful as far as its
 * stream later asks into it, wasted as far as the stream ended before.
 * Prefetch evictions come from the kernel: each stream's outstanding
 * window is re-checked with cachestat(2) on a dup of its file, and pages
 * of it not yet asked for that are no longer resident, with a shadow entry
 * left by reclaim (nr_evicted), were evicted unused; a miss inside an
 * earlier window (a re-read) is counted too.  Pages gone without a shadow
 * entry were dropped on purpose (fadvise, drop_caches) and are counted
 * apart.  Evicted bytes are "needed" once their stream comes back and
 * misses inside the window: only those cost a read again.  The windows of
 * viewers who left are evicted too (streams end only after idle_ns), and
 * cost nothing.  Those of windows prefetched before the policy last made
 * its size smaller (cut_ns) are also counted apart: they were of the
 * larger size.
 */
#include "sizing.h"
#include "json.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif

struct sz_cachestat_range {
	uint64_t off, len;
};
struct sz_cachestat {
	uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

long sz_resident_pages(int fd, uint64_t off, uint64_t len)
{
	long evicted;
	return sz_residency(fd, off, len, &evicted);
}

long sz_residency(int fd, uint64_t off, uint64_t len, long *evicted)
{
	struct sz_cachestat_range r = { off, len };
	struct sz_cachestat cs;
	if (syscall(__NR_cachestat, fd, &r, &cs, 0) < 0)
		return -1;
	*evicted = (long)cs.nr_evicted;
	return (long)cs.nr_cache;
}

void sz_account_init(struct sz_account *a, unsigned concurrency, uint64_t now)
{
	memset(a, 0, sizeof *a);
	a->concurrency = concurrency ? concurrency : 1;
	a->interval_start_ns = now;
	a->start_ns = now;
	a->cachestat_ok = 1;
}

static void add(struct sz_account *a, size_t field, uint64_t v)
{
	*(uint64_t *)((char *)&a->total + field) += v;
	*(uint64_t *)((char *)&a->interval + field) += v;
}
#define ADD(a, f, v) add((a), offsetof(struct sz_counters, f), (v))

void sz_account_stream_ended(void *ctx, struct sz_stream *s, uint64_t now)
{
	struct sz_account *a = ctx;
	(void)now;
	/* The unconsumed, not-evicted rest of its last window was never used. */
	uint64_t from = s->frontier > s->win_lo ? s->frontier : s->win_lo;
	if (s->win_hi > from) {
		uint64_t left = s->win_hi - from;
		ADD(a, wasted, left > s->win_evicted ? left - s->win_evicted : 0);
	}
}

void sz_account_saw_evicted(struct sz_account *a, struct sz_stream *s, uint64_t bytes,
                            uint64_t now)
{
	if (bytes <= s->win_evicted)
		return;
	if (!s->win_evicted) {
		ADD(a, evictions, 1);
		ADD(a, evict_age_ns, now > s->win_ns ? now - s->win_ns : 0);
		s->win_evicted_ns = now;
	}
	ADD(a, evicted, bytes - s->win_evicted);
	s->win_evicted = bytes;
}

/* s missed inside its window: what reclaim took of it was needed. */
static void came_back(struct sz_account *a, struct sz_stream *s)
{
	if (s->win_evicted <= s->win_needed)
		return;
	if (!s->win_needed) {
		uint64_t age = s->win_evicted_ns > s->win_ns ? s->win_evicted_ns - s->win_ns : 0;
		ADD(a, evictions_needed, 1);
		ADD(a, evict_needed_age_ns, age);
		if (s->bitrate > 0) {
			ADD(a, evictions_needed_rated, 1);
			ADD(a, evict_needed_fit, (uint64_t)((double)age / 1e9 * s->bitrate));
		}
	}
	ADD(a, evicted_needed, s->win_evicted - s->win_needed);
	if (s->win_ns < a->cut_ns)
		ADD(a, evicted_needed_older, s->win_evicted - s->win_needed);
	s->win_needed = s->win_evicted;
}

/* Credit the part of s's window that [.., upto) has now passed. */
static void credit_window(struct sz_account *a, struct sz_stream *s, uint64_t old_frontier,
                          uint64_t upto)
{
	uint64_t lo = old_frontier > s->win_lo ? old_frontier : s->win_lo;
	uint64_t hi = upto < s->win_hi ? upto : s->win_hi;
	if (hi > lo)
		ADD(a, useful, hi - lo);
}

struct sz_stream *sz_account_observe(struct sz_account *a, struct sz_streams *t,
                                     const struct rd_completion *c, uint64_t slack)
{
	const struct rd_request_info *r = &c->req;
	uint64_t now = c->done_ns;
	ADD(a, requests, 1);
	ADD(a, asked, r->length);
	if (c->status != 0)
		return NULL;
	if (c->was_resident) {
		ADD(a, hits, 1);
	} else {
		ADD(a, misses, 1);
		ADD(a, read, c->bytes_read);
		ADD(a, disk_ns, c->service_ns);
		/* Busy time is the union of the reads' intervals: with several
		 * workers, summed service time would count overlaps twice. */
		uint64_t start = c->done_ns - c->service_ns;
		if (start >= a->busy_until)
			ADD(a, busy_ns, c->service_ns);
		else if (c->done_ns > a->busy_until)
			ADD(a, busy_ns, c->done_ns - a->busy_until);
		if (c->done_ns > a->busy_until)
			a->busy_until = c->done_ns;
		uint64_t beyond = c->bytes_read > r->length ? c->bytes_read - r->length : 0;
		ADD(a, prefetched, beyond);
	}

	struct sz_stream *s = sz_stream_find(t, r->dev, r->ino, r->offset, slack);
	if (!s) {
		s = sz_stream_new(t, r->dev, r->ino, r->offset, now);
		if (!s)
			return NULL;
	}
	/* A miss inside the earlier window, beyond where the stream had got:
	 * the daemon reads only pages not resident, so whatever it read of
	 * [offset, old window end) beyond what lies after that end had been
	 * prefetched and was evicted before anyone asked for it.  (A read
	 * straddling the old window's end is not an eviction.) */
	if (!c->was_resident && c->bytes_read && r->offset >= s->frontier && r->offset < s->win_hi &&
	    r->offset >= s->win_lo) {
		uint64_t end = c->window_offset + c->window_length;
		uint64_t fresh = end > s->win_hi ? end - s->win_hi : 0;
		uint64_t again = c->bytes_read > fresh ? c->bytes_read - fresh : 0;
		if (again > s->win_hi - r->offset)
			again = s->win_hi - r->offset;
		if (again) {
			ADD(a, reread, again);
			sz_account_saw_evicted(a, s, again, now);
		}
		came_back(a, s);
	}
	uint64_t old = s->frontier;
	uint64_t gained = sz_stream_advance(t, s, r->offset, r->length, now);
	ADD(a, demanded, gained);
	credit_window(a, s, old, s->frontier);
	if (c->window_length && c->window_offset + c->window_length > s->reach)
		s->reach = c->window_offset + c->window_length;

	if (!c->was_resident && c->window_length) {
		/* A new window replaces the old one (a stream that jumps away
		 * becomes a new stream; the old one's waste is counted when it
		 * ends). */
		s->win_lo = r->offset + r->length;
		s->win_hi = c->window_offset + c->window_length;
		if (s->win_hi < s->win_lo)
			s->win_hi = s->win_lo;
		s->win_ns = now;
		s->win_evicted = s->win_needed = 0;
		s->win_dropped = 0;
		/* Keep a dup of the file for residency re-checks, within a budget
		 * of descriptors. */
		if (s->fd < 0 && a->cachestat_ok && c->fd >= 0 && t->tracked_fds < t->max_fds) {
			s->fd = fcntl(c->fd, F_DUPFD_CLOEXEC, 0);
			if (s->fd >= 0)
				t->tracked_fds++;
		}
	}
	return s;
}

void sz_account_recheck(struct sz_account *a, struct sz_streams *t, uint64_t now)
{
	if (!a->cachestat_ok)
		return;
	for (unsigned i = 0; i < t->cap; i++) {
		struct sz_stream *s = &t->v[i];
		if (!s->used || s->fd < 0)
			continue;
		/* Only the part not yet asked for: pages already asked for may
		 * go without harm. */
		uint64_t lo = s->frontier > s->win_lo ? s->frontier : s->win_lo;
		lo &= ~(uint64_t)(SZ_PAGE - 1);
		if (s->win_hi <= lo)
			continue;
		uint64_t len = s->win_hi - lo;
		long shadows;
		long pages = sz_residency(s->fd, lo, len, &shadows);
		a->rechecks++;
		if (pages < 0) {
			if (errno == ENOSYS || errno == EPERM) {
				a->cachestat_ok = 0;
				return;
			}
			continue;
		}
		/* Pages of the window gone from the cache: evicted by reclaim if
		 * the kernel left a shadow entry for them (cachestat's
		 * nr_evicted), else dropped on purpose (POSIX_FADV_DONTNEED,
		 * drop_caches), which is no sign of memory pressure. */
		uint64_t want = (len + SZ_PAGE - 1) / SZ_PAGE;
		uint64_t gone = (uint64_t)pages < want ? want - (uint64_t)pages : 0;
		uint64_t reclaimed = (uint64_t)shadows < gone ? (uint64_t)shadows : gone;
		uint64_t ev = reclaimed * SZ_PAGE > len ? len : reclaimed * SZ_PAGE;
		uint64_t dropped = (gone - reclaimed) * SZ_PAGE;
		if (dropped > s->win_dropped) {
			ADD(a, dropped, dropped - s->win_dropped);
			s->win_dropped = dropped;
		}
		sz_account_saw_evicted(a, s, ev, now);
	}
}

struct sz_counters sz_account_roll(struct sz_account *a, uint64_t now, uint64_t *len_ns)
{
	struct sz_counters done = a->interval;
	*len_ns = now - a->interval_start_ns;
	memset(&a->interval, 0, sizeof a->interval);
	a->interval_start_ns = now;
	return done;
}

void sz_figures(const struct sz_counters *c, uint64_t len_ns, unsigned concurrency,
                struct sz_figures *f)
{
	memset(f, 0, sizeof *f);
	double demanded_mib = (double)c->demanded / SZ_MIB;
	f->miss_ratio = c->demanded ? (double)c->read / (double)c->demanded : 0;
	(void)concurrency;
	f->busy = len_ns ? (double)c->busy_ns / (double)len_ns : 0;
	f->disk_ms_per_mib = demanded_mib > 0 ? (double)c->busy_ns / 1e6 / demanded_mib : 0;
	f->score = f->disk_ms_per_mib * f->miss_ratio;
	f->evict_fraction = c->prefetched ? (double)c->evicted / (double)c->prefetched : 0;
	f->evict_age_s = c->evictions ? (double)c->evict_age_ns / 1e9 / (double)c->evictions : 0;
	f->needed_fraction = c->prefetched ? (double)c->evicted_needed / (double)c->prefetched : 0;
	f->needed_read_share = c->read ? (double)c->evicted_needed / (double)c->read : 0;
	f->older_read_share = c->read ? (double)c->evicted_needed_older / (double)c->read : 0;
	f->needed_age_s = c->evictions_needed ?
	                  (double)c->evict_needed_age_ns / 1e9 / (double)c->evictions_needed : 0;
	f->needed_fit = c->evictions_needed_rated ?
	                (double)c->evict_needed_fit / (double)c->evictions_needed_rated : 0;
}

static void counters_json(struct rd_json *j, const char *key, const struct sz_counters *c,
                          uint64_t len_ns, unsigned concurrency)
{
	struct sz_figures f;
	sz_figures(c, len_ns, concurrency, &f);
	rd_json_obj_begin(j, key);
	rd_json_dbl(j, "seconds", (double)len_ns / 1e9);
	rd_json_u64(j, "requests", c->requests);
	rd_json_u64(j, "hits", c->hits);
	rd_json_u64(j, "misses", c->misses);
	rd_json_u64(j, "asked_bytes", c->asked);
	rd_json_u64(j, "demanded_bytes", c->demanded);
	rd_json_u64(j, "read_bytes", c->read);
	rd_json_u64(j, "prefetched_bytes", c->prefetched);
	rd_json_u64(j, "useful_bytes", c->useful);
	rd_json_u64(j, "wasted_bytes", c->wasted);
	rd_json_u64(j, "evicted_bytes", c->evicted);
	rd_json_u64(j, "evicted_windows", c->evictions);
	rd_json_u64(j, "evicted_needed_bytes", c->evicted_needed);
	rd_json_dbl(j, "evict_needed_age_s", f.needed_age_s);
	rd_json_dbl(j, "evict_needed_fit_bytes", f.needed_fit);
	rd_json_u64(j, "evicted_needed_older_bytes", c->evicted_needed_older);
	rd_json_u64(j, "reread_bytes", c->reread);
	rd_json_u64(j, "dropped_bytes", c->dropped);
	rd_json_dbl(j, "evict_age_s", f.evict_age_s);
	rd_json_dbl(j, "miss_ratio", f.miss_ratio);
	rd_json_dbl(j, "busy", f.busy);
	rd_json_dbl(j, "service_s", (double)c->disk_ns / 1e9);
	rd_json_dbl(j, "disk_ms_per_mib", f.disk_ms_per_mib);
	rd_json_dbl(j, "score", f.score);
	rd_json_obj_end(j);
}

void sz_account_describe(const struct sz_account *a, struct rd_json *j, uint64_t now)
{
	rd_json_obj_begin(j, "accounting");
	counters_json(j, "total", &a->total, now - a->start_ns, a->concurrency);
	counters_json(j, "interval", &a->interval, now - a->interval_start_ns, a->concurrency);
	rd_json_bool(j, "residency_rechecks", a->cachestat_ok);
	rd_json_u64(j, "rechecks", a->rechecks);
	rd_json_obj_end(j);
}
