/*
 * adaptive_aa.c - compare=aa: every group reads the current size, and
 * each decision logs how far the trial groups' scores lie from the
 * current group's; the size never moves by score.
 */
#include "adaptive.h"

#include <math.h>
#include <stdio.h>

/* compare=aa: every group read the current size, so their scores differ
 * only by noise and by whatever the machinery itself does to a group
 * (which streams it gets, windows that outlast an interval, streams
 * changing size between intervals).  Logged, never acted on: a trial
 * group's score over the current group's, in standard errors of the
 * difference (scripts/aa_summary.py sums a run up).  Why: on the HD
 * library both neighbours scored 12-31% above the current size wherever
 * the size held, with 120 streams or more as with 30; at 4M the groups
 * at one size scored alike (0.99x), so that was the sizes'. */
void ad_aa_report(struct adaptive *a, char txt[NARMS][96], double secs, uint64_t now)
{
	char why[640], at[32], vs[NARMS][48] = { "", "", "" };
	double cur = a->arm_score[ARM_CURRENT], *se = a->arm_se;
	for (int i = 0; i < NARMS; i++)
		if (i != ARM_CURRENT && cur > 0 && a->arm_score[i] > 0) {
			double d = ad_diff_se(se[i], se[ARM_CURRENT]);
			double l = log(a->arm_score[i] / cur);
			snprintf(vs[i], sizeof vs[i], ", %.3gx current (%+.1f standard errors)",
			         a->arm_score[i] / cur, d > 0 ? l / d : 0);
		}
	snprintf(why, sizeof why, "A/A side by side over %.0f s, every group at this size: current "
	         "%s; smaller's group %s%s; larger's group %s%s", secs, txt[ARM_CURRENT],
	         txt[ARM_SMALLER], vs[ARM_SMALLER], txt[ARM_LARGER], vs[ARM_LARGER]);
	rd_log("%s: size %s kept: %s", a->b.who, sz_fmt_size(a->target, at, sizeof at), why);
	ad_set_target(a, a->target, now, why);
}
