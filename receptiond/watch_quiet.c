/*
 * watch_quiet.c - quiet files in watch mode (see watch_quiet.h).
 *
 * Checking a whole file costs a cachestat over it (~11 µs per MiB here),
 * so a file found not wholly resident is not checked again for a recheck
 * interval: a small direct-mapped table of (device, inode, when) that only
 * the listener touches.
 */
#include "watch_quiet.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <sys/fanotify.h>
#include <sys/stat.h>

#include "json.h"
#include "log.h"
#include "policy.h"
#include "prefetch.h"

#ifndef FAN_PRE_ACCESS
#define FAN_PRE_ACCESS 0x00100000
#endif
#ifndef FAN_MARK_EVICTABLE
#define FAN_MARK_EVICTABLE 0x00000200
#endif
#ifndef FAN_MARK_IGNORE
#define FAN_MARK_IGNORE 0x00000400
#endif

#define NOT_WHOLE_SLOTS 4096
/* Marks are kernel memory (~100 bytes each) that any reader of a watched
 * mount can make us add: at most this many between two flushes. */
#define MAX_MARKS 65536

static struct {
	int fan_fd;
	uint64_t max_bytes, recheck_ns;
	_Atomic uint64_t next_flush_ns;
	struct { dev_t dev; ino_t ino; uint64_t at_ns; } not_whole[NOT_WHOLE_SLOTS];
	_Atomic uint64_t quieted, checks, flushes;
	_Atomic unsigned marks;     /* since the last flush */
} Q = { .fan_fd = -1 };

void rd_quiet_init(int fan_fd, uint64_t max_bytes, uint64_t recheck_ms)
{
	Q.fan_fd = fan_fd;
	Q.max_bytes = max_bytes;
	Q.recheck_ns = recheck_ms * 1000000ull;
	atomic_store(&Q.next_flush_ns, rd_now_ns() + Q.recheck_ns);
}

void rd_quiet_after_hit(int fd, uint64_t off, uint64_t len)
{
	struct stat st;
	if (!Q.max_bytes || atomic_load(&Q.marks) >= MAX_MARKS)
		return;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    (uint64_t)st.st_size > Q.max_bytes)
		return;
	uint64_t size = (uint64_t)st.st_size, now = rd_now_ns();
	unsigned k = (unsigned)((st.st_ino * 0x9E3779B97F4A7C15ull) >> 52) % NOT_WHOLE_SLOTS;
	if (Q.not_whole[k].ino == st.st_ino && Q.not_whole[k].dev == st.st_dev &&
	    now - Q.not_whole[k].at_ns < Q.recheck_ns)
		return;
	/* The hit already vouched for its own range: a read of the whole
	 * file needs no second look. */
	int whole = off == 0 && len >= size;
	if (!whole) {
		atomic_fetch_add(&Q.checks, 1);
		whole = rd_is_resident(fd, 0, size) == 1;
	}
	if (!whole) {
		Q.not_whole[k].dev = st.st_dev;
		Q.not_whole[k].ino = st.st_ino;
		Q.not_whole[k].at_ns = now;
		return;
	}
	if (fanotify_mark(Q.fan_fd, FAN_MARK_ADD | FAN_MARK_IGNORE | FAN_MARK_IGNORED_SURV_MODIFY |
	                  FAN_MARK_EVICTABLE, FAN_PRE_ACCESS, fd, NULL) == 0) {
		atomic_fetch_add(&Q.quieted, 1);
		atomic_fetch_add(&Q.marks, 1);
	}
}

void rd_quiet_tick(uint64_t now_ns)
{
	if (!Q.max_bytes || Q.fan_fd < 0 || now_ns < atomic_load(&Q.next_flush_ns))
		return;
	atomic_store(&Q.next_flush_ns, now_ns + Q.recheck_ns);
	/* Without FAN_MARK_MOUNT or FAN_MARK_FILESYSTEM a flush removes the
	 * group's inode marks: the ignore marks, never the mounts' marks. */
	if (atomic_load(&Q.marks) && fanotify_mark(Q.fan_fd, FAN_MARK_FLUSH, 0, AT_FDCWD, NULL) == 0) {
		atomic_store(&Q.marks, 0);
		atomic_fetch_add(&Q.flushes, 1);
	}
}

void rd_quiet_counts(uint64_t *quieted, uint64_t *flushes)
{
	*quieted = atomic_load(&Q.quieted);
	*flushes = atomic_load(&Q.flushes);
}

void rd_quiet_json(struct rd_json *j)
{
	rd_json_u64(j, "quiet_max_bytes", Q.max_bytes);
	rd_json_u64(j, "recheck_ms", Q.recheck_ns / 1000000);
	rd_json_u64(j, "quieted", atomic_load(&Q.quieted));
	rd_json_u64(j, "quiet_checks", atomic_load(&Q.checks));
	rd_json_u64(j, "quiet_flushes", atomic_load(&Q.flushes));
}
