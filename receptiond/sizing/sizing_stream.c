/*
 * sizing_stream.c - the sequential streams seen on one device: a fixed
 * table hashed by (dev, ino), several streams per file told apart by
 * where they are in it.
 */
#include "sizing.h"
#include "json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned hash(dev_t dev, ino_t ino, unsigned n)
{
	uint64_t h = (uint64_t)ino * 0x9e3779b97f4a7c15ull ^ (uint64_t)dev * 0xc2b2ae3d27d4eb4full;
	return (unsigned)(h >> 32) % n;
}

int sz_streams_init(struct sz_streams *t, unsigned cap)
{
	memset(t, 0, sizeof *t);
	t->cap = cap;
	t->nbuckets = cap;
	t->v = calloc(cap, sizeof *t->v);
	t->bucket = malloc(cap * sizeof *t->bucket);
	t->scratch = malloc(cap * sizeof *t->scratch);
	if (!t->v || !t->bucket || !t->scratch) {
		free(t->v);
		free(t->bucket);
		free(t->scratch);
		return -1;
	}
	for (unsigned i = 0; i < cap; i++) {
		t->bucket[i] = -1;
		t->v[i].fd = -1;
	}
	t->idle_ns = 30ull * 1000000000u;
	t->pacing_ns = 10ull * 1000000000u;
	t->max_fds = 1024;
	t->ref_pct = 95;
	return 0;
}

void sz_streams_free(struct sz_streams *t)
{
	if (t->v)
		for (unsigned i = 0; i < t->cap; i++)
			if (t->v[i].fd >= 0)
				close(t->v[i].fd);
	free(t->v);
	free(t->bucket);
	free(t->scratch);
	memset(t, 0, sizeof *t);
}

static void unlink_stream(struct sz_streams *t, struct sz_stream *s)
{
	int idx = (int)(s - t->v);
	int *pp = &t->bucket[hash(s->dev, s->ino, t->nbuckets)];
	while (*pp >= 0 && *pp != idx)
		pp = &t->v[*pp].next;
	if (*pp == idx)
		*pp = s->next;
}

void sz_stream_end(struct sz_streams *t, struct sz_stream *s, uint64_t now)
{
	if (!s->used)
		return;
	if (t->ended)
		t->ended(t->ended_ctx, s, now);
	if (s->fd >= 0) {
		close(s->fd);
		t->tracked_fds--;
	}
	unlink_stream(t, s);
	memset(s, 0, sizeof *s);
	s->fd = -1;
	t->live--;
}

struct sz_stream *sz_stream_find(struct sz_streams *t, dev_t dev, ino_t ino, uint64_t off,
                                 uint64_t slack)
{
	struct sz_stream *best = NULL;
	uint64_t best_d = UINT64_MAX;
	for (int i = t->bucket[hash(dev, ino, t->nbuckets)]; i >= 0; i = t->v[i].next) {
		struct sz_stream *s = &t->v[i];
		if (s->dev != dev || s->ino != ino)
			continue;
		/* Within the stream's last window, or a little behind/ahead of
		 * where it got to, or inside the range it last asked for past
		 * that range's start: a server's sendfile of one 2.5 MiB Range
		 * reply continues there as the socket drains (the same offset
		 * as the start is another client starting there). */
		uint64_t lo = s->frontier > slack ? s->frontier - slack : 0;
		uint64_t hi = (s->reach > s->frontier ? s->reach : s->frontier) + slack;
		int inside = off > s->ask_off && off < s->frontier;
		if (!inside && (off < lo || off > hi))
			continue;
		uint64_t d = off > s->frontier ? off - s->frontier : s->frontier - off;
		if (d < best_d) {
			best = s;
			best_d = d;
		}
	}
	return best;
}

struct sz_stream *sz_stream_new(struct sz_streams *t, dev_t dev, ino_t ino, uint64_t off,
                                uint64_t now)
{
	struct sz_stream *s = NULL;
	for (unsigned i = 0; i < t->cap && !s; i++)
		if (!t->v[i].used)
			s = &t->v[i];
	if (!s) {
		/* Full: the stream silent the longest gives way. */
		s = &t->v[0];
		for (unsigned i = 1; i < t->cap; i++)
			if (t->v[i].last_ns < s->last_ns)
				s = &t->v[i];
		sz_stream_end(t, s, now);
	}
	s->used = 1;
	s->dev = dev;
	s->ino = ino;
	s->first_off = off;
	s->frontier = off;
	s->first_ns = now;
	s->last_ns = now;
	s->mark_off = off;
	s->mark_ns = now;
	s->ask_off = off;
	s->fd = -1;
	unsigned b = hash(dev, ino, t->nbuckets);
	s->next = t->bucket[b];
	t->bucket[b] = (int)(s - t->v);
	t->live++;
	return s;
}

uint64_t sz_stream_advance(struct sz_streams *t, struct sz_stream *s, uint64_t off, uint64_t len,
                           uint64_t now)
{
	uint64_t end = off + len, gained = 0;
	if (end > s->frontier) {
		/* Everything up to the new end: the library does not ask for what
		 * it knows is resident, so a gap up to off was read all the same. */
		gained = end - s->frontier;
		s->frontier = end;
		s->ask_off = off;
	}
	s->last_ns = now;
	/* Pacing: what it consumed since a reference point over the time
	 * since then.  The reference is never the stream's start: a player
	 * fills its buffer first, as fast as its link allows (vidload's three
	 * opening segments: 30 s of video in 1-18 s), and pacing from the
	 * start counted that burst as bitrate (an SD stream on a fast link
	 * looked faster than an HD one for its first 20 s).  Every pacing_ns
	 * the mark moves to where the stream is; the reference takes the
	 * previous mark, so an estimate covers the last one to two pacing
	 * periods, from the second period on. */
	if (now > s->mark_ns && now - s->mark_ns >= t->pacing_ns) {
		if (s->mark_ns != s->first_ns) {
			s->ref_off = s->mark_off;
			s->ref_ns = s->mark_ns;
		}
		s->mark_off = s->frontier;
		s->mark_ns = now;
	}
	if (s->ref_ns && now > s->ref_ns && s->frontier > s->ref_off) {
		s->bitrate = (double)(s->frontier - s->ref_off) * 1e9 / (double)(now - s->ref_ns);
		/* the first known bitrate is the reference until the next tick */
		if (t->ref_bitrate <= 0)
			t->ref_bitrate = s->bitrate;
	}
	return gained;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The reference is a high percentile, not the maximum: the maximum over
 * hundreds of estimates that each jitter by +-20% (an HD stream's
 * segments arrive in bursts), or of two clients of one file taken for
 * one stream, was 2-4x an HD stream's bitrate, so even the highest
 * bitrate class got a fraction of the policy's size. */
/* How long a stream may stay silent and still be live: idle_ns after it
 * would have got through what it was told is resident, at its bitrate (or
 * at SZ_SLOWEST_BITRATE while that is unknown).  The library asks again
 * only past that window: an SD stream (50 kB/s) with a 2 MiB window is
 * silent for 40 s, and a flat 30 s ended it there, counting its window as
 * wasted and its next ask as a new stream. */
static uint64_t idle_limit(const struct sz_streams *t, const struct sz_stream *s)
{
	if (s->reach <= s->frontier)
		return t->idle_ns;
	double rate = s->bitrate > SZ_SLOWEST_BITRATE ? s->bitrate : SZ_SLOWEST_BITRATE;
	return t->idle_ns + (uint64_t)((double)(s->reach - s->frontier) / rate * 1e9);
}

/* The fraction q percentile of n sorted values, by nearest rank. */
static double nearest_rank(const double *sorted, unsigned n, double q)
{
	unsigned rank = (unsigned)ceil(q * n);
	return sorted[rank ? rank - 1 : 0];
}

void sz_streams_expire(struct sz_streams *t, uint64_t now)
{
	unsigned known = 0;
	for (unsigned i = 0; i < t->cap; i++) {
		struct sz_stream *s = &t->v[i];
		if (!s->used)
			continue;
		/* (a completion may carry a time later than the tick's) */
		if (now > s->last_ns && now - s->last_ns > idle_limit(t, s)) {
			sz_stream_end(t, s, now);
			continue;
		}
		if (s->bitrate > 0)
			t->scratch[known++] = s->bitrate;
	}
	t->ref_bitrate = t->slow_bitrate = 0;
	if (known) {
		qsort(t->scratch, known, sizeof *t->scratch, cmp_double);
		t->ref_bitrate = nearest_rank(t->scratch, known, t->ref_pct / 100);
		t->slow_bitrate = nearest_rank(t->scratch, known, 0.10);
	}
}

double sz_streams_mean_bitrate(const struct sz_streams *t)
{
	double sum = 0;
	unsigned n = 0;
	for (unsigned i = 0; i < t->cap; i++)
		if (t->v[i].used && t->v[i].bitrate > 0) {
			sum += t->v[i].bitrate;
			n++;
		}
	return n ? sum / n : 0;
}

void sz_streams_describe(const struct sz_streams *t, struct rd_json *j, uint64_t now)
{
	/* One entry per live stream, so that a benchmark can tell its streams
	 * apart (by inode: hddsim numbers files in library order) and check
	 * the bitrates inferred for each kind. */
	rd_json_arr_begin(j, "stream_list");
	for (unsigned i = 0; i < t->cap; i++) {
		const struct sz_stream *s = &t->v[i];
		if (!s->used)
			continue;
		rd_json_obj_begin(j, NULL);
		rd_json_u64(j, "ino", (uint64_t)s->ino);
		rd_json_dbl(j, "bitrate", s->bitrate);
		rd_json_dbl(j, "age_s", now > s->first_ns ? (double)(now - s->first_ns) / 1e9 : 0);
		rd_json_u64(j, "consumed", s->frontier - s->first_off);
		rd_json_u64(j, "window", s->win_hi - s->win_lo);
		rd_json_obj_end(j);
	}
	rd_json_arr_end(j);
}
