/*
 * diskmap.h - the extent map of disk mode (format: docs/hddsim.md, "Disk
 * mode"): which byte ranges of the emulated disk hold which video's bytes.
 * Everything else on the disk comes from the sparse image (disk.c).
 */
#ifndef HDDSIM_DISKMAP_H
#define HDDSIM_DISKMAP_H

#include <stddef.h>
#include <stdint.h>

struct disk_extent {
	uint64_t off, len;     /* disk bytes [off, off+len) */
	uint64_t video_off;    /* ... are the video's bytes from here */
	uint64_t seed;         /* content_seed(video name) */
	uint32_t line;         /* where the map named it, for errors */
};

struct diskmap {
	struct disk_extent *ext;   /* sorted by off, disjoint */
	size_t count;
	uint64_t bytes;            /* size of the disk */
};

/* 0 on success; -1 with a one-line message naming the file and line. */
int diskmap_load(const char *path, struct diskmap *m, char *err, size_t errlen);
void diskmap_free(struct diskmap *m);

/* Index of the first extent that ends after `off` (m->count if none):
 * the extent holding `off`, or the next one after it. */
size_t diskmap_find(const struct diskmap *m, uint64_t off);

#endif
