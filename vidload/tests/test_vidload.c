/*
 * test_vidload.c - unit tests of vidload's pure parts: the response head
 * parser, the timer heap and the segment plan of a session.
 * Build and run: make -C vidload check
 */
#include "heap.h"
#include "http.h"
#include "workload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_PROGRAM "test_vidload"
#include "check.h"

static void t_http(void)
{
	struct http_head h;
	const char *ok = "HTTP/1.1 206 Partial Content\r\nServer: x\r\nContent-Length: 524288\r\n"
			 "content-range:  bytes 1048576-1572863/13893632 \r\nConnection: keep-alive\r\n\r\n";
	CHECK(http_parse_head(ok, strlen(ok), &h) == 0);
	CHECK(h.status == 206 && h.length == 524288);
	CHECK(h.range_first == 1048576 && h.range_last == 1572863);
	CHECK(!h.close && !h.chunked);

	const char *cl = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
	CHECK(http_parse_head(cl, strlen(cl), &h) == 0);
	CHECK(h.status == 200 && h.length == -1 && h.chunked && h.close);

	const char *bad[] = {
		"HTTP/1.1 2x6 Partial\r\n\r\n",
		"ICY 200 OK\r\n\r\n",
		"HTTP/1.1 206 OK\r\nContent-Length: 12a\r\n\r\n",
		"HTTP/1.1 206 OK\r\nno colon here\r\n\r\n",
		"HTTP/1.1 206 OK\r\nContent-Range: bytes 5/10\r\n\r\n",
		"HTTP/1.1 206 OK\r\nContent-Length: 1\r\n",  /* no blank line */
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		CHECK(http_parse_head(bad[i], strlen(bad[i]), &h) == -1);
}

static void t_heap(void)
{
	enum { N = 1000 };
	struct heap h;
	struct heap_node *nodes = calloc(N, sizeof *nodes);
	heap_init(&h);
	srand(7);
	for (int i = 0; i < N; i++) {
		nodes[i].pos = HEAP_NONE;
		CHECK(heap_set(&h, &nodes[i], rand() % 5000) == 0);
	}
	for (int i = 0; i < N; i += 3)  /* move some, remove some */
		heap_set(&h, &nodes[i], i % 2 ? rand() % 5000 : INT64_MAX);
	int64_t last = -1;
	size_t popped = 0;
	struct heap_node *t;
	while ((t = heap_top(&h))) {
		CHECK(t->when >= last);
		last = t->when;
		heap_set(&h, t, INT64_MAX);
		CHECK(t->pos == HEAP_NONE);
		popped++;
	}
	CHECK(popped == N - (N + 5) / 6);
	heap_free(&h);
	free(nodes);
}

static void t_plan(void)
{
	struct workload_params p = { .segment_s = 10, .burst = 3 };
	/* 100 s of video at 419430 b/s: ten 0.5 MiB segments. */
	struct lib_video v = { .name = "v", .bytes = 5242880, .bitrate = 419430 };
	struct segment g;
	workload_segment(&p, &v, 3, &g);
	CHECK(g.off == 3 * 524288 && g.len == 524288 && g.chunk == -1 && g.file_off == g.off &&
	      !g.whole_file);
	CHECK(workload_segments_total(&p, &v) == 10);
	CHECK(workload_send_time(&p, 0) == 0 && workload_send_time(&p, 2) == 0);
	CHECK(workload_send_time(&p, 3) == 10 && workload_send_time(&p, 5) == 30);
	CHECK(workload_segments_viewed(&p, &v, 0.5) == 3);   /* the burst is always asked */
	CHECK(workload_segments_viewed(&p, &v, 10) == 3);    /* segment 3 is due at 10 s */
	CHECK(workload_segments_viewed(&p, &v, 10.5) == 4);
	CHECK(workload_segments_viewed(&p, &v, 100) == 10);  /* whole video */
	v.bytes += 1;
	CHECK(workload_segments_total(&p, &v) == 11);        /* a short last segment */
	workload_segment(&p, &v, 10, &g);
	CHECK(g.off == 5242880 && g.len == 1);
	/* Chunked: 0.5 MiB segments whatever the chunk size, never across a
	 * chunk file; a segment that is a whole chunk file is asked without a
	 * Range. */
	v.chunk = 1048576;                                   /* two segments per chunk */
	CHECK(workload_segments_total(&p, &v) == 11);        /* 5 chunks x 2, and 1 byte */
	workload_segment(&p, &v, 3, &g);
	CHECK(g.chunk == 1 && g.file_off == 524288 && g.len == 524288 && g.off == 3 * 524288 &&
	      !g.whole_file);
	workload_segment(&p, &v, 10, &g);
	CHECK(g.chunk == 5 && g.file_off == 0 && g.len == 1 && g.whole_file);
	v.chunk = 524288;                                    /* one segment, the whole file */
	workload_segment(&p, &v, 4, &g);
	CHECK(g.chunk == 4 && g.file_off == 0 && g.len == 524288 && g.whole_file);
	CHECK(workload_segments_total(&p, &v) == 11);
	v.chunk = 2097152;                                   /* four per chunk */
	workload_segment(&p, &v, 9, &g);
	CHECK(g.chunk == 2 && g.file_off == 524288 && g.off == 9 * 524288 && g.len == 524288);
	CHECK(workload_segments_total(&p, &v) == 11);        /* 2 x 4, then 2 and the byte */
}

int main(void)
{
	t_http();
	t_heap();
	t_plan();
	return check_done();
}
