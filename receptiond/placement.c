/* placement.c - see placement.h. */
#include "placement.h"

#include <errno.h>
#include <limits.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* Extent flags that leave the data's place on the disk unknown. */
#define UNPLACED (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_ENCODED | \
                  FIEMAP_EXTENT_DATA_INLINE | FIEMAP_EXTENT_DATA_TAIL | FIEMAP_EXTENT_NOT_ALIGNED)
#define FS_SLOTS 64

struct fs_base {
	dev_t dev;
	int known;          /* 0: ask nothing (not a block device, or no FIEMAP) */
	uint64_t base;      /* where the file system starts on its disk */
};

struct file_entry {
	dev_t dev;
	ino_t ino;
	size_t n;           /* 0: empty slot */
	struct rd_extent e[RD_PLACE_EXTENTS];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct fs_base bases[FS_SLOTS];
static size_t nbases;
static struct file_entry files[RD_PLACE_FILES];

uint64_t rd_extent_lookup(const struct rd_extent *e, size_t n, uint64_t offset)
{
	for (size_t i = 0; i < n; i++) {
		if (offset < e[i].logical)
			return e[i].physical;
		if (offset < e[i].logical + e[i].length)
			return e[i].physical + (offset - e[i].logical);
	}
	return RD_POS_UNKNOWN;
}

static int read_u64(const char *path, uint64_t *out)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	unsigned long long v;
	int ok = fscanf(f, "%llu", &v) == 1;
	fclose(f);
	if (ok)
		*out = v;
	return ok ? 0 : -1;
}

/* Where the file system on block device dev starts on the disk the device
 * queue serves (partition start, plus a loop device's offset); -1 if dev
 * is no block device. */
static int disk_base(dev_t dev, uint64_t *base)
{
	char sys[64], real[PATH_MAX], path[PATH_MAX + 32];
	snprintf(sys, sizeof sys, "/sys/dev/block/%u:%u", major(dev), minor(dev));
	if (!realpath(sys, real))
		return -1;
	*base = 0;
	uint64_t v;
	snprintf(path, sizeof path, "%s/partition", real);
	if (access(path, F_OK) == 0) {
		snprintf(path, sizeof path, "%s/start", real);
		if (read_u64(path, &v) == 0)
			*base += v * 512;
		char *slash = strrchr(real, '/');
		if (slash)
			*slash = 0;
	}
	snprintf(path, sizeof path, "%s/loop/offset", real);
	if (read_u64(path, &v) == 0)
		*base += v;
	return 0;
}

static struct fs_base *fs_of(dev_t dev)
{
	for (size_t i = 0; i < nbases; i++)
		if (bases[i].dev == dev)
			return &bases[i];
	if (nbases == FS_SLOTS)
		return NULL;
	struct fs_base *b = &bases[nbases++];
	*b = (struct fs_base){ .dev = dev };
	b->known = disk_base(dev, &b->base) == 0;
	return b;
}

static struct file_entry *slot_of(dev_t dev, ino_t ino)
{
	uint64_t h = ((uint64_t)dev * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)ino * 0xc2b2ae3d27d4eb4full);
	return &files[(h >> 17) % RD_PLACE_FILES];
}

/* The file's extents from `offset` on into ent; -errno on failure. */
static int fiemap_from(int fd, uint64_t offset, struct file_entry *ent)
{
	union {
		struct fiemap fm;
		char buf[sizeof(struct fiemap) + RD_PLACE_EXTENTS * sizeof(struct fiemap_extent)];
	} u;
	memset(&u, 0, sizeof u);
	u.fm.fm_start = offset;
	u.fm.fm_length = FIEMAP_MAX_OFFSET - offset;
	u.fm.fm_extent_count = RD_PLACE_EXTENTS;
	if (ioctl(fd, FS_IOC_FIEMAP, &u.fm) != 0)
		return -errno;
	ent->n = 0;
	for (unsigned i = 0; i < u.fm.fm_mapped_extents && i < RD_PLACE_EXTENTS; i++) {
		const struct fiemap_extent *x = &u.fm.fm_extents[i];
		if (x->fe_flags & UNPLACED)
			break;   /* what follows would be guessed across it */
		ent->e[ent->n++] = (struct rd_extent){ x->fe_logical, x->fe_physical, x->fe_length };
	}
	return 0;
}

uint64_t rd_placement(int fd, dev_t dev, ino_t ino, uint64_t offset)
{
	pthread_mutex_lock(&lock);
	struct fs_base *b = fs_of(dev);
	int known = b && b->known;
	uint64_t base = known ? b->base : 0;
	struct file_entry *ent = slot_of(dev, ino);
	uint64_t pos = RD_POS_UNKNOWN;
	if (known && ent->n && ent->dev == dev && ent->ino == ino && offset >= ent->e[0].logical)
		pos = rd_extent_lookup(ent->e, ent->n, offset);
	pthread_mutex_unlock(&lock);
	if (!known)
		return RD_POS_UNKNOWN;
	if (pos != RD_POS_UNKNOWN)
		return base + pos;

	/* Not cached: ask (without the lock: it may read the extent tree). */
	struct file_entry fresh = { .dev = dev, .ino = ino };
	int err = fiemap_from(fd, offset, &fresh);
	pthread_mutex_lock(&lock);
	if (err == -ENOTTY || err == -EOPNOTSUPP || err == -ENOSYS || err == -EINVAL)
		b->known = 0;       /* this file system has no FIEMAP: never ask again */
	else if (!err && fresh.n)
		*slot_of(dev, ino) = fresh;
	pthread_mutex_unlock(&lock);
	if (err || !fresh.n)
		return RD_POS_UNKNOWN;
	pos = rd_extent_lookup(fresh.e, fresh.n, offset);
	return pos == RD_POS_UNKNOWN ? pos : base + pos;
}
