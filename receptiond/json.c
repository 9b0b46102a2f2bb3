/* json.c - see json.h. */
#include "json.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rd_json_init(struct rd_json *j)
{
	memset(j, 0, sizeof *j);
}

void rd_json_free(struct rd_json *j)
{
	free(j->buf);
	memset(j, 0, sizeof *j);
}

const char *rd_json_text(struct rd_json *j)
{
	if (j->failed || !j->buf)
		return NULL;
	return j->buf;
}

static void put(struct rd_json *j, const char *s, size_t n)
{
	if (j->failed)
		return;
	if (j->len + n + 1 > j->cap) {
		size_t cap = j->cap ? j->cap : 4096;
		while (j->len + n + 1 > cap)
			cap *= 2;
		char *nb = realloc(j->buf, cap);
		if (!nb) {
			j->failed = 1;
			return;
		}
		j->buf = nb;
		j->cap = cap;
	}
	memcpy(j->buf + j->len, s, n);
	j->len += n;
	j->buf[j->len] = 0;
}

static void putf(struct rd_json *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(struct rd_json *j, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n > 0)
		put(j, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

static void put_string(struct rd_json *j, const char *s)
{
	put(j, "\"", 1);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			char e[2] = { '\\', (char)c };
			put(j, e, 2);
		} else if (c < 0x20) {
			putf(j, "\\u%04x", c);
		} else {
			put(j, (const char *)&c, 1);
		}
	}
	put(j, "\"", 1);
}

static void member(struct rd_json *j, const char *key)
{
	if (j->need_comma)
		put(j, ",", 1);
	if (key) {
		put_string(j, key);
		put(j, ":", 1);
	}
	j->need_comma = 1;
}

/* An object or array: `open` after the member's key, `close` at the end. */
static void open_container(struct rd_json *j, const char *key, const char *open)
{
	member(j, key);
	put(j, open, 1);
	j->need_comma = 0;
}

static void close_container(struct rd_json *j, const char *close)
{
	put(j, close, 1);
	j->need_comma = 1;
}

void rd_json_obj_begin(struct rd_json *j, const char *key) { open_container(j, key, "{"); }
void rd_json_obj_end(struct rd_json *j)                    { close_container(j, "}"); }
void rd_json_arr_begin(struct rd_json *j, const char *key) { open_container(j, key, "["); }
void rd_json_arr_end(struct rd_json *j)                    { close_container(j, "]"); }

void rd_json_u64(struct rd_json *j, const char *key, uint64_t v)
{
	member(j, key);
	putf(j, "%llu", (unsigned long long)v);
}

void rd_json_i64(struct rd_json *j, const char *key, int64_t v)
{
	member(j, key);
	putf(j, "%lld", (long long)v);
}

void rd_json_dbl(struct rd_json *j, const char *key, double v)
{
	member(j, key);
	if (isfinite(v))
		putf(j, "%.6g", v);
	else
		put(j, "null", 4);
}

void rd_json_str(struct rd_json *j, const char *key, const char *s)
{
	member(j, key);
	put_string(j, s ? s : "");
}

void rd_json_bool(struct rd_json *j, const char *key, int v)
{
	member(j, key);
	put(j, v ? "true" : "false", v ? 4 : 5);
}
