/*
 * decide.c - what happens before and after every intercepted call.
 *
 * Before: only regular files are ours (fstat); the range the call will
 * read is clipped to the file size; a resident range is a hit and goes
 * straight to libc.  Otherwise, per mode, the daemon is asked to make it
 * resident (serialized with every other reader of the device, enlarged to
 * the prefetch size) or the enlarged read is done here.  Then the caller
 * makes the real call, unchanged, and after() records its time.
 *
 * Cost on a hit: one cachestat (+ lseek when the call uses the file
 * offset) + two clock reads.  fstat, fstatfs and fcntl(F_GETFL) (O_DIRECT,
 * write-only, O_PATH) are only paid on a miss: a hit on an O_DIRECT fd is
 * passed through anyway, so it needs no check.  The device a hit is
 * counted on comes from devices.c's fd cache: an fstat only on the first
 * hit of a descriptor.
 *
 * With LIBCEPTION_LOOKAHEAD=1 a hit also tells ahead.c how far the reader
 * got, and a miss the window the daemon vouched for (no syscall unless a
 * look-ahead is sent).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim.h"

/* An enormous call (cat's copy_file_range asks for 1 GiB at a time) is
 * ensured only up to this much from its start: the daemon answers after
 * one prefetch, and the kernel reads the rest while the call runs. */
static uint64_t ensure_cap(void)
{
	return shim_cfg.prefetch > LC_DEFAULT_PREFETCH ? shim_cfg.prefetch : LC_DEFAULT_PREFETCH;
}

/* Files the daemon must not be handed: no page cache (O_DIRECT), or
 * unreadable through this fd (the program's call fails by itself). */
static int fd_is_readable_buffered(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return 0;
	if (fl & (O_DIRECT | O_PATH))
		return 0;
	return (fl & O_ACCMODE) != O_WRONLY;
}

static void miss(struct shim_op *op, int fd, const struct stat *st, uint64_t off, uint64_t len)
{
	if (!fd_is_readable_buffered(fd))
		return;
	uint64_t roff = 0, rlen = 0;
	switch (shim_cfg.mode) {
	case SHIM_MODE_PREFETCH: {
		uint64_t want = len > shim_cfg.prefetch ? len : shim_cfg.prefetch;
		if (want > (uint64_t)st->st_size - off)
			want = (uint64_t)st->st_size - off;
		rlen = shim_local_prefetch(fd, off, want);
		roff = off;
		break;
	}
	case SHIM_MODE_SERIALIZE:
	case SHIM_MODE_PREFETCH_SERIALIZE: {
		enum shim_ensure e = shim_client_ensure(fd, off, len, op->call, &roff, &rlen);
		if (e == SHIM_ENSURE_DIRECT)
			shim_dev_set_direct(op->dev, op->t0);
		if (e != SHIM_ENSURE_OK)
			rlen = 0;
		if (shim_cfg.lookahead && rlen) {
			/* a call as long as the window reaches its end at once */
			shim_ahead_learn(fd, roff, rlen, (uint64_t)st->st_size);
			shim_ahead_reached(fd, off, len, op->call);
		}
		break;
	}
	default:
		return;
	}
	shim_hint_set(st->st_dev, st->st_ino, roff, rlen);
}

/* The old fstat syscall: glibc's fstat() is fstatat(fd, "", AT_EMPTY_PATH),
 * which costs a path lookup on top. */
static int raw_fstat(int fd, struct stat *st)
{
	return (int)syscall(SYS_fstat, fd, st);
}

/* fstat that also teaches the fd cache which device fd's file is on.
 * Only regular files take a device slot: pipes, sockets and device nodes
 * (their st_dev is pipefs, sockfs, devtmpfs) would waste the few slots. */
static int fstat_dev(struct shim_op *op, int fd, struct stat *st)
{
	uint64_t token;
	shim_fd_lookup(fd, &token);
	if (raw_fstat(fd, st) < 0)
		return -1;
	if (S_ISREG(st->st_mode)) {
		op->dev = shim_dev_slot(st->st_dev);
		shim_fd_learn(fd, token, op->dev);
	}
	return 0;
}

/* The device of a hit: cached, else one fstat for this descriptor. */
static void hit_dev(struct shim_op *op, int fd)
{
	uint64_t token;
	struct stat st;
	op->dev = shim_fd_lookup(fd, &token);
	if (op->dev < 0)
		fstat_dev(op, fd, &st);
}

/* Filesystems whose files have no disk behind them: prefetching them is
 * pointless (tmpfs: the pages are the file) or harmful (proc and sysfs
 * files have side effects and no page cache, so they never look
 * resident). */
static int worth_prefetching(int fd)
{
	struct statfs sf;
	if (fstatfs(fd, &sf) < 0)
		return 0;
	switch ((unsigned long)sf.f_type) {
	case PROC_SUPER_MAGIC: case SYSFS_MAGIC: case TMPFS_MAGIC: case RAMFS_MAGIC:
	case DEBUGFS_MAGIC: case TRACEFS_MAGIC: case SECURITYFS_MAGIC: case CGROUP_SUPER_MAGIC:
	case CGROUP2_SUPER_MAGIC: case DEVPTS_SUPER_MAGIC: case BPF_FS_MAGIC:
		return 0;
	}
	return 1;
}

void shim_before(struct shim_op *op, int call, int fd, int64_t off, uint64_t len)
{
	op->active = 0;
	if (shim_cfg.mode == SHIM_MODE_OFF)
		return;
	int saved = errno;
	shim_in_shim++;
	op->call = call;
	op->hit = 0;
	op->dev = -1;
	op->len = len;
	op->t0 = shim_now_ns();

	struct stat st;
	if (shim_cfg.mode == SHIM_MODE_TRACK || len == 0) {
		op->active = fstat_dev(op, fd, &st) == 0 && S_ISREG(st.st_mode);
		goto out;
	}
	/* The file offset; fails (ESPIPE) for pipes and sockets, which is
	 * how a read() on those leaves at the cost of one syscall. */
	if (off < 0 && (off = lseek(fd, 0, SEEK_CUR)) < 0)
		goto out;
	uint64_t want = len < ensure_cap() ? len : ensure_cap();

	/* The hit path is this one syscall: cachestat is asked before fstat,
	 * and only a range that is not resident pays for fstat.  Nothing but
	 * a file (or a block device) has cached pages, so a "resident" answer
	 * also says the fd is worth counting. */
	enum shim_res res = shim_residency(fd, (uint64_t)off, want);
	if (res == SHIM_RES_RESIDENT) {
		op->active = op->hit = 1;
		hit_dev(op, fd);
		if (shim_cfg.lookahead)
			shim_ahead_reached(fd, (uint64_t)off, want, call);
		goto out;
	}
	if (fstat_dev(op, fd, &st) < 0 || !S_ISREG(st.st_mode))
		goto out;
	op->active = 1;
	if ((uint64_t)off >= (uint64_t)st.st_size) {
		op->hit = 1;  /* end of file: nothing to read, nothing to fetch */
		goto out;
	}
	/* The range ran past the end of the file, where pages never exist. */
	uint64_t avail = (uint64_t)st.st_size - (uint64_t)off;
	if (want > avail) {
		want = avail;
		if (res == SHIM_RES_MISSING)
			res = shim_residency(fd, (uint64_t)off, want);
	}

	switch (res) {
	case SHIM_RES_RESIDENT:
		op->hit = 1;
		break;
	case SHIM_RES_UNKNOWN:
		if (shim_hint_covers(st.st_dev, st.st_ino, (uint64_t)off, want)) {
			op->hit = 1;
			if (shim_cfg.lookahead)
				shim_ahead_reached(fd, (uint64_t)off, want, call);
			break;
		}
		/* only the daemon can tell */
		__attribute__((fallthrough));
	case SHIM_RES_MISSING:
		/* A device the daemon called direct is read as without the
		 * library: not even fstatfs and fcntl are paid for it. */
		if (!shim_dev_direct(op->dev, op->t0) && worth_prefetching(fd))
			miss(op, fd, &st, (uint64_t)off, want);
		break;
	case SHIM_RES_UNSUPPORTED:
		break;
	}
out:
	shim_in_shim--;
	errno = saved;
}

void shim_after(struct shim_op *op)
{
	if (!op->active)
		return;
	int saved = errno;
	shim_in_shim++;
	uint64_t now = shim_now_ns();
	shim_stats_record(op->call, op->hit, op->len, now - op->t0, op->dev);
	shim_stats_maybe_report(now);
	shim_in_shim--;
	errno = saved;
}
