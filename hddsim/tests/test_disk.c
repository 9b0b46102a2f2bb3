/*
 * test_disk.c - unit tests of disk mode's bytes: the extent map parser
 * (good maps, every kind of malformed one, overlaps, any order, a large
 * map's parse time) and disk_read over video extents, image bytes, holes
 * and the end of the image.
 * Usage: test_disk
 */
#include "../disk.h"
#include "../diskmap.h"
#include "content.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHECK_PROGRAM "test_disk"
#include "check.h"

static char dir[] = "/tmp/test_disk.XXXXXX";

static const char *t_file(const char *name, const char *text)
{
	static char path[256];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f)) {
		perror("test_disk: temp file");
		exit(1);
	}
	return path;
}

/* The map's one-line error for `text`, or "" if it loads. */
static const char *map_error(const char *text)
{
	static char err[512];
	struct diskmap m;
	err[0] = 0;
	if (diskmap_load(t_file("bad.map", text), &m, err, sizeof err) == 0)
		diskmap_free(&m);
	return err;
}

static int has(const char *s, const char *part) { return strstr(s, part) != NULL; }

static void t_map_good(void)
{
	struct diskmap m;
	char err[256] = "";
	const char *p = t_file("good.map", "# built by a test\n\nlcdm 1\ndisk 1048576\n"
				"extent 8192 4096 sd/b.mp4 0\n"
				"extent 0 4096 sd/a.mp4 524288 # note\n");
	/* Comments take whole lines (as in library files): one after the
	 * fields is a sixth field. */
	CHECK(diskmap_load(p, &m, err, sizeof err) == -1 && has(err, "line 6"));
	p = t_file("good.map", "# built by a test\n\nlcdm 1\ndisk 1048576\n"
		   "extent 8192 4096 sd/b.mp4 0\n"
		   "extent 0 4096 sd/a.mp4 524288\n"
		   "\textent   12288\t8192 sd/a.mp4 528384\r\n");
	CHECK(diskmap_load(p, &m, err, sizeof err) == 0);
	CHECK(m.bytes == 1048576 && m.count == 3);
	/* Sorted by disk offset, whatever the file's order. */
	CHECK(m.ext[0].off == 0 && m.ext[0].video_off == 524288 && m.ext[0].seed == content_seed("sd/a.mp4"));
	CHECK(m.ext[1].off == 8192 && m.ext[1].seed == content_seed("sd/b.mp4"));
	CHECK(m.ext[2].off == 12288 && m.ext[2].len == 8192);
	/* Lookup: the extent holding an offset, else the next one. */
	CHECK(diskmap_find(&m, 0) == 0 && diskmap_find(&m, 4095) == 0);
	CHECK(diskmap_find(&m, 4096) == 1 && diskmap_find(&m, 8192) == 1);
	CHECK(diskmap_find(&m, 12288) == 2 && diskmap_find(&m, 20479) == 2);
	CHECK(diskmap_find(&m, 20480) == 3 && diskmap_find(&m, 1 << 20) == 3);
	diskmap_free(&m);
	/* No extents at all: a disk of image bytes only. */
	CHECK(!*map_error("lcdm 1\ndisk 4096\n"));
}

static void t_map_malformed(void)
{
	CHECK(has(map_error("lcvl 1\ndisk 4096\n"), "line 1: expected \"lcdm 1\""));
	CHECK(has(map_error("lcdm 2\n"), "line 1: expected \"lcdm 1\""));
	CHECK(has(map_error("# only\nlcdm 1\n"), "no \"disk BYTES\" line"));
	CHECK(has(map_error("lcdm 1\nextent 0 4096 a 0\ndisk 8192\n"), "line 2: \"extent\" before"));
	CHECK(has(map_error("lcdm 1\ndisk 4097\n"), "line 2: expected \"disk BYTES\""));
	CHECK(has(map_error("lcdm 1\ndisk 0\n"), "line 2"));
	CHECK(has(map_error("lcdm 1\ndisk 4096\ndisk 4096\n"), "line 3: a second \"disk\" line"));
	CHECK(has(map_error("lcdm 1\ndisk 8192\nextent 0 4096 a\n"), "line 3: expected \"extent DISK_OFFSET"));
	CHECK(has(map_error("lcdm 1\ndisk 8192\nextent 0 4096 a 0 9\n"), "line 3"));
	CHECK(has(map_error("lcdm 1\ndisk 8192\nextent -0 4096 a 0\n"), "line 3: offsets and length must be decimal"));
	CHECK(has(map_error("lcdm 1\ndisk 8192\nextent 0x0 4096 a 0\n"), "decimal"));
	CHECK(has(map_error("lcdm 1\ndisk 8192\nextent 0 4096 a 99999999999999999999999\n"), "decimal"));
	CHECK(has(map_error("lcdm 1\ndisk 8192\nextent 512 4096 a 0\n"), "line 3: DISK_OFFSET and LENGTH must be multiples"));
	CHECK(has(map_error("lcdm 1\ndisk 8192\nextent 0 1000 a 0\n"), "multiples of 4096"));
	CHECK(has(map_error("lcdm 1\ndisk 8192\nextent 0 0 a 0\n"), "LENGTH positive"));
	CHECK(has(map_error("lcdm 1\ndisk 8192\nextent 4096 8192 a 0\n"), "line 3: extent lies past the end"));
	CHECK(has(map_error("lcdm 1\ndisk 8192\nextent 18446744073709547520 8192 a 0\n"), "past the end"));
	CHECK(has(map_error("lcdm 1\ndisk 8192\nextent 0 4096 /abs 0\n"), "line 3: bad VIDEO_NAME"));
	CHECK(has(map_error("lcdm 1\ndisk 8192\nextent 0 4096 a/../b 0\n"), "bad VIDEO_NAME"));
	CHECK(has(map_error("lcdm 1\ndisk 8192\nvideo a 1 2 3\n"), "line 3: expected \"disk\" or \"extent\""));
	char long_line[2000];
	memset(long_line, 'x', sizeof long_line);
	memcpy(long_line, "lcdm 1\n", 7);
	long_line[sizeof long_line - 1] = 0;
	CHECK(has(map_error(long_line), "line 2: line too long"));
	/* Every error names the file. */
	CHECK(has(map_error("lcdm 9\n"), "bad.map"));
	char err[256];
	struct diskmap m;
	CHECK(diskmap_load("/nonexistent/x.map", &m, err, sizeof err) == -1 && has(err, "x.map"));
}

static void t_map_overlap(void)
{
	/* Overlaps are found after sorting and name both lines. */
	CHECK(has(map_error("lcdm 1\ndisk 65536\nextent 16384 8192 a 0\nextent 0 4096 b 0\n"
			    "extent 20480 4096 c 0\n"), "line 5: extent overlaps the one on line 3"));
	CHECK(has(map_error("lcdm 1\ndisk 65536\nextent 8192 4096 a 0\nextent 8192 4096 b 0\n"), "overlaps"));
	/* Touching is not overlapping. */
	CHECK(!*map_error("lcdm 1\ndisk 65536\nextent 4096 4096 a 0\nextent 0 4096 b 0\nextent 8192 4096 a 4096\n"));
}

/* A map the size of the 0.5 MiB chunked library's (538,996 chunk files,
 * some in two extents): parsed in well under a few seconds. */
static void t_map_large(void)
{
	char path[256];
	snprintf(path, sizeof path, "%s/large.map", dir);
	FILE *f = fopen(path, "w");
	const size_t n = 600000;
	fprintf(f, "lcdm 1\ndisk %llu\n", (unsigned long long)(n * 2 * 131072));
	/* Written in a scrambled order: the parser sorts. */
	for (size_t i = 0; i < n; i++) {
		size_t k = (i * 7919) % n;
		fprintf(f, "extent %zu 131072 sd/v%05zu.mp4 %zu\n", k * 2 * 131072, k / 30, (k % 30) * 131072);
	}
	fclose(f);
	struct diskmap m;
	char err[256];
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	int rc = diskmap_load(path, &m, err, sizeof err);
	clock_gettime(CLOCK_MONOTONIC, &b);
	double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	printf("test_disk: %zu-extent map parsed in %.2f s\n", n, s);
	CHECK(rc == 0 && m.count == n);
	if (rc)
		return;
	int sorted = 1;
	for (size_t i = 1; i < n; i++)
		sorted &= m.ext[i].off == i * 2 * 131072;
	CHECK(sorted);
	CHECK(diskmap_find(&m, 12345ull * 2 * 131072 + 131071) == 12345);
	CHECK(diskmap_find(&m, 12345ull * 2 * 131072 + 131072) == 12346);
	diskmap_free(&m);
	unlink(path);
}

/* A read across image bytes, a video extent, a hole and the end of the
 * image returns exactly those bytes. */
static void t_disk_read(void)
{
	char img[256], err[256];
	snprintf(img, sizeof img, "%s/disk.img", dir);
	int fd = open(img, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	/* Image: 48 KiB; bytes at 4000..4200 and 40000..40100, holes elsewhere. */
	uint8_t pattern[200];
	for (int i = 0; i < 200; i++)
		pattern[i] = (uint8_t)(i * 7 + 1);
	CHECK(pwrite(fd, pattern, 200, 4000) == 200 && pwrite(fd, pattern, 100, 40000) == 100);
	CHECK(ftruncate(fd, 49152) == 0);
	close(fd);
	/* Video extents over 8192..16384 (also holding image bytes, which the
	 * extent hides) and 20480..24576. */
	uint8_t junk[64];
	memset(junk, 0xee, sizeof junk);
	fd = open(img, O_WRONLY);
	CHECK(pwrite(fd, junk, sizeof junk, 9000) == sizeof junk);
	close(fd);
	const char *map = t_file("disk.map", "lcdm 1\ndisk 131072\n"
				 "extent 20480 4096 hd/v.mp4 2101248\n"
				 "extent 8192 8192 sd/v.mp4 1048576\n");
	struct disk d;
	CHECK(disk_open(&d, img, map, err, sizeof err) == 0);
	uint8_t *buf = malloc(131072), want[131072];
	memset(want, 0, sizeof want);
	memcpy(want + 4000, pattern, 200);
	memcpy(want + 40000, pattern, 100);
	content_fill(content_seed("sd/v.mp4"), 1048576, want + 8192, 8192);
	content_fill(content_seed("hd/v.mp4"), 2101248, want + 20480, 4096);
	/* The whole disk, then reads starting and ending at every kind of
	 * boundary, then single bytes. */
	CHECK(disk_read(&d, 0, buf, 131072) == 0 && !memcmp(buf, want, 131072));
	uint64_t cuts[] = { 0, 3999, 4100, 8191, 8192, 9000, 12345, 16384, 20000, 20480, 24575, 40050, 49151, 49152, 60000, 131071 };
	int same = 1;
	for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++)
		for (size_t j = i; j < sizeof cuts / sizeof *cuts; j++) {
			uint64_t a = cuts[i], len = cuts[j] - cuts[i] + 1;
			memset(buf, 0x55, len);
			same &= disk_read(&d, a, buf, len) == 0 && !memcmp(buf, want + a, len);
		}
	CHECK(same);
	disk_close(&d);
	free(buf);

	/* An image larger than the disk, and a missing image, are refused. */
	const char *small = t_file("small.map", "lcdm 1\ndisk 4096\n");
	CHECK(disk_open(&d, img, small, err, sizeof err) == -1 && has(err, "larger than the map's disk"));
	CHECK(disk_open(&d, "/nonexistent/img", map, err, sizeof err) == -1 && has(err, "/nonexistent/img"));
	CHECK(disk_open(&d, img, "/nonexistent/map", err, sizeof err) == -1 && has(err, "/nonexistent/map"));
	unlink(img);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("test_disk: mkdtemp");
		return 1;
	}
	t_map_good();
	t_map_malformed();
	t_map_overlap();
	t_map_large();
	t_disk_read();
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd)) {}
	return check_done();
}
