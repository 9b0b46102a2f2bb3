/*
 * disk.h - the bytes of disk mode's one file, MOUNT/disk: the extents of
 * the map (diskmap.h) hold synthesized video bytes (common/content.h),
 * everything else is read from a sparse image (holes and bytes past its
 * end read as zeros).  So a file system's own blocks are stored, its
 * videos never are.
 */
#ifndef HDDSIM_DISK_H
#define HDDSIM_DISK_H

#include <stddef.h>
#include <stdint.h>

#include "diskmap.h"

struct disk {
	struct diskmap map;
	int fd;                /* the image, -1 when closed */
	uint64_t image_bytes;  /* its size; reads past it are zeros */
};

/* Load the map and open the image; -1 with a one-line message. */
int disk_open(struct disk *d, const char *image, const char *map, char *err, size_t errlen);
void disk_close(struct disk *d);

/* Fill buf with disk bytes [off, off+len), which must lie within the
 * disk; 0, or -errno if the image could not be read. */
int disk_read(const struct disk *d, uint64_t off, void *buf, size_t len);

#endif
