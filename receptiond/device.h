/*
 * device.h - one queue and its worker(s) per storage device.
 *
 * Files map to devices by st_dev: a partition maps to its whole disk
 * (/sys/dev/block/MAJ:MIN), a device-mapper device with one slave to that
 * slave, and every other filesystem (FUSE, tmpfs, NFS...) is a device of
 * its own.  A device's workers take misses off its queue one at a time
 * (or policy->concurrency at a time) and read them.
 */
#ifndef RD_DEVICE_H
#define RD_DEVICE_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "policy.h"
#include "queue.h"
#include "stats.h"

struct rd_device {
	struct rd_device *next;
	struct rd_device_info info;
	char name[64];
	char args[192];
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct rd_queue q;
	struct rd_policy policy;
	struct rd_dev_stats st;
	unsigned nworkers;      /* workers it runs when busy */
	unsigned running;       /* workers alive (detached; they exit when idle) */
	unsigned inflight;
	uint64_t active_ns;     /* last time a worker had something to do */
	int ticker_claimed;     /* a worker drives the policy's tick */
	volatile int stop;
};

/* The device of a file system (created on first use), or NULL: the device
 * table is full, or (*direct set) the file system is memory-backed or not
 * one this daemon knows to sit on a disk (tmpfs, memfd, proc, sysfs, a
 * mount in another namespace), so there is nothing to prefetch and the
 * library should read on its own.  At most rd_cfg.max_devices devices
 * exist; a device whose workers exited (idle rd_cfg.device_idle seconds)
 * gives its place to a new one.  Main thread only. */
struct rd_device *rd_device_for(dev_t fs_dev, int *direct);
/* 1 if files of a file system of this type (mountinfo's, before any '.')
 * are prefetched (pure). */
int rd_fs_type_prefetched(const char *type);
/* Start the device's workers again if they exited; lock held. */
void rd_device_wake(struct rd_device *d);

/* A disk the libraries reported calls on (LC_MSG_REPORT) that nobody has
 * sent an ENSURE for yet: only its name and the library's counters, no
 * queue and no worker.  The device created by a first ENSURE on the disk
 * takes its counters over, and the record goes away. */
struct rd_lib_disk {
	struct rd_lib_disk *next;
	dev_t disk;
	char name[64];
	struct rd_lib_dev_stats st;
};

/* Count one report entry on the device or library-only disk of fs_dev
 * (partitions map to their disk).  A st_dev no file system mounted here
 * has is refused (-1): a client's numbers are not trusted to name one. */
int rd_device_count_library(dev_t fs_dev, const struct lc_report_dev *e);
/* Library-only disks, in the order first reported (main thread only). */
struct rd_lib_disk *rd_lib_disk_list(void);
/* All devices, in creation order.  The main thread adds and (when the
 * table is full, rd_device_for) frees them; another thread walks the
 * list between rd_device_walk_begin() and _end(), loading each next with
 * __ATOMIC_ACQUIRE (devices are appended whole). */
struct rd_device *rd_device_list(void);
void rd_device_walk_begin(void);
void rd_device_walk_end(void);
/* Stop every worker after its current piece and wait for them. */
void rd_device_stop_all(void);
/* Queued or in-flight requests on any device. */
unsigned rd_device_busy(void);

/* Resolve a st_dev to a device name, disk and kind (pure but for /sys and
 * /proc/self/mountinfo); exposed for the unit tests. */
void rd_device_identify(dev_t fs_dev, struct rd_device_info *info, char *name, size_t namelen);

/* What a waiter of a queued request is now (queue.h): gone if its
 * connection closed; let go if a look-ahead, or watch mode's reader past
 * --watch-deadline; else waiting.  The device's queue asks it. */
enum rd_waiter_state rd_waiter_state(const struct rd_waiter *w, uint64_t now);

/* Finish a request: answer every waiter, count, tell the policy.  Called
 * by the worker with the device lock held; frees r. */
struct rd_completion;
void rd_device_complete(struct rd_device *d, struct rd_req *r, const struct rd_completion *c);

/* Handle one validated ENSURE for a regular file: answer a hit at once,
 * else join or queue it (or answer LC_ST_BUSY).  Takes ownership of fd. */
struct lc_ensure;
struct rd_conn;
struct stat;
void rd_device_submit(struct rd_device *d, struct rd_conn *c, const struct lc_ensure *m, int fd,
                      const struct stat *st);

#endif
