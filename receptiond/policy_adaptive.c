/*
 * policy_adaptive.c - automatic prefetch sizing (Haider, Brecht et al.,
 * SYSTOR 2014, section 4).
 *
 * Score S = disk time per transaction x cache-miss ratio, measured over
 * each adjust interval; here a "transaction" is a MiB the streams consumed
 * (the paper's client requests are of fixed size), so S = disk ms per MiB
 * demanded x (bytes read / bytes demanded).  Every interval S is stored
 * for the current size and compared with the stored scores of the next
 * larger and next smaller sizes (one step apart); the size moves towards
 * a lower one, tries an unmeasured neighbour when the measured one is
 * worse, and at a minimum deflates the neighbours' stored scores so a
 * rejected size is eventually tried again (escaping local minima).  Under
 * light load (disk busy below a threshold) the size does not move by
 * score.  When prefetched data is evicted unused above a threshold, the
 * size jumps down towards eviction time x the evicted streams' bitrates
 * (at most to half the size per decision), at any load.
 * Every change is reached gradually (a linear ramp), and scores are taken
 * only once the ramp is over; the first interval after start is a warm-up
 * and is not scored (side by side, nor is the first after every change of
 * the sizes compared: settle()).
 *
 * compare=intervals is the paper's way: each size's score comes from the
 * interval spent at it, so neighbours are compared across intervals and
 * whatever the load did in between.  compare=side-by-side (the default) measures
 * the neighbours at the same time instead: during every interval a share
 * of the files (trial=, each way) get one step less and as many one step
 * more, and each group's score counts only its own streams' reads and
 * progress.  On the servers here the load moved the score of one size by
 * +-30% from one 20 s interval to the next, more than the few percent that
 * separate neighbouring sizes (docs/prefetch-sizing.md); measured side by
 * side, both see the same load.  The streams in the trial groups change
 * every interval, so no group keeps a disk zone or a popular video to
 * itself.
 * A neighbour wins only by more than sigma standard errors (more at the
 * first decisions pooled: early()), and after escape sizes kept in a row
 * the groups look two steps away for two intervals (side_by_side).
 *
 * score=disk drops the miss ratio and scores disk time per MiB consumed
 * alone.  That is what limits the rate of sessions a disk-bound server
 * serves, and it already pays for what is read and not consumed (the disk
 * time of reading it); the paper's product charges that waste a second
 * time, through the miss ratio, which pulls the size below the one that
 * serves most.  Not the default: D alone cannot see memory run short
 * where re-reading costs no seek, and in the slow-streams model of
 * tests/test_sizing.c it grew the size from the paper's 1M to 4.5M.
 *
 *   --policy adaptive[:interval=180s,step=512K,deflate=5%,busy=60%,evict=5%,
 *                      ramp=60s,start=SIZE,compare=side-by-side|intervals|aa,trial=12.5%,
 *                      held=3.125%,sigma=1.5,escape=3,score=paper|disk,
 *                      scale=none|sqrt|linear,ref=,min=,max=,
 *                      streams=, and competitive's switch=,rate=,profile=]
 * Defaults are the paper's Table 2; the start size is the competitive
 * size from the device profile (else the daemon's --prefetch).
 */
#include "sizing.h"
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fewer windows of a size than this, or of fewer streams, say too little
 * to score it. */
enum { MIN_WINDOWS = 16, MIN_STREAMS = 8 };

/* Needed evictions above this many times evict= are heavy: they cut the
 * size under light load, and without the scores' consent (eviction_cut). */
enum { HEAVY_EVICTIONS = 4 };

/* Side by side, the scores pool at most this many intervals (pool_interval),
 * and a look two steps away lasts this many (side_by_side). */
enum { MAX_POOLED = 4, ESCAPE_LOOKS = 2 };

/* The groups of streams measured side by side under compare=side-by-side. */
enum arm { ARM_SMALLER, ARM_CURRENT, ARM_LARGER, NARMS };
static const char *const arm_name[NARMS] = { "smaller", "current", "larger" };

/* What one group's windows cost and gave: bytes read and disk time for
 * them, and bytes the streams consumed out of them; with the sums of the
 * squares and products (in MiB and ms) of those figures per stream, over
 * the streams whose windows they were, for the score's standard error.
 * Kept per group, not per size: between two changes of the sizes
 * compared (settle()) each group reads one size, and per group the
 * machinery can be checked against itself (compare=aa). */
struct sums {
	uint64_t windows, read, disk_ns, consumed;
	uint64_t streams;
	double dd, rr, cc, dr, dc, rc;
};

struct adaptive {
	struct sz_base b;
	/* parameters (Table 2) */
	uint64_t interval_ns, step, ramp_ns, start;
	double deflate, busy_min, evict_max;
	int side_by_side;             /* compare=side-by-side (or aa) */
	int aa;                       /* compare=aa: every group at the current size */
	double trial;                 /* share of streams in each neighbour's group */
	double held;                  /* and once the size holds (held=) */
	double sigma;                 /* a neighbour must win by this many standard errors */
	unsigned escape;              /* after this many sizes kept in a row, look two steps away */
	double miss_power;            /* score = disk time per MiB x miss ratio^this (score=) */
	/* state */
	uint64_t cur;                 /* the size in use now */
	uint64_t from, target;        /* ramping from -> target */
	uint64_t ramp_start_ns;
	int ramping;
	uint64_t next_adjust_ns;
	unsigned nsteps;              /* sizes k * step, k = 1..nsteps */
	double *score;                /* [k], valid where scored[k] */
	unsigned char *scored;
	int light;                    /* last decision found light load */
	int settling;                 /* the interval is not scored (settle) */
	uint64_t settled_ns;          /* windows asked for before this do not count */
	const char *settle_why;
	uint64_t changes, decisions;
	/* compare=side-by-side: which files are in which group this interval
	 * (drawn afresh), and per size step what its windows cost since the
	 * accounting rolled */
	uint64_t epoch;
	int trying;                   /* the neighbours are in use now */
	double share;                 /* the groups' share now: trial, halved
	                                 per decision that keeps the size down
	                                 to held (hold()) */
	unsigned reach;               /* how many steps away they are (1, or 2 to escape) */
	unsigned kept_in_row;         /* side-by-side decisions that kept the size */
	struct sums group[NARMS];     /* this interval */
	struct sums group_done[NARMS];/* the interval before */
	struct sums pooled[NARMS];    /* the intervals scored since the
	                                 compared sizes last changed */
	unsigned npooled;
	uint64_t pooled_ns;
	double arm_score[NARMS];      /* last decision's, -1 if unmeasured */
	double arm_se[NARMS];         /* and their relative standard errors */
	struct sz_figures last;
	char reason[960];
	char start_source[640];
};

static uint64_t k_size(const struct adaptive *a, unsigned k)
{
	return (uint64_t)k * a->step;
}

static unsigned size_k(const struct adaptive *a, double size)
{
	double k = floor(size / (double)a->step + 0.5);
	if (k < 1)
		k = 1;
	if (k > a->nsteps)
		k = a->nsteps;
	return (unsigned)k;
}

static const char *score_name(const struct adaptive *a)
{
	return a->miss_power ? "paper" : "disk";
}

/* The sizes d steps away from step k that may be used (0 if none). */
static unsigned smaller_k(const struct adaptive *a, unsigned k, unsigned d)
{
	return k > d && k - d >= size_k(a, (double)a->b.min_size) ? k - d : 0;
}

static unsigned larger_k(const struct adaptive *a, unsigned k, unsigned d)
{
	return k + d <= a->nsteps ? k + d : 0;
}

/* The size steps the three groups compare this interval, by group (0
 * where a neighbour lies beyond the sizes that may be used). */
static void compared_steps(const struct adaptive *a, unsigned kk[NARMS])
{
	unsigned k = size_k(a, (double)a->target);
	kk[ARM_SMALLER] = a->aa ? k : smaller_k(a, k, a->reach);
	kk[ARM_CURRENT] = k;
	kk[ARM_LARGER] = a->aa ? k : larger_k(a, k, a->reach);
}

/* Which group a stream is in this interval: a share trial of the streams
 * tries the smaller size, as many the larger, the rest the current one,
 * drawn afresh every interval (a hash of the stream, its file and where
 * it started, and the interval).
 * - Per stream, not per file (until 2026-11-26): the score's error counts
 *   streams, so the streams must be what is drawn.  Drawn per file, a
 *   file's streams went together, and one popular file with many viewers
 *   finding each other's data resident moved its group's score beyond
 *   that error: in the model of tests/test_sizing.c with 25 of 200
 *   viewers on one video, every group at the same size (compare=aa), the
 *   trial groups' distance from the current group averaged -4.1 and -2.8
 *   standard errors (20-30% in most decisions) with the followers
 *   starting 150-250 MiB back, before credit(), and -1.2 and -0.4 as
 *   the test has it now; drawn per stream, -0.3 or less either way.
 *   Popularity on the HD library is milder (Zipf
 *   0.8 over 1,000 videos: the first draws 6.5% of the sessions), and
 *   an A/A there at 4M, drawn per file, found no gap (0.99x both ways
 *   over three pooled decisions); per stream is the right draw all the
 *   same, and in the flat and two-kinds models it halved the moves that
 *   noise makes.
 * - Afresh every interval: shifting one fixed hash by two shares per
 *   interval kept the smaller group and the larger group apart for good
 *   (every second eighth each), and where some files draw more streams
 *   or cost more to read, one neighbour was measured on the costlier
 *   half every time. */
static enum arm arm_of(const struct adaptive *a, dev_t dev, ino_t ino, uint64_t start)
{
	if (!a->trying)
		return ARM_CURRENT;
	uint64_t h = (uint64_t)ino * 0x9e3779b97f4a7c15ull ^ (uint64_t)dev * 0xbf58476d1ce4e5b9ull ^
	             start * 0x94d049bb133111ebull ^ (a->epoch + 1) * 0xd6e8feb86659fd93ull;
	h ^= h >> 31;
	h *= 0x94d049bb133111ebull;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	double u = (double)(h >> 11) / 9007199254740992.0;
	if (u < a->share)
		return ARM_SMALLER;
	if (u < 2 * a->share)
		return ARM_LARGER;
	return ARM_CURRENT;
}

static uint64_t arm_size(const struct adaptive *a, enum arm arm)
{
	if (a->aa)
		return a->cur;
	unsigned k = size_k(a, (double)a->cur), n = 0;
	if (arm == ARM_SMALLER)
		n = smaller_k(a, k, a->reach);
	else if (arm == ARM_LARGER)
		n = larger_k(a, k, a->reach);
	return n ? k_size(a, n) : a->cur;
}

/* A stream's windows of one size done with this interval go into that
 * size's error sums as one: the windows of a stream share its bitrate,
 * its file's place on the disk and its viewer's leaving, so they vary
 * together.  Counted one by one they made the error of a trial group
 * (an eighth of the streams) look smaller than it was. */
static void close_stream_sums(struct adaptive *a, struct sz_stream *s)
{
	if (s->pol_cl_group) {
		struct sums *w = &a->group[s->pol_cl_group - 1];
		double d = s->pol_cl_disk, r = s->pol_cl_read, c = s->pol_cl_consumed;
		w->dd += d * d;
		w->rr += r * r;
		w->cc += c * c;
		w->dr += d * r;
		w->dc += d * c;
		w->rc += r * c;
	}
	s->pol_cl_group = 0;
	s->pol_cl_disk = s->pol_cl_read = s->pol_cl_consumed = 0;
}

/* A new accounting interval (scores count only time at a settled size). */
static struct sz_counters roll(struct adaptive *a, uint64_t now, uint64_t *len)
{
	for (unsigned i = 0; i < a->b.streams.cap; i++)
		if (a->b.streams.v[i].used)
			close_stream_sums(a, &a->b.streams.v[i]);
	memcpy(a->group_done, a->group, sizeof a->group);
	memset(a->group, 0, sizeof a->group);
	return sz_account_roll(&a->b.acct, now, len);
}

static int adaptive_config(struct rd_policy *p, struct adaptive *a, char *err, size_t errlen)
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

/* The sizes compared side by side change (a move's ramp is over, or the
 * groups look at other neighbours): windows asked for before now no
 * longer count, and the interval from now on only settles, unscored.
 * A window counts in the interval its stream is done with it, so every
 * interval takes in the windows of the one before that outlasted it, and
 * loses its own to the next.  That evens out only when the interval before
 * compared the same sizes on as many files.  Right after a move it had
 * not: the size just left was everyone's until then, and its windows
 * that outlasted the move (the longest-lived: slow streams, viewers who
 * left) came into that size's score as if its trial group's.  Measured
 * over the 26 adaptive runs of 2026-11-25 whose logs were kept
 * (docs/prefetch-sizing.md, "Two seeds per probe" and after):
 * 58 of 131 moves were undone by the very next decision.  After the
 * settle interval, what an interval takes in was asked for under the
 * sizes it compares. */
static void settle(struct adaptive *a, uint64_t now, const char *why)
{
	if (!a->side_by_side)
		return;
	a->settled_ns = now;
	a->settling = 1;
	a->npooled = 0;
	a->settle_why = why;
}

/* A stream's last window is done with: count it for its size. */
static void close_window(struct adaptive *a, struct sz_stream *s)
{
	if (s->pol_group && s->pol_open_ns >= a->settled_ns) {
		struct sums *w = &a->group[s->pol_group - 1];
		w->windows++;
		w->read += s->pol_read;
		w->disk_ns += s->pol_disk_ns;
		w->consumed += s->pol_consumed;
		if (s->pol_cl_group != s->pol_group) {
			close_stream_sums(a, s);
			s->pol_cl_group = s->pol_group;
			w->streams++;
		}
		s->pol_cl_disk += (double)s->pol_disk_ns / 1e6;
		s->pol_cl_read += (double)s->pol_read / SZ_MIB;
		s->pol_cl_consumed += (double)s->pol_consumed / SZ_MIB;
	}
	s->pol_group = 0;
	s->pol_lo = s->pol_hi = 0;
	s->pol_read = s->pol_disk_ns = s->pol_consumed = 0;
}

/* A stream ended: its last window counts too (its unconsumed part is the
 * cost of a size too large for sessions that stop early). */
static void stream_ended(void *ctx, struct sz_stream *s, uint64_t now)
{
	struct adaptive *a = ctx;
	sz_account_stream_ended(&a->b.acct, s, now);
	close_window(a, s);
	close_stream_sums(a, s);
}

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
	a->b.streams.ended = stream_ended;
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

static void fmt_score(const struct adaptive *a, unsigned k, char *buf, size_t len)
{
	if (k < 1 || k > a->nsteps || !a->scored[k])
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.3g", a->score[k]);
}

/* Move towards a new target, gradually (the ramp runs in tick). */
static void set_target(struct adaptive *a, uint64_t target, uint64_t now, const char *why)
{
	char o[32], n[32];
	if (target == a->target) {
		snprintf(a->reason, sizeof a->reason, "%s", why);
		return;
	}
	rd_log("%s: size %s -> %s: %s", a->b.who, sz_fmt_size(a->target, o, sizeof o),
	       sz_fmt_size(target, n, sizeof n), why);
	snprintf(a->reason, sizeof a->reason, "%s -> %s: %s", o, n, why);
	if (target < a->target)
		a->b.acct.cut_ns = now + a->ramp_ns;
	a->from = a->cur;
	a->target = target;
	a->ramp_start_ns = now;
	a->ramping = 1;
	a->trying = 0;   /* everyone ramps together; the groups resume after */
	a->reach = 1;
	a->kept_in_row = 0;
	a->share = a->trial;   /* a new size: the neighbours in full again */
	a->changes++;
}

/* The score of a whole interval, from the device's figures. */
static double interval_score(const struct adaptive *a, const struct sz_figures *f)
{
	return f->disk_ms_per_mib * pow(f->miss_ratio, a->miss_power);
}

/* Store the score just measured at the target size; returns its step. */
static unsigned keep_score(struct adaptive *a, double score)
{
	unsigned k = size_k(a, (double)a->target);
	a->score[k] = score;
	a->scored[k] = 1;
	return k;
}

/* Gradient step (section 4.1) from the score just measured at target. */
static void gradient(struct adaptive *a, const struct sz_figures *f, uint64_t now)
{
	double s = interval_score(a, f);
	unsigned k = keep_score(a, s);
	unsigned ks = k - 1, kl = k + 1;
	int has_s = smaller_k(a, k, 1) != 0, has_l = larger_k(a, k, 1) != 0;
	int ms = has_s && a->scored[ks], ml = has_l && a->scored[kl];
	unsigned go = k;
	const char *rule = NULL;
	if (ml && a->score[kl] < s && (!ms || a->score[kl] <= a->score[ks])) {
		go = kl;
		rule = "larger scored lower";
	} else if (ms && a->score[ks] < s) {
		go = ks;
		rule = "smaller scored lower";
	} else if (has_l && !ml && (!ms || a->score[ks] >= s)) {
		go = kl;
		rule = "trying larger (unmeasured)";
	} else if (has_s && !ms && (!ml || a->score[kl] >= s)) {
		go = ks;
		rule = "trying smaller (unmeasured)";
	}
	char cs[32], ss[32], ls[32], why[224];
	fmt_score(a, k, cs, sizeof cs);
	fmt_score(a, ks, ss, sizeof ss);
	fmt_score(a, kl, ls, sizeof ls);
	if (go == k) {
		/* A minimum: deflate the stored scores of the two neighbours so
		 * one is eventually retried.  Only those: deflating every stored
		 * score lets a climb run along stale, deflated scores of sizes
		 * further away (measured: the model in tests/test_sizing.c then
		 * wanders from 4 to 8.5 MiB). */
		if (ms)
			a->score[ks] *= 1 - a->deflate;
		if (ml)
			a->score[kl] *= 1 - a->deflate;
		snprintf(why, sizeof why, "minimum (score %s; smaller %s, larger %s): deflating their "
		         "scores by %.0f%%", cs, ss, ls, a->deflate * 100);
		char at[32];
		rd_log("%s: size %s kept: %s", a->b.who, sz_fmt_size(a->target, at, sizeof at), why);
		set_target(a, a->target, now, why);
		return;
	}
	snprintf(why, sizeof why, "%s: score %s here, %s smaller, %s larger (busy %.0f%%, "
	         "miss ratio %.2f, %.2f disk ms/MiB)", rule, cs, ss, ls, f->busy * 100, f->miss_ratio,
	         f->disk_ms_per_mib);
	set_target(a, k_size(a, go), now, why);
}

/* One size's score over the interval, as sz_figures's but from its own
 * windows; -1 if too few of them were done with to judge.  *rel_se is the
 * score's relative standard error, by the delta method over the streams
 * (close_stream_sums): with a stream's disk time d, bytes read r and
 * consumed c in its windows of the size, and b the miss ratio's power (1
 * for the paper's score, 0 for score=disk), the score is
 * mean(d) mean(r)^b / mean(c)^(1+b), so ln(score) varies as the mean of
 * z = d/mean(d) + b r/mean(r) - (1+b) c/mean(c), whose own mean is 0. */
static double size_score(const struct adaptive *a, const struct sums *w, double *rel_se)
{
	*rel_se = 0;
	if (w->windows < MIN_WINDOWS || w->streams < MIN_STREAMS || !w->consumed || !w->read)
		return -1;
	double n = (double)w->streams, b = a->miss_power, e = 1 + b;
	double d = (double)w->disk_ns / 1e6 / n, r = (double)w->read / SZ_MIB / n,
	       c = (double)w->consumed / SZ_MIB / n;
	if (d > 0) {
		double zz = (w->dd / (d * d) + b * b * w->rr / (r * r) + e * e * w->cc / (c * c) +
		             2 * b * w->dr / (d * r) - 2 * e * w->dc / (d * c) -
		             2 * b * e * w->rc / (r * c)) / n;
		*rel_se = zz > 0 ? sqrt(zz / n) : 0;
	}
	return d / c * pow(r / c, b);
}

/* The standard error of the difference of two scores' logarithms, from
 * their relative standard errors. */
static double diff_se(double se, double cur_se)
{
	return sqrt(se * se + cur_se * cur_se);
}

/* Does a score beat the current one by more than sigma standard errors
 * of the difference of their logarithms? */
static int beats(double score, double se, double cur, double cur_se, double sigma)
{
	return score < cur && log(cur / score) > sigma * diff_se(se, cur_se);
}

/* The margin, in standard errors, for one of n groups to win: a false
 * win as rare as one group's beyond sigma (Bonferroni).  With two groups
 * and the same margin, a size between two neighbours moved by noise twice
 * as often as one at the smallest size, which has one: in a flat
 * landscape the size drifted down and stayed there (measured on the HD
 * library: 2M -> 512K, where the best fixed size was 4M). */
static double margin_for(double sigma, int n)
{
	if (n <= 1)
		return sigma;
	double tail = 0.5 * erfc(sigma / M_SQRT2) / n, lo = sigma, hi = sigma + 4;
	for (int i = 0; i < 50; i++) {
		double mid = (lo + hi) / 2;
		if (0.5 * erfc(mid / M_SQRT2) > tail)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

/* A margin of z standard errors, widened for errors estimated from only
 * n streams: Student's t with n - 1 degrees of freedom instead of the
 * normal, by the first Cornish-Fisher term (within 2% of t's quantile at
 * z = 1.5-3, n >= 8).  A trial group may have a dozen streams, and an
 * error from a dozen is itself off by a fifth either way: in the flat
 * model of tests/test_sizing.c (50 streams) the size moved 6 times in
 * 8000 s by the normal's margin and 5 times by this one, and on its
 * shallow gradient climbed a little less (3.76 MiB against 3.83).  On the
 * servers, with 36 streams or more in a group, it adds 0.06 or less. */
static double widened(double z, uint64_t n)
{
	double df = n > 2 ? (double)n - 1 : 1;
	return z + (z * z * z + z) / (4 * df);
}

/* The margin's factor at the j-th of up to looks pooled decisions, an
 * O'Brien-Fleming boundary: sqrt(looks / j), the full margin only once
 * all are pooled.  Testing the pooled scores at every decision with the
 * same margin lets noise win at any of them, and soonest at the first,
 * over one interval: on the HD library from 2M the first decision moved
 * to 1.5M on a trial group of 42 streams (8.03+-21% against 12.6+-6%, 2.1
 * standard errors against a margin of 1.9), where the score is flat and
 * the best fixed size was 4M; the size never came back.  A real
 * difference that large in one interval is still taken at once; one
 * between the margin and twice it waits for a second interval. */
static double early(unsigned j, unsigned looks)
{
	return j > 0 && j < looks ? sqrt((double)looks / j) : 1;
}

/* Side by side, over the interval just ended: did the smaller group's size
 * score lower than the current one by more than sigma standard errors?
 * -1 if either had too few windows. */
static int smaller_won(const struct adaptive *a, double sigma)
{
	unsigned kk[NARMS];
	compared_steps(a, kk);
	double se, small_se;
	double cur = size_score(a, &a->group_done[ARM_CURRENT], &se);
	double small = kk[ARM_SMALLER] ? size_score(a, &a->group_done[ARM_SMALLER], &small_se) : -1;
	if (cur < 0 || small < 0)
		return -1;
	return beats(small, small_se, cur, se, sigma);
}

/* Side by side, the scores of a decision pool the intervals since the
 * compared sizes last changed (settle()), at most MAX_POOLED: each interval
 * measures the same sizes under the same load in every group, so its
 * windows add to the evidence instead of being thrown away at every
 * decision.  A trial group's error (about 9% over one 20 s interval on
 * the mixed library) hid differences of 5-10% between neighbours: from
 * 1M the size stopped at 640K and 768K with 512K scoring lower in several
 * decisions, never by its noise.  Pooling across a move, as tried
 * before, kept the windows that decided the move in the new size's score
 * (a winner's curse); starting afresh at every change does not.  In the
 * model of tests/test_sizing.c with a shallow gradient (switch 2 ms,
 * best 4M, from 2M) the mean size over the second half went from 3.42
 * to 3.76 MiB (four seeds), and the flat model moved 5 times instead of
 * 10. */
static void sums_add(struct sums *to, const struct sums *w)
{
	to->windows += w->windows;
	to->read += w->read;
	to->disk_ns += w->disk_ns;
	to->consumed += w->consumed;
	to->streams += w->streams;
	to->dd += w->dd;
	to->rr += w->rr;
	to->cc += w->cc;
	to->dr += w->dr;
	to->dc += w->dc;
	to->rc += w->rc;
}

static void pool_interval(struct adaptive *a, uint64_t len_ns)
{
	if (a->npooled >= MAX_POOLED)
		a->npooled = 0;
	if (a->npooled == 0) {
		memset(a->pooled, 0, sizeof a->pooled);
		a->pooled_ns = 0;
	}
	for (int i = 0; i < NARMS; i++)
		sums_add(&a->pooled[i], &a->group_done[i]);
	a->npooled++;
	a->pooled_ns += len_ns;
}

/* A decision kept the size: the trial groups shrink, halving per decision
 * down to held=, and grow back to trial= at the next change of size.
 * While the size is right, every file in a group is served a worse size:
 * measured on the SD library at 828 MiB, at 512K (the best fixed size)
 * the larger group (768K) scored 15-25% above the current size and the
 * looks two steps away (1M) 10-40%, so an eighth of the files each way
 * cost some 2-4% of the disk's time, while the search steps are 5%.  The
 * groups go on at the smaller share (pooled over up to MAX_POOLED
 * intervals) and still catch a change of the load, more slowly.  Only
 * while every group compared (kk) had four times MIN_STREAMS streams in
 * the interval, so that halved it still has twice as many: with few
 * streams (the models of tests/test_sizing.c have 45-64) the groups stay
 * whole, or no group could be scored at all. */
static void hold(struct adaptive *a, const unsigned kk[NARMS], char *txt, size_t len)
{
	txt[0] = 0;
	for (int i = 0; i < NARMS; i++)
		if (kk[i] && a->group_done[i].streams < 4 * MIN_STREAMS)
			return;
	double half = a->share / 2;
	double share = half > a->held ? half : a->held;
	if (share != a->share)
		snprintf(txt, len, "; groups now %.3g%% of streams each way", share * 100);
	a->share = share;
}

/* compare=aa: every group read the current size, so their scores differ
 * only by noise and by whatever the machinery itself does to a group
 * (which streams it gets, windows that outlast an interval, streams
 * changing size between intervals).  Logged, never acted on: a trial
 * group's score over the current group's, in standard errors of the
 * difference (scripts/aa_summary.py sums a run up).  Why: on the HD
 * library both neighbours scored 12-31% above the current size wherever
 * the size held, with 120 streams or more as with 30; at 4M the groups
 * at one size scored alike (0.99x), so that was the sizes'. */
static void aa_report(struct adaptive *a, char txt[NARMS][96], double secs, uint64_t now)
{
	char why[640], at[32], vs[NARMS][48] = { "", "", "" };
	double cur = a->arm_score[ARM_CURRENT], *se = a->arm_se;
	for (int i = 0; i < NARMS; i++)
		if (i != ARM_CURRENT && cur > 0 && a->arm_score[i] > 0) {
			double d = diff_se(se[i], se[ARM_CURRENT]);
			double l = log(a->arm_score[i] / cur);
			snprintf(vs[i], sizeof vs[i], ", %.3gx current (%+.1f standard errors)",
			         a->arm_score[i] / cur, d > 0 ? l / d : 0);
		}
	snprintf(why, sizeof why, "A/A side by side over %.0f s, every group at this size: current "
	         "%s; smaller's group %s%s; larger's group %s%s", secs, txt[ARM_CURRENT],
	         txt[ARM_SMALLER], vs[ARM_SMALLER], txt[ARM_LARGER], vs[ARM_LARGER]);
	rd_log("%s: size %s kept: %s", a->b.who, sz_fmt_size(a->target, at, sizeof at), why);
	set_target(a, a->target, now, why);
}

/* compare=side-by-side: the neighbours were measured in the same interval on
 * their own share of the streams; move to the group that scored lowest, if
 * it beat the current size by more than sigma standard errors of the
 * difference.  Without that margin the lowest of three noisy scores wins:
 * a trial group (an eighth of the files, so a noisier score than the
 * current size's three quarters) won 8 of 8 decisions between 256K and
 * 512K on the SD library, and kept the size going back and forth between
 * 512K and 1M on the HD library (docs/prefetch-sizing.md).
 *
 * Fresh scores every interval need no deflation to retry a neighbour, but
 * a real local minimum of the score holds the size for good: after escape=
 * decisions in a row that kept the size, the groups try two steps away
 * for ESCAPE_LOOKS intervals, and the size moves there if that wins
 * (measured on the mixed library from 128K: 256K scored worse than 128K
 * in every one of 30 decisions, while fixed 512K served 5-15% more
 * sessions than 128K).  Two intervals, pooled, since the first decision
 * needs a wider margin (early()). */
static void side_by_side(struct adaptive *a, uint64_t len_ns, uint64_t now)
{
	pool_interval(a, len_ns);
	double secs = (double)a->pooled_ns / 1e9;
	unsigned kk[NARMS];
	compared_steps(a, kk);
	unsigned k = kk[ARM_CURRENT];
	double *se = a->arm_se;
	char txt[NARMS][96];
	for (int i = 0; i < NARMS; i++) {
		se[i] = 0;
		a->arm_score[i] = kk[i] ? size_score(a, &a->pooled[i], &se[i]) : -1;
		if (a->arm_score[i] < 0) {
			snprintf(txt[i], sizeof txt[i], "-");
			continue;
		}
		if (!a->aa || i == ARM_CURRENT) {
			a->score[kk[i]] = a->arm_score[i];
			a->scored[kk[i]] = 1;
		}
		/* The score's two parts, to tell where groups differ: disk
		 * time per MiB read (seeks, transfer) and bytes read per byte
		 * consumed (waste, re-reads). */
		const struct sums *w = &a->pooled[i];
		snprintf(txt[i], sizeof txt[i], "%.3g+-%.0f%% of %llu streams (%.3g ms/MiB read, "
		         "read/used %.2f)", a->arm_score[i], se[i] * 100, (unsigned long long)w->streams,
		         (double)w->disk_ns / 1e6 / ((double)w->read / SZ_MIB),
		         (double)w->read / (double)w->consumed);
	}
	char why[640], at[32];
	if (a->aa) {
		aa_report(a, txt, secs, now);
		return;
	}
	const char *away = a->reach > 1 ? "two steps away, " : "";
	unsigned reach = a->reach;
	a->reach = 1;
	double cur = a->arm_score[ARM_CURRENT];
	if (cur < 0) {
		snprintf(why, sizeof why, "too few windows to compare (%ssmaller %s, current %s, "
		         "larger %s)", away, txt[0], txt[1], txt[2]);
		set_target(a, a->target, now, why);
		return;
	}
	int best = ARM_CURRENT, lower = 0, measured = 0;
	for (int i = 0; i < NARMS; i++)
		measured += i != ARM_CURRENT && a->arm_score[i] >= 0;
	double sigma = margin_for(a->sigma, measured);
	for (int i = 0; i < NARMS; i++) {
		if (i == ARM_CURRENT || a->arm_score[i] < 0 || a->arm_score[i] >= cur)
			continue;
		lower = 1;
		uint64_t n = a->pooled[i].streams, n_cur = a->pooled[ARM_CURRENT].streams;
		double margin = widened(sigma * early(a->npooled, reach > 1 ? ESCAPE_LOOKS : MAX_POOLED),
		                        n < n_cur ? n : n_cur);
		if (beats(a->arm_score[i], se[i], cur, se[ARM_CURRENT], margin) &&
		    (best == ARM_CURRENT || a->arm_score[i] < a->arm_score[best]))
			best = i;
	}
	if (best == ARM_CURRENT) {
		char next[48] = "", held[48];
		hold(a, kk, held, sizeof held);
		if (reach > 1 && a->npooled < ESCAPE_LOOKS) {
			a->reach = reach;
			snprintf(next, sizeof next, "; two steps away once more");
		} else if (reach == 1 && a->escape && ++a->kept_in_row >= a->escape &&
		    (smaller_k(a, k, 2) || larger_k(a, k, 2))) {
			a->reach = 2;
			a->kept_in_row = 0;
			snprintf(next, sizeof next, "; next, two steps away");
		}
		snprintf(why, sizeof why, "%s side by side over %.0f s (score %s; %ssmaller %s, "
		         "larger %s)%s%s", lower ? "no neighbour lower by its noise" : "lowest", secs,
		         txt[1], away, txt[0], txt[2], next, held);
		rd_log("%s: size %s kept: %s", a->b.who, sz_fmt_size(a->target, at, sizeof at), why);
		set_target(a, a->target, now, why);
		if (a->reach != reach)
			settle(a, now, a->reach > 1 ? "first interval two steps away: not scored"
			                            : "first interval back one step away: not scored");
		return;
	}
	snprintf(why, sizeof why, "%s scored lowest side by side over %.0f s: %s%s smaller, %s here, "
	         "%s larger (%.0f%% of streams each way)", arm_name[best], secs, away, txt[0], txt[1],
	         txt[2], a->share * 100);
	set_target(a, k_size(a, kk[best]), now, why);
}

/* Heavy memory pressure (section 4.1): a stream must come back for its
 * data before the kernel evicts it, so when prefetched bytes are evicted
 * unused above the threshold the target jumps down towards eviction time
 * x bitrate.  Returns whether it did.
 * - Each evicted window with its own stream's bitrate: the mean over
 *   them of the bytes the stream could consume before the eviction, not
 *   eviction time x the mean bitrate of all streams.  Where slow streams
 *   lose their windows among fast ones that lose nothing, the mean
 *   stream's bitrate sizes for streams that did not need the cut (test
 *   model: 250K fits, the mean's 1.4M cuts nothing).  On the mixed
 *   library from 1M they differ less: the evicted windows' streams ran
 *   at 133-172 kB/s, the mean stream at 167-183 kB/s in the runs before
 *   (HD streams lose windows too: nginx sends a 2.5M segment in several
 *   calls, so each call's window reaches past its ask); the cuts went
 *   to 640K twice in three starts, where they had stopped at 768K.
 * - The threshold is a share of the bytes read, not of the bytes
 *   prefetched: what such an eviction costs is reading the bytes again,
 *   and that matters as a share of the disk's work.  Where requests ask
 *   for most of what is read (SD segments of 512K, windows of 512K), the
 *   prefetch is a sliver of the reads: measured on the SD library at 828
 *   MiB from 1M, 26 MB of needed evictions were 28-63% of the interval's
 *   prefetch and 1.2% of what was read; the rule cut 512K to 256K six
 *   times while the scores side by side put 512K 20-40% lower, and the
 *   search ended at 0.91x of fixed 512K.
 * - Only evictions a stream came back for (missed inside its window)
 *   count: the windows of viewers who left are evicted too, and cost
 *   nothing.  Measured on the SD library at 414 MiB: at every probe's
 *   start (the last probe's sessions all gone at once) 57-124% of the
 *   interval's prefetch was evicted, and the rule cut 512K to 256K six and
 *   fourteen times, while fixed 512K evicted 2% of what it read.
 * - Nor those of windows prefetched before the last cut: they were of the
 *   larger size, and their streams come back to them for a while after
 *   it.  Measured on the HD library from 8M: the interval after the cut
 *   to 4M counted 36% of its reads as needed evictions (13.5 s after
 *   prefetch, 8M windows among them), and the rule cut again to 3.5M and
 *   then 2M, where fixed 4M evicts 1.7% of its reads at twice the load.
 * - At most to half the size per decision (the next one halves again if
 *   evictions go on).  Measured on the HD library from 8M: 6.6% and 6.8%
 *   evicted under light load made eviction time x bitrate 1.5M and 1M,
 *   while the best fixed size was 4M (itself evicting 22% of its prefetch
 *   at its best rate).
 * - It acts under light load too (the paper turns the whole policy off
 *   there): the light-load rule guards against growing a size the miss
 *   ratio cannot judge, and this rule only shrinks.  Measured on the HD
 *   library from 8M: the search's first probes kept the disk 43% and 57%
 *   busy (38% of the prefetch evicted) while 8 sessions/s failed 27% of
 *   its sessions, and the size stayed at 8M.  But there only heavy
 *   evictions (HEAVY_EVICTIONS x the threshold) count: a disk with time
 *   to spare reads the bytes again at no cost to anyone.  Measured on the
 *   HD library from 8M: in the warm-up (4 sessions/s, busy below 60%)
 *   needed evictions of 6.8%, 5.1% and 5.6% of the reads cut 8M -> 4M ->
 *   2M -> 1.5M, where fixed 4M served most, and the 8/s probe met the
 *   size still climbing back at 1.5M and failed 0.96% of its sessions.
 * - Side by side, a size that evicts but scores better than the next
 *   smaller one is kept, unless evictions are heavy. */
static int eviction_cut(struct adaptive *a, const struct sz_figures *f, int light, uint64_t now)
{
	double share = f->needed_read_share - f->older_read_share;
	double threshold = light ? HEAVY_EVICTIONS * a->evict_max : a->evict_max;
	/* What the evicted streams could consume before the eviction, each
	 * at its own bitrate; without any bitrate known, the mean stream's
	 * (a scan of the stream table, so only then). */
	double fits = f->needed_fit > 0 ? f->needed_fit :
	              f->needed_age_s * sz_streams_mean_bitrate(&a->b.streams);
	if (share <= threshold || f->needed_age_s <= 0 || fits <= 0) {
		if (light && share > a->evict_max)
			rd_log("%s: evictions: %.1f%% of the bytes read were prefetched and evicted "
			       "before their streams came back for them, under light load: no cut "
			       "below %.0f%%", a->b.who, share * 100, threshold * 100);
		if (f->older_read_share > a->evict_max)
			rd_log("%s: evictions: %.1f%% of the bytes read were prefetched before the last "
			       "cut and evicted, %.1f%% after it: no cut", a->b.who,
			       f->older_read_share * 100, share * 100);
		return 0;
	}
	uint64_t fit = k_size(a, size_k(a, fits));
	uint64_t half = k_size(a, size_k(a, (double)a->target / 2));
	uint64_t want = fit > half ? fit : half;
	if (want >= a->target)
		return 0;
	if (a->side_by_side && share < HEAVY_EVICTIONS * a->evict_max && smaller_won(a, 0) == 0) {
		/* Side by side the score already carries what evictions
		 * cost (the windows read again).  Measured on the
		 * 20,000-video library: the best fixed size (2M) evicted
		 * 14% of what it prefetched, and the rule cut 1M to 512K
		 * although 512K scored 16% worse in the same interval.  Not
		 * under heavy evictions: the groups share the memory, and a
		 * group's score misses the evictions its windows cause in
		 * the others'.  Measured on the HD library from 8M: 82.9%
		 * evicted, 7.5M scored worse than 8M side by side, and the
		 * size grew to 8.5M while 81% of the sessions failed. */
		rd_log("%s: evictions: %.1f%% of the bytes read were prefetched and evicted before "
		       "their streams came back for them, but the smaller size scored higher side by "
		       "side: no cut", a->b.who, share * 100);
		return 0;
	}
	/* The interval was measured at this size: keep its score, or the
	 * gradient climbs back to it as "unmeasured" after every jump
	 * (measured: 256K -> 512K -> 768K -> evictions -> 256K, over and
	 * over); deflation still retries it.  Not a light interval's score,
	 * which says nothing of the size. */
	char why[448], w[32], older[64] = "", kept[48] = "light load, no score kept";
	if (!light) {
		double score = interval_score(a, f);
		keep_score(a, score);
		snprintf(kept, sizeof kept, "score %.3g kept for this size", score);
	}
	/* share and needed_read_share have the same denominator (read): their
	 * ratio turns the prefetch share of all needed bytes into that of
	 * the ones counted here. */
	if (f->older_read_share > 0)
		snprintf(older, sizeof older, "; %.1f%% more of windows from before the last cut",
		         f->older_read_share * 100);
	snprintf(why, sizeof why, "evictions: %.1f%% of the bytes read were prefetched and evicted "
	         "before their streams came back for them (%.1f%% of the prefetch; %.1f%% evicted "
	         "in all%s) after %.1f s on average, at %.1f kB/s %s: size %s%s (%s)",
	         share * 100, f->needed_fraction * share / f->needed_read_share * 100,
	         f->evict_fraction * 100, older, f->needed_age_s,
	         fits / f->needed_age_s / 1e3,
	         f->needed_fit > 0 ? "(their streams' bitrates)" : "(the mean stream's)",
	         sz_fmt_size(fit, w, sizeof w), fit < want ? ", at most half at a time" : "", kept);
	set_target(a, want, now, why);
	return 1;
}

/* Light load: the disk busy below the threshold, or nothing consumed. */
static int light_load(const struct adaptive *a, const struct sz_counters *c,
                      const struct sz_figures *f)
{
	return f->busy < a->busy_min || !c->demanded;
}

static void decide(struct adaptive *a, uint64_t now)
{
	uint64_t len;
	a->epoch++;   /* other files try the neighbours next */
	struct sz_counters c = roll(a, now, &len);
	struct sz_figures f;
	sz_figures(&c, len, a->b.acct.concurrency, &f);
	a->last = f;
	a->decisions++;
	int light = light_load(a, &c, &f);
	char why[224];
	snprintf(why, sizeof why, "light load: disk busy %.0f%% < %.0f%%: no change",
	         f.busy * 100, a->busy_min * 100);
	if (light && !a->light)
		rd_log("%s: %s", a->b.who, why);
	else if (!light && a->light)
		rd_log("%s: load above %.0f%% busy (%.0f%%): adjusting", a->b.who, a->busy_min * 100,
		       f.busy * 100);
	a->light = light;
	/* The trials of the neighbours go on under light load: the eviction
	 * rule asks their scores' consent. */
	a->trying = a->side_by_side && !a->ramping;
	if (eviction_cut(a, &f, light, now))
		return;
	if (light) {
		set_target(a, a->target, now, why);
		return;
	}
	if (a->settling) {
		/* At start, streams that were already running show up with
		 * their first (whole) window read and almost nothing consumed
		 * yet: that interval's miss ratio says nothing.  Later, see
		 * settle(). */
		char at[32];
		a->settling = 0;
		rd_log("%s: size %s kept: %s", a->b.who, sz_fmt_size(a->target, at, sizeof at),
		       a->settle_why);
		set_target(a, a->target, now, a->settle_why);
		return;
	}
	if (a->side_by_side)
		side_by_side(a, len, now);
	else
		gradient(a, &f, now);
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
	compared_steps(a, kk);
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
			roll(a, now, &len);
			a->trying = a->side_by_side;
			settle(a, now, "first interval at the new size: not scored");
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
		int light = light_load(a, c, &f);
		/* Under light load no score moves the size: nothing to wait for
		 * but the windows read in the interval. */
		if (waited < need || (!light && groups_short(a) && waited < 10 * a->interval_ns)) {
			/* The eviction rule acts on the interval so far: it is
			 * there to act faster than the scores.  Measured on the
			 * HD library from 8M: the first interval lasted 85 s
			 * (twice an 8.5M window at 200 kB/s) while 83% of what
			 * was prefetched was evicted unused. */
			if (eviction_cut(a, &f, light, now))
				a->last = f;
			else
				a->next_adjust_ns = waited < need && start + need < now + a->interval_ns ?
				                    start + need : now + a->interval_ns;
			return;
		}
		a->next_adjust_ns = now + a->interval_ns;
		decide(a, now);
	}
}

static uint64_t adaptive_size(struct rd_policy *p, const struct rd_request_info *req)
{
	struct adaptive *a = p->priv;
	/* A request that starts a stream is drawn by where it starts, as
	 * observe() will draw the stream it makes. */
	struct sz_stream *s = sz_base_stream(&a->b, req);
	uint64_t size = arm_size(a, arm_of(a, req->dev, req->ino, s ? s->first_off : req->offset));
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
		close_window(a, s);
		s->pol_group = arm_of(a, c->req.dev, c->req.ino, s->first_off) + 1;
		s->pol_open_ns = c->req.arrival_ns;
		s->pol_lo = c->window_offset;
		s->pol_hi = c->window_offset + c->window_length;
		s->pol_read = a->b.acct.interval.read - before.read;
		s->pol_disk_ns = a->b.acct.interval.disk_ns - before.disk_ns;
	}
	credit(s, upto, s->frontier);
}

static void adaptive_describe(struct rd_policy *p, struct rd_json *j)
{
	struct adaptive *a = p->priv;
	rd_json_u64(j, "size", a->cur);
	rd_json_u64(j, "target", a->target);
	rd_json_str(j, "reason", a->reason);
	rd_json_u64(j, "changes", a->changes);
	rd_json_u64(j, "decisions", a->decisions);
	rd_json_bool(j, "light_load", a->light);
	rd_json_obj_begin(j, "last_interval");
	rd_json_dbl(j, "score", a->last.score);
	rd_json_dbl(j, "busy", a->last.busy);
	rd_json_dbl(j, "miss_ratio", a->last.miss_ratio);
	rd_json_dbl(j, "disk_ms_per_mib", a->last.disk_ms_per_mib);
	rd_json_dbl(j, "evict_fraction", a->last.evict_fraction);
	rd_json_dbl(j, "evict_age_s", a->last.evict_age_s);
	rd_json_dbl(j, "needed_fraction", a->last.needed_fraction);
	rd_json_dbl(j, "needed_read_share", a->last.needed_read_share);
	rd_json_dbl(j, "older_read_share", a->last.older_read_share);
	rd_json_dbl(j, "needed_age_s", a->last.needed_age_s);
	rd_json_obj_end(j);
	rd_json_str(j, "compare", a->aa ? "aa" : a->side_by_side ? "side-by-side" : "intervals");
	if (a->side_by_side) {
		rd_json_dbl(j, "trial", a->trial);
		rd_json_dbl(j, "held", a->held);
		rd_json_dbl(j, "share", a->share);
		rd_json_dbl(j, "sigma", a->sigma);
		rd_json_u64(j, "escape", a->escape);
		rd_json_bool(j, "trying", a->trying);
		rd_json_u64(j, "reach", a->reach);
		rd_json_obj_begin(j, "side_by_side");   /* the last decision's groups */
		for (int i = 0; i < NARMS; i++)
			rd_json_dbl(j, arm_name[i], a->arm_score[i]);
		rd_json_obj_end(j);
		rd_json_obj_begin(j, "side_by_side_rel_se");
		for (int i = 0; i < NARMS; i++)
			rd_json_dbl(j, arm_name[i], a->arm_se[i]);
		rd_json_obj_end(j);
	}
	rd_json_obj_begin(j, "scores");
	for (unsigned k = 1; k <= a->nsteps; k++)
		if (a->scored[k]) {
			char key[32];
			snprintf(key, sizeof key, "%llu", (unsigned long long)k_size(a, k));
			rd_json_dbl(j, key, a->score[k]);
		}
	rd_json_obj_end(j);
	rd_json_obj_begin(j, "parameters");
	rd_json_dbl(j, "interval_s", (double)a->interval_ns / 1e9);
	rd_json_u64(j, "step", a->step);
	rd_json_dbl(j, "deflate", a->deflate);
	rd_json_dbl(j, "busy", a->busy_min);
	rd_json_dbl(j, "evict", a->evict_max);
	rd_json_dbl(j, "ramp_s", (double)a->ramp_ns / 1e9);
	rd_json_str(j, "score", score_name(a));
	rd_json_str(j, "start", a->start_source);
	rd_json_obj_end(j);
	sz_base_describe(&a->b, j);
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
