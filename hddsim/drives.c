/* drives.c - drive presets from drives.conf; see drives.h. */
#include "drives.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Values a preset may leave out. */
static void defaults(struct drive *d)
{
	memset(d, 0, sizeof *d);
	d->seek_min = 1.0;
	d->overhead = 0.1;
	d->host_overhead = 0.15;
	d->hit_overhead = 0.05;
	d->interface_rate = 300;
	d->segments = 16;
	d->segment_bytes = 2 << 20;
	d->readahead = 512 << 10;
	d->policy = MODEL_SPTF;
	d->queue_depth = 32;
	d->age_limit = 500;
}

struct key {
	const char *name;
	enum { DBL, U64, UINT, POLICY } type;
	size_t off;
};

#define K(n, t) { #n, t, offsetof(struct drive, n) }
static const struct key keys[] = {
	K(rpm, DBL), K(capacity, U64),
	K(rate_outer, DBL), K(rate_middle, DBL), K(rate_inner, DBL),
	K(access_quarter, DBL), K(access_half, DBL), K(access_full, DBL),
	K(seek_min, DBL), K(overhead, DBL), K(host_overhead, DBL), K(hit_overhead, DBL), K(interface_rate, DBL),
	K(segments, UINT), K(segment_bytes, U64), K(readahead, U64),
	K(policy, POLICY), K(queue_depth, UINT), K(age_limit, DBL),
};
#define NKEYS (sizeof keys / sizeof keys[0])

static int set_key(struct drive *d, const char *k, const char *v)
{
	char *end;
	for (size_t i = 0; i < NKEYS; i++) {
		if (strcmp(keys[i].name, k))
			continue;
		void *p = (char *)d + keys[i].off;
		errno = 0;
		switch (keys[i].type) {
		case DBL:
			*(double *)p = strtod(v, &end);
			break;
		case U64:
			*(uint64_t *)p = strtoull(v, &end, 10);
			break;
		case UINT:
			*(unsigned *)p = (unsigned)strtoul(v, &end, 10);
			break;
		case POLICY:
			if (!strcmp(v, "fifo"))
				*(enum model_policy *)p = MODEL_FIFO;
			else if (!strcmp(v, "sptf"))
				*(enum model_policy *)p = MODEL_SPTF;
			else
				return -1;
			return 0;
		}
		return errno || end == v || *end || *v == '-' ? -1 : 0;
	}
	return -1;
}

/* Calls fn for every preset header and key line; stops at the first error. */
static int parse(const char *path, const char *want, struct drive *d, int *found,
		 int list, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char line[512], cur[64] = "";
	size_t lineno = 0;
	int rc = -1;
	if (!f) {
		snprintf(err, errlen, "drive file \"%s\": %s", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof line, f)) {
		lineno++;
		char *hash = strchr(line, '#');
		if (hash)
			*hash = 0;
		char *tok[3];
		int n = 0;
		for (char *s = strtok(line, " \t\r\n"); s && n < 3; s = strtok(NULL, " \t\r\n"))
			tok[n++] = s;
		if (n == 0)
			continue;
		if (n != 2) {
			snprintf(err, errlen, "drive file \"%s\" line %zu: expected \"KEY VALUE\"", path, lineno);
			goto out;
		}
		if (!strcmp(tok[0], "drive")) {
			snprintf(cur, sizeof cur, "%s", tok[1]);
			if (list)
				printf("%s\n", cur);
			if (want && !strcmp(cur, want)) {
				*found = 1;
				defaults(d);
				snprintf(d->name, sizeof d->name, "%s", cur);
			}
			continue;
		}
		if (!cur[0]) {
			snprintf(err, errlen, "drive file \"%s\" line %zu: \"%s\" before any \"drive NAME\"",
				 path, lineno, tok[0]);
			goto out;
		}
		struct drive scratch;
		struct drive *target = want && !strcmp(cur, want) ? d : &scratch;
		if (set_key(target, tok[0], tok[1])) {
			snprintf(err, errlen, "drive file \"%s\" line %zu: bad key or value \"%s %s\"",
				 path, lineno, tok[0], tok[1]);
			goto out;
		}
	}
	rc = 0;
out:
	fclose(f);
	return rc;
}

int drives_load(const char *path, const char *name, struct drive *d, char *err, size_t errlen)
{
	int found = 0;
	if (parse(path, name, d, &found, 0, err, errlen))
		return -1;
	if (!found) {
		snprintf(err, errlen, "drive \"%s\": not in \"%s\"", name, path);
		return -1;
	}
	return 0;
}

int drives_list(const char *path, char *err, size_t errlen)
{
	int found = 0;
	return parse(path, NULL, NULL, &found, 1, err, errlen);
}
