/*
 * adaptive_score.c - the adaptive policy's score (disk time per MiB
 * consumed x miss ratio) of an interval or of one group, with its
 * standard error.
 */
#include "adaptive.h"

#include <math.h>

/* The score of a whole interval, from the device's figures. */
double ad_interval_score(const struct adaptive *a, const struct sz_figures *f)
{
	return f->disk_ms_per_mib * pow(f->miss_ratio, a->miss_power);
}

/* Store the score just measured at the target size; returns its step. */
unsigned ad_keep_score(struct adaptive *a, double score)
{
	unsigned k = size_k(a, (double)a->target);
	a->score[k] = score;
	a->scored[k] = 1;
	return k;
}

/* One size's score over the interval, as sz_figures's but from its own
 * windows; -1 if too few of them were done with to judge.  *rel_se is the
 * score's relative standard error, by the delta method over the streams
 * (close_stream_sums): with a stream's disk time d, bytes read r and
 * consumed c in its windows of the size, and b the miss ratio's power (1
 * for the paper's score, 0 for score=disk), the score is
 * mean(d) mean(r)^b / mean(c)^(1+b), so ln(score) varies as the mean of
 * z = d/mean(d) + b r/mean(r) - (1+b) c/mean(c), whose own mean is 0. */
double ad_size_score(const struct adaptive *a, const struct sums *w, double *rel_se)
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
