/*
 * json.h - a tiny append-only JSON writer for the statistics reply.
 *
 * The writer tracks whether a comma is needed, so callers just emit
 * members in order.  On allocation failure it stops growing and marks
 * itself failed; rd_json_text then returns NULL.
 */
#ifndef RD_JSON_H
#define RD_JSON_H

#include <stddef.h>
#include <stdint.h>

struct rd_json {
	char *buf;
	size_t len, cap;
	int need_comma;
	int failed;
};

void rd_json_init(struct rd_json *j);
void rd_json_free(struct rd_json *j);
const char *rd_json_text(struct rd_json *j);   /* NUL-terminated, or NULL */

/* key may be NULL inside arrays. */
void rd_json_obj_begin(struct rd_json *j, const char *key);
void rd_json_obj_end(struct rd_json *j);
void rd_json_arr_begin(struct rd_json *j, const char *key);
void rd_json_arr_end(struct rd_json *j);
void rd_json_u64(struct rd_json *j, const char *key, uint64_t v);
void rd_json_i64(struct rd_json *j, const char *key, int64_t v);
void rd_json_dbl(struct rd_json *j, const char *key, double v);
void rd_json_str(struct rd_json *j, const char *key, const char *s);
void rd_json_bool(struct rd_json *j, const char *key, int v);

#endif
