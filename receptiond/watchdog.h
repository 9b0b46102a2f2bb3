/*
 * watchdog.h - the process that keeps a stopped or hung daemon from
 * hanging every reader of a watched file system.
 *
 * It shares the daemon's fanotify group (the same open file description)
 * and a page of shared memory.  While the daemon's listener and deadline
 * thread beat, it only beats itself.  When either beat is older than the
 * stale limit (the daemon is stopped, or a thread hangs), it answers
 * FAN_ALLOW for every fd number the daemon holds, and reads and allows new
 * events itself.  A response names an event by the number of the fd that
 * came with it, in the table of the process that read it; every event the
 * daemon has read and not answered still has its fd open there (the
 * listener closes it only after the answer).  So the watchdog needs no
 * word from the daemon, which matters because a stop lands when a system
 * call returns: after the kernel handed over a batch of events, before the
 * daemon could note any of them.  When the daemon dies the watchdog
 * exits: the group's last holder is gone and the kernel allows everything
 * pending.
 *
 * Every answer is FAN_ALLOW, so one that names a number which is no
 * pending event (most of the daemon's fds) is refused by the kernel
 * (ENOENT), and one that reaches an event under a reused number only lets
 * that read go early.
 */
#ifndef RD_WATCHDOG_H
#define RD_WATCHDOG_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

struct rd_watch_shared {
	_Atomic uint64_t listener_beat_ns;  /* CLOCK_MONOTONIC, by the listener */
	_Atomic uint64_t deadline_beat_ns;  /* by the deadline thread */
	_Atomic uint64_t dog_beat_ns;       /* by the watchdog */
	_Atomic uint64_t dog_answers;       /* events the watchdog allowed */
	uint64_t stale_ns;                  /* a beat older than this is stale */
	pid_t daemon;
};

/* Fork a watchdog on fan_fd (the child closes every other fd and calls
 * only async-signal-safe functions).  Its pid, or -1. */
pid_t rd_watchdog_spawn(struct rd_watch_shared *sh, int fan_fd);

/* Write FAN_ALLOW for event fd number fd on the group; 0 or -1. */
int rd_watch_allow(int fan_fd, int fd);

#endif
