/*
 * content.h - the deterministic bytes of every synthetic video.
 *
 * hddsim serves them and vidload checks every byte it receives against
 * them, so neither needs any storage.  The byte at offset `off` of a video
 * is byte (off & 7) of the little-endian 64-bit word
 *     splitmix64(seed + (off >> 3)),   seed = content_seed(video name).
 * A chunk file holds its video's bytes: chunk k of size C at offset o is
 * the video's byte k*C + o, so every layout of a library carries the same
 * data.
 */
#ifndef LC_CONTENT_H
#define LC_CONTENT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t content_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* FNV-1a of the video's name. */
static inline uint64_t content_seed(const char *name)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *name; name++)
		h = (h ^ (uint8_t)*name) * 0x100000001b3ull;
	return h;
}

static inline void content_fill(uint64_t seed, uint64_t off, void *buf, size_t len)
{
	uint8_t *p = buf;
	while (len > 0) {
		uint64_t w = content_mix(seed + (off >> 3));
		unsigned skip = off & 7, n = 8 - skip;
		if (n > len)
			n = (unsigned)len;
		memcpy(p, (uint8_t *)&w + skip, n); /* x86-64: little-endian */
		p += n, off += n, len -= n;
	}
}

/* Offset of the first byte in buf that differs from the content, or -1. */
static inline long content_check(uint64_t seed, uint64_t off, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint8_t want[64];
	for (size_t done = 0; done < len;) {
		size_t n = len - done < sizeof want ? len - done : sizeof want;
		content_fill(seed, off + done, want, n);
		if (memcmp(p + done, want, n) != 0)
			for (size_t i = 0; i < n; i++)
				if (p[done + i] != want[i])
					return (long)(done + i);
		done += n;
	}
	return -1;
}

#endif
