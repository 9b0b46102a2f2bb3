/*
 * watch.h - prefetching without the preload library: fanotify pre-content
 * events (Linux >= 6.14, ext4, xfs, btrfs).
 *
 * `receptiond --watch PATH` marks the mount holding PATH for
 * FAN_PRE_ACCESS.  Before any read of a file there proceeds, the kernel
 * tells the listener the file (an fd of its own, which raises no events)
 * and the byte range, and the reader waits for the answer.  The listener
 * answers a range already in the page cache at once; a miss goes to the
 * daemon as an ENSURE over the daemon's own socket, so it joins the same
 * per-device serialized queue, policies and stats as the library's
 * requests, and is answered when the window is resident.
 *
 * The kernel waits for an answer forever, so three things bound the wait:
 * a deadline thread that allows any event older than --watch-deadline;
 * a watchdog process holding the same fanotify group, which answers (and
 * reads new events itself) while the daemon's heartbeat is stale, as when
 * it is stopped or hung; and the kernel itself, which allows every
 * pending event once the last holder of the group exits.  Every answer is
 * FAN_ALLOW: the listener only ever delays a read, never changes it.
 */
#ifndef RD_WATCH_H
#define RD_WATCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct rd_json;

#define RD_WATCH_MAX_PATHS 16
#define RD_WATCH_DEFAULT_DEADLINE_MS 500
#define RD_WATCH_DEFAULT_SPIN_US 50
#define RD_WATCH_DEFAULT_QUIET (2ull << 20)   /* watch_quiet.h */
#define RD_WATCH_DEFAULT_RECHECK_MS 10000

/* Check the file systems and mark the mounts holding paths[], before
 * daemonizing (so that a refusal reaches the caller's terminal).  0, or
 * -1 with a one-line message. */
int rd_watch_open(char *const *paths, unsigned npaths, unsigned deadline_ms, unsigned spin_us,
                  char *err, size_t errlen);
/* Start the listener, the deadline thread and the watchdog: after
 * daemonizing (threads do not survive a fork) and once the socket
 * listens, since misses go through it.  0, or -1 with a message. */
int rd_watch_run(const char *socket_path, char *err, size_t errlen);
/* Allow whatever is pending, stop the threads and the watchdog. */
void rd_watch_stop(void);
/* The "watch" member of the statistics (nothing if not watching). */
void rd_watch_json(struct rd_json *j);
/* The libception_watch_* metric families, Prometheus text (nothing if
 * not watching; metrics.c). */
void rd_watch_metrics(FILE *f);

/* Whether the file system holding path can carry pre-content marks:
 * 0 if so, else -1 with the reason (exposed for the tests and --check). */
int rd_watch_fs_ok(const char *path, char *err, size_t errlen);

#endif
