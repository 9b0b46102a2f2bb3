/* util.c - small helpers shared by the daemon and its policies. */
#include "policy.h"

#include <time.h>

#include "size.h"

uint64_t rd_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Bytes, with an optional K/M/G suffix (common/size.h). */
int rd_parse_size(const char *s, uint64_t *out)
{
	return lc_parse_size(s, UINT64_MAX, out);
}
