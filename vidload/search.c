/*
 * search.c - the maximum failure-free rate: bisection over the session
 * rate.  A rate passes when every repeat (seeds seed, seed+1, ...) fails at
 * most max-fail percent of its sessions; LO must pass and, if HI passes,
 * the answer is HI.  Each probe prints one line, the JSON lists them all.
 */
#include "modes.h"
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

struct probe_log {
	FILE *json;
	unsigned n;
};

/* 1 pass, 0 fail, -1 setup error. */
static int probe(struct vl_config *cfg, const struct search_opts *o, double rate, struct probe_log *log)
{
	int pass = 1;
	for (unsigned i = 0; i < o->repeats; i++) {
		struct vl_result res;
		uint64_t seed = cfg->seed + i;
		if (o->between) {
			int st = system(o->between);
			if (st != 0) {
				fprintf(stderr, "vidload: --between \"%s\" failed (status %d)\n", o->between,
					WIFEXITED(st) ? WEXITSTATUS(st) : -1);
				return -1;
			}
		}
		cfg->rate = rate;
		if (vl_run(cfg, seed, &res))
			return -1;
		int ok = vl_failed_pct(&res) <= o->max_fail_pct;
		printf("vidload: probe %.4g sessions/s repeat %u/%u seed %llu: %llu sessions, "
		       "failed %.3f%%, %.1f MB/s, p99 %.0f ms -> %s\n",
		       rate, i + 1, o->repeats, (unsigned long long)seed,
		       (unsigned long long)res.started, vl_failed_pct(&res),
		       (double)res.bytes / (res.elapsed > 0 ? res.elapsed : 1) / 1e6,
		       (double)hist_quantile(&res.latency, 0.99) / 1e6, ok ? "pass" : "fail");
		fflush(stdout);
		if (log->json) {
			fprintf(log->json, "%s\n    {\"pass\": %s, \"result\": ", log->n++ ? "," : "",
				ok ? "true" : "false");
			report_json_result(log->json, &res);
			fprintf(log->json, "}");
		}
		vl_result_free(&res);
		if (!ok) {
			pass = 0;
			break;  /* one failing repeat decides the probe */
		}
	}
	return pass;
}

int search_run(struct vl_config *cfg, const struct search_opts *o, const char *json_path)
{
	struct probe_log log = { 0 };
	double lo = o->lo, hi = o->hi, answer = -1;
	int p, rc = 1;

	if (json_path && !(log.json = fopen(json_path, "w"))) {
		perror("vidload: --json");
		return 1;
	}
	if (log.json) {
		fprintf(log.json, "{\"vidload\": %d, \"mode\": \"search\", \"settings\": ", VL_JSON_VERSION);
		report_json_settings(log.json, cfg);
		fprintf(log.json, ",\n  \"search\": {\"lo\": %g, \"hi\": %g, \"resolution\": %g, "
			"\"repeats\": %u, \"max_fail_pct\": %g},\n  \"probes\": [",
			o->lo, o->hi, o->resolution, o->repeats, o->max_fail_pct);
	}
	if ((p = probe(cfg, o, lo, &log)) < 0)
		goto out;
	if (p) {
		answer = lo;
		if ((p = probe(cfg, o, hi, &log)) < 0)
			goto out;
		if (p)
			answer = lo = hi;
		while (lo < hi && hi - lo > o->resolution) {
			double mid = (lo + hi) / 2;
			if ((p = probe(cfg, o, mid, &log)) < 0)
				goto out;
			if (p)
				lo = answer = mid;
			else
				hi = mid;
		}
	}
	if (answer < 0)
		printf("vidload: maximum failure-free rate: below %.4g sessions/s (LO failed)\n", o->lo);
	else if (answer >= o->hi)
		printf("vidload: maximum failure-free rate: at least %.4g sessions/s (HI passed)\n", o->hi);
	else
		printf("vidload: maximum failure-free rate: %.4g sessions/s (%.4g failed; resolution %.4g)\n",
		       answer, hi, o->resolution);
	rc = 0;
out:
	if (log.json) {
		fprintf(log.json, "\n  ],\n  \"answer\": ");
		if (rc == 0 && answer >= 0)
			fprintf(log.json, "%g", answer);
		else
			fprintf(log.json, "null");
		fprintf(log.json, ", \"complete\": %s}\n", rc == 0 ? "true" : "false");
		fclose(log.json);
	}
	return rc;
}
