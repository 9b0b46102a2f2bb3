/*
 * http.h - the little of HTTP/1.1 vidload speaks: format a segment
 * request, and parse a response head into what the session must check.
 */
#ifndef VL_HTTP_H
#define VL_HTTP_H

#include <stddef.h>
#include <stdint.h>

struct http_head {
	int status;
	int64_t length;       /* Content-Length, -1 if absent */
	int64_t range_first;  /* Content-Range first byte, -1 if absent */
	int64_t range_last;
	int chunked;          /* Transfer-Encoding: chunked (not supported) */
	int close;            /* Connection: close */
};

/* Parse the head in buf[0..len) (ending with the blank line); 0 or -1 if malformed. */
int http_parse_head(const char *buf, size_t len, struct http_head *h);

#endif
