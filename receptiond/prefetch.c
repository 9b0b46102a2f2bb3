/* prefetch.c - see prefetch.h. */
#include "prefetch.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif

struct rd_cachestat_range { uint64_t off, len; };
struct rd_cachestat {
	uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

static uint64_t page_size(void)
{
	static uint64_t ps;
	if (!ps)
		ps = (uint64_t)sysconf(_SC_PAGESIZE);
	return ps;
}

void rd_window(uint64_t lo, uint64_t hi, uint64_t size, uint64_t file_size,
               uint64_t *wlo, uint64_t *whi)
{
	uint64_t end = lo + size < lo ? UINT64_MAX : lo + size;
	if (end < hi)
		end = hi;
	if (end > file_size)
		end = file_size;
	if (lo > end)
		lo = end;
	*wlo = lo;
	*whi = end;
}

int64_t rd_cached_pages(int fd, uint64_t lo, uint64_t hi)
{
	uint64_t ps = page_size();
	uint64_t plo = lo / ps * ps, phi = (hi + ps - 1) / ps * ps;
	if (phi <= plo)
		return 0;
	struct rd_cachestat_range r = { plo, phi - plo };
	struct rd_cachestat cs;
	if (syscall(__NR_cachestat, fd, &r, &cs, 0) != 0)
		return -1;
	return (int64_t)cs.nr_cache;
}

static uint64_t pages_in(uint64_t lo, uint64_t hi)
{
	uint64_t ps = page_size();
	if (hi <= lo)
		return 0;
	return (hi + ps - 1) / ps - lo / ps;
}

int rd_is_resident(int fd, uint64_t lo, uint64_t hi)
{
	int64_t n = rd_cached_pages(fd, lo, hi);
	if (n < 0)
		return -1;
	return (uint64_t)n >= pages_in(lo, hi);
}

uint64_t rd_resident_end(int fd, uint64_t lo, uint64_t hi, uint64_t limit)
{
	return rd_resident_end_step(fd, lo, hi, limit, page_size());
}

uint64_t rd_resident_end_step(int fd, uint64_t lo, uint64_t hi, uint64_t limit, uint64_t ps)
{
	if (limit <= hi)
		return hi;
	if (rd_is_resident(fd, lo, limit) == 1)
		return limit;
	/* Binary search over ends aligned on ps: cached-ness of [lo, e) only
	 * goes from yes to no as e grows. */
	uint64_t good = hi, bad = limit;
	while (bad - good > ps) {
		uint64_t mid = (good + (bad - good) / 2) / ps * ps;
		if (mid <= good)
			mid = good + ps;
		if (mid >= bad)
			break;
		if (rd_is_resident(fd, lo, mid) == 1)
			good = mid;
		else
			bad = mid;
	}
	return good;
}

/*
 * Ask the kernel to start reading [lo, hi).  One WILLNEED call reads at
 * most max(io_pages, ra_pages) from its start: 128 KiB on FUSE, 1280 KiB
 * on a loop device (max_sectors_kb).  So the calls are `step` apart, the
 * most the device's queue lets one read (struct rd_device_info), and a
 * block device gets each as one large request instead of ten of 128 KiB
 * (which reached hddsim as separate drive commands).  Calls RD_HINT apart
 * follow, for a queue that reads less than its sysfs says: pages already
 * cached or in flight cost them nothing.  On a device whose read_ahead_kb
 * is 0 a buffered read fetches one page per command; measured on hddsim
 * (wd-red, 32 MiB read 4 KiB at a time under libception):
 * read_ahead_kb=0 took 1.0-1.5 s without the hints, 0.37 s with them;
 * read_ahead_kb=128 took 0.33 s either way.  The hints are only hints:
 * the loads of map_piece are what make the window resident.
 */
static void hint_every(int fd, uint64_t lo, uint64_t hi, uint64_t step)
{
	for (uint64_t o = lo; o < hi; o += step) {
		uint64_t n = hi - o < step ? hi - o : step;
		posix_fadvise(fd, (off_t)o, (off_t)n, POSIX_FADV_WILLNEED);
	}
}

static void hint(int fd, uint64_t lo, uint64_t hi, uint64_t step)
{
	if (step > RD_HINT)
		hint_every(fd, lo, hi, step);
	hint_every(fd, lo, hi, RD_HINT);
}

/*
 * Why the window is loaded through a mapping and not read.  A read(2) or
 * pread(2) marks each page accessed; the program's own read of the page
 * then counts as its second access, and the kernel moves it to the active
 * list, as if it were popular.  Every page libception prefetched and the
 * program sent became "active", the inactive list (where the windows not
 * yet sent wait) shrank to the kernel's minimum share of the memory, and
 * under a memory limit those windows were evicted before they were sent
 * (measured in a cgroup: 200 MiB preread then sendfile'd: 200 MiB active;
 * loaded through a MADV_RANDOM mapping instead: 0 MiB active).  A page
 * faulted in through a mapping is not marked accessed, and unmapping a
 * MADV_RANDOM mapping does not mark it either, so the program's read is
 * the page's first access, as without libception.  MADV_RANDOM also
 * keeps the fault from reading around: the WILLNEED hints issued the
 * reads already.
 *
 * A load from a page past the end of the file, or one the device failed
 * to read, raises SIGBUS; the worker jumps back to map_piece, which then
 * tells the two apart by the file's size.
 */
/* volatile: the handler reads it, so its stores may not be elided */
static __thread sigjmp_buf *volatile sigbus_jump;

static void on_sigbus(int sig)
{
	if (sigbus_jump)
		siglongjmp(*sigbus_jump, 1);
	signal(sig, SIG_DFL);  /* not a load of ours: fault again, by default */
}

static void install_sigbus(void)
{
	struct sigaction sa = { .sa_handler = on_sigbus };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
}

enum { PIECE_UNMAPPABLE = -1000 };

/*
 * Make [off, end) resident through a mapping.  Returns the bytes made
 * resident from off (short: the file ends there), -errno on a read error,
 * or PIECE_UNMAPPABLE if the file cannot be mapped (the caller reads).
 */
static int64_t map_piece(int fd, uint64_t off, uint64_t end)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, install_sigbus);
	uint64_t ps = page_size();
	uint64_t base = off / ps * ps;
	size_t len = (size_t)(end - base);
	char *map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, (off_t)base);
	if (map == MAP_FAILED)
		return PIECE_UNMAPPABLE;
	madvise(map, len, MADV_RANDOM);
	sigjmp_buf jump;
	volatile uint64_t at = base;
	int64_t ret;
	if (sigsetjmp(jump, 1) == 0) {
		sigbus_jump = &jump;
		for (; at < end; at += ps)
			(void)*(volatile const char *)(map + (at - base));
		ret = (int64_t)(end - off);
	} else {
		struct stat st;
		if (fstat(fd, &st) != 0)
			ret = -errno;
		else if ((uint64_t)st.st_size <= at)  /* the file shrank */
			ret = (uint64_t)st.st_size > off ? (int64_t)((uint64_t)st.st_size - off) : 0;
		else
			ret = -EIO;
	}
	sigbus_jump = NULL;
	munmap(map, len);
	return ret;
}

/* The same through pread, for files that cannot be mapped. */
static int64_t read_piece(int fd, uint64_t off, uint64_t end, void *scratch)
{
	uint64_t done = 0;
	while (off + done < end) {
		ssize_t n = pread(fd, scratch, (size_t)(end - off - done), (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		done += (uint64_t)n;
	}
	return (int64_t)done;
}

void rd_prefetch(int fd, uint64_t lo, uint64_t hi, uint64_t hint_bytes, void *scratch,
                 const volatile int *stop, struct rd_prefetch_result *res)
{
	res->bytes_read = 0;
	res->error = 0;
	res->end = lo;
	uint64_t ps = page_size();
	uint64_t off = lo;
	uint64_t hinted = lo;      /* reads asked for up to here */
	int64_t ahead_cached = 0;  /* pages of the piece ending at hinted cached before its hint */
	while (off < hi) {
		if (stop && *stop)
			return;
		/* Pieces end on RD_PIECE boundaries so a later window skips
		 * whole pieces an earlier one read. */
		uint64_t end = (off / RD_PIECE + 1) * RD_PIECE;
		if (end > hi)
			end = hi;
		/* A piece hinted with the one before it is counted as it was
		 * then: what the hint brought in since was read for us. */
		int64_t cached = off < hinted ? ahead_cached : rd_cached_pages(fd, off, end);
		uint64_t pages = pages_in(off, end);
		if (cached < 0 || (uint64_t)cached < pages) {
			/* The next piece's reads go out with this one's, so
			 * the disk streams on from this piece's end while its
			 * pages are loaded: one transfer, where waiting for
			 * them left a gap between two commands. */
			uint64_t ahead = end + RD_PIECE < hi ? end + RD_PIECE : hi;
			if (hinted < ahead) {
				if (ahead > end)
					ahead_cached = rd_cached_pages(fd, end, ahead);
				hint(fd, hinted > off ? hinted : off, ahead, hint_bytes);
				hinted = ahead;
			}
			int64_t got = map_piece(fd, off, end);
			if (got == PIECE_UNMAPPABLE)
				got = read_piece(fd, off, end, scratch);
			if (got < 0) {
				res->error = (int)-got;
				return;
			}
			if (cached >= 0)
				res->bytes_read += (pages - (uint64_t)cached) * ps;
			else
				res->bytes_read += (uint64_t)got;
			if ((uint64_t)got < end - off) {  /* the file shrank: what exists is resident */
				res->end = off + (uint64_t)got;
				return;
			}
		}
		off = end;
		res->end = off;
	}
}

int rd_reopen(int fd)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	int nfd = open(path, O_RDONLY | O_CLOEXEC | O_NOATIME);
	if (nfd < 0 && errno == EPERM)
		nfd = open(path, O_RDONLY | O_CLOEXEC);
	if (nfd < 0)
		return -1;
	posix_fadvise(nfd, 0, 0, POSIX_FADV_RANDOM);
	return nfd;
}
