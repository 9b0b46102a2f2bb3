/*
 * ahead.c - LIBCEPTION_LOOKAHEAD=1: ask the daemon for the next window
 * before the reader needs it, without waiting.
 *
 * A miss blocks the caller until the daemon has read a whole window; a
 * reader that only ever misses at window boundaries still blocks once per
 * window.  So, like the kernel's async readahead, a call that is a hit
 * and leaves less than a window's length of the window the daemon last
 * vouched for on that descriptor ahead of it sends an ENSURE for the next
 * window flagged LC_F_LOOKAHEAD (client.c), which the daemon queues behind
 * every miss a program waits for and never answers.  By the time the
 * reader gets there it is cached (a hit) or being read (the miss joins
 * that read in the daemon).  A reader thus keeps one to two windows
 * cached ahead of it.
 *
 * Per descriptor: [win_lo, win_hi), the window the daemon vouched for (or
 * the look-ahead the reader has since moved into), and ahead_hi, the end
 * of the one look-ahead outstanding (0: none).  A look-ahead counts as
 * outstanding until the reader reaches its window; then it is the window
 * and sends the next.  A reader whose calls leave the
 * window (a seek, or a daemon window larger than assumed) sends nothing
 * until its next miss teaches a window again.
 *
 * The cache is process-wide, FD_CACHE entries direct-mapped on the fd
 * number (not sized by the fd limit), like devices.c's.  An entry's data
 * is guarded by a try-lock: a thread (or a signal handler) that finds it
 * taken skips the look-ahead rather than wait.  Forgetting is lock-free: a
 * compare-and-swap on the entry word, which carries the fd, a valid bit
 * and a generation, so close/dup2 never wait either.  A call racing with
 * a close of its own descriptor in another thread can at worst send one
 * useless look-ahead for the file that took the number: time, never data.
 */
#include <stdint.h>

#include "shim.h"

#define FD_CACHE 64u

/* Entry word: bits 0-31 the fd, bit 32 valid, 40-63 generation. */
#define W_FD(w)     ((uint32_t)(w))
#define W_VALID     (1ull << 32)
#define W_GEN(w)    ((w) & ~((1ull << 40) - 1))
#define GEN_ONE     (1ull << 40)

struct entry {
	uint64_t word;       /* atomic */
	int lock;            /* atomic try-lock over the fields below */
	uint64_t win_lo, win_hi;
	uint64_t ahead_hi;   /* end of the outstanding look-ahead, 0: none */
	uint64_t size;       /* the file's size when the window was learnt */
};

static struct entry cache[FD_CACHE];

static struct entry *try_lock(int fd)
{
	if (fd < 0)
		return NULL;
	struct entry *e = &cache[(unsigned)fd % FD_CACHE];
	if (__atomic_exchange_n(&e->lock, 1, __ATOMIC_ACQUIRE))
		return NULL;
	return e;
}

static void unlock(struct entry *e)
{
	__atomic_store_n(&e->lock, 0, __ATOMIC_RELEASE);
}

void shim_ahead_learn(int fd, uint64_t off, uint64_t len, uint64_t size)
{
	struct entry *e = try_lock(fd);
	if (!e)
		return;
	uint64_t w = __atomic_load_n(&e->word, __ATOMIC_ACQUIRE);
	e->win_lo = off;
	e->win_hi = len ? off + len : 0;
	e->ahead_hi = 0;
	e->size = size;
	uint64_t nw = W_GEN(w) | W_VALID | (uint32_t)fd;
	/* Fails if a forget came in between: the entry stays empty. */
	__atomic_compare_exchange_n(&e->word, &w, nw, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	unlock(e);
}

void shim_ahead_reached(int fd, uint64_t off, uint64_t len, int call)
{
	struct entry *e = try_lock(fd);
	if (!e)
		return;
	uint64_t w = __atomic_load_n(&e->word, __ATOMIC_ACQUIRE);
	if (!(w & W_VALID) || W_FD(w) != (uint32_t)fd || !e->win_hi)
		goto out;
	uint64_t end = off + len;
	/* The reader moved into the look-ahead's window: it is the window now. */
	if (e->ahead_hi && end > e->win_hi && off >= e->win_lo && off < e->ahead_hi) {
		e->win_lo = e->win_hi;
		e->win_hi = e->ahead_hi;
		e->ahead_hi = 0;
	}
	if (e->ahead_hi || off < e->win_lo || off >= e->win_hi || e->win_hi >= e->size)
		goto out;
	/* As long as the window, but never shorter than the prefetch size: a
	 * hit's answer names only the resident run it found, which can be
	 * shorter, and windows must not shrink from one to the next. */
	uint64_t wlen = e->win_hi - e->win_lo;
	uint64_t next = wlen > shim_cfg.prefetch ? wlen : shim_cfg.prefetch;
	/* Sent once less than a window is left ahead of the reader.  A reader
	 * that asks for a whole video segment per descriptor (a web server
	 * opens the file per request) learns its window from the one answer
	 * of its first call and may never call again inside it: the trigger
	 * cannot wait for the window's last quarter. */
	if (end + next <= e->win_hi)
		goto out;
	if (next > e->size - e->win_hi)
		next = e->size - e->win_hi;
	if (shim_client_lookahead(fd, e->win_hi, next, call) == 0)
		e->ahead_hi = e->win_hi + next;
out:
	unlock(e);
}

/* Bump the generation; clear the entry if its fd is in [lo, hi]. */
static void forget_entry(unsigned i, unsigned lo, unsigned hi)
{
	uint64_t w = __atomic_load_n(&cache[i].word, __ATOMIC_RELAXED), nw;
	do {
		int freed = (w & W_VALID) && W_FD(w) >= lo && W_FD(w) <= hi;
		nw = (W_GEN(w) + GEN_ONE) | (freed ? 0 : w & (GEN_ONE - 1));
	} while (!__atomic_compare_exchange_n(&cache[i].word, &w, nw, 0, __ATOMIC_ACQ_REL,
					      __ATOMIC_RELAXED));
}

void shim_ahead_forget_range(unsigned lo, unsigned hi)
{
	shim_fd_cache_visit(lo, hi, FD_CACHE, forget_entry);
}

/* A thread of the parent may have held a lock at fork; the child has only
 * the forking thread, which held none (fork is not called from here). */
void shim_ahead_atfork_child(void)
{
	for (unsigned i = 0; i < FD_CACHE; i++)
		__atomic_store_n(&cache[i].lock, 0, __ATOMIC_RELAXED);
}
