/*
 * placement.h - where a byte of a file lies on its disk (FIEMAP).
 *
 * The disk offset is the file system's physical offset plus where the file
 * system starts on the disk the device queue serves: a partition's start
 * and a loop device's offset in its backing file.  The first extents of
 * each file are cached per (st_dev, inode), so a file's windows cost one
 * FS_IOC_FIEMAP between them; an offset past them asks again from there.
 * File systems that are not on a block device (FUSE, tmpfs, NFS) and
 * those without FIEMAP give RD_POS_UNKNOWN without a call after the first.
 *
 * A stale entry (a file rewritten, an inode number reused) only misorders
 * reads, it never changes what is read; so does a device-mapper volume,
 * whose offset on its disk is not read (volumes sharing a disk are
 * ordered as if each started at 0).  FIEMAP may read extent blocks:
 * call it from a worker, never from the main thread.
 */
#ifndef RD_PLACEMENT_H
#define RD_PLACEMENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "order.h"   /* RD_POS_UNKNOWN */

#define RD_PLACE_EXTENTS 8      /* extents kept per file */
#define RD_PLACE_FILES   1024   /* files kept */

struct rd_extent {
	uint64_t logical, physical, length;
};

/* Disk offset of `offset` of the file open as fd, or RD_POS_UNKNOWN. */
uint64_t rd_placement(int fd, dev_t dev, ino_t ino, uint64_t offset);

/* Disk offset of `offset` among extents e[0..n) (sorted by logical): in an
 * extent, or the start of the next one (a hole reads nothing); unknown
 * past the last.  Pure, for the unit tests. */
uint64_t rd_extent_lookup(const struct rd_extent *e, size_t n, uint64_t offset);

#endif
