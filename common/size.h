/*
 * size.h - byte counts as users write them: "4096", "512k", "2M", "1G",
 * binary units, case-insensitive, with an optional "i" and "B" after the
 * suffix ("2MiB", "2MB").  Shared by libception.so (LIBCEPTION_PREFETCH)
 * and receptiond (--prefetch, policy options).
 */
#ifndef LC_SIZE_H
#define LC_SIZE_H

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* 0 and *out set, or -1 (no digits, a stray character, or more than max
 * bytes); errno is left as it was. */
static inline int lc_parse_size(const char *s, uint64_t max, uint64_t *out)
{
	if (!s || !isdigit((unsigned char)*s))
		return -1;
	int saved = errno;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	int overflow = errno != 0;
	errno = saved;
	if (overflow)
		return -1;
	unsigned shift = 0;
	switch (toupper((unsigned char)*end)) {
	case '\0': break;
	case 'K': shift = 10; end++; break;
	case 'M': shift = 20; end++; break;
	case 'G': shift = 30; end++; break;
	default: return -1;
	}
	if (shift && *end == 'i')
		end++;
	if (shift && toupper((unsigned char)*end) == 'B')
		end++;
	if (*end)
		return -1;
	if (v > max >> shift)
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

#endif
