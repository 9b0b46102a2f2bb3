/* workload.c - Zipf video choice, viewing times and segment plans; see workload.h. */
#include "workload.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int workload_init(struct workload *w, const struct workload_params *p,
		  const struct library *lib, size_t n_ranks, uint64_t seed, char *err, size_t errlen)
{
	struct rng order;
	double sum = 0;

	*w = (struct workload){ .p = *p, .lib = lib, .n = lib ? lib->count : n_ranks };
	w->cdf = calloc(w->n, sizeof *w->cdf);
	w->by_rank = calloc(w->n, sizeof *w->by_rank);
	if (!w->cdf || !w->by_rank) {
		snprintf(err, errlen, "out of memory for %zu videos", w->n);
		workload_free(w);
		return -1;
	}
	/* Exact CDF + binary search: N is at most a few 10^5, and inversion
	 * keeps one uniform draw per choice. */
	for (size_t i = 0; i < w->n; i++) {
		sum += pow((double)(i + 1), -p->zipf_alpha);
		w->cdf[i] = sum;
	}
	for (size_t i = 0; i < w->n; i++) {
		w->cdf[i] /= sum;
		w->by_rank[i] = i;
	}
	w->cdf[w->n - 1] = 1.0;
	/* Fisher-Yates: popularity independent of where a video lies on disk. */
	rng_init(&order, seed, RNG_ORDER);
	for (size_t i = w->n; p->shuffle && i > 1; i--) {
		size_t j = (size_t)(rng_uniform(&order) * (double)i), t = w->by_rank[i - 1];
		w->by_rank[i - 1] = w->by_rank[j];
		w->by_rank[j] = t;
	}
	rng_init(&w->video, seed, RNG_VIDEO);
	rng_init(&w->view, seed, RNG_VIEW);
	return 0;
}

void workload_free(struct workload *w)
{
	free(w->cdf);
	free(w->by_rank);
	w->cdf = NULL;
	w->by_rank = NULL;
}

size_t workload_rank(struct workload *w)
{
	double u = rng_uniform(&w->video);
	size_t lo = 0, hi = w->n - 1;
	while (lo < hi) {  /* first i with cdf[i] > u */
		size_t mid = lo + (hi - lo) / 2;
		if (w->cdf[mid] > u)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo + 1;
}

const struct lib_video *workload_video(struct workload *w)
{
	return &w->lib->videos[w->by_rank[workload_rank(w) - 1]];
}

double workload_view(struct workload *w, double video_s)
{
	/* Two draws always, so the stream does not depend on the branch. */
	double u = rng_uniform(&w->view), v = rng_uniform(&w->view);
	if (u < w->p.early_share)
		return v * w->p.early_span * video_s;
	return video_s;
}

double workload_video_seconds(const struct lib_video *v)
{
	return (double)v->bytes * 8.0 / (double)v->bitrate;
}

/* segment_s of the video in bytes. */
static uint64_t span_bytes(const struct workload_params *p, const struct lib_video *v)
{
	uint64_t s = (uint64_t)llround((double)v->bitrate * p->segment_s / 8.0);
	return s ? s : 1;
}

/* A chunked video: segments per chunk file, and their length. */
static void per_chunk(const struct workload_params *p, const struct lib_video *v, uint64_t *m,
		      uint64_t *len)
{
	uint64_t n = (uint64_t)llround((double)v->chunk / (double)span_bytes(p, v));
	*m = n ? n : 1;
	*len = (v->chunk + *m - 1) / *m;
}

void workload_segment(const struct workload_params *p, const struct lib_video *v, unsigned k,
		      struct segment *out)
{
	if (!v->chunk) {
		uint64_t s = span_bytes(p, v);
		out->off = out->file_off = (uint64_t)k * s;
		out->len = v->bytes - out->off < s ? v->bytes - out->off : s;
		out->chunk = -1;
		out->whole_file = out->off == 0 && out->len == v->bytes;
		return;
	}
	uint64_t m, len;
	per_chunk(p, v, &m, &len);
	uint64_t c = k / m;
	uint64_t base = c * v->chunk;
	uint64_t in_file = v->bytes - base < v->chunk ? v->bytes - base : v->chunk;
	out->chunk = (long long)c;
	out->file_off = (k % m) * len;
	out->len = in_file - out->file_off < len ? in_file - out->file_off : len;
	out->off = base + out->file_off;
	out->whole_file = out->file_off == 0 && out->len == in_file;
}

unsigned workload_segments_total(const struct workload_params *p, const struct lib_video *v)
{
	if (!v->chunk) {
		uint64_t s = span_bytes(p, v);
		return (unsigned)((v->bytes + s - 1) / s);
	}
	uint64_t m, len;
	per_chunk(p, v, &m, &len);
	uint64_t chunks = (v->bytes + v->chunk - 1) / v->chunk;
	uint64_t last = v->bytes - (chunks - 1) * v->chunk;
	return (unsigned)((chunks - 1) * m + (last + len - 1) / len);
}

double workload_send_time(const struct workload_params *p, unsigned k)
{
	return k < p->burst ? 0.0 : (double)(k - p->burst + 1) * p->segment_s;
}

unsigned workload_segments_viewed(const struct workload_params *p, const struct lib_video *v,
				  double view_s)
{
	unsigned total = workload_segments_total(p, v), k = 0;
	/* Segment k is requested if the viewer is still there when it is due. */
	while (k < total && (k < p->burst || workload_send_time(p, k) < view_s))
		k++;
	return k;
}
