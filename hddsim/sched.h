/*
 * sched.h - one actuator shared by all FUSE threads.
 *
 * A FUSE thread calls sched_read() and blocks; the actuator thread takes
 * the queued commands one at a time in the order the model picks, computes
 * each completion instant on the model's own timeline (start = the previous
 * completion, or the arrival if the drive was idle) and wakes the caller at
 * that instant with an absolute-deadline sleep.  Real scheduling delays
 * therefore never accumulate into the model; how late each caller actually
 * woke is recorded as lateness.
 */
#ifndef HDDSIM_SCHED_H
#define HDDSIM_SCHED_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "hist.h"
#include "model.h"

/* One command; lives on the caller's stack from submit to wait. */
struct sched_req {
	struct model_req r;
	int      meta;
	int      pid;             /* the thread whose read this is (FUSE's ctx) */
	int      done, taken;
	int      untimed;         /* submitted while the drive was untimed */
	int64_t  start, done_at;
	struct model_cost cost;
	pthread_cond_t cv;
};

struct sched_snap {
	int64_t  t;
	uint64_t reads, bytes, busy, service;
};

/* Drive commands by size (cumulative "under" classes, as the reads'). */
struct cmd_sizes {
	uint64_t n, le_4k, under_128k, under_1m, over_1m;
};

struct sched {
	struct model m;
	pthread_mutex_t lock;
	pthread_cond_t  submitted;
	pthread_t       thread;
	int             stop;
	struct sched_req **q;     /* waiting commands, arrival order */
	size_t          nq, capq;
	int64_t         model_t;  /* when the drive is next free */
	int64_t         t0;       /* mount time */
	FILE           *trace;
	int             realtime; /* wake callers at SCHED_FIFO priority */
	_Atomic int     untimed;  /* answer at once, outside the model (sched_set_timed) */
	/* counters */
	uint64_t reads, bytes, hits, continued, merged, meta_reads;
	uint64_t untimed_reads, untimed_bytes; /* answered outside the model */
	uint64_t reads_4k, reads_under_128k; /* short commands: page faults, split read-ahead */
	uint64_t busy, service, wait, seek_total;
	uint64_t overhead, position, transfer; /* ns: parts of busy */
	uint64_t media;                        /* ns: model_cost.media summed */
	struct cmd_sizes cmds;    /* finished commands, pieces joined */
	uint64_t cmd_len;         /* the command in progress */
	struct hist lateness, service_hist;
	struct sched_snap prev, cur; /* last two one-second snapshots */
};

/* realtime: callers and the actuator sleep at SCHED_FIFO priority 1 and
 * run at normal priority otherwise (content generation and copying stay
 * out of the real-time class).  Without permission it is a no-op. */
int  sched_start(struct sched *s, const struct drive *d, FILE *trace, int realtime,
		 char *err, size_t errlen);
void sched_stop(struct sched *s);

/* Read platter bytes [pos, pos+len): returns when the modelled drive has
 * delivered them.  `meta` marks a metadata (inode) read in the trace,
 * `pid` names the thread that asked (the trace's last column). */
void sched_read(struct sched *s, uint64_t pos, uint64_t len, int meta, int pid);

/* The same in two steps, so the caller can produce the bytes while the
 * command is queued: its arrival is when it was submitted. */
void sched_submit(struct sched *s, struct sched_req *rq, uint64_t pos, uint64_t len, int meta,
		  int pid);
void sched_wait(struct sched *s, struct sched_req *rq);

/* timed = 0: from now on reads are answered at once and leave the model
 * (queue, head, cache, counters) untouched, so a benchmark can fill the
 * page cache without waiting out the disk; timed = 1 returns to the model.
 * Commands already queued finish as modelled.  Async-signal-safe. */
void sched_set_timed(struct sched *s, int timed);

/* Write the live counters as "key value" lines; returns the length. */
size_t sched_stats(struct sched *s, char *buf, size_t len);

int64_t sched_now(void);

#endif
