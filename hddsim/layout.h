/*
 * layout.h - the file tree hddsim serves and where each file lies on the
 * modelled platter.
 *
 * Two sources: a video library file (docs/library-format.md; bytes from
 * common/content.h) or a real directory tree (bytes from the real files);
 * or, in disk mode, one file that is the whole disk.
 * Files are laid out in library/directory order from `start` inwards, each
 * on a 4 KiB boundary; a chunk file lies exactly where its bytes lie in the
 * unchunked video, so every layout of a library puts the same data at the
 * same place.  Node i is inode i + 1 (the root is FUSE_ROOT_ID = 1).
 */
#ifndef HDDSIM_LAYOUT_H
#define HDDSIM_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "library.h"

enum node_type { NODE_DIR, NODE_VIDEO, NODE_REAL, NODE_STATS, NODE_DISK };

struct node {
	char    *name;        /* last path component ("" for the root) */
	uint32_t parent;      /* node index */
	uint8_t  type;
	uint8_t  meta_done;   /* its metadata read has been charged */
	uint64_t size;
	uint64_t pos;         /* platter offset of byte 0 */
	uint64_t meta_pos;    /* platter offset of its metadata block */
	uint64_t src_off;     /* NODE_VIDEO: offset in the video */
	uint64_t seed;        /* NODE_VIDEO: content seed */
	char    *real;        /* NODE_REAL: path of the real file */
	uint32_t *kids;       /* NODE_DIR: children in layout order */
	uint32_t nkids, capkids;
};

struct layout {
	struct node *nodes;
	size_t count, cap;
	uint32_t *hash;       /* open addressing over (parent, name) -> index + 1 */
	size_t hashcap;
	uint64_t start, end;  /* platter bytes the files occupy */
	struct library lib;   /* kept for the video names */
};

/* Build from a library file or a directory (whichever `source` is), laid
 * out from platter offset `start`; with spread_end > start the videos of a
 * library file are spread evenly up to spread_end (equal gaps between them,
 * as the SYSTOR 2014 paper placed its library), else packed.  -1 with a
 * one-line message in err. */
int layout_build(struct layout *l, const char *source, uint64_t start, uint64_t spread_end,
		 char *err, size_t errlen);
void layout_free(struct layout *l);

/* Disk mode's tree: one file "disk" of `bytes` whose byte 0 lies at
 * platter offset 0 (its bytes come from disk.c). */
int layout_build_disk(struct layout *l, uint64_t bytes, char *err, size_t errlen);

/* Give every file its own 4 KiB metadata block (inode and block map) in a
 * table at the start of its group of `group` bytes, in layout order. */
void layout_assign_metadata(struct layout *l, uint64_t group);

/* Child `name` of directory node `dir`, or -1. */
long layout_lookup(const struct layout *l, uint32_t dir, const char *name);

/* Index of the hidden stats file, added under /.hddsim. */
long layout_add_stats(struct layout *l);

#endif
