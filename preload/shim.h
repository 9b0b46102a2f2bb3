/*
 * shim.h - internal interface between the pieces of libception.so, the
 * LD_PRELOAD half of libception ("Deception").
 *
 *   shim.c       init, real_<sym> pointers, the thread-local in_shim guard
 *   config.c     LIBCEPTION_* environment
 *   intercept.c  the exported wrappers
 *   decide.c     per call: regular file? resident? ask the daemon / prefetch
 *   residency.c  cachestat(2) and the per-thread resident-window hint
 *   client.c     the per-thread connection to receptiond
 *   local.c      mode prefetch: the enlarged read done in-process
 *   stats.c      counters, latency histograms, LC_MSG_REPORT
 *   devices.c    per-device slots and the fd -> device cache
 *   ahead.c      LIBCEPTION_LOOKAHEAD: the fd -> window cache, look-aheads
 *   debug.c      LIBCEPTION_DEBUG lines
 *
 * Every non-static function is prefixed shim_.  Nothing here may change
 * errno as the program sees it: wrappers save it around the shim's work.
 */
#ifndef SHIM_H
#define SHIM_H

#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "protocol.h"

/* ---- config.c ---- */
enum shim_mode {
	SHIM_MODE_OFF,
	SHIM_MODE_TRACK,
	SHIM_MODE_PREFETCH,           /* in-process enlarged reads, no daemon */
	SHIM_MODE_SERIALIZE,          /* daemon, prefetch size 0 */
	SHIM_MODE_PREFETCH_SERIALIZE, /* daemon, prefetch size as configured */
};

struct shim_config {
	enum shim_mode mode;
	uint64_t prefetch;        /* bytes; 0 in serialize mode */
	int prefetch_set;         /* LIBCEPTION_PREFETCH given: the daemon must use it */
	int timeout_ms;
	int lookahead;            /* LIBCEPTION_LOOKAHEAD=1 in prefetch+serialize mode */
	char socket[108];         /* sun_path */
	char debug[4096];         /* "" = no debug output */
	char bad[160];            /* why the environment was rejected, for debug */
};

extern struct shim_config shim_cfg;

/* Parse the environment (getenv-like lookup, so tests can feed their own).
 * Never fails: a bad value leaves a note in cfg->bad and falls back as
 * documented in docs/libception.so.md. */
void shim_config_parse(struct shim_config *cfg, const char *(*get)(const char *), unsigned uid);
int shim_parse_size(const char *s, uint64_t *out);
int shim_parse_mode(const char *s, enum shim_mode *out);
const char *shim_mode_name(enum shim_mode m);

/* ---- shim.c ---- */
struct real_syms {
	ssize_t (*read)(int, void *, size_t);
	ssize_t (*pread)(int, void *, size_t, off_t);
	ssize_t (*pread64)(int, void *, size_t, off_t);
	ssize_t (*readv)(int, const struct iovec *, int);
	ssize_t (*preadv)(int, const struct iovec *, int, off_t);
	ssize_t (*preadv64)(int, const struct iovec *, int, off_t);
	ssize_t (*preadv2)(int, const struct iovec *, int, off_t, int);
	ssize_t (*preadv64v2)(int, const struct iovec *, int, off_t, int);
	ssize_t (*sendfile)(int, int, off_t *, size_t);
	ssize_t (*sendfile64)(int, int, off_t *, size_t);
	ssize_t (*copy_file_range)(int, off_t *, int, off_t *, size_t, unsigned);
	ssize_t (*splice)(int, off_t *, int, off_t *, size_t, unsigned);
	ssize_t (*read_chk)(int, void *, size_t, size_t);
	ssize_t (*pread_chk)(int, void *, size_t, off_t, size_t);
	ssize_t (*pread64_chk)(int, void *, size_t, off_t, size_t);
	int (*close)(int);
	int (*dup2)(int, int);
	int (*dup3)(int, int, int);
	int (*close_range)(unsigned, unsigned, int);
	void (*closefrom)(int);
};

extern struct real_syms shim_real;
extern int shim_ready;                   /* set once init finished (acquire/release) */
extern __thread int shim_in_shim __attribute__((tls_model("initial-exec")));

void shim_init(void);
uint64_t shim_now_ns(void);

/* ---- decide.c ---- */
/* One intercepted call in flight; lives on the wrapper's stack. */
struct shim_op {
	int active;       /* 0: not a regular file (or mode off): nothing to record */
	int call;         /* enum lc_call */
	int hit;
	int dev;          /* device slot (devices.c), -1 if unknown */
	uint64_t t0;
	uint64_t len;
};

/* Before the real call: decide whether fd is ours, check residency, ask the
 * daemon or prefetch.  off < 0 means "the fd's current offset". */
void shim_before(struct shim_op *op, int call, int fd, int64_t off, uint64_t len);
/* After the real call: record its time; keeps errno. */
void shim_after(struct shim_op *op);

/* ---- residency.c ---- */
enum shim_res { SHIM_RES_RESIDENT, SHIM_RES_MISSING, SHIM_RES_UNKNOWN, SHIM_RES_UNSUPPORTED };
enum shim_res shim_residency(int fd, uint64_t off, uint64_t len);
/* The per-thread hint: a window of one file known resident a moment ago. */
int shim_hint_covers(uint64_t dev, uint64_t ino, uint64_t off, uint64_t len);
void shim_hint_set(uint64_t dev, uint64_t ino, uint64_t off, uint64_t len);

/* ---- client.c ---- */
/* DIRECT: the daemon has nothing to add on the file's device (LC_ST_DIRECT). */
enum shim_ensure { SHIM_ENSURE_OK, SHIM_ENSURE_FAILED, SHIM_ENSURE_SKIPPED, SHIM_ENSURE_DIRECT };
enum shim_ensure shim_client_ensure(int fd, uint64_t off, uint64_t len, int call,
				    uint64_t *res_off, uint64_t *res_len);
/* Send without waiting for an answer; 0 on success.  Never connects while
 * the client is backing off. */
int shim_client_send_report(const struct lc_report *r);
/* Send an ENSURE flagged LC_F_LOOKAHEAD and do not wait; 0 if sent.
 * Never blocks: a full socket drops it. */
int shim_client_lookahead(int fd, uint64_t off, uint64_t len, int call);
void shim_client_atfork_child(void);
void shim_client_init(void);

/* ---- local.c ---- */
/* Read [off, off+len) of fd into a scratch buffer so it is cached;
 * returns the bytes read (0 on failure). */
uint64_t shim_local_prefetch(int fd, uint64_t off, uint64_t len);
void shim_local_init(void);

/* ---- devices.c ---- */
/* The slot of a device (st_dev): 0..LC_REPORT_DEVS-1, or LC_REPORT_DEVS
 * ("other") once every slot is taken. */
int shim_dev_slot(uint64_t dev);
/* The device of a claimed slot; -1 if the slot is free or "other". */
int shim_dev_id(int slot, uint64_t *dev);
/* Whether the daemon said of this slot's device, less than
 * LC_DIRECT_RECHECK_S ago, that it has nothing to add there
 * (LC_ST_DIRECT); shim_dev_set_direct records that it just did. */
int shim_dev_direct(int slot, uint64_t now_ns);
void shim_dev_set_direct(int slot, uint64_t now_ns);
/* The cached device slot of fd, or -1; *token goes to shim_fd_learn(). */
int shim_fd_lookup(int fd, uint64_t *token);
/* Remember fd's slot, learnt by an fstat made after shim_fd_lookup()
 * returned token; does nothing if fd was closed in between. */
void shim_fd_learn(int fd, uint64_t token, int slot);
/* A descriptor (or all in [lo, hi]) was closed or replaced. */
void shim_fd_forget(int fd);
void shim_fd_forget_range(unsigned lo, unsigned hi);

/* The slots of a direct-mapped fd cache of `size` entries that can hold a
 * descriptor in [lo, hi], each visited once (all of them for a wide range);
 * shared by the device cache and the look-ahead cache. */
static inline void shim_fd_cache_visit(unsigned lo, unsigned hi, unsigned size,
				       void (*visit)(unsigned slot, unsigned lo, unsigned hi))
{
	if (lo > hi)
		return;
	if (hi - lo >= size) {
		for (unsigned i = 0; i < size; i++)
			visit(i, lo, hi);
		return;
	}
	for (unsigned fd = lo;; fd++) {
		visit(fd % size, lo, hi);
		if (fd == hi)
			break;
	}
}

/* ---- ahead.c ---- */
/* The daemon vouched for [off, off+len) of fd, a file of `size` bytes. */
void shim_ahead_learn(int fd, uint64_t off, uint64_t len, uint64_t size);
/* A call on fd read [off, off+len) from the page cache: if less than a
 * window is left ahead of it, ask for the next one without waiting. */
void shim_ahead_reached(int fd, uint64_t off, uint64_t len, int call);
/* A descriptor (or all in [lo, hi]) was closed or replaced. */
void shim_ahead_forget_range(unsigned lo, unsigned hi);
void shim_ahead_atfork_child(void);

/* ---- stats.c ---- */
/* dev: the device slot, -1 if unknown. */
void shim_stats_record(int call, int hit, uint64_t bytes, uint64_t ns, int dev);
void shim_stats_maybe_report(uint64_t now_ns);
void shim_stats_final(void);
void shim_stats_atfork_child(void);

/* ---- debug.c ---- */
void shim_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
