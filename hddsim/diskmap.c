/* diskmap.c - parser of disk-mode extent maps; see diskmap.h. */
#include "diskmap.h"

#include "content.h"
#include "library.h"
#include "textfile.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAP_MAGIC "lcdm"
#define MAP_VERSION 1
#define ALIGN 4096u

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static int by_offset(const void *a, const void *b)
{
	const struct disk_extent *x = a, *y = b;
	return x->off < y->off ? -1 : x->off > y->off;
}

static int add_extent(struct diskmap *m, size_t *cap, const struct disk_extent *e)
{
	if (m->count == *cap) {
		size_t nc = *cap ? *cap * 2 : 4096;
		struct disk_extent *ne = realloc(m->ext, nc * sizeof *ne);
		if (!ne)
			return -1;
		m->ext = ne;
		*cap = nc;
	}
	m->ext[m->count++] = *e;
	return 0;
}

/* One "extent DISK_OFFSET LENGTH VIDEO_NAME VIDEO_OFFSET" line's fields. */
static const char *parse_extent(char **tok, int n, uint64_t disk, struct disk_extent *e)
{
	if (n != 5)
		return "expected \"extent DISK_OFFSET LENGTH VIDEO_NAME VIDEO_OFFSET\"";
	if (text_u64(tok[1], &e->off) || text_u64(tok[2], &e->len) || text_u64(tok[4], &e->video_off))
		return "offsets and length must be decimal numbers";
	if (e->len == 0 || e->off % ALIGN || e->len % ALIGN)
		return "DISK_OFFSET and LENGTH must be multiples of 4096, LENGTH positive";
	if (e->off > disk || e->len > disk - e->off)
		return "extent lies past the end of the disk";
	if (e->video_off > UINT64_MAX - e->len)
		return "VIDEO_OFFSET too large";
	if (!lib_name_ok(tok[3]))
		return "bad VIDEO_NAME (a library video name: relative, no spaces, no \"..\")";
	e->seed = content_seed(tok[3]);
	return NULL;
}

int diskmap_load(const char *path, struct diskmap *m, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	size_t cap = 0, lineno = 0;
	int seen_magic = 0, rc = -1;

	memset(m, 0, sizeof *m);
	if (!f)
		return fail(err, errlen, "disk map \"%s\": %s", path, strerror(errno));
	char *tok[6];
	int n;
	while ((n = text_fields(f, line, sizeof line, &lineno, tok, 6)) != 0) {
		const char *why = NULL;
		if (n < 0) {
			fail(err, errlen, "disk map \"%s\" line %zu: line too long", path, lineno);
			goto out;
		}
		uint64_t v;
		if (!seen_magic) {
			if (n != 2 || strcmp(tok[0], MAP_MAGIC) || text_u64(tok[1], &v) || v != MAP_VERSION)
				why = "expected \"" MAP_MAGIC " 1\"";
			seen_magic = 1;
		} else if (!strcmp(tok[0], "disk")) {
			if (m->bytes)
				why = "a second \"disk\" line";
			else if (n != 2 || text_u64(tok[1], &m->bytes) || !m->bytes || m->bytes % ALIGN)
				why = "expected \"disk BYTES\" (a positive multiple of 4096)";
		} else if (!strcmp(tok[0], "extent")) {
			struct disk_extent e = { .line = (uint32_t)lineno };
			if (!m->bytes)
				why = "\"extent\" before the \"disk\" line";
			else if (!(why = parse_extent(tok, n, m->bytes, &e)) && add_extent(m, &cap, &e)) {
				fail(err, errlen, "disk map \"%s\": out of memory", path);
				goto out;
			}
		} else {
			why = "expected \"disk\" or \"extent\"";
		}
		if (why) {
			fail(err, errlen, "disk map \"%s\" line %zu: %s", path, lineno, why);
			goto out;
		}
	}
	if (ferror(f)) {
		fail(err, errlen, "disk map \"%s\": %s", path, strerror(errno));
		goto out;
	}
	if (!m->bytes) {
		fail(err, errlen, "disk map \"%s\": no \"disk BYTES\" line", path);
		goto out;
	}
	qsort(m->ext, m->count, sizeof *m->ext, by_offset);
	for (size_t i = 1; i < m->count; i++) {
		const struct disk_extent *a = &m->ext[i - 1], *b = &m->ext[i];
		if (b->off < a->off + a->len) {
			const struct disk_extent *later = a->line > b->line ? a : b;
			fail(err, errlen, "disk map \"%s\" line %u: extent overlaps the one on line %u",
			     path, later->line, later == a ? b->line : a->line);
			goto out;
		}
	}
	rc = 0;
out:
	fclose(f);
	if (rc)
		diskmap_free(m);
	return rc;
}

void diskmap_free(struct diskmap *m)
{
	free(m->ext);
	memset(m, 0, sizeof *m);
}

size_t diskmap_find(const struct diskmap *m, uint64_t off)
{
	size_t lo = 0, hi = m->count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->ext[mid].off + m->ext[mid].len <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}
