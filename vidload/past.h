/*
 * past.h - a run that starts in the steady state (`--past S`).
 *
 * Started cold, a run's active sessions take several mean sessions to
 * level off and the server's page cache fills only as fast as the disk
 * reads: at 3.5 sessions/s on the block disk neither had happened after
 * 400 s.  Instead the run begins as if sessions had been arriving for S
 * seconds already: the ones still watching at the start carry on from
 * their next segment, and what the past sessions read (each segment with
 * the time it was last read) can be read into the page cache beforehand
 * (`--past-reads`), the most recent that fit, oldest first, so the cache
 * holds what a server that had run for S seconds would hold.
 *
 * The past has its own random streams: a run's own arrivals, and so its
 * judged sessions, are the same with or without it.  It assumes the past
 * kept its schedule: segment k of a session was asked for at its planned
 * send time (the burst at the session's start).
 */
#ifndef VL_PAST_H
#define VL_PAST_H

#include "run.h"

struct past_session {
	const struct lib_video *v;
	double start;         /* seconds relative to the run's start, < 0 */
	unsigned nseg;        /* segments the viewer asks for */
	unsigned next;        /* the first one asked for at or after the start */
};

typedef int (*past_fn)(void *ctx, const struct past_session *s);

/* Calls fn for every session that arrived in the cfg->past seconds before
 * the start, in arrival order, until fn returns nonzero; returns that, 0,
 * or -1 with a message in err. */
int past_each(const struct vl_config *cfg, uint64_t seed, past_fn fn, void *ctx, char *err,
	      size_t errlen);

/* `--past-reads`: print every segment the past read, "T OFFSET BYTES PATH":
 * when it was last read (seconds from the start, so negative), where it
 * lies in the file, and the file's path under the URL prefix; least
 * recently read first.  0 or 1. */
int past_reads_run(const struct vl_config *cfg);

#endif
