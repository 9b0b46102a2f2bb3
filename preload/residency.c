/*
 * residency.c - is [off, off+len) of a file in the page cache?  Asked
 * without issuing I/O, on every intercepted call, so it must be cheap.
 *
 * cachestat(2) (Linux 6.5) answers it in one syscall.  It refuses (EPERM)
 * a caller that neither owns the file nor may write it -- an nginx worker
 * running as www-data serving root's files -- and mincore() would lie to
 * that caller instead (everything "resident", kernel >= 5.2), so it is not
 * used at all.  UNKNOWN sends the caller to the daemon, which is allowed
 * to look.  Debian 12's headers predate cachestat, hence the local
 * definitions.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim.h"

#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif

struct shim_cachestat_range {
	uint64_t off;
	uint64_t len;
};

struct shim_cachestat {
	uint64_t nr_cache;
	uint64_t nr_dirty;
	uint64_t nr_writeback;
	uint64_t nr_evicted;
	uint64_t nr_recently_evicted;
};

/* Set once the kernel says it has no cachestat; never cleared. */
static int no_cachestat;

#define PAGE 4096u

/* cachestat costs about 0.4 us plus 40 ns per page on the development
 * machine (preload/bench/hitcost), so a 2 MiB sendfile chunk would pay
 * 20 us to be checked page by page.  Ranges up to PROBE_ALL pages are
 * checked whole; larger ones by their first and last page.  A wrong guess
 * costs time, never data: a false hit is a read the kernel does
 * unserialized, a false miss an ENSURE the daemon finds resident. */
#define PROBE_ALL 16

static int probe(int fd, uint64_t first, uint64_t pages, struct shim_cachestat *cs)
{
	struct shim_cachestat_range r = { .off = first, .len = pages * PAGE };
	return (int)syscall(__NR_cachestat, fd, &r, cs, 0);
}

static enum shim_res failure(void)
{
	switch (errno) {
	case ENOSYS:
		__atomic_store_n(&no_cachestat, 1, __ATOMIC_RELAXED);
		return SHIM_RES_UNKNOWN;
	case EPERM:
		return SHIM_RES_UNKNOWN;
	default:  /* EOPNOTSUPP (hugetlbfs), EBADF: leave the call alone */
		return SHIM_RES_UNSUPPORTED;
	}
}

enum shim_res shim_residency(int fd, uint64_t off, uint64_t len)
{
	if (__atomic_load_n(&no_cachestat, __ATOMIC_RELAXED))
		return SHIM_RES_UNKNOWN;
	uint64_t first = off & ~(uint64_t)(PAGE - 1);
	uint64_t end = (off + len + PAGE - 1) & ~(uint64_t)(PAGE - 1);
	uint64_t pages = (end - first) / PAGE;
	struct shim_cachestat cs;
	if (pages <= PROBE_ALL) {
		if (probe(fd, first, pages, &cs) < 0)
			return failure();
		return cs.nr_cache >= pages ? SHIM_RES_RESIDENT : SHIM_RES_MISSING;
	}
	if (probe(fd, first, 1, &cs) < 0)
		return failure();
	if (cs.nr_cache < 1)
		return SHIM_RES_MISSING;
	if (probe(fd, end - PAGE, 1, &cs) < 0)
		return failure();
	return cs.nr_cache >= 1 ? SHIM_RES_RESIDENT : SHIM_RES_MISSING;
}

/* One entry per thread: a reader streaming one file asks the daemon once
 * per prefetch window instead of once per call.  Stale at worst (pages can
 * be evicted after the daemon answered), which costs a slow read, never a
 * wrong one. */
static __thread struct {
	uint64_t dev, ino, off, end;
} hint __attribute__((tls_model("initial-exec")));

int shim_hint_covers(uint64_t dev, uint64_t ino, uint64_t off, uint64_t len)
{
	return hint.end && hint.dev == dev && hint.ino == ino &&
	       off >= hint.off && off + len <= hint.end;
}

void shim_hint_set(uint64_t dev, uint64_t ino, uint64_t off, uint64_t len)
{
	hint.dev = dev;
	hint.ino = ino;
	hint.off = off;
	hint.end = len ? off + len : 0;
}
