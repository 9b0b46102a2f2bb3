/*
 * adaptive.h - the adaptive policy (policy_adaptive.c and adaptive_*.c):
 * automatic prefetch sizing (Haider, Brecht et al.,
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
 * the sizes compared: ad_settle()).
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
 * first decisions pooled: ad_early()), and after escape sizes kept in a row
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

/*
 * Reading order: one interval, from the counters to the new size.
 *
 *   policy_adaptive.c   the policy's hooks.  size: which size a window
 *                       gets (its stream's group, ad_arm_of); observe: what
 *                       a window cost and what its stream consumed of it;
 *                       tick: the ramp to a new size, and when an interval
 *                       is long enough to decide (interval_needed_ns,
 *                       groups_short).
 *   adaptive_decide.c   ad_decide: roll the counters, light load, the
 *                       eviction rule, the settle interval, then one of
 *                       side_by_side (the default) or gradient (the
 *                       paper's compare=intervals); ad_set_target starts
 *                       the ramp.
 *   adaptive_groups.c   the trial groups: which stream reads which size
 *                       this interval, a window's sums into its group,
 *                       pooling intervals, settling, shrinking the groups
 *                       while the size holds.
 *   adaptive_score.c    a group's (or an interval's) score and its
 *                       standard error.
 *   adaptive_margin.c   by how many standard errors a neighbour must win.
 *   adaptive_evict.c    the eviction rule: cut towards eviction time x
 *                       bitrate.
 *   adaptive_aa.c       compare=aa: every group at one size, logged only.
 *   adaptive_config.c   the arguments and the start size (profile).
 *   adaptive_report.c   what `libception stats` shows of the policy.
 */
#ifndef RD_ADAPTIVE_H
#define RD_ADAPTIVE_H

#include "sizing.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>

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

/* What one group's windows cost and gave: bytes read and disk time for
 * them, and bytes the streams consumed out of them; with the sums of the
 * squares and products (in MiB and ms) of those figures per stream, over
 * the streams whose windows they were, for the score's standard error.
 * Kept per group, not per size: between two changes of the sizes
 * compared (ad_settle()) each group reads one size, and per group the
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
	                                 to held (ad_hold()) */
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

/* The groups' names, by enum arm, for logs and stats. */
extern const char *const ad_arm_name[NARMS];

/* ---- sizes: step k is k * step ---- */

static inline uint64_t k_size(const struct adaptive *a, unsigned k)
{
	return (uint64_t)k * a->step;
}

static inline unsigned size_k(const struct adaptive *a, double size)
{
	double k = floor(size / (double)a->step + 0.5);
	if (k < 1)
		k = 1;
	if (k > a->nsteps)
		k = a->nsteps;
	return (unsigned)k;
}

static inline const char *score_name(const struct adaptive *a)
{
	return a->miss_power ? "paper" : "disk";
}

/* The sizes d steps away from step k that may be used (0 if none). */
static inline unsigned smaller_k(const struct adaptive *a, unsigned k, unsigned d)
{
	return k > d && k - d >= size_k(a, (double)a->b.min_size) ? k - d : 0;
}

static inline unsigned larger_k(const struct adaptive *a, unsigned k, unsigned d)
{
	return k + d <= a->nsteps ? k + d : 0;
}

/* ---- the policy's arguments, and what it reports (adaptive_config.c,
 * adaptive_report.c) ---- */
int adaptive_config(struct rd_policy *p, struct adaptive *a, char *err, size_t errlen);
void adaptive_describe(struct rd_policy *p, struct rd_json *j);
void ad_fmt_score(const struct adaptive *a, unsigned k, char *buf, size_t len);

/* ---- one decision (adaptive_decide.c) ---- */
void ad_decide(struct adaptive *a, uint64_t now);
int ad_light_load(const struct adaptive *a, const struct sz_counters *c,
                  const struct sz_figures *f);
void ad_set_target(struct adaptive *a, uint64_t target, uint64_t now, const char *why);

/* ---- the trial groups (adaptive_groups.c) ---- */
void ad_compared_steps(const struct adaptive *a, unsigned kk[NARMS]);
enum arm ad_arm_of(const struct adaptive *a, dev_t dev, ino_t ino, uint64_t start);
uint64_t ad_arm_size(const struct adaptive *a, enum arm arm);
struct sz_counters ad_roll(struct adaptive *a, uint64_t now, uint64_t *len);
void ad_settle(struct adaptive *a, uint64_t now, const char *why);
void ad_close_window(struct adaptive *a, struct sz_stream *s);
void ad_stream_ended(void *ctx, struct sz_stream *s, uint64_t now);
void ad_pool_interval(struct adaptive *a, uint64_t len_ns);
void ad_hold(struct adaptive *a, const unsigned kk[NARMS], char *txt, size_t len);

/* ---- scores (adaptive_score.c) ---- */
double ad_interval_score(const struct adaptive *a, const struct sz_figures *f);
unsigned ad_keep_score(struct adaptive *a, double score);
double ad_size_score(const struct adaptive *a, const struct sums *w, double *rel_se);

/* ---- margins (adaptive_margin.c) ---- */
double ad_diff_se(double se, double cur_se);
int ad_beats(double score, double se, double cur, double cur_se, double sigma);
double ad_margin_for(double sigma, int n);
double ad_widened(double z, uint64_t n);
double ad_early(unsigned j, unsigned looks);
int ad_smaller_won(const struct adaptive *a, double sigma);

/* ---- the eviction rule and the A/A report (adaptive_evict.c, adaptive_aa.c) ---- */
int ad_eviction_cut(struct adaptive *a, const struct sz_figures *f, int light, uint64_t now);
void ad_aa_report(struct adaptive *a, char txt[NARMS][96], double secs, uint64_t now);

#endif
