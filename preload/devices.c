/*
 * devices.c - which device an intercepted call reads from, so the daemon
 * can show per device the hits only the library sees.
 *
 * Devices: the first LC_REPORT_DEVS distinct st_dev values the process
 * meets get a slot each (claimed once, never freed); the rest share the
 * slot "other" (LC_REPORT_DEVS).  Two threads claiming the same device at
 * once may get two slots for it; the daemon sums entries by st_dev.
 *
 * Descriptors: a hit costs one cachestat and no fstat (decide.c), so the
 * device of a hit comes from a small process-wide cache fd -> slot,
 * direct-mapped on the fd number (FD_CACHE entries, not sized by the fd
 * limit).  An fstat fills it on a descriptor's first hit; every fstat the
 * miss path does anyway refreshes it.  close, dup2, dup3, close_range and
 * closefrom (intercept.c) forget the descriptors they free or replace, so
 * a reused number never inherits the previous file's device.  Each entry
 * carries a generation bumped by every forget; a fill that raced with a
 * close (fstat of the old file, store after the close) fails its
 * compare-and-swap and leaves the entry empty.
 *
 * A descriptor freed behind the library's back (fclose, closedir and other
 * glibc-internal closes, a raw close syscall) keeps its stale entry until
 * its next miss: only the per-device split is wrong then, never a call.
 */
#include <stdint.h>

#include "shim.h"

#define FD_CACHE 64u

/* Entry word: bits 0-31 the fd, 32-39 slot + 1 (0: empty), 40-63 generation. */
#define W_FD(w)     ((uint32_t)(w))
#define W_SLOT(w)   ((unsigned)((w) >> 32) & 0xffu)
#define W_GEN(w)    ((w) & ~((1ull << 40) - 1))
#define GEN_ONE     (1ull << 40)

static uint64_t fd_cache[FD_CACHE];

enum { SLOT_FREE, SLOT_CLAIMING, SLOT_READY };
static uint64_t dev_ids[LC_REPORT_DEVS];
static int dev_state[LC_REPORT_DEVS];

int shim_dev_slot(uint64_t dev)
{
	for (int i = 0; i < LC_REPORT_DEVS; i++) {
		int s = __atomic_load_n(&dev_state[i], __ATOMIC_ACQUIRE);
		if (s == SLOT_READY && dev_ids[i] == dev)
			return i;
		if (s != SLOT_FREE)
			continue;
		int expect = SLOT_FREE;
		if (__atomic_compare_exchange_n(&dev_state[i], &expect, SLOT_CLAIMING, 0,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
			dev_ids[i] = dev;
			__atomic_store_n(&dev_state[i], SLOT_READY, __ATOMIC_RELEASE);
			return i;
		}
		/* Lost the race: the winner may hold our device, or another. */
		if (__atomic_load_n(&dev_state[i], __ATOMIC_ACQUIRE) == SLOT_READY && dev_ids[i] == dev)
			return i;
	}
	return LC_REPORT_DEVS;
}

int shim_dev_id(int slot, uint64_t *dev)
{
	if (slot < 0 || slot >= LC_REPORT_DEVS ||
	    __atomic_load_n(&dev_state[slot], __ATOMIC_ACQUIRE) != SLOT_READY)
		return -1;
	*dev = dev_ids[slot];
	return 0;
}

/* Devices the daemon answered LC_ST_DIRECT for: misses there skip the
 * round trip until this time (CLOCK_MONOTONIC ns; 0: ask).  Only real
 * slots: "other" is many devices. */
static uint64_t direct_until[LC_REPORT_DEVS];

int shim_dev_direct(int slot, uint64_t now_ns)
{
	return slot >= 0 && slot < LC_REPORT_DEVS &&
	       now_ns < __atomic_load_n(&direct_until[slot], __ATOMIC_RELAXED);
}

void shim_dev_set_direct(int slot, uint64_t now_ns)
{
	if (slot >= 0 && slot < LC_REPORT_DEVS)
		__atomic_store_n(&direct_until[slot], now_ns + LC_DIRECT_RECHECK_S * 1000000000ull,
				 __ATOMIC_RELAXED);
}

int shim_fd_lookup(int fd, uint64_t *token)
{
	uint64_t w = __atomic_load_n(&fd_cache[(unsigned)fd % FD_CACHE], __ATOMIC_ACQUIRE);
	*token = w;
	return W_SLOT(w) && W_FD(w) == (uint32_t)fd ? (int)W_SLOT(w) - 1 : -1;
}

void shim_fd_learn(int fd, uint64_t token, int slot)
{
	uint64_t w = W_GEN(token) | (uint64_t)(slot + 1) << 32 | (uint32_t)fd;
	if (w == token)
		return;
	/* Fails if a forget came in between: then the file may be gone. */
	__atomic_compare_exchange_n(&fd_cache[(unsigned)fd % FD_CACHE], &token, w, 0,
				    __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

/* Bump the generation; empty the entry if `match` says it is freed. */
static void forget_entry(unsigned i, unsigned lo, unsigned hi)
{
	uint64_t w = __atomic_load_n(&fd_cache[i], __ATOMIC_RELAXED), nw;
	do {
		int freed = W_SLOT(w) && W_FD(w) >= lo && W_FD(w) <= hi;
		nw = (W_GEN(w) + GEN_ONE) | (freed ? 0 : w & (GEN_ONE - 1));
	} while (!__atomic_compare_exchange_n(&fd_cache[i], &w, nw, 0, __ATOMIC_ACQ_REL,
					      __ATOMIC_RELAXED));
}

void shim_fd_forget(int fd)
{
	if (fd >= 0)
		forget_entry((unsigned)fd % FD_CACHE, (unsigned)fd, (unsigned)fd);
}

void shim_fd_forget_range(unsigned lo, unsigned hi)
{
	shim_fd_cache_visit(lo, hi, FD_CACHE, forget_entry);
}
