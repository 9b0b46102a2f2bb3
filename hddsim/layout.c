/* layout.c - the served file tree and its platter placement; see layout.h. */
#include "layout.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define ALIGN 4096ull

static uint64_t align_up(uint64_t x) { return (x + ALIGN - 1) & ~(ALIGN - 1); }

static uint64_t key_hash(uint32_t parent, const char *name)
{
	uint64_t h = 0xcbf29ce484222325ull ^ parent;
	for (; *name; name++)
		h = (h ^ (uint8_t)*name) * 0x100000001b3ull;
	return h ^ (h >> 29);
}

static int hash_insert(struct layout *l, uint32_t idx);

static int hash_grow(struct layout *l)
{
	size_t ncap = l->hashcap ? l->hashcap * 2 : 1024;
	uint32_t *old = l->hash;
	size_t oldcap = l->hashcap;
	l->hash = calloc(ncap, sizeof *l->hash);
	if (!l->hash) {
		l->hash = old;
		return -1;
	}
	l->hashcap = ncap;
	for (size_t i = 0; i < oldcap; i++)
		if (old[i])
			hash_insert(l, old[i] - 1);
	free(old);
	return 0;
}

static int hash_insert(struct layout *l, uint32_t idx)
{
	if ((l->count + 1) * 2 > l->hashcap && hash_grow(l))
		return -1;
	size_t mask = l->hashcap - 1;
	size_t i = key_hash(l->nodes[idx].parent, l->nodes[idx].name) & mask;
	while (l->hash[i])
		i = (i + 1) & mask;
	l->hash[i] = idx + 1;
	return 0;
}

long layout_lookup(const struct layout *l, uint32_t dir, const char *name)
{
	if (!l->hashcap)
		return -1;
	size_t mask = l->hashcap - 1;
	for (size_t i = key_hash(dir, name) & mask; l->hash[i]; i = (i + 1) & mask) {
		const struct node *n = &l->nodes[l->hash[i] - 1];
		if (n->parent == dir && l->hash[i] - 1 != 0 && !strcmp(n->name, name))
			return (long)l->hash[i] - 1;
	}
	return -1;
}

/* Append a node under `parent`; returns its index or -1 (out of memory). */
static long add_node(struct layout *l, uint32_t parent, const char *name, enum node_type type)
{
	if (l->count == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 1024;
		struct node *nn = realloc(l->nodes, ncap * sizeof *nn);
		if (!nn)
			return -1;
		l->nodes = nn;
		l->cap = ncap;
	}
	uint32_t idx = (uint32_t)l->count;
	struct node *n = &l->nodes[idx];
	memset(n, 0, sizeof *n);
	n->name = strdup(name);
	n->parent = parent;
	n->type = (uint8_t)type;
	if (!n->name)
		return -1;
	l->count++;
	if (idx == 0)
		return 0; /* the root is nobody's child */
	if (hash_insert(l, idx))
		return -1;
	struct node *p = &l->nodes[parent];
	if (p->nkids == p->capkids) {
		uint32_t nc = p->capkids ? p->capkids * 2 : 8;
		uint32_t *nk = realloc(p->kids, nc * sizeof *nk);
		if (!nk)
			return -1;
		p->kids = nk;
		p->capkids = nc;
	}
	p->kids[p->nkids++] = idx;
	return idx;
}

/* Node of directory `path` (relative, '/'-separated), created as needed;
 * -1 if a file is in the way or memory ran out. */
static long mkdir_p(struct layout *l, char *path)
{
	long cur = 0;
	for (char *save = NULL, *c = strtok_r(path, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		long next = layout_lookup(l, (uint32_t)cur, c);
		if (next < 0)
			next = add_node(l, (uint32_t)cur, c, NODE_DIR);
		if (next < 0 || l->nodes[next].type != NODE_DIR)
			return -1;
		cur = next;
	}
	return cur;
}

/* Add file `path`; its parent directories are created. */
static long add_file(struct layout *l, const char *path, enum node_type type)
{
	char buf[1024];
	snprintf(buf, sizeof buf, "%s", path);
	char *slash = strrchr(buf, '/');
	long dir = 0;
	const char *base = buf;
	if (slash) {
		*slash = 0;
		base = slash + 1;
		dir = mkdir_p(l, buf);
	}
	if (dir < 0 || layout_lookup(l, (uint32_t)dir, base) >= 0)
		return -1;
	return add_node(l, (uint32_t)dir, base, type);
}

static int from_library(struct layout *l, const char *path, uint64_t spread_end,
			char *err, size_t errlen)
{
	if (library_load(path, &l->lib, err, errlen))
		return -1;
	uint64_t pos = l->start, gap = 0, need = 0;
	for (size_t i = 0; i < l->lib.count; i++)
		need += align_up(l->lib.videos[i].bytes);
	if (spread_end > l->start + need)
		gap = (spread_end - l->start - need) / l->lib.count & ~(ALIGN - 1);
	for (size_t i = 0; i < l->lib.count; i++) {
		const struct lib_video *v = &l->lib.videos[i];
		uint64_t nchunks = lib_video_chunks(v);
		for (uint64_t k = 0; k < (nchunks ? nchunks : 1); k++) {
			char name[1024];
			if (nchunks)
				snprintf(name, sizeof name, LIB_CHUNK_FMT, v->name, (unsigned long long)k);
			else
				snprintf(name, sizeof name, "%s", v->name);
			long n = add_file(l, name, NODE_VIDEO);
			if (n < 0) {
				snprintf(err, errlen, "library \"%s\": video \"%s\": name clashes with another "
					 "video or directory (or out of memory)", path, v->name);
				return -1;
			}
			struct node *nd = &l->nodes[n];
			nd->src_off = nchunks ? k * v->chunk : 0;
			nd->size = nchunks ? (k + 1 < nchunks ? v->chunk : v->bytes - k * v->chunk) : v->bytes;
			nd->pos = pos + nd->src_off;
			nd->seed = v->seed;
		}
		pos = align_up(pos + v->bytes) + gap;
	}
	l->end = pos;
	return 0;
}

static int skip_dot(const struct dirent *d)
{
	return strcmp(d->d_name, ".") && strcmp(d->d_name, "..");
}

/* Depth-first in name order: the order `find` with sorting would list. */
static int walk(struct layout *l, const char *real, uint32_t dir, uint64_t *pos,
		char *err, size_t errlen)
{
	struct dirent **ents;
	int n = scandir(real, &ents, skip_dot, alphasort), rc = 0;
	if (n < 0) {
		snprintf(err, errlen, "library \"%s\": %s", real, strerror(errno));
		return -1;
	}
	for (int i = 0; i < n; i++) {
		char path[4096];
		struct stat st;
		snprintf(path, sizeof path, "%s/%s", real, ents[i]->d_name);
		if (rc || lstat(path, &st))
			continue;
		if (S_ISDIR(st.st_mode)) {
			long d = add_node(l, dir, ents[i]->d_name, NODE_DIR);
			if (d < 0 || walk(l, path, (uint32_t)d, pos, err, errlen))
				rc = -1;
		} else if (S_ISREG(st.st_mode)) {
			long f = add_node(l, dir, ents[i]->d_name, NODE_REAL);
			if (f < 0 || !(l->nodes[f].real = strdup(path))) {
				snprintf(err, errlen, "library \"%s\": out of memory", real);
				rc = -1;
				continue;
			}
			l->nodes[f].size = (uint64_t)st.st_size;
			l->nodes[f].pos = *pos;
			*pos = align_up(*pos + (uint64_t)st.st_size);
		}
		/* Symlinks, devices and sockets are not served (docs: LIMITS). */
	}
	for (int i = 0; i < n; i++)
		free(ents[i]);
	free(ents);
	return rc;
}

int layout_build(struct layout *l, const char *source, uint64_t start, uint64_t spread_end,
		 char *err, size_t errlen)
{
	struct stat st;
	memset(l, 0, sizeof *l);
	l->start = start;
	if (add_node(l, 0, "", NODE_DIR) < 0) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (stat(source, &st)) {
		snprintf(err, errlen, "library \"%s\": %s", source, strerror(errno));
		goto fail;
	}
	if (S_ISDIR(st.st_mode)) {
		uint64_t pos = start;
		if (walk(l, source, 0, &pos, err, errlen))
			goto fail;
		l->end = pos;
	} else if (from_library(l, source, spread_end, err, errlen)) {
		goto fail;
	}
	return 0;
fail:
	layout_free(l);
	return -1;
}

int layout_build_disk(struct layout *l, uint64_t bytes, char *err, size_t errlen)
{
	memset(l, 0, sizeof *l);
	long n = add_node(l, 0, "", NODE_DIR);
	if (n >= 0)
		n = add_node(l, 0, "disk", NODE_DISK);
	if (n < 0) {
		snprintf(err, errlen, "out of memory");
		layout_free(l);
		return -1;
	}
	l->nodes[n].size = bytes;
	l->end = bytes;
	return 0;
}

void layout_assign_metadata(struct layout *l, uint64_t group)
{
	uint64_t cur = UINT64_MAX, rank = 0;
	if (!group)
		return;
	for (size_t i = 0; i < l->count; i++) {
		struct node *n = &l->nodes[i];
		if (n->type != NODE_VIDEO && n->type != NODE_REAL)
			continue;
		uint64_t g = n->pos / group;
		rank = g == cur ? rank + 1 : 0;
		cur = g;
		n->meta_pos = g * group + rank % (group / ALIGN) * ALIGN;
	}
}

long layout_add_stats(struct layout *l)
{
	long d = add_node(l, 0, ".hddsim", NODE_DIR);
	if (d < 0)
		return -1;
	return add_node(l, (uint32_t)d, "stats", NODE_STATS);
}

void layout_free(struct layout *l)
{
	for (size_t i = 0; i < l->count; i++) {
		free(l->nodes[i].name);
		free(l->nodes[i].real);
		free(l->nodes[i].kids);
	}
	free(l->nodes);
	free(l->hash);
	library_free(&l->lib);
	memset(l, 0, sizeof *l);
}
