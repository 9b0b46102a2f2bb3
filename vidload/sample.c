/*
 * sample.c - `--sample KIND`: print draws of one generator exactly as a
 * run with the same seed makes them, for the statistical tests.
 *   zipf      popularity rank (1 = most popular), one per line
 *   arrivals  seconds between session starts
 *   views     "VIEW_S VIDEO_S": seconds watched and the video's length
 */
#include "modes.h"

#include <stdio.h>
#include <string.h>

int sample_run(const struct vl_config *cfg, const char *kind, unsigned long count, size_t videos)
{
	struct workload w;
	struct rng arrivals;
	char err[256];
	const struct library *lib = cfg->lib.count ? &cfg->lib : NULL;

	if (strcmp(kind, "arrivals") == 0) {
		if (!(cfg->rate > 0)) {
			fprintf(stderr, "vidload: --sample arrivals needs --rate\n");
			return 2;
		}
		rng_init(&arrivals, cfg->seed, RNG_ARRIVALS);
		for (unsigned long i = 0; i < count; i++)
			printf("%.9f\n", rng_exp(&arrivals, 1.0 / cfg->rate));
		return 0;
	}
	if (strcmp(kind, "zipf") && strcmp(kind, "views")) {
		fprintf(stderr, "vidload: --sample \"%s\": expected zipf, arrivals or views\n", kind);
		return 2;
	}
	if (!lib && (strcmp(kind, "views") == 0 || videos == 0)) {
		fprintf(stderr, "vidload: --sample %s needs --library%s\n", kind,
			strcmp(kind, "zipf") == 0 ? " or --videos" : "");
		return 2;
	}
	if (workload_init(&w, &cfg->wl, lib, videos, cfg->seed, err, sizeof err)) {
		fprintf(stderr, "vidload: %s\n", err);
		return 1;
	}
	for (unsigned long i = 0; i < count; i++) {
		if (kind[0] == 'z') {
			printf("%zu\n", workload_rank(&w));
		} else {
			double len = workload_video_seconds(workload_video(&w));
			printf("%.3f %.3f\n", workload_view(&w, len), len);
		}
	}
	workload_free(&w);
	return 0;
}
