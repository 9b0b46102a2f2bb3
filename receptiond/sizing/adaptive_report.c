/*
 * adaptive_report.c - what the adaptive policy shows in `libception
 * stats` (describe) and how its stored scores print in logs.
 */
#include "adaptive.h"
#include "json.h"

#include <stdio.h>

void ad_fmt_score(const struct adaptive *a, unsigned k, char *buf, size_t len)
{
	if (k < 1 || k > a->nsteps || !a->scored[k])
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.3g", a->score[k]);
}

void adaptive_describe(struct rd_policy *p, struct rd_json *j)
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
			rd_json_dbl(j, ad_arm_name[i], a->arm_score[i]);
		rd_json_obj_end(j);
		rd_json_obj_begin(j, "side_by_side_rel_se");
		for (int i = 0; i < NARMS; i++)
			rd_json_dbl(j, ad_arm_name[i], a->arm_se[i]);
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
