/*
 * closer.h - closing passed fds off the main thread and the workers.
 *
 * close() is a call into the file's file system: FUSE sends FLUSH on every
 * close and waits for the server's answer, and a user may mount a FUSE
 * file system whose FLUSH never returns.  So every fd a client passed is
 * closed by closer threads, started on demand (at most RD_MAX_CLOSERS; one
 * user's closes occupy at most RD_USER_CLOSERS of them, so hung closes
 * stall only their own user's), each charged to the user's pending-close
 * quota until done.
 */
#ifndef RD_CLOSER_H
#define RD_CLOSER_H

#include <sys/types.h>

#define RD_MAX_CLOSERS 32
#define RD_USER_CLOSERS 2

/* Close fd later on uid's account; returns 1 if uid has reached its
 * pending-close limit (the caller stops taking fds from it), else 0. */
int rd_close_later(int fd, uid_t uid);
/* Closes queued or running (tests, stats). */
unsigned rd_closes_pending(void);

#endif
