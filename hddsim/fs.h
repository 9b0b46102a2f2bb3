/*
 * fs.h - the FUSE low-level operations: a read-only tree whose file reads
 * pass through the modelled drive (sched.c) before they are answered.
 */
#ifndef HDDSIM_FS_H
#define HDDSIM_FS_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include "disk.h"
#include "layout.h"
#include "sched.h"

struct hddsim {
	struct layout layout;
	struct sched  sched;
	struct disk   disk;       /* disk mode: the bytes of MOUNT/disk */
	long     stats_node;      /* node of /.hddsim/stats */
	uint64_t meta_group;      /* inode tables every this many bytes; 0 = no metadata reads */
	unsigned max_read;         /* must match the max_read mount option */
	unsigned max_background;
	unsigned congestion_threshold;
};

extern const struct fuse_lowlevel_ops hddsim_ops;

#endif
