/*
 * sizing.h - what the prefetch-sizing policies (competitive, adaptive,
 * bitrate) share: their argument syntax, a table of the streams seen on a
 * device (slow start, pacing, the last prefetched window), the accounting
 * the adaptive score needs, per-bitrate scaling, and device profiles.
 *
 * All of it lives in a policy's per-device state and runs under the device
 * lock (policy.h), so none of it locks.  Times are CLOCK_MONOTONIC ns and
 * always passed in, so the unit tests run on a synthetic clock.
 */
#ifndef RD_SIZING_H
#define RD_SIZING_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "policy.h"

#define SZ_PAGE 4096u
#define SZ_MIB (1024.0 * 1024.0)
/* A switch between distant positions cheaper than this is no mechanical
 * seek (flash, a host-cached virtual disk: 0.05-0.07 ms here; a hard disk
 * or hddsim: 8-15 ms).  receptiond-profile and the policies share it. */
#define SZ_MECHANICAL_SWITCH_S 0.001
/* The slowest stream the sizing policies expect, B/s (below SD video's
 * 50 kB/s): how long a stream may take through its window before it is
 * taken for ended, while its own bitrate is unknown. */
#define SZ_SLOWEST_BITRATE 24000.0

/* ---- arguments: "key=value,key=value" (sizing_args.c) ---- */

/* Next key/value of *cursor; 1 if one was found, 0 at the end, -1 if an
 * item has no '='. */
int sz_args_next(const char **cursor, char *key, size_t klen, char *val, size_t vlen);
/* "180s", "500ms", "2m", "1.5s", plain number = seconds. */
int sz_parse_duration(const char *s, uint64_t *ns);
/* A plain number, "1.5". */
int sz_parse_number(const char *s, double *out);
/* "5%" or "0.05" -> 0.05. */
int sz_parse_fraction(const char *s, double *out);
/* "122M" per second: sizes with K/M/G; fractions allowed ("0.5M"). */
int sz_parse_bytes(const char *s, double *out);
/* "2.5M" for logs, into buf. */
const char *sz_fmt_size(uint64_t bytes, char *buf, size_t len);

/* ---- device profiles written by `libception profile` (sizing_profile.c) ---- */

struct sz_profile {
	double rate;              /* mean sequential rate, B/s */
	double switch_s;          /* switch cost, s */
	double competitive_size;  /* switch_s * rate, B */
	unsigned concurrency;     /* reads that may run at once */
	char path[512];           /* where it was read from */
};
/* The directory: $LIBCEPTION_PROFILES, /var/lib/libception/profiles for
 * root, else $XDG_STATE_HOME or ~/.local/state + /libception/profiles. */
void sz_profile_dir(char *buf, size_t len);
/* Load DIR/MAJ:MIN.json for disk (or the file named by path if not NULL).
 * 0 on success, -1 if absent or unreadable (errno), -2 if malformed. */
int sz_profile_load(dev_t disk, const char *path, struct sz_profile *out);
/* Parse profile JSON text (exposed for the unit tests). */
int sz_profile_parse(const char *text, struct sz_profile *out);

/* ---- streams (sizing_stream.c) ---- */

/*
 * A stream is a sequential reader of one file, found by (dev, ino) and an
 * offset near where it last asked; several clients of one file are
 * several streams.  Its bitrate is its pacing over its recent past (the
 * last one to two pacing periods, never its opening burst), known from
 * its second pacing period on.
 */
struct sz_stream {
	dev_t dev;
	ino_t ino;
	int used;
	uint64_t first_off, first_ns;   /* where and when it started */
	uint64_t frontier;              /* end of the furthest range asked for */
	uint64_t ask_off;               /* start of the request that moved it */
	uint64_t last_ns;               /* its last request */
	uint64_t mark_off, mark_ns;     /* pacing: moved every pacing_ns */
	uint64_t ref_off, ref_ns;       /* pacing: the mark before (0: none yet) */
	double bitrate;                 /* B/s, 0 while unknown */
	uint64_t next_size;             /* slow start: its next window */
	/* The last window the daemon prefetched for it. */
	uint64_t win_lo, win_hi;        /* speculative part: beyond what was asked */
	uint64_t win_ns;                /* when it became resident */
	uint64_t win_evicted;           /* bytes of it seen evicted so far */
	uint64_t win_evicted_ns;        /* when the first of them was seen */
	uint64_t win_needed;            /* of those, bytes the stream came back for */
	uint64_t win_dropped;           /* bytes of it dropped (no shadow entry) */
	uint64_t reach;                 /* end of the furthest window the library
	                                   was told is resident: it asks next there */
	int fd;                         /* dup of the file for residency checks, -1 */
	/* The adaptive policy's record of the last window, counted for its
	 * group when the stream gets its next one or ends (0: none). */
	unsigned pol_group;
	uint64_t pol_read, pol_disk_ns, pol_consumed;
	uint64_t pol_open_ns;           /* when that window was asked for */
	uint64_t pol_lo, pol_hi;        /* and what it made resident */
	/* and of the windows of one group it was done with this interval, in
	 * ms and MiB (the score's error counts streams, not windows) */
	unsigned pol_cl_group;
	double pol_cl_disk, pol_cl_read, pol_cl_consumed;
	int next;                       /* hash chain */
};

struct sz_streams {
	struct sz_stream *v;
	int *bucket;
	unsigned cap, nbuckets, live;
	unsigned tracked_fds, max_fds;  /* dups held for re-checks */
	uint64_t idle_ns;               /* a stream silent this long has ended */
	uint64_t pacing_ns;             /* bitrate over the last 1-2 of these,
	                                   never from the stream's start */
	double ref_pct;                 /* the reference bitrate's percentile */
	double ref_bitrate;             /* that percentile of the live streams'
	                                   known bitrates: the bitrate that gets
	                                   a policy's whole size */
	double slow_bitrate;            /* and the 10th percentile: 9 in 10
	                                   live streams are faster */
	double *scratch;                /* cap doubles, for the percentile */
	/* called when a stream ends or is replaced, for the accounting */
	void (*ended)(void *ctx, struct sz_stream *s, uint64_t now);
	void *ended_ctx;
};

int sz_streams_init(struct sz_streams *t, unsigned cap);
void sz_streams_free(struct sz_streams *t);
/* The stream a request at [off, off+len) of (dev, ino) continues, or NULL.
 * slack: how far from its frontier a request may land and still belong
 * to it (the library skips ranges it knows are resident). */
struct sz_stream *sz_stream_find(struct sz_streams *t, dev_t dev, ino_t ino, uint64_t off,
                                 uint64_t slack);
/* A new stream starting at off (replacing the oldest if the table is full). */
struct sz_stream *sz_stream_new(struct sz_streams *t, dev_t dev, ino_t ino, uint64_t off,
                                uint64_t now);
/* Record that s asked for [off, off+len) at now: moves the frontier and the
 * bitrate estimate; returns the bytes by which the frontier advanced. */
uint64_t sz_stream_advance(struct sz_streams *t, struct sz_stream *s, uint64_t off, uint64_t len,
                           uint64_t now);
/* End streams idle for idle_ns and refresh ref_bitrate. */
void sz_streams_expire(struct sz_streams *t, uint64_t now);
void sz_stream_end(struct sz_streams *t, struct sz_stream *s, uint64_t now);
/* Mean bitrate of live streams whose bitrate is known, 0 if none. */
double sz_streams_mean_bitrate(const struct sz_streams *t);
/* Every live stream (inode, bitrate, age, bytes consumed, last window's
 * speculative part) as the array "stream_list", for `libception stats`. */
void sz_streams_describe(const struct sz_streams *t, struct rd_json *j, uint64_t now);

/* ---- per-bitrate scaling (policy_bitrate.c) ---- */

enum sz_scale { SZ_SCALE_NONE, SZ_SCALE_SQRT, SZ_SCALE_LINEAR };
int sz_scale_parse(const char *s, enum sz_scale *out);
const char *sz_scale_name(enum sz_scale s);
/* The window for a stream of bitrate b when the reference bitrate gets
 * size: size * sqrt(b/ref) (or b/ref), page-rounded, at least min.  An
 * unknown bitrate gets size. */
uint64_t sz_scale_size(enum sz_scale mode, uint64_t size, double b, double ref, uint64_t min);

/* ---- accounting (sizing_account.c) ---- */

struct sz_counters {
	uint64_t requests, hits, misses;
	uint64_t asked;            /* bytes the library asked for */
	uint64_t demanded;         /* bytes streams consumed (frontier advance) */
	uint64_t read;             /* bytes read from the device */
	uint64_t prefetched;       /* bytes read beyond what was asked */
	uint64_t useful;           /* prefetched bytes later asked for */
	uint64_t wasted;           /* prefetched bytes never asked for (stream ended) */
	uint64_t evicted;          /* prefetched bytes evicted before they were asked for */
	uint64_t evictions;        /* windows in which an eviction was seen */
	uint64_t evict_age_ns;     /* sum over those of prefetch-to-eviction time */
	uint64_t evicted_needed;   /* of evicted, bytes whose stream came back for them
	                              (missed inside the window): the evictions that cost */
	uint64_t evictions_needed; /* windows with such bytes */
	uint64_t evict_needed_age_ns; /* sum over those of prefetch-to-eviction time */
	uint64_t evictions_needed_rated; /* of those, windows of a stream of known bitrate */
	uint64_t evict_needed_fit; /* sum over these of prefetch-to-eviction time x the
	                              stream's bitrate: what it could consume in time */
	uint64_t evicted_needed_older; /* of evicted_needed, bytes of windows prefetched
	                                  before the policy's last cut (cut_ns) */
	uint64_t reread;           /* bytes read again inside an earlier window */
	uint64_t dropped;          /* prefetched bytes dropped unused without
	                              reclaim (fadvise, drop_caches) */
	uint64_t disk_ns;          /* time the workers spent reading, summed */
	uint64_t busy_ns;          /* time at least one read was in flight */
};

struct sz_account {
	struct sz_counters total, interval;
	uint64_t interval_start_ns, start_ns;
	unsigned concurrency;
	int cachestat_ok;          /* 0 after cachestat failed: no re-checks */
	uint64_t busy_until;       /* end of the latest read seen (busy union) */
	uint64_t rechecks;
	uint64_t cut_ns;           /* the policy made its size smaller then: windows
	                              prefetched before are of the larger size */
};

void sz_account_init(struct sz_account *a, unsigned concurrency, uint64_t now);
/* One completion: updates streams (creating one when needed) and counters.
 * Returns the stream it belonged to (or NULL if none could be made). */
struct sz_stream *sz_account_observe(struct sz_account *a, struct sz_streams *t,
                                     const struct rd_completion *c, uint64_t slack);
/* Residency re-check of each stream's outstanding window (cachestat on the
 * held dup): counts prefetched bytes evicted before use and their age. */
void sz_account_recheck(struct sz_account *a, struct sz_streams *t, uint64_t now);
/* Bytes of s's window found evicted by reclaim so far (a re-check, or a
 * re-read inside it), at now. */
void sz_account_saw_evicted(struct sz_account *a, struct sz_stream *s, uint64_t bytes,
                            uint64_t now);
/* Stream-end hook for sz_streams.ended: unconsumed prefetch is waste. */
void sz_account_stream_ended(void *ctx, struct sz_stream *s, uint64_t now);
/* Start a new interval: returns the finished one's counters and length. */
struct sz_counters sz_account_roll(struct sz_account *a, uint64_t now, uint64_t *len_ns);

/* Figures derived from counters over len_ns. */
struct sz_figures {
	double miss_ratio;         /* read / demanded (>1: evictions, waste) */
	double busy;               /* time with a read in flight / len */
	double disk_ms_per_mib;    /* that time per MiB demanded ("per transaction") */
	double score;              /* disk_ms_per_mib * miss_ratio (SYSTOR 2014 4.1) */
	double evict_fraction;     /* evicted / prefetched */
	double evict_age_s;        /* mean prefetch-to-eviction time, 0 if none */
	double needed_fraction;    /* evicted_needed / prefetched */
	double needed_read_share;  /* evicted_needed / read: the reads they cost again */
	double needed_age_s;       /* their mean prefetch-to-eviction time */
	double needed_fit;         /* the mean window their streams could consume before
	                              the eviction (bytes; 0 if no bitrate was known) */
	double older_read_share;   /* of needed_read_share, the windows prefetched
	                              before the last cut */
};
void sz_figures(const struct sz_counters *c, uint64_t len_ns, unsigned concurrency,
                struct sz_figures *f);
void sz_account_describe(const struct sz_account *a, struct rd_json *j, uint64_t now);

/* Residency of [off, off+len) of fd in pages (cachestat); -1 on failure.
 * sz_residency also gives the pages evicted by reclaim (shadow entries). */
long sz_resident_pages(int fd, uint64_t off, uint64_t len);
long sz_residency(int fd, uint64_t off, uint64_t len, long *evicted);

/* ---- what every sizing policy has (sizing_base.c) ---- */

struct sz_base {
	struct sz_streams streams;
	struct sz_account acct;
	enum sz_scale scale;       /* per-bitrate scaling of the policy's size */
	uint64_t min_size;         /* no window below this (scaling, slow start) */
	uint64_t max_size;         /* nor above */
	unsigned stream_cap;
	double ref_pct;            /* ref=: percentile of the reference bitrate */
	char who[96];              /* "adaptive vda": prefix of log lines */
};

/* Defaults, before the policy's own arguments. */
void sz_base_defaults(struct sz_base *b, const char *policy, const struct rd_device_info *dev);
/* A shared argument (scale=, ref=, min=, max=, streams=): 1 if taken, 0 if not
 * ours, -1 if bad (err filled). */
int sz_base_arg(struct sz_base *b, const char *key, const char *val, char *err, size_t errlen);
int sz_base_start(struct sz_base *b, unsigned concurrency, uint64_t now, char *err, size_t errlen);
void sz_base_free(struct sz_base *b);
/* The stream a request belongs to (NULL if new). */
struct sz_stream *sz_base_stream(struct sz_base *b, const struct rd_request_info *req);
/* The policy's size for this request after per-bitrate scaling. */
uint64_t sz_base_scaled(struct sz_base *b, const struct sz_stream *s, uint64_t size);
struct sz_stream *sz_base_observe(struct sz_base *b, const struct rd_completion *c);
/* Expire idle streams and re-check residency of outstanding windows. */
void sz_base_tick(struct sz_base *b, uint64_t now);
void sz_base_describe(struct sz_base *b, struct rd_json *j);
/* rd_policy_ops.prefetch_use of every sizing policy, whose private state
 * starts with its struct sz_base. */
void sz_policy_prefetch_use(struct rd_policy *p, uint64_t *useful, uint64_t *wasted,
                            uint64_t *evicted);
uint64_t sz_clamp_page(uint64_t v, uint64_t lo, uint64_t hi);

/* ---- the policies ---- */

extern const struct rd_policy_ops rd_policy_competitive;
extern const struct rd_policy_ops rd_policy_adaptive;
extern const struct rd_policy_ops rd_policy_bitrate;

#endif
