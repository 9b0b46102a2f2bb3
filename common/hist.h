/*
 * hist.h - a small log-linear latency histogram, shared by receptiond,
 * hddsim and vidload.
 *
 * Values are unsigned 64-bit (callers use nanoseconds).  Each power of two
 * is split into HIST_SUB linear sub-buckets, so a recorded value is known
 * to within 1/HIST_SUB (6%) of itself, like HdrHistogram with two
 * significant bits less, in a fixed 8 KiB with no allocation.
 */
#ifndef LC_HIST_H
#define LC_HIST_H

#include <stdint.h>
#include <string.h>

#define HIST_SUB_BITS 4
#define HIST_SUB      (1u << HIST_SUB_BITS)
#define HIST_OCTAVES  60
#define HIST_BUCKETS  (HIST_SUB * (HIST_OCTAVES + 1))

struct hist {
	uint64_t count[HIST_BUCKETS];
	uint64_t total;
	uint64_t sum;
	uint64_t min, max;
};

static inline void hist_init(struct hist *h)
{
	memset(h, 0, sizeof *h);
	h->min = UINT64_MAX;
}

static inline unsigned hist_bucket(uint64_t v)
{
	if (v < HIST_SUB)
		return (unsigned)v;
	unsigned msb = 63u - (unsigned)__builtin_clzll(v);
	unsigned octave = msb - HIST_SUB_BITS + 1;
	unsigned sub = (unsigned)(v >> (msb - HIST_SUB_BITS)) & (HIST_SUB - 1);
	unsigned b = octave * HIST_SUB + sub;
	return b < HIST_BUCKETS ? b : HIST_BUCKETS - 1;
}

/* The largest value that falls into bucket b. */
static inline uint64_t hist_bucket_top(unsigned b)
{
	if (b < HIST_SUB)
		return b;
	unsigned octave = b / HIST_SUB, sub = b % HIST_SUB;
	unsigned shift = octave - 1;
	return (((uint64_t)(HIST_SUB + sub + 1)) << shift) - 1;
}

static inline void hist_add(struct hist *h, uint64_t v)
{
	h->count[hist_bucket(v)]++;
	h->total++;
	h->sum += v;
	if (v < h->min) h->min = v;
	if (v > h->max) h->max = v;
}

static inline void hist_merge(struct hist *into, const struct hist *from)
{
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		into->count[i] += from->count[i];
	into->total += from->total;
	into->sum += from->sum;
	if (from->min < into->min) into->min = from->min;
	if (from->max > into->max) into->max = from->max;
}

/* The value at quantile q (0..1), as the top of its bucket, capped at max. */
static inline uint64_t hist_quantile(const struct hist *h, double q)
{
	if (h->total == 0)
		return 0;
	uint64_t rank = (uint64_t)(q * (double)h->total);
	if (rank >= h->total)
		rank = h->total - 1;
	uint64_t seen = 0;
	for (unsigned b = 0; b < HIST_BUCKETS; b++) {
		seen += h->count[b];
		if (seen > rank) {
			uint64_t top = hist_bucket_top(b);
			return top < h->max ? top : h->max;
		}
	}
	return h->max;
}

#endif
