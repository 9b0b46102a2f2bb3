/*
 * intercept.c - the exported wrappers: every entry point through which
 * Debian 12's nginx, lighttpd, libapr, coreutils, diffutils and Python
 * read regular files (the list and its `nm -D` check are in
 * docs/libception.so.md).  Each one does shim_before(), the real call
 * with the program's arguments untouched, shim_after(), and returns the
 * real call's result and errno.  The program's call is never retried nor
 * split, so short transfers, EINTR and offsets are exactly libc's.
 *
 * Passed straight through: calls made while the shim itself is working
 * (the in_shim guard), calls before init finished, preadv2 with flags
 * (RWF_NOWAIT must not block on the daemon), negative explicit offsets
 * (libc's EINVAL), bad iovec counts, and iovec arrays or offset pointers
 * the program cannot read (the kernel's EFAULT: the library must not
 * fault on them first).
 */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "shim.h"

extern void __chk_fail(void) __attribute__((noreturn));

/* Built with -fvisibility=hidden: only these are exported (with
 * libception.map), and internal calls need no PLT. */
#define SHIM_EXPORT __attribute__((visibility("default")))

/* 1 when the call must go straight to libc. */
static inline int bypass(void)
{
	if (__builtin_expect(shim_in_shim, 0))
		return 1;
	if (__builtin_expect(!__atomic_load_n(&shim_ready, __ATOMIC_ACQUIRE), 0)) {
		/* init (dlsym, getenv, the debug file) may set errno, and
		 * the program's call may succeed without touching it */
		int saved = errno;
		shim_init();
		errno = saved;
		return shim_in_shim || !__atomic_load_n(&shim_ready, __ATOMIC_ACQUIRE);
	}
	return 0;
}

/* The real function, or the kernel while dlsym has not answered yet. */
#define REAL(sym, ...) (shim_real.sym ? shim_real.sym(__VA_ARGS__) : FALLBACK_##sym(__VA_ARGS__))
#define FALLBACK_read(fd, b, n)               syscall(SYS_read, fd, b, n)
#define FALLBACK_pread(fd, b, n, o)           syscall(SYS_pread64, fd, b, n, o)
#define FALLBACK_pread64(fd, b, n, o)         syscall(SYS_pread64, fd, b, n, o)
#define FALLBACK_readv(fd, v, c)              syscall(SYS_readv, fd, v, c)
/* x86-64: the offset is one register; the high word is ignored */
#define FALLBACK_preadv(fd, v, c, o)          syscall(SYS_preadv, fd, v, c, o, 0)
#define FALLBACK_preadv64(fd, v, c, o)        syscall(SYS_preadv, fd, v, c, o, 0)
#define FALLBACK_preadv2(fd, v, c, o, f)      syscall(SYS_preadv2, fd, v, c, o, 0, f)
#define FALLBACK_preadv64v2(fd, v, c, o, f)   syscall(SYS_preadv2, fd, v, c, o, 0, f)
#define FALLBACK_sendfile(o, i, p, n)         syscall(SYS_sendfile, o, i, p, n)
#define FALLBACK_sendfile64(o, i, p, n)       syscall(SYS_sendfile, o, i, p, n)
#define FALLBACK_copy_file_range(i, pi, o, po, n, f) syscall(SYS_copy_file_range, i, pi, o, po, n, f)
#define FALLBACK_splice(i, pi, o, po, n, f)   syscall(SYS_splice, i, pi, o, po, n, f)
#define FALLBACK_read_chk(fd, b, n, bl)       ((n) > (bl) ? (__chk_fail(), 0) : syscall(SYS_read, fd, b, n))
#define FALLBACK_pread_chk(fd, b, n, o, bl)   ((n) > (bl) ? (__chk_fail(), 0) : syscall(SYS_pread64, fd, b, n, o))
#define FALLBACK_pread64_chk(fd, b, n, o, bl) ((n) > (bl) ? (__chk_fail(), 0) : syscall(SYS_pread64, fd, b, n, o))

/* Wrap one call: `pos` is the offset the call reads at (-1: the fd's). */
#define WRAP(call_id, fd, pos, len, sym, ...)                   \
	do {                                                    \
		if (bypass())                                   \
			return REAL(sym, __VA_ARGS__);          \
		struct shim_op op;                              \
		shim_before(&op, call_id, fd, pos, len);        \
		ssize_t r_ = REAL(sym, __VA_ARGS__);            \
		shim_after(&op);                                \
		return r_;                                      \
	} while (0)

/* 1 if the 8 bytes at p can be read, 0 if reading them would fault.
 * rt_sigprocmask copies its new mask from the caller before it looks at
 * `how`: with an invalid `how` it fails with EFAULT for an unreadable
 * pointer and EINVAL otherwise, changing nothing.  One cheap syscall
 * (0.17 us; process_vm_readv costs 1.2 us), paid only by the calls that
 * pass the library a pointer it must read. */
static int readable8(const void *p)
{
	int saved = errno;
	long r = syscall(SYS_rt_sigprocmask, -1, p, NULL, (size_t)8);
	int ok = r < 0 && errno == EINVAL;
	errno = saved;
	return ok;
}

/* The offset behind a pointer the program passed (sendfile,
 * copy_file_range, splice): -1 for NULL (the call uses the fd's offset),
 * -2 when the call must go straight to libc: the pointer is unreadable
 * (the kernel says EFAULT) or the offset is negative (EINVAL). */
static int64_t offset_at(const off_t *p)
{
	if (!p)
		return -1;
	if (!readable8(p))
		return -2;
	return *p < 0 ? -2 : *p;
}

/* 1 if the whole iovec array can be read: one probe per page it spans. */
static int iov_readable(const struct iovec *iov, int cnt)
{
	const uintptr_t page = 4096;
	uintptr_t a = (uintptr_t)iov, end = (uintptr_t)(iov + cnt);
	if (!readable8(iov))
		return 0;
	for (a = (a | (page - 1)) + 1; a < end; a += page)
		if (!readable8((const void *)a))
			return 0;
	return 1;
}

/* The iovec wrappers read the program's array (one probe per page, then
 * the lengths) only when the library is active at all. */
#define PASS_IF_OFF(sym, ...)                                                   \
	do {                                                                    \
		if (bypass() || shim_cfg.mode == SHIM_MODE_OFF)                 \
			return REAL(sym, __VA_ARGS__);                          \
	} while (0)

/* Total length of an iovec, or -1 if the kernel will refuse it anyway. */
static int64_t iov_len(const struct iovec *iov, int cnt)
{
	if (cnt < 0 || cnt > IOV_MAX || (cnt && !iov))
		return -1;
	if (cnt && !iov_readable(iov, cnt))
		return -1;
	uint64_t sum = 0;
	for (int i = 0; i < cnt; i++) {
		sum += iov[i].iov_len;
		if (sum > SSIZE_MAX)
			return -1;
	}
	return (int64_t)sum;
}

SHIM_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	WRAP(LC_CALL_READ, fd, -1, n, read, fd, buf, n);
}

SHIM_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
	WRAP(LC_CALL_READ, fd, -1, n, read_chk, fd, buf, n, buflen);
}

#define EXPLICIT_OFFSET(off, sym, ...) \
	do { if ((off) < 0) return REAL(sym, __VA_ARGS__); } while (0)

SHIM_EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	EXPLICIT_OFFSET(off, pread, fd, buf, n, off);
	WRAP(LC_CALL_PREAD, fd, off, n, pread, fd, buf, n, off);
}

SHIM_EXPORT ssize_t pread64(int fd, void *buf, size_t n, off_t off)
{
	EXPLICIT_OFFSET(off, pread64, fd, buf, n, off);
	WRAP(LC_CALL_PREAD, fd, off, n, pread64, fd, buf, n, off);
}

SHIM_EXPORT ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen)
{
	EXPLICIT_OFFSET(off, pread_chk, fd, buf, n, off, buflen);
	WRAP(LC_CALL_PREAD, fd, off, n, pread_chk, fd, buf, n, off, buflen);
}

SHIM_EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t n, off_t off, size_t buflen)
{
	EXPLICIT_OFFSET(off, pread64_chk, fd, buf, n, off, buflen);
	WRAP(LC_CALL_PREAD, fd, off, n, pread64_chk, fd, buf, n, off, buflen);
}

SHIM_EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
	PASS_IF_OFF(readv, fd, iov, cnt);
	int64_t len = iov_len(iov, cnt);
	if (len < 0)
		return REAL(readv, fd, iov, cnt);
	WRAP(LC_CALL_READV, fd, -1, (uint64_t)len, readv, fd, iov, cnt);
}

SHIM_EXPORT ssize_t preadv(int fd, const struct iovec *iov, int cnt, off_t off)
{
	PASS_IF_OFF(preadv, fd, iov, cnt, off);
	int64_t len = off < 0 ? -1 : iov_len(iov, cnt);
	if (len < 0)
		return REAL(preadv, fd, iov, cnt, off);
	WRAP(LC_CALL_PREADV, fd, off, (uint64_t)len, preadv, fd, iov, cnt, off);
}

SHIM_EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int cnt, off_t off)
{
	PASS_IF_OFF(preadv64, fd, iov, cnt, off);
	int64_t len = off < 0 ? -1 : iov_len(iov, cnt);
	if (len < 0)
		return REAL(preadv64, fd, iov, cnt, off);
	WRAP(LC_CALL_PREADV, fd, off, (uint64_t)len, preadv64, fd, iov, cnt, off);
}

/* preadv2: offset -1 means the file offset.  Any flag (RWF_NOWAIT above
 * all: the caller wants to never block) passes straight through. */
SHIM_EXPORT ssize_t preadv2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
	PASS_IF_OFF(preadv2, fd, iov, cnt, off, flags);
	int64_t len = off < -1 || flags ? -1 : iov_len(iov, cnt);
	if (len < 0)
		return REAL(preadv2, fd, iov, cnt, off, flags);
	WRAP(LC_CALL_PREADV, fd, off, (uint64_t)len, preadv2, fd, iov, cnt, off, flags);
}

SHIM_EXPORT ssize_t preadv64v2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
	PASS_IF_OFF(preadv64v2, fd, iov, cnt, off, flags);
	int64_t len = off < -1 || flags ? -1 : iov_len(iov, cnt);
	if (len < 0)
		return REAL(preadv64v2, fd, iov, cnt, off, flags);
	WRAP(LC_CALL_PREADV, fd, off, (uint64_t)len, preadv64v2, fd, iov, cnt, off, flags);
}

/* The calls whose offset is behind a pointer.  The pointer is read only
 * when the mode needs the offset, and through offset_at(), which never
 * faults.  Mode track counts these calls whatever the offset. */
#define WRAP_OFFP(call_id, fd, offp, len, sym, ...)                     \
	do {                                                            \
		if (bypass())                                           \
			return REAL(sym, __VA_ARGS__);                  \
		int64_t pos_ = -1;                                      \
		if (shim_cfg.mode > SHIM_MODE_TRACK && (len) &&         \
		    (pos_ = offset_at(offp)) == -2)                     \
			return REAL(sym, __VA_ARGS__);                  \
		WRAP(call_id, fd, pos_, len, sym, __VA_ARGS__);         \
	} while (0)

SHIM_EXPORT ssize_t sendfile(int out, int in, off_t *offp, size_t n)
{
	WRAP_OFFP(LC_CALL_SENDFILE, in, offp, n, sendfile, out, in, offp, n);
}

SHIM_EXPORT ssize_t sendfile64(int out, int in, off_t *offp, size_t n)
{
	WRAP_OFFP(LC_CALL_SENDFILE, in, offp, n, sendfile64, out, in, offp, n);
}

SHIM_EXPORT ssize_t copy_file_range(int in, off_t *inp, int out, off_t *outp, size_t n, unsigned flags)
{
	WRAP_OFFP(LC_CALL_COPY_FILE_RANGE, in, inp, n, copy_file_range, in, inp, out, outp, n, flags);
}

SHIM_EXPORT ssize_t splice(int in, off_t *inp, int out, off_t *outp, size_t n, unsigned flags)
{
	WRAP_OFFP(LC_CALL_SPLICE, in, inp, n, splice, in, inp, out, outp, n, flags);
}

/* ---- bookkeeping: descriptors freed or replaced (devices.c's and ahead.c's caches) ----
 * The real call is made unchanged; the cache forgets the descriptors
 * before (a cancelled close may never return) and after (a fill that
 * raced with the call fails on the bumped generation).  Neither touches
 * errno.  Before init the kernel is called directly. */
static void forget(int fd)
{
	shim_fd_forget(fd);
	if (shim_cfg.lookahead && fd >= 0)
		shim_ahead_forget_range((unsigned)fd, (unsigned)fd);
}

static void forget_range(unsigned lo, unsigned hi)
{
	shim_fd_forget_range(lo, hi);
	if (shim_cfg.lookahead)
		shim_ahead_forget_range(lo, hi);
}

#define FALLBACK_close(fd)                    syscall(SYS_close, fd)
#define FALLBACK_dup2(o, n)                   syscall(SYS_dup2, o, n)
#define FALLBACK_dup3(o, n, f)                syscall(SYS_dup3, o, n, f)
#define FALLBACK_close_range(lo, hi, f)       syscall(SYS_close_range, lo, hi, f)

SHIM_EXPORT int close(int fd)
{
	forget(fd);
	int r = (int)REAL(close, fd);
	forget(fd);
	return r;
}

SHIM_EXPORT int dup2(int oldfd, int newfd)
{
	forget(newfd);
	int r = (int)REAL(dup2, oldfd, newfd);
	forget(newfd);
	return r;
}

SHIM_EXPORT int dup3(int oldfd, int newfd, int flags)
{
	forget(newfd);
	int r = (int)REAL(dup3, oldfd, newfd, flags);
	forget(newfd);
	return r;
}

/* CLOSE_RANGE_CLOEXEC closes nothing now; forgetting anyway is harmless. */
SHIM_EXPORT int close_range(unsigned lo, unsigned hi, int flags)
{
	forget_range(lo, hi);
	int r = (int)REAL(close_range, lo, hi, flags);
	forget_range(lo, hi);
	return r;
}

SHIM_EXPORT void closefrom(int lo)
{
	unsigned from = lo < 0 ? 0 : (unsigned)lo;
	forget_range(from, ~0u);
	if (shim_real.closefrom)
		shim_real.closefrom(lo);
	else
		syscall(SYS_close_range, from, ~0u, 0);
	forget_range(from, ~0u);
}
