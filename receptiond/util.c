/* util.c - small helpers shared by the daemon and its policies. */
#include "policy.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <time.h>

uint64_t rd_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Bytes, with an optional K/M/G suffix (powers of two, "KiB" also taken). */
int rd_parse_size(const char *s, uint64_t *out)
{
	if (!s || !isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	unsigned shift = 0;
	switch (toupper((unsigned char)*end)) {
	case 0: break;
	case 'K': shift = 10; end++; break;
	case 'M': shift = 20; end++; break;
	case 'G': shift = 30; end++; break;
	default: return -1;
	}
	if (shift) {
		if (*end == 'i' && end[1] == 'B')
			end += 2;
		else if (toupper((unsigned char)*end) == 'B')
			end++;
	}
	if (*end)
		return -1;
	if (shift && v > (UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}
