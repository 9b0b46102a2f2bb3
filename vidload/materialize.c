/*
 * materialize.c - `--materialize DIR`: write a library's files (whole
 * videos or chunk files) with their synthetic content into a real
 * directory, so a stock web server can serve it without hddsim.
 */
#include "content.h"
#include "modes.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BUF (1 << 20)

/* mkdir -p of the directories leading to path. */
static int make_parents(char *path)
{
	for (char *p = strchr(path + 1, '/'); p; p = strchr(p + 1, '/')) {
		*p = 0;
		int rc = mkdir(path, 0755);
		*p = '/';
		if (rc && errno != EEXIST)
			return -1;
	}
	return 0;
}

static int write_file(const char *path, uint64_t seed, uint64_t off, uint64_t len, char *buf)
{
	char tmp[4096];
	int fd, rc = -1;

	snprintf(tmp, sizeof tmp, "%s", path);
	if (make_parents(tmp) || (fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
		fprintf(stderr, "vidload: materialize \"%s\": %s\n", path, strerror(errno));
		return -1;
	}
	for (uint64_t done = 0; done < len;) {
		size_t n = len - done < BUF ? (size_t)(len - done) : BUF;
		content_fill(seed, off + done, buf, n);
		if (write(fd, buf, n) != (ssize_t)n) {
			fprintf(stderr, "vidload: materialize \"%s\": %s\n", path, strerror(errno));
			goto out;
		}
		done += n;
	}
	rc = 0;
out:
	close(fd);
	return rc;
}

int materialize_run(const struct library *lib, const char *dir)
{
	char *buf = malloc(BUF), path[4096];
	int rc = 1;

	if (!buf || (mkdir(dir, 0755) && errno != EEXIST)) {
		fprintf(stderr, "vidload: materialize \"%s\": %s\n", dir, buf ? strerror(errno) : "out of memory");
		goto out;
	}
	for (size_t i = 0; i < lib->count; i++) {
		const struct lib_video *v = &lib->videos[i];
		if (!v->chunk) {
			snprintf(path, sizeof path, "%s/%s", dir, v->name);
			if (write_file(path, v->seed, 0, v->bytes, buf))
				goto out;
			continue;
		}
		for (uint64_t k = 0; k < lib_video_chunks(v); k++) {
			uint64_t off = k * v->chunk, len = v->bytes - off < v->chunk ? v->bytes - off : v->chunk;
			snprintf(path, sizeof path, "%s/" LIB_CHUNK_FMT, dir, v->name, (unsigned long long)k);
			if (write_file(path, v->seed, off, len, buf))
				goto out;
		}
	}
	rc = 0;
out:
	free(buf);
	return rc;
}
