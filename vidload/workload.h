/*
 * workload.h - what each session does: which video it watches (Zipf
 * popularity), for how long (viewing-time mixture), and the resulting
 * segment plan.  Pure computation, shared by runs and `--sample`.
 */
#ifndef VL_WORKLOAD_H
#define VL_WORKLOAD_H

#include "library.h"
#include "rng.h"

#include <stddef.h>
#include <stdint.h>

struct workload_params {
	double zipf_alpha;    /* popularity exponent (0.8) */
	double early_share;   /* share of views that stop early (0.44) */
	double early_span;    /* ... uniformly within this fraction of the video (0.2) */
	double segment_s;     /* seconds of video per segment (10) */
	unsigned burst;       /* segments requested back to back at the start (3) */
	int shuffle;          /* popularity ranks are a seeded permutation of the library */
};

struct workload {
	struct workload_params p;
	const struct library *lib;
	size_t n;
	double *cdf;          /* cdf[i] = P(rank <= i+1) */
	size_t *by_rank;      /* by_rank[i] = library index of popularity rank i+1 */
	struct rng video, view;
};

/* 0, or -1 with a message in err. */
int workload_init(struct workload *w, const struct workload_params *p,
		  const struct library *lib, size_t n_ranks, uint64_t seed, char *err, size_t errlen);
void workload_free(struct workload *w);

/* A Zipf rank, 1-based. */
size_t workload_rank(struct workload *w);
/* The library video for the next session. */
const struct lib_video *workload_video(struct workload *w);
/* Seconds the viewer watches a video of `video_s` seconds. */
double workload_view(struct workload *w, double video_s);

/*
 * Segment k of a video: 10 s of it (segment_s), asked for as a byte range
 * of the video's file.  A chunked video's segments never cross a chunk
 * file: each chunk holds the whole number of segments nearest to its size
 * (a 2 MiB chunk, four 0.5 MiB segments, each a Range of the chunk file;
 * a 0.5 MiB chunk, one segment, the whole file), as in the chunking paper,
 * where clients ask for 0.5 MB segments whatever the chunk size.
 */
struct segment {
	uint64_t off, len;      /* in the video (what the content check uses) */
	long long chunk;        /* chunk file number; -1: the video's one file */
	uint64_t file_off;      /* where it starts in the file asked for */
	int whole_file;         /* it is that whole file: no Range */
};
void workload_segment(const struct workload_params *p, const struct lib_video *v, unsigned k,
		      struct segment *out);
unsigned workload_segments_total(const struct workload_params *p, const struct lib_video *v);
/* Segments a viewer of `view_s` seconds requests. */
unsigned workload_segments_viewed(const struct workload_params *p, const struct lib_video *v,
				  double view_s);
/* Planned send time of segment k, seconds after the session starts. */
double workload_send_time(const struct workload_params *p, unsigned k);
double workload_video_seconds(const struct lib_video *v);

#endif
