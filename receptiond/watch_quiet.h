/*
 * watch_quiet.h - quiet files in watch mode.
 *
 * Every read of a marked file is an event and a round trip through the
 * listener, hit or miss (~30 µs on this VM; libception-watch(7), COST ON A
 * HIT).  A file found wholly in the page cache, up to --watch-quiet bytes,
 * gets an evictable ignore mark instead: its reads raise no more events,
 * from every open file, and cost what they cost unwatched.  Every
 * --watch-recheck the marks are flushed and the files heard again, so a
 * page evicted meanwhile is read by the kernel without prefetching for at
 * most that long.  The kernel drops an evictable mark with its inode, so
 * marks never pin memory; they all go with the group when the daemon and
 * its watchdog exit.
 */
#ifndef RD_WATCH_QUIET_H
#define RD_WATCH_QUIET_H

#include <stdint.h>

struct rd_json;

void rd_quiet_init(int fan_fd, uint64_t max_bytes, uint64_t recheck_ms);
/* After a hit on the event's fd for [off, off + len): quiet the file if it
 * is small enough and wholly resident.  Listener thread only. */
void rd_quiet_after_hit(int fd, uint64_t off, uint64_t len);
/* Flush the marks when a recheck is due.  Deadline thread. */
void rd_quiet_tick(uint64_t now_ns);
/* "quiet_max_bytes", "recheck_ms", "quieted", "quiet_checks", "quiet_flushes". */
void rd_quiet_json(struct rd_json *j);
/* Files quieted and flushes, for the metrics. */
void rd_quiet_counts(uint64_t *quieted, uint64_t *flushes);

#endif
