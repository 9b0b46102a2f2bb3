/*
 * test_common.c - unit tests of the shared C pieces: the library file
 * parser (valid files, and the one-line errors that name file and line),
 * the synthetic content, and the latency histogram.
 * Build and run: make -C common check
 */
#include "content.h"
#include "hist.h"
#include "library.h"
#include "size.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK_PROGRAM "test_common"
#include "check.h"

static const char *t_write(const char *text)
{
	static char path[] = "/tmp/test_common.XXXXXX";
	strcpy(path, "/tmp/test_common.XXXXXX");
	int fd = mkstemp(path);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		perror("test_common: temp file");
		exit(1);
	}
	close(fd);
	return path;
}

static void t_library_valid(void)
{
	const char *p = t_write("# a comment\n\nlcvl 1\n"
	                        "video sd/a.mp4 1000 419430 0\n"
	                        "video sd/b.mp4 9175040 419430 2097152\n");
	struct library lib;
	char err[256] = "";
	CHECK(library_load(p, &lib, err, sizeof err) == 0);
	CHECK(lib.count == 2);
	CHECK(lib.total_bytes == 1000 + 9175040);
	CHECK(strcmp(lib.videos[1].name, "sd/b.mp4") == 0);
	CHECK(lib_video_chunks(&lib.videos[0]) == 0);
	CHECK(lib_video_chunks(&lib.videos[1]) == 5);   /* 4 full + 1 short */
	CHECK(lib.videos[0].seed == content_seed("sd/a.mp4"));
	library_free(&lib);
	unlink(p);
}

static void t_library_error(const char *text, const char *want)
{
	const char *p = t_write(text);
	struct library lib;
	char err[256] = "";
	CHECK(library_load(p, &lib, err, sizeof err) == -1);
	if (!strstr(err, want) || !strstr(err, p)) {
		fprintf(stderr, "test_common: error \"%s\" lacks \"%s\" or the path\n", err, want);
		check_failures++;
	}
	CHECK(lib.count == 0 && lib.videos == NULL);
	unlink(p);
}

static void t_library_errors(void)
{
	t_library_error("lcvl 2\n", "line 1: expected \"lcvl 1\"");
	t_library_error("video a 1 1 0\n", "line 1: expected \"lcvl 1\"");
	t_library_error("lcvl 1\nvideo a 1 1\n", "line 2:");
	t_library_error("lcvl 1\nvideo a 0 1 0\n", "line 2:");
	t_library_error("lcvl 1\nvideo a 10 1 1000\n", "line 2:");        /* chunk not 4 KiB-aligned */
	t_library_error("lcvl 1\nvideo ../etc 10 1 0\n", "line 2:");
	t_library_error("lcvl 1\nvideo /abs 10 1 0\n", "line 2:");
	t_library_error("lcvl 1\nvideo a -5 1 0\n", "line 2:");
	t_library_error("lcvl 1\n", "no videos");
	struct library lib;
	char err[256] = "";
	CHECK(library_load("/nonexistent/lib", &lib, err, sizeof err) == -1);
	CHECK(strstr(err, "/nonexistent/lib") != NULL);
}

static void t_content(void)
{
	uint64_t seed = content_seed("v");
	uint8_t whole[4096], part[100];
	content_fill(seed, 0, whole, sizeof whole);
	/* Any unaligned window equals the same bytes of the whole. */
	for (uint64_t off = 0; off < 3000; off += 997) {
		content_fill(seed, off, part, sizeof part);
		CHECK(memcmp(part, whole + off, sizeof part) == 0);
		CHECK(content_check(seed, off, part, sizeof part) == -1);
	}
	content_fill(seed, 997, part, sizeof part);
	part[37] ^= 1;
	CHECK(content_check(seed, 997, part, sizeof part) == 37);
	CHECK(content_check(content_seed("w"), 0, whole, 64) != -1);
}

static void t_hist(void)
{
	struct hist h;
	hist_init(&h);
	for (uint64_t v = 1; v <= 1000; v++)
		hist_add(&h, v * 1000);
	CHECK(h.total == 1000 && h.min == 1000 && h.max == 1000000);
	uint64_t p50 = hist_quantile(&h, 0.5);
	CHECK(p50 >= 500000 && p50 <= 500000 * 107 / 100);  /* within one sub-bucket */
	CHECK(hist_quantile(&h, 1.0) == 1000000);
	for (unsigned b = 1; b < HIST_BUCKETS - 1; b++)        /* buckets tile the line */
		CHECK(hist_bucket(hist_bucket_top(b)) == b && hist_bucket(hist_bucket_top(b) + 1) == b + 1);
}

static void t_size(void)
{
	uint64_t v = 7;
	CHECK(lc_parse_size("4096", UINT64_MAX, &v) == 0 && v == 4096);
	CHECK(lc_parse_size("512k", UINT64_MAX, &v) == 0 && v == 512u << 10);
	CHECK(lc_parse_size("2M", UINT64_MAX, &v) == 0 && v == 2u << 20);
	CHECK(lc_parse_size("2Mi", UINT64_MAX, &v) == 0 && v == 2u << 20);
	CHECK(lc_parse_size("2mib", UINT64_MAX, &v) == 0 && v == 2u << 20);
	CHECK(lc_parse_size("1GiB", UINT64_MAX, &v) == 0 && v == 1u << 30);
	CHECK(lc_parse_size("3MB", UINT64_MAX, &v) == 0 && v == 3u << 20);
	CHECK(lc_parse_size("1024G", 1ull << 40, &v) == 0 && v == 1ull << 40);
	v = 7;
	CHECK(lc_parse_size("1025G", 1ull << 40, &v) == -1 && v == 7);
	CHECK(lc_parse_size(NULL, UINT64_MAX, &v) == -1);
	CHECK(lc_parse_size("", UINT64_MAX, &v) == -1);
	CHECK(lc_parse_size("-1", UINT64_MAX, &v) == -1);
	CHECK(lc_parse_size("2X", UINT64_MAX, &v) == -1);
	CHECK(lc_parse_size("2iB", UINT64_MAX, &v) == -1);
	CHECK(lc_parse_size("2M ", UINT64_MAX, &v) == -1);
	CHECK(lc_parse_size("17179869184G", UINT64_MAX, &v) == -1);  /* 2^64 bytes */
	errno = 5;
	CHECK(lc_parse_size("99999999999999999999", UINT64_MAX, &v) == -1 && errno == 5);
}

int main(void)
{
	t_library_valid();
	t_library_errors();
	t_content();
	t_hist();
	t_size();
	return check_done();
}
