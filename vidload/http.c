/* http.c - HTTP/1.1 response head parser; see http.h. */
#include "http.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int parse_i64(const char *s, const char *end, int64_t *out)
{
	int64_t v = 0;
	if (s == end)
		return -1;
	for (; s < end; s++) {
		if (!isdigit((unsigned char)*s) || v > (INT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (*s - '0');
	}
	*out = v;
	return 0;
}

static const char *trim(const char *s, const char *end)
{
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	return s;
}

static const char *rtrim(const char *s, const char *end)
{
	while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	return end;
}

static int header(struct http_head *h, const char *name, size_t nlen, const char *v, const char *vend)
{
#define IS(lit) (nlen == sizeof lit - 1 && !strncasecmp(name, lit, nlen))
	if (IS("content-length"))
		return parse_i64(v, vend, &h->length);
	if (IS("content-range")) {
		const char *dash, *slash;
		if (vend - v < 6 || strncasecmp(v, "bytes ", 6))
			return -1;
		v += 6;
		dash = memchr(v, '-', (size_t)(vend - v));
		slash = dash ? memchr(dash, '/', (size_t)(vend - dash)) : NULL;
		if (!slash || parse_i64(v, dash, &h->range_first) ||
		    parse_i64(dash + 1, slash, &h->range_last))
			return -1;
		return 0;
	}
	if (IS("transfer-encoding"))
		h->chunked = !(vend - v == 8 && !strncasecmp(v, "identity", 8));
	else if (IS("connection"))
		h->close = vend - v == 5 && !strncasecmp(v, "close", 5);
	return 0;
#undef IS
}

int http_parse_head(const char *buf, size_t len, struct http_head *h)
{
	const char *p = buf, *end = buf + len;
	int64_t status;

	*h = (struct http_head){ .length = -1, .range_first = -1, .range_last = -1 };
	/* "HTTP/1.x NNN reason" */
	if (len < 12 || strncmp(p, "HTTP/1.", 7) || p[8] != ' ' || parse_i64(p + 9, p + 12, &status))
		return -1;
	h->status = (int)status;
	if (p[7] == '0')
		h->close = 1;  /* HTTP/1.0 closes unless told otherwise; good enough here */
	p = memchr(p, '\n', len);
	while (p && ++p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p)), *colon, *lend;
		if (!eol)
			return -1;
		lend = eol > p && eol[-1] == '\r' ? eol - 1 : eol;
		if (lend == p)
			return 0;  /* blank line: end of head */
		colon = memchr(p, ':', (size_t)(lend - p));
		if (!colon || colon == p)
			return -1;
		if (header(h, p, (size_t)(colon - p), trim(colon + 1, lend), rtrim(colon + 1, lend)))
			return -1;
		p = eol;
	}
	return -1;
}
