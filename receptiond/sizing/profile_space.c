/*
 * profile_space.c - receptiond-profile's view of the files under PATH as
 * one logical space (directory order, or physical order where FIEMAP
 * tells it), and cold reads anywhere in it.
 */
#include "profile.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

struct pfile *files;
size_t nfiles;
uint64_t total_bytes;
int use_direct = 1;
int fiemap_ok;

static uint64_t first_physical(int fd)
{
	struct {
		struct fiemap fm;
		struct fiemap_extent ext[1];
	} q;
	memset(&q, 0, sizeof q);
	q.fm.fm_length = ~0ull;
	q.fm.fm_extent_count = 1;
	if (ioctl(fd, FS_IOC_FIEMAP, &q.fm) < 0 || q.fm.fm_mapped_extents < 1)
		return UINT64_MAX;
	return q.ext[0].fe_physical;
}

static int add_file(const char *path, const struct stat *st)
{
	if (nfiles >= MAX_FILES || st->st_size < (off_t)ALIGN)
		return 0;
	if (!files) {
		files = calloc(MAX_FILES, sizeof *files);
		if (!files)
			return -1;
	}
	struct pfile *f = &files[nfiles];
	f->path = strdup(path);
	if (!f->path)
		return -1;
	f->size = (uint64_t)st->st_size & ~(uint64_t)(ALIGN - 1);
	f->fd = -1;
	f->phys = UINT64_MAX;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		f->phys = first_physical(fd);
		close(fd);
	}
	nfiles++;
	return 0;
}

/* Directory order (readdir, not sorted: a FUSE disk emulator lays files out
 * in the order it lists them). */
int walk(const char *path, dev_t dev, int depth)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return 0;
	if (st.st_dev != dev)
		return 0;   /* another device: not what we are measuring */
	if (S_ISREG(st.st_mode))
		return add_file(path, &st);
	if (!S_ISDIR(st.st_mode) || depth > 16)
		return 0;
	DIR *d = opendir(path);
	if (!d)
		return 0;
	struct dirent *e;
	int rc = 0;
	char sub[4096];
	while (rc == 0 && nfiles < MAX_FILES && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) >= (int)sizeof sub)
			continue;
		rc = walk(sub, dev, depth + 1);
	}
	closedir(d);
	return rc;
}

static int by_phys(const void *a, const void *b)
{
	const struct pfile *x = a, *y = b;
	return x->phys < y->phys ? -1 : x->phys > y->phys;
}

void layout(void)
{
	fiemap_ok = 1;
	for (size_t i = 0; i < nfiles; i++)
		if (files[i].phys == UINT64_MAX)
			fiemap_ok = 0;
	if (fiemap_ok)
		qsort(files, nfiles, sizeof *files, by_phys);
	total_bytes = 0;
	for (size_t i = 0; i < nfiles; i++) {
		files[i].start = total_bytes;
		total_bytes += files[i].size;
	}
}

/* The file holding logical byte pos (binary search). */
struct pfile *locate(uint64_t pos, uint64_t *off)
{
	size_t lo = 0, hi = nfiles;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (files[mid].start <= pos)
			lo = mid;
		else
			hi = mid;
	}
	*off = (pos - files[lo].start) & ~(uint64_t)(ALIGN - 1);
	return &files[lo];
}

int file_fd(struct pfile *f)
{
	if (f->fd >= 0)
		return f->fd;
	if (use_direct) {
		f->fd = open(f->path, O_RDONLY | O_CLOEXEC | O_DIRECT);
		if (f->fd >= 0)
			return f->fd;
		if (errno != EINVAL)
			return -1;
		use_direct = 0;   /* the file system refuses O_DIRECT: drop-behind instead */
	}
	f->fd = open(f->path, O_RDONLY | O_CLOEXEC);
	if (f->fd >= 0)
		posix_fadvise(f->fd, 0, 0, POSIX_FADV_RANDOM);
	return f->fd;
}

/* One cold read of len bytes at logical pos, clipped at the file's end.
 * Returns bytes read, or -1. */
ssize_t cold_read(uint64_t pos, size_t len, char *buf)
{
	uint64_t off;
	struct pfile *f = locate(pos, &off);
	if (off + len > f->size)
		len = (size_t)(f->size - off);
	if (len == 0)
		return 0;
	int fd = file_fd(f);
	if (fd < 0)
		return -1;
	if (!use_direct)
		posix_fadvise(fd, (off_t)off, (off_t)len, POSIX_FADV_DONTNEED);
	size_t done = 0;
	while (done < len) {
		ssize_t n = pread(fd, buf + done, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return done ? (ssize_t)done : -1;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

void *aligned_buf(size_t len)
{
	void *p = NULL;
	if (posix_memalign(&p, ALIGN, len))
		return NULL;
	memset(p, 0, len);
	return p;
}
