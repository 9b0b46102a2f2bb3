/* library.c - parser for video library files; see library.h. */
#include "library.h"
#include "content.h"
#include "textfile.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIB_MAGIC "lcvl"
#define LIB_VERSION 1

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

int lib_name_ok(const char *name)
{
	if (!*name || *name == '/' || strlen(name) > 200)
		return 0;
	for (const char *p = name; *p; p++)
		if (*p <= ' ' || *p == '%' || *p == '?' || *p == '#' || *p == '"' || *p == '\\')
			return 0;
	return !strstr(name, "..") && !strstr(name, "//") && name[strlen(name) - 1] != '/';
}

uint64_t lib_video_chunks(const struct lib_video *v)
{
	return v->chunk ? (v->bytes + v->chunk - 1) / v->chunk : 0;
}

int library_load(const char *path, struct library *lib, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	size_t cap = 0, lineno = 0;
	int seen_magic = 0, rc = -1;

	memset(lib, 0, sizeof *lib);
	if (!f)
		return fail(err, errlen, "library \"%s\": %s", path, strerror(errno));
	char *tok[6];
	int n;
	while ((n = text_fields(f, line, sizeof line, &lineno, tok, 6)) != 0) {
		if (n < 0) {
			fail(err, errlen, "library \"%s\" line %zu: line too long", path, lineno);
			goto out;
		}
		if (!seen_magic) {
			uint64_t ver;
			if (n != 2 || strcmp(tok[0], LIB_MAGIC) || text_u64(tok[1], &ver) || ver != LIB_VERSION) {
				fail(err, errlen, "library \"%s\" line %zu: expected \"" LIB_MAGIC " %d\"",
				     path, lineno, LIB_VERSION);
				goto out;
			}
			seen_magic = 1;
			continue;
		}
		struct lib_video v = {0};
		if (strcmp(tok[0], "video") || n != 5 || !lib_name_ok(tok[1]) ||
		    text_u64(tok[2], &v.bytes) || text_u64(tok[3], &v.bitrate) ||
		    text_u64(tok[4], &v.chunk) || v.bytes == 0 || v.bitrate == 0 ||
		    (v.chunk && v.chunk % 4096)) {
			fail(err, errlen, "library \"%s\" line %zu: expected \"video NAME BYTES BITRATE CHUNK\" "
			     "(positive numbers, CHUNK 0 or a multiple of 4096)", path, lineno);
			goto out;
		}
		if (lib->count == cap) {
			cap = cap ? cap * 2 : 1024;
			struct lib_video *nv = realloc(lib->videos, cap * sizeof *nv);
			if (!nv) {
				fail(err, errlen, "library \"%s\": out of memory", path);
				goto out;
			}
			lib->videos = nv;
		}
		v.name = strdup(tok[1]);
		if (!v.name) {
			fail(err, errlen, "library \"%s\": out of memory", path);
			goto out;
		}
		v.seed = content_seed(v.name);
		lib->videos[lib->count++] = v;
		lib->total_bytes += v.bytes;
	}
	if (ferror(f))
		fail(err, errlen, "library \"%s\": %s", path, strerror(errno));
	else if (!seen_magic || lib->count == 0)
		fail(err, errlen, "library \"%s\": no videos", path);
	else
		rc = 0;
out:
	fclose(f);
	if (rc)
		library_free(lib);
	return rc;
}

void library_free(struct library *lib)
{
	for (size_t i = 0; i < lib->count; i++)
		free(lib->videos[i].name);
	free(lib->videos);
	memset(lib, 0, sizeof *lib);
}
