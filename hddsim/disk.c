/* disk.c - the bytes of disk mode's one file; see disk.h. */
#include "disk.h"

#include "content.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int disk_open(struct disk *d, const char *image, const char *map, char *err, size_t errlen)
{
	struct stat st;
	memset(d, 0, sizeof *d);
	d->fd = -1;
	if (diskmap_load(map, &d->map, err, errlen))
		return -1;
	d->fd = open(image, O_RDONLY | O_CLOEXEC);
	if (d->fd < 0 || fstat(d->fd, &st)) {
		snprintf(err, errlen, "disk image \"%s\": %s", image, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "disk image \"%s\": not a regular file", image);
		goto fail;
	}
	d->image_bytes = (uint64_t)st.st_size;
	if (d->image_bytes > d->map.bytes) {
		snprintf(err, errlen, "disk image \"%s\": %llu bytes, larger than the map's disk (%llu)",
			 image, (unsigned long long)d->image_bytes, (unsigned long long)d->map.bytes);
		goto fail;
	}
	return 0;
fail:
	disk_close(d);
	return -1;
}

void disk_close(struct disk *d)
{
	if (d->fd >= 0)
		close(d->fd);
	diskmap_free(&d->map);
	d->fd = -1;
}

/* Image bytes [off, off+len); zeros past its end. */
static int image_read(const struct disk *d, uint64_t off, uint8_t *buf, size_t len)
{
	while (len > 0) {
		if (off >= d->image_bytes) {
			memset(buf, 0, len);
			return 0;
		}
		ssize_t got = pread(d->fd, buf, len, (off_t)off);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (got == 0) { /* the image shrank under us */
			memset(buf, 0, len);
			return 0;
		}
		buf += got, off += (uint64_t)got, len -= (size_t)got;
	}
	return 0;
}

int disk_read(const struct disk *d, uint64_t off, void *buf, size_t len)
{
	uint8_t *p = buf;
	uint64_t end = off + len;
	size_t i = diskmap_find(&d->map, off);
	while (off < end) {
		const struct disk_extent *e = i < d->map.count ? &d->map.ext[i] : NULL;
		uint64_t upto;
		if (e && e->off <= off) {
			upto = e->off + e->len < end ? e->off + e->len : end;
			content_fill(e->seed, e->video_off + (off - e->off), p, upto - off);
			i++;
		} else {
			upto = e && e->off < end ? e->off : end;
			int rc = image_read(d, off, p, upto - off);
			if (rc)
				return rc;
		}
		p += upto - off;
		off = upto;
	}
	return 0;
}
