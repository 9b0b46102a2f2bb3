/*
 * rng.h - the seeded random streams of vidload (xoshiro256**).
 *
 * Each random quantity (arrivals, video choice, viewing time) has its own
 * stream derived from the run's seed, so `--sample` prints exactly what a
 * run with the same seed would draw, and changing one distribution's
 * parameters does not shift the others.
 */
#ifndef VL_RNG_H
#define VL_RNG_H

#include <math.h>
#include <stdint.h>

struct rng {
	uint64_t s[4];
};

static inline uint64_t rng_splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Stream `which` of seed `seed`. */
static inline void rng_init(struct rng *r, uint64_t seed, uint64_t which)
{
	uint64_t x = seed ^ (which * 0xd1b54a32d192ed03ull);
	for (int i = 0; i < 4; i++)
		r->s[i] = rng_splitmix(&x);
}

static inline uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t x = s[1] * 5, result = ((x << 7) | (x >> 57)) * 9, t = s[1] << 17;
	s[2] ^= s[0], s[3] ^= s[1], s[1] ^= s[2], s[0] ^= s[3], s[2] ^= t;
	s[3] = (s[3] << 45) | (s[3] >> 19);
	return result;
}

/* Uniform in [0, 1). */
static inline double rng_uniform(struct rng *r)
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

/* Exponential with the given mean (inversion; 1-U is in (0, 1]). */
static inline double rng_exp(struct rng *r, double mean)
{
	return -log(1.0 - rng_uniform(r)) * mean;
}

enum rng_stream {
	RNG_ARRIVALS = 1, RNG_VIDEO, RNG_VIEW, RNG_ORDER,
	/* the past before a run's start (past.h) */
	RNG_PAST_ARRIVALS, RNG_PAST_VIDEO, RNG_PAST_VIEW,
};

#endif
