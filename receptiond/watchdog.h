/*
 * watchdog.h - the process that keeps a stopped or hung daemon from
 * hanging every reader of a watched file system.
 *
 * It shares the daemon's fanotify group (the same open file description)
 * and a page of shared memory.  While the daemon's listener and deadline
 * thread beat, it only beats itself.  When either beat is older than the
 * stale limit (the daemon is stopped, or a thread hangs), it allows the
 * pending events whose deadline passed, by the event fd numbers the
 * daemon publishes (a response names an event by that number only), and
 * reads and allows new events itself.  When the daemon dies it exits: the
 * group's last holder is gone and the kernel allows everything pending.
 *
 * Every answer is FAN_ALLOW, so an answer that reaches an event the daemon
 * already answered is refused by the kernel (ENOENT), and one that reaches
 * a newer event under a reused number only lets that read go early.
 */
#ifndef RD_WATCHDOG_H
#define RD_WATCHDOG_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#define RD_WATCH_SLOTS 4096   /* misses waiting at once; more are allowed at once */

struct rd_watch_shared {
	_Atomic uint64_t listener_beat_ns;  /* CLOCK_MONOTONIC, by the listener */
	_Atomic uint64_t deadline_beat_ns;  /* by the deadline thread */
	_Atomic uint64_t dog_beat_ns;       /* by the watchdog */
	_Atomic uint64_t dog_answers;       /* events the watchdog allowed */
	uint64_t stale_ns;                  /* a beat older than this is stale */
	pid_t daemon;
	/* A waiting miss: its event fd number, or -1; and when it is due. */
	struct {
		_Atomic int fd;
		_Atomic uint64_t due_ns;
	} slot[RD_WATCH_SLOTS];
};

/* Fork a watchdog on fan_fd (the child closes every other fd and calls
 * only async-signal-safe functions).  Its pid, or -1. */
pid_t rd_watchdog_spawn(struct rd_watch_shared *sh, int fan_fd);

/* Write FAN_ALLOW for event fd number fd on the group; 0 or -1. */
int rd_watch_allow(int fan_fd, int fd);

#endif
