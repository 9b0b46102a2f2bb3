/* sizing_args.c - the "key=value,..." arguments of the sizing policies. */
#include "sizing.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sz_args_next(const char **cursor, char *key, size_t klen, char *val, size_t vlen)
{
	const char *p = *cursor;
	while (*p == ',')
		p++;
	if (!*p)
		return 0;
	const char *end = strchr(p, ',');
	if (!end)
		end = p + strlen(p);
	const char *eq = memchr(p, '=', (size_t)(end - p));
	*cursor = end;
	if (!eq || eq == p || (size_t)(eq - p) >= klen || (size_t)(end - eq - 1) >= vlen)
		return -1;
	memcpy(key, p, (size_t)(eq - p));
	key[eq - p] = 0;
	memcpy(val, eq + 1, (size_t)(end - eq - 1));
	val[end - eq - 1] = 0;
	return 1;
}

static int parse_number(const char *s, double *v, char **end)
{
	if (!s || !(isdigit((unsigned char)*s) || *s == '.'))
		return -1;
	errno = 0;
	*v = strtod(s, end);
	return errno || *end == s || *v < 0 ? -1 : 0;
}

int sz_parse_duration(const char *s, uint64_t *ns)
{
	double v;
	char *end;
	if (parse_number(s, &v, &end))
		return -1;
	double mult;
	if (!*end || strcmp(end, "s") == 0)
		mult = 1e9;
	else if (strcmp(end, "ms") == 0)
		mult = 1e6;
	else if (strcmp(end, "m") == 0 || strcmp(end, "min") == 0)
		mult = 60e9;
	else
		return -1;
	*ns = (uint64_t)(v * mult);
	return 0;
}

int sz_parse_number(const char *s, double *out)
{
	char *end;
	return parse_number(s, out, &end) || *end ? -1 : 0;
}

int sz_parse_fraction(const char *s, double *out)
{
	double v;
	char *end;
	if (parse_number(s, &v, &end))
		return -1;
	if (*end == '%' && !end[1])
		v /= 100;
	else if (*end)
		return -1;
	if (v > 1)
		return -1;
	*out = v;
	return 0;
}

int sz_parse_bytes(const char *s, double *out)
{
	double v;
	char *end;
	if (parse_number(s, &v, &end))
		return -1;
	switch (toupper((unsigned char)*end)) {
	case 0: break;
	case 'K': v *= 1024; end++; break;
	case 'M': v *= 1024 * 1024; end++; break;
	case 'G': v *= 1024.0 * 1024 * 1024; end++; break;
	default: return -1;
	}
	if (*end == 'i' && end[1] == 'B')
		end += 2;
	else if (toupper((unsigned char)*end) == 'B')
		end++;
	if (*end)
		return -1;
	*out = v;
	return 0;
}

const char *sz_fmt_size(uint64_t bytes, char *buf, size_t len)
{
	if (bytes >= (1u << 20))
		snprintf(buf, len, "%.2fM", (double)bytes / SZ_MIB);
	else
		snprintf(buf, len, "%.0fK", (double)bytes / 1024);
	return buf;
}
