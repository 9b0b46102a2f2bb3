/*
 * adaptive_margin.c - by how much a neighbour's score must beat the
 * current size's before the size moves: standard errors, a margin for
 * several groups, for few streams, and for early looks.
 */
#include "adaptive.h"

#include <math.h>

/* The standard error of the difference of two scores' logarithms, from
 * their relative standard errors. */
double ad_diff_se(double se, double cur_se)
{
	return sqrt(se * se + cur_se * cur_se);
}

/* Does a score beat the current one by more than sigma standard errors
 * of the difference of their logarithms? */
int ad_beats(double score, double se, double cur, double cur_se, double sigma)
{
	return score < cur && log(cur / score) > sigma * ad_diff_se(se, cur_se);
}

/* The margin, in standard errors, for one of n groups to win: a false
 * win as rare as one group's beyond sigma (Bonferroni).  With two groups
 * and the same margin, a size between two neighbours moved by noise twice
 * as often as one at the smallest size, which has one: in a flat
 * landscape the size drifted down and stayed there (measured on the HD
 * library: 2M -> 512K, where the best fixed size was 4M). */
double ad_margin_for(double sigma, int n)
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
double ad_widened(double z, uint64_t n)
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
double ad_early(unsigned j, unsigned looks)
{
	return j > 0 && j < looks ? sqrt((double)looks / j) : 1;
}

/* Side by side, over the interval just ended: did the smaller group's size
 * score lower than the current one by more than sigma standard errors?
 * -1 if either had too few windows. */
int ad_smaller_won(const struct adaptive *a, double sigma)
{
	unsigned kk[NARMS];
	ad_compared_steps(a, kk);
	double se, small_se;
	double cur = ad_size_score(a, &a->group_done[ARM_CURRENT], &se);
	double small = kk[ARM_SMALLER] ? ad_size_score(a, &a->group_done[ARM_SMALLER], &small_se) : -1;
	if (cur < 0 || small < 0)
		return -1;
	return ad_beats(small, small_se, cur, se, sigma);
}
