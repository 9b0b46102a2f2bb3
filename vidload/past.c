/* past.c - the sessions before a run's start and what they read; see past.h. */
#include "past.h"

#include <stdio.h>
#include <stdlib.h>

int past_each(const struct vl_config *cfg, uint64_t seed, past_fn fn, void *ctx, char *err,
	      size_t errlen)
{
	if (!(cfg->past > 0) || !(cfg->rate > 0))
		return 0;
	struct workload w;
	if (workload_init(&w, &cfg->wl, &cfg->lib, 0, seed, err, errlen))
		return -1;
	/* The same popularity order as the run's; other draws. */
	rng_init(&w.video, seed, RNG_PAST_VIDEO);
	rng_init(&w.view, seed, RNG_PAST_VIEW);
	struct rng arrivals;
	rng_init(&arrivals, seed, RNG_PAST_ARRIVALS);
	int rc = 0;
	for (double t = -cfg->past + rng_exp(&arrivals, 1.0 / cfg->rate); t < 0 && !rc;
	     t += rng_exp(&arrivals, 1.0 / cfg->rate)) {
		/* Drawn in the order a run draws them (start_session). */
		struct past_session s = { .v = workload_video(&w), .start = t };
		s.nseg = workload_segments_viewed(&cfg->wl, s.v,
						  workload_view(&w, workload_video_seconds(s.v)));
		while (s.next < s.nseg && t + workload_send_time(&cfg->wl, s.next) < 0)
			s.next++;
		rc = fn(ctx, &s);
	}
	workload_free(&w);
	return rc;
}

/* One segment's read: bytes [off, off + len) of a file, at `t`. */
struct read {
	const struct lib_video *v;
	long long chunk;     /* -1: the video's one file */
	uint64_t off, len;
	double t;
};

struct reads {
	const struct workload_params *wl;
	struct read *r;
	size_t n, cap;
};

static int add_reads(void *ctx, const struct past_session *s)
{
	struct reads *all = ctx;
	for (unsigned k = 0; k < s->next; k++) {
		if (all->n == all->cap) {
			size_t cap = all->cap ? 2 * all->cap : 1024;
			struct read *r = realloc(all->r, cap * sizeof *r);
			if (!r)
				return -1;
			all->r = r;
			all->cap = cap;
		}
		struct segment g;
		workload_segment(all->wl, s->v, k, &g);
		all->r[all->n++] = (struct read){ .v = s->v, .chunk = g.chunk, .off = g.file_off,
						  .len = g.len,
						  .t = s->start + workload_send_time(all->wl, k) };
	}
	return 0;
}

static int by_place(const void *a, const void *b)
{
	const struct read *x = a, *y = b;
	if (x->v != y->v)
		return x->v < y->v ? -1 : 1;
	if (x->chunk != y->chunk)
		return x->chunk < y->chunk ? -1 : 1;
	return (x->off > y->off) - (x->off < y->off);
}

static int by_time(const void *a, const void *b)
{
	const struct read *x = a, *y = b;
	return (x->t > y->t) - (x->t < y->t);
}

int past_reads_run(const struct vl_config *cfg)
{
	struct reads all = { .wl = &cfg->wl };
	char err[256];
	int rc = past_each(cfg, cfg->seed, add_reads, &all, err, sizeof err);
	if (rc) {
		fprintf(stderr, "vidload: --past-reads: %s\n", rc < 0 ? err : "out of memory");
		free(all.r);
		return 1;
	}
	/* A segment several sessions read is cached once: its latest read. */
	qsort(all.r, all.n, sizeof *all.r, by_place);
	size_t n = 0;
	for (size_t i = 0; i < all.n; i++) {
		if (n && !by_place(&all.r[n - 1], &all.r[i])) {
			if (all.r[i].t > all.r[n - 1].t)
				all.r[n - 1].t = all.r[i].t;
			continue;
		}
		all.r[n++] = all.r[i];
	}
	qsort(all.r, n, sizeof *all.r, by_time);
	for (size_t i = 0; i < n; i++) {
		const struct read *f = &all.r[i];
		printf("%.3f %llu %llu ", f->t, (unsigned long long)f->off, (unsigned long long)f->len);
		if (f->chunk < 0)
			printf("%s\n", f->v->name);
		else
			printf(LIB_CHUNK_FMT "\n", f->v->name, (unsigned long long)f->chunk);
	}
	free(all.r);
	return fflush(stdout) ? 1 : 0;
}
