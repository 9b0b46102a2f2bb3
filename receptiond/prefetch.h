/*
 * prefetch.h - making a window of a file resident, and asking the page
 * cache what already is.
 *
 * Residency comes from cachestat(2), which issues no I/O.  Reading works
 * on a private open file description (the passed fd reopened through
 * /proc/self/fd, so the program's own offset and readahead state are
 * never touched): WILLNEED hints start the reads, then one load per page
 * through a MADV_RANDOM mapping waits for them (pread if the file cannot
 * be mapped).  The mapping, unlike a read, leaves the pages unmarked, so
 * the program's read of a prefetched page is its first access, as
 * without libception (prefetch.c says why that matters).
 */
#ifndef RD_PREFETCH_H
#define RD_PREFETCH_H

#include <stddef.h>
#include <stdint.h>

#define RD_PIECE (1u << 20)   /* largest piece made resident at once */
#define RD_HINT  (128u << 10) /* what one WILLNEED call reads at least (prefetch.c) */

/* The window to read for asked range [lo, hi): [lo, max(hi, lo+size)),
 * clipped at end of file.  Pure, for unit tests. */
void rd_window(uint64_t lo, uint64_t hi, uint64_t size, uint64_t file_size,
               uint64_t *wlo, uint64_t *whi);

/* Cached pages in [lo, hi) of fd, or -1 if the kernel will not say. */
int64_t rd_cached_pages(int fd, uint64_t lo, uint64_t hi);
/* 1 if all of [lo, hi) is cached, 0 if not, -1 unknown. */
int rd_is_resident(int fd, uint64_t lo, uint64_t hi);
/* The largest e in [hi, limit] (page-aligned, or limit) with [lo, e)
 * cached; assumes [lo, hi) is. */
uint64_t rd_resident_end(int fd, uint64_t lo, uint64_t hi, uint64_t limit);
/* The same to a multiple of step (>= a page) below the exact answer, in
 * fewer cachestat calls: the main thread's hit check (each call costs
 * ~11 us per MiB here, and a client chooses the range). */
uint64_t rd_resident_end_step(int fd, uint64_t lo, uint64_t hi, uint64_t limit, uint64_t step);

struct rd_prefetch_result {
	uint64_t bytes_read;    /* pages that were not cached before, in bytes */
	int error;              /* 0 or the errno of a failed read */
	uint64_t end;           /* the window is resident up to here */
};

/*
 * Make [lo, hi) of fd resident, skipping 1 MiB pieces that are already
 * cached, using scratch (RD_PIECE bytes).  hint_bytes: the most one
 * WILLNEED call reads on fd's file system (struct rd_device_info; RD_HINT
 * if unknown).  *stop is checked between pieces so shutdown is prompt.
 */
void rd_prefetch(int fd, uint64_t lo, uint64_t hi, uint64_t hint_bytes, void *scratch,
                 const volatile int *stop, struct rd_prefetch_result *res);

/* Open a private description of the file behind fd (see above), or -1. */
int rd_reopen(int fd);

#endif
