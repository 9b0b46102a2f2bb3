/*
 * policy_adaptive.c - the adaptive policy's hooks (size, observe, tick)
 * and its ops table.  What the policy does and the reading order of its
 * files: adaptive.h.
 */
#include "adaptive.h"
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int adaptive_init(struct rd_policy *p, char *err, size_t errlen)
{
	struct adaptive *a = calloc(1, sizeof *a);
	if (!a) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	sz_base_defaults(&a->b, "adaptive", p->dev);
	/* Table 2 of the paper. */
	a->interval_ns = 180ull * 1000000000u;
	a->step = 512u << 10;
	a->deflate = 0.05;
	a->busy_min = 0.60;
	a->evict_max = 0.05;
	a->side_by_side = 1;
	a->trial = 0.125;
	a->sigma = 1.5;
	a->escape = 3;
	a->miss_power = 1;
	a->reach = 1;
	for (int i = 0; i < NARMS; i++)
		a->arm_score[i] = -1;
	if (adaptive_config(p, a, err, errlen))
		goto fail;
	a->nsteps = (unsigned)(a->b.max_size / a->step);
	a->score = calloc(a->nsteps + 2, sizeof *a->score);
	a->scored = calloc(a->nsteps + 2, 1);
	if (!a->score || !a->scored) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	uint64_t now = rd_now_ns();
	if (sz_base_start(&a->b, p->concurrency, now, err, errlen))
		goto fail;
	a->b.streams.ended = ad_stream_ended;
	a->b.streams.ended_ctx = a;
	a->cur = a->from = a->target = k_size(a, size_k(a, (double)a->start));
	a->next_adjust_ns = now + a->interval_ns;
	a->settling = 1;
	a->settle_why = "warm-up interval: not scored";
	a->trying = a->side_by_side;
	a->share = a->trial;
	snprintf(a->reason, sizeof a->reason, "start: %s", a->start_source);
	p->priv = a;
	p->tick_ms = 1000;
	char s[32], st[32];
	char cmp[128] = "compare intervals";
	if (a->aa)
		snprintf(cmp, sizeof cmp, "compare aa (groups of %.3g%% of streams each way, all at the "
		         "current size: no move by score)", a->trial * 100);
	else if (a->side_by_side)
		snprintf(cmp, sizeof cmp, "compare side by side (trial %.3g%% each way, %.3g%% once "
		         "held, sigma %.3g, escape %u)", a->trial * 100, a->held * 100, a->sigma,
		         a->escape);
	rd_log("%s: size %s from %s; interval %.3g s, step %s, deflate %.3g%%, busy %.3g%%, "
	       "evict %.3g%%, ramp %.3g s, score %s, %s, %u read%s at once", a->b.who,
	       sz_fmt_size(a->cur, s, sizeof s), a->start_source, (double)a->interval_ns / 1e9,
	       sz_fmt_size(a->step, st, sizeof st), a->deflate * 100, a->busy_min * 100,
	       a->evict_max * 100, (double)a->ramp_ns / 1e9, score_name(a), cmp, p->concurrency,
	       p->concurrency == 1 ? "" : "s");
	return 0;
fail:
	free(a->score);
	free(a->scored);
	free(a);
	return -1;
}

/* compare=side-by-side counts a window once its stream is done with it,
 * so an interval must outlast the windows read in it: at least twice the
 * time a stream at the mean bitrate takes through a window of the largest
 * size compared, and once the time the slowest tenth of the streams take
 * (at most ten intervals).  Measured: with 20 s intervals on the
 * 20,000-video SD library (50 kB/s, 2 MiB windows last 40 s) the larger
 * size had too few windows done with in most intervals, and those were
 * the ones cut short (streams that ended, windows evicted).  The slowest
 * streams matter after a settle interval, which must outlast their
 * windows too: else the next interval has theirs only for the smaller
 * sizes (in tests/test_sizing.c, slow streams at 50 kB/s among fast ones
 * at 1.2 MB/s, whose mean bitrate asked for 5 s, moved the size 9 times in
 * 2000 s where every size scored the same). */
static uint64_t interval_needed_ns(const struct adaptive *a)
{
	double bitrate = sz_streams_mean_bitrate(&a->b.streams), slow = a->b.streams.slow_bitrate;
	if (!a->side_by_side || bitrate <= 0)
		return a->interval_ns;
	unsigned k = size_k(a, (double)a->target), kl = larger_k(a, k, a->reach);
	double window = (double)k_size(a, kl ? kl : k), need = 2 * window / bitrate * 1e9;
	if (slow > 0 && window / slow * 1e9 > need)
		need = window / slow * 1e9;
	if (need > 10.0 * (double)a->interval_ns)
		need = 10.0 * (double)a->interval_ns;
	return need > (double)a->interval_ns ? (uint64_t)need : a->interval_ns;
}

/* Has a group compared side by side fewer than MIN_WINDOWS windows done
 * with, or of fewer than MIN_STREAMS streams?  With large windows a trial group (an eighth of the streams)
 * finishes few per interval; without waiting for them no group was ever
 * scored and the size never moved (tests/test_sizing.c, viewers who
 * leave, from 16M: 100 decisions, none with a neighbour scored). */
static int groups_short(const struct adaptive *a)
{
	if (!a->side_by_side || a->settling)
		return 0;
	unsigned kk[NARMS];
	ad_compared_steps(a, kk);
	for (int i = 0; i < NARMS; i++)
		if (kk[i] && (a->group[i].windows < MIN_WINDOWS || a->group[i].streams < MIN_STREAMS))
			return 1;
	return 0;
}

static void adaptive_tick(struct rd_policy *p, uint64_t now)
{
	struct adaptive *a = p->priv;
	sz_base_tick(&a->b, now);
	if (a->ramping) {
		uint64_t t = now - a->ramp_start_ns;
		if (t >= a->ramp_ns || a->ramp_ns == 0) {
			a->cur = a->target;
			a->ramping = 0;
			/* Scores count only time spent at the new size. */
			uint64_t len;
			ad_roll(a, now, &len);
			a->trying = a->side_by_side;
			ad_settle(a, now, "first interval at the new size: not scored");
			a->next_adjust_ns = now + a->interval_ns - a->ramp_ns;
		} else {
			double f = (double)t / (double)a->ramp_ns;
			a->cur = sz_clamp_page((uint64_t)((double)a->from +
			                                  ((double)a->target - (double)a->from) * f),
			                       SZ_PAGE, a->b.max_size);
		}
		return;
	}
	if (now >= a->next_adjust_ns) {
		uint64_t start = a->b.acct.interval_start_ns, need = interval_needed_ns(a);
		uint64_t waited = now - start;
		const struct sz_counters *c = &a->b.acct.interval;
		struct sz_figures f;
		sz_figures(c, waited, a->b.acct.concurrency, &f);
		int light = ad_light_load(a, c, &f);
		/* Under light load no score moves the size: nothing to wait for
		 * but the windows read in the interval. */
		if (waited < need || (!light && groups_short(a) && waited < 10 * a->interval_ns)) {
			/* The eviction rule acts on the interval so far: it is
			 * there to act faster than the scores.  Measured on the
			 * HD library from 8M: the first interval lasted 85 s
			 * (twice an 8.5M window at 200 kB/s) while 83% of what
			 * was prefetched was evicted unused. */
			if (ad_eviction_cut(a, &f, light, now))
				a->last = f;
			else
				a->next_adjust_ns = waited < need && start + need < now + a->interval_ns ?
				                    start + need : now + a->interval_ns;
			return;
		}
		a->next_adjust_ns = now + a->interval_ns;
		ad_decide(a, now);
	}
}

static uint64_t adaptive_size(struct rd_policy *p, const struct rd_request_info *req)
{
	struct adaptive *a = p->priv;
	/* A request that starts a stream is drawn by where it starts, as
	 * observe() will draw the stream it makes. */
	struct sz_stream *s = sz_base_stream(&a->b, req);
	uint64_t size = ad_arm_size(a, ad_arm_of(a, req->dev, req->ino, s ? s->first_off : req->offset));
	return sz_base_scaled(&a->b, s, size);
}

/* Credit the stream's window with what it consumed of [lo, hi): only what
 * lies in the window's own range.  Past its window a stream often finds
 * what other streams read (on the HD library at fixed 4M, 85% of the
 * daemon's answers were hits), and until 2026-11-26 all of that went to
 * the stream's last window as if the window had delivered it: in the HD
 * logs at 2614bcd the groups read 0.71-0.98 bytes per byte "used",
 * swinging by a quarter between groups and decisions, while their disk
 * time per MiB read fell steadily with the size (1.5M 15-17 ms, 2M
 * 14-15, 2.5M 13-15): the free bytes drowned the difference the sizes
 * make.  What others read for a stream does not depend on its window's
 * size. */
static void credit(struct sz_stream *s, uint64_t lo, uint64_t hi)
{
	if (lo < s->pol_lo)
		lo = s->pol_lo;
	if (hi > s->pol_hi)
		hi = s->pol_hi;
	if (hi > lo)
		s->pol_consumed += hi - lo;
}

static void adaptive_observe(struct rd_policy *p, const struct rd_completion *c)
{
	struct adaptive *a = p->priv;
	struct sz_counters before = a->b.acct.interval;
	struct sz_stream *s = sz_base_observe(&a->b, c);
	if (!s)
		return;
	/* Per group, for compare=side-by-side: a window counts once the stream
	 * asks past it, with what reading it cost and what was consumed of it.
	 * (Counting reads when they happen and consumption when it happens put
	 * a window's cost and its use in different intervals, under different
	 * sizes: in the model of tests/test_sizing.c the size then swung
	 * between the old and the new size after every move.)  The stream got
	 * from `from` to its frontier: up to the request's offset in the
	 * window it had, from there on in the one this request opened, if
	 * any; each window takes only what lies in its own range (credit()). */
	uint64_t gained = a->b.acct.interval.demanded - before.demanded;
	uint64_t from = s->frontier - gained;
	uint64_t upto = c->req.offset < s->frontier ? c->req.offset : s->frontier;
	if (upto < from)
		upto = from;
	credit(s, from, upto);
	if (!c->was_resident && c->window_length) {
		ad_close_window(a, s);
		s->pol_group = ad_arm_of(a, c->req.dev, c->req.ino, s->first_off) + 1;
		s->pol_open_ns = c->req.arrival_ns;
		s->pol_lo = c->window_offset;
		s->pol_hi = c->window_offset + c->window_length;
		s->pol_read = a->b.acct.interval.read - before.read;
		s->pol_disk_ns = a->b.acct.interval.disk_ns - before.disk_ns;
	}
	credit(s, upto, s->frontier);
}

static void adaptive_destroy(struct rd_policy *p)
{
	struct adaptive *a = p->priv;
	if (a) {
		sz_base_free(&a->b);
		free(a->score);
		free(a->scored);
	}
	free(a);
	p->priv = NULL;
}

const struct rd_policy_ops rd_policy_adaptive = {
	.name = "adaptive",
	.init = adaptive_init,
	.size = adaptive_size,
	.observe = adaptive_observe,
	.tick = adaptive_tick,
	.describe = adaptive_describe,
	.prefetch_use = sz_policy_prefetch_use,
	.destroy = adaptive_destroy,
};
