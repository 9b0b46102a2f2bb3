/*
 * adaptive_decide.c - one decision of the adaptive policy, at the end
 * of an interval: the eviction rule first, then the scores side by side
 * (the default) or the paper's gradient over intervals; a new size is
 * reached by a ramp (ad_set_target).
 */
#include "adaptive.h"

#include <math.h>
#include <stdio.h>

/* The two ways to decide, below ad_decide. */
static void side_by_side(struct adaptive *a, uint64_t len_ns, uint64_t now);
static void gradient(struct adaptive *a, const struct sz_figures *f, uint64_t now);

/* One decision, when adaptive_tick finds the interval long enough: the
 * interval's figures, the eviction rule, light load, the settle interval,
 * then the scores. */
void ad_decide(struct adaptive *a, uint64_t now)
{
	uint64_t len;
	a->epoch++;   /* other files try the neighbours next */
	struct sz_counters c = ad_roll(a, now, &len);
	struct sz_figures f;
	sz_figures(&c, len, a->b.acct.concurrency, &f);
	a->last = f;
	a->decisions++;
	int light = ad_light_load(a, &c, &f);
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
	if (ad_eviction_cut(a, &f, light, now))
		return;
	if (light) {
		ad_set_target(a, a->target, now, why);
		return;
	}
	if (a->settling) {
		/* At start, streams that were already running show up with
		 * their first (whole) window read and almost nothing consumed
		 * yet: that interval's miss ratio says nothing.  Later, see
		 * ad_settle(). */
		char at[32];
		a->settling = 0;
		rd_log("%s: size %s kept: %s", a->b.who, sz_fmt_size(a->target, at, sizeof at),
		       a->settle_why);
		ad_set_target(a, a->target, now, a->settle_why);
		return;
	}
	if (a->side_by_side)
		side_by_side(a, len, now);
	else
		gradient(a, &f, now);
}

/* Light load: the disk busy below the threshold, or nothing consumed. */
int ad_light_load(const struct adaptive *a, const struct sz_counters *c,
                  const struct sz_figures *f)
{
	return f->busy < a->busy_min || !c->demanded;
}

/* compare=side-by-side: the neighbours were measured in the same interval on
 * their own share of the streams; move to the group that scored lowest, if
 * it beat the current size by more than sigma standard errors of the
 * difference.  Without that margin the lowest of three noisy scores wins:
 * a trial group (an eighth of the files, so a noisier score than the
 * current size's three quarters) won 8 of 8 decisions between 256K and
 * 512K on the SD library, and kept the size going back and forth between
 * 512K and 1M on the HD library (docs/notes/2026-11-26-prefetch-sizing-reference.md).
 *
 * Fresh scores every interval need no deflation to retry a neighbour, but
 * a real local minimum of the score holds the size for good: after escape=
 * decisions in a row that kept the size, the groups try two steps away
 * for ESCAPE_LOOKS intervals, and the size moves there if that wins
 * (measured on the mixed library from 128K: 256K scored worse than 128K
 * in every one of 30 decisions, while fixed 512K served 5-15% more
 * sessions than 128K).  Two intervals, pooled, since the first decision
 * needs a wider margin (ad_early()). */
static void side_by_side(struct adaptive *a, uint64_t len_ns, uint64_t now)
{
	ad_pool_interval(a, len_ns);
	double secs = (double)a->pooled_ns / 1e9;
	unsigned kk[NARMS];
	ad_compared_steps(a, kk);
	unsigned k = kk[ARM_CURRENT];
	double *se = a->arm_se;
	char txt[NARMS][96];
	for (int i = 0; i < NARMS; i++) {
		se[i] = 0;
		a->arm_score[i] = kk[i] ? ad_size_score(a, &a->pooled[i], &se[i]) : -1;
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
		ad_aa_report(a, txt, secs, now);
		return;
	}
	const char *away = a->reach > 1 ? "two steps away, " : "";
	unsigned reach = a->reach;
	a->reach = 1;
	double cur = a->arm_score[ARM_CURRENT];
	if (cur < 0) {
		snprintf(why, sizeof why, "too few windows to compare (%ssmaller %s, current %s, "
		         "larger %s)", away, txt[0], txt[1], txt[2]);
		ad_set_target(a, a->target, now, why);
		return;
	}
	int best = ARM_CURRENT, lower = 0, measured = 0;
	for (int i = 0; i < NARMS; i++)
		measured += i != ARM_CURRENT && a->arm_score[i] >= 0;
	double sigma = ad_margin_for(a->sigma, measured);
	for (int i = 0; i < NARMS; i++) {
		if (i == ARM_CURRENT || a->arm_score[i] < 0 || a->arm_score[i] >= cur)
			continue;
		lower = 1;
		uint64_t n = a->pooled[i].streams, n_cur = a->pooled[ARM_CURRENT].streams;
		double margin = ad_widened(sigma * ad_early(a->npooled, reach > 1 ? ESCAPE_LOOKS : MAX_POOLED),
		                        n < n_cur ? n : n_cur);
		if (ad_beats(a->arm_score[i], se[i], cur, se[ARM_CURRENT], margin) &&
		    (best == ARM_CURRENT || a->arm_score[i] < a->arm_score[best]))
			best = i;
	}
	if (best == ARM_CURRENT) {
		char next[48] = "", held[48];
		ad_hold(a, kk, held, sizeof held);
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
		ad_set_target(a, a->target, now, why);
		if (a->reach != reach)
			ad_settle(a, now, a->reach > 1 ? "first interval two steps away: not scored"
			                            : "first interval back one step away: not scored");
		return;
	}
	snprintf(why, sizeof why, "%s scored lowest side by side over %.0f s: %s%s smaller, %s here, "
	         "%s larger (%.0f%% of streams each way)", ad_arm_name[best], secs, away, txt[0], txt[1],
	         txt[2], a->share * 100);
	ad_set_target(a, k_size(a, kk[best]), now, why);
}

/* Gradient step (section 4.1) from the score just measured at target. */
static void gradient(struct adaptive *a, const struct sz_figures *f, uint64_t now)
{
	double s = ad_interval_score(a, f);
	unsigned k = ad_keep_score(a, s);
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
	ad_fmt_score(a, k, cs, sizeof cs);
	ad_fmt_score(a, ks, ss, sizeof ss);
	ad_fmt_score(a, kl, ls, sizeof ls);
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
		ad_set_target(a, a->target, now, why);
		return;
	}
	snprintf(why, sizeof why, "%s: score %s here, %s smaller, %s larger (busy %.0f%%, "
	         "miss ratio %.2f, %.2f disk ms/MiB)", rule, cs, ss, ls, f->busy * 100, f->miss_ratio,
	         f->disk_ms_per_mib);
	ad_set_target(a, k_size(a, go), now, why);
}

/* Move towards a new target, gradually (the ramp runs in tick). */
void ad_set_target(struct adaptive *a, uint64_t target, uint64_t now, const char *why)
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
