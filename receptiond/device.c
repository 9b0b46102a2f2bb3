/* device.c - which device a file lives on, and the per-device state. */
#include "device.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "cfg.h"
#include "log.h"
#include "prefetch.h"

void *rd_worker_main(void *arg);   /* worker.c */

/* How long exiting waits for workers to finish their current piece. */
#define RD_STOP_WAIT_NS (3ull * 1000000000u)

/* fs_dev -> device (or, until one exists, library-only disk); partitions
 * of one disk share a device. */
struct dev_map {
	struct dev_map *next;
	dev_t fs_dev;
	struct rd_device *dev;
	struct rd_lib_disk *lib;   /* set only while dev is NULL */
	int direct;                /* nothing to prefetch here (rd_device_for) */
};

/* Remembered file systems, devices or not; past this, new ones are
 * looked up again each time rather than remembered. */
#define RD_MAX_MAPS 4096

static struct dev_map *maps;
static unsigned nmaps, ndevices;
static struct rd_device *devices, **devices_tail = &devices;
static struct rd_lib_disk *lib_disks, **lib_disks_tail = &lib_disks;
static pthread_rwlock_t walkers = PTHREAD_RWLOCK_INITIALIZER;

void rd_device_walk_begin(void)
{
	pthread_rwlock_rdlock(&walkers);
}

void rd_device_walk_end(void)
{
	pthread_rwlock_unlock(&walkers);
}
static struct rd_log_limit full_log;

static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	int ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (!ok)
		return -1;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

static int parse_dev(const char *text, dev_t *out)
{
	unsigned ma, mi;
	if (sscanf(text, "%u:%u", &ma, &mi) != 2)
		return -1;
	*out = makedev(ma, mi);
	return 0;
}

/* The only entry of DIR/slaves, for device-mapper and md devices built on
 * one disk; -1 otherwise. */
static int single_slave(const char *dir, char *out, size_t len)
{
	char path[PATH_MAX + 16];
	snprintf(path, sizeof path, "%s/slaves", dir);
	int n = 0;
	char found[NAME_MAX + 1] = "";
	DIR *d = opendir(path);
	if (!d)
		return -1;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		n++;
		snprintf(found, sizeof found, "%s", e->d_name);
	}
	closedir(d);
	if (n != 1)
		return -1;
	snprintf(out, len, "/sys/class/block/%s", found);
	return 0;
}

static void fs_type(dev_t dev, char *out, size_t len)
{
	snprintf(out, len, "dev");
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return;
	char line[4096];
	while (fgets(line, sizeof line, f)) {
		unsigned ma, mi;
		if (sscanf(line, "%*d %*d %u:%u", &ma, &mi) != 2 || makedev(ma, mi) != dev)
			continue;
		char *sep = strstr(line, " - ");
		if (sep && sscanf(sep + 3, "%31s", out) == 1) {
			/* "fuse.hddsim" -> "fuse": names stay short and stable */
			out[strcspn(out, ".")] = 0;
			break;
		}
	}
	fclose(f);
}

/* max(max_sectors_kb, read_ahead_kb) of the queue under sysfs dir, in
 * bytes, capped at RD_PIECE; RD_HINT if neither can be read. */
static uint64_t hint_bytes(const char *dir)
{
	static const char *const knobs[] = { "max_sectors_kb", "read_ahead_kb" };
	char path[PATH_MAX + 32], buf[64];
	uint64_t most = RD_HINT;
	for (size_t i = 0; i < sizeof knobs / sizeof *knobs; i++) {
		snprintf(path, sizeof path, "%s/queue/%s", dir, knobs[i]);
		if (read_line(path, buf, sizeof buf) != 0)
			continue;
		uint64_t bytes = strtoull(buf, NULL, 10) << 10;
		if (bytes > most)
			most = bytes;
	}
	return most < RD_PIECE ? most : RD_PIECE;
}

void rd_device_identify(dev_t fs_dev, struct rd_device_info *info, char *name, size_t namelen)
{
	char sys[PATH_MAX + 32], real[PATH_MAX], buf[256];
	memset(info, 0, sizeof *info);
	info->hint_bytes = RD_HINT;
	info->fs_dev = fs_dev;
	info->disk = fs_dev;
	info->rotational = -1;
	snprintf(sys, sizeof sys, "/sys/dev/block/%u:%u", major(fs_dev), minor(fs_dev));
	if (!realpath(sys, real)) {
		char type[32];
		fs_type(fs_dev, type, sizeof type);
		snprintf(name, namelen, "%s-%u:%u", type, major(fs_dev), minor(fs_dev));
		return;
	}
	info->block = 1;
	/* A partition's directory sits inside its disk's. */
	snprintf(sys, sizeof sys, "%s/partition", real);
	if (access(sys, F_OK) == 0) {
		char *slash = strrchr(real, '/');
		if (slash)
			*slash = 0;
	}
	/* The file system's own queue (not a slave's) sets what one WILLNEED
	 * call reads (prefetch.c). */
	info->hint_bytes = hint_bytes(real);
	for (int depth = 0; depth < 4; depth++) {
		char slave[PATH_MAX], r2[PATH_MAX];
		if (single_slave(real, slave, sizeof slave) || !realpath(slave, r2))
			break;
		snprintf(real, sizeof real, "%s", r2);
		snprintf(sys, sizeof sys, "%s/partition", real);
		if (access(sys, F_OK) == 0) {
			char *slash = strrchr(real, '/');
			if (slash)
				*slash = 0;
		}
	}
	snprintf(sys, sizeof sys, "%s/dev", real);
	if (read_line(sys, buf, sizeof buf) == 0)
		parse_dev(buf, &info->disk);
	snprintf(sys, sizeof sys, "%s/queue/rotational", real);
	if (read_line(sys, buf, sizeof buf) == 0)
		info->rotational = atoi(buf);
	const char *base = strrchr(real, '/');
	snprintf(name, namelen, "%s", base ? base + 1 : real);
}

static struct rd_device *find_by_disk(dev_t disk)
{
	for (struct rd_device *d = devices; d; d = d->next)
		if (d->info.disk == disk)
			return d;
	return NULL;
}

static int start_policy(struct rd_device *d)
{
	char err[256] = "";
	const struct rd_policy_spec *spec = rd_policy_spec_for(rd_cfg.policies, rd_cfg.npolicies, d->name);
	const struct rd_policy_ops *ops = spec ? rd_policy_find(spec->name) : &rd_policy_fixed;
	snprintf(d->args, sizeof d->args, "%s", spec ? spec->args : "");
	d->info.args = d->args;
	d->policy = (struct rd_policy){ .ops = ops, .dev = &d->info, .concurrency = 1 };
	if (ops->init(&d->policy, err, sizeof err) == 0)
		return 0;
	rd_log("device %s: policy %s: %s; using fixed", d->name, ops->name, err);
	d->args[0] = 0;
	d->policy = (struct rd_policy){ .ops = &rd_policy_fixed, .dev = &d->info, .concurrency = 1 };
	return rd_policy_fixed.init(&d->policy, err, sizeof err);
}

/* Start the device's workers (detached: an idle one exits by itself);
 * lock held, or the device not yet published.  Returns how many run. */
static unsigned start_workers(struct rd_device *d)
{
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	d->ticker_claimed = 0;
	d->active_ns = rd_now_ns();
	for (unsigned i = d->running; i < d->nworkers; i++) {
		pthread_t t;
		int e = pthread_create(&t, &attr, rd_worker_main, d);
		if (e) {
			rd_log("device %s: cannot start a worker: %s", d->name, strerror(e));
			break;
		}
		d->running++;
	}
	pthread_attr_destroy(&attr);
	return d->running;
}

void rd_device_wake(struct rd_device *d)
{
	if (!d->running && !d->stop)
		start_workers(d);
}

int rd_fs_type_prefetched(const char *type)
{
	/* File systems whose files live on a disk, or behind a FUSE server
	 * or a network that may (hddsim is FUSE).  Not memory (tmpfs,
	 * ramfs, shm), not kernel views (proc, sysfs, cgroup...), and not
	 * "dev": no mount here has the st_dev (a memfd, a pipe's fs, a mount
	 * in another namespace). */
	static const char *const known[] = {
		"ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "jfs", "reiserfs", "nilfs2",
		"bcachefs", "zfs", "vfat", "exfat", "ntfs", "ntfs3", "hfsplus", "udf", "iso9660",
		"squashfs", "erofs", "overlay", "fuse", "fuseblk", "nfs", "nfs4", "cifs", "smb3",
		"9p", "virtiofs", "ceph", "gfs2", "ocfs2", NULL,
	};
	for (int i = 0; known[i]; i++)
		if (strcmp(type, known[i]) == 0)
			return 1;
	return 0;
}

/* Make room for one more device: free one whose workers have exited and
 * that holds no request (main thread, which alone adds and frees). */
static int evict_idle(void)
{
	for (struct rd_device **p = &devices; *p; p = &(*p)->next) {
		struct rd_device *d = *p;
		pthread_mutex_lock(&d->lock);
		int idle = !d->running && !d->q.len && !d->q.nflying;
		pthread_mutex_unlock(&d->lock);
		if (!idle)
			continue;
		for (struct dev_map **m = &maps; *m;) {
			if ((*m)->dev == d) {
				struct dev_map *gone = *m;
				*m = gone->next;
				free(gone);
				nmaps--;
			} else {
				m = &(*m)->next;
			}
		}
		/* Other threads walk the list (the metrics thread): unlinked
		 * and freed only while none does. */
		pthread_rwlock_wrlock(&walkers);
		*p = d->next;
		if (devices_tail == &d->next)
			devices_tail = p;
		pthread_rwlock_unlock(&walkers);
		rd_log("device %s: idle, freed to make room for another", d->name);
		if (d->policy.ops->destroy)
			d->policy.ops->destroy(&d->policy);
		pthread_mutex_destroy(&d->lock);
		pthread_cond_destroy(&d->cond);
		free(d);
		ndevices--;
		return 0;
	}
	return -1;
}

static struct rd_device *create(dev_t fs_dev, int *direct)
{
	struct rd_device_info info;
	char name[64], type[32] = "";
	rd_device_identify(fs_dev, &info, name, sizeof name);
	if (!info.block) {
		fs_type(fs_dev, type, sizeof type);
		if (!rd_fs_type_prefetched(type)) {
			*direct = 1;
			return NULL;
		}
	}
	struct rd_device *d = find_by_disk(info.disk);
	if (d)
		return d;
	if (ndevices >= rd_cfg.max_devices && evict_idle()) {
		rd_log_limited(&full_log, "device %s: %u devices in use, none idle; "
		               "answering busy", name, ndevices);
		return NULL;
	}
	d = calloc(1, sizeof *d);
	if (!d)
		return NULL;
	d->info = info;
	snprintf(d->name, sizeof d->name, "%s", name);
	d->info.name = d->name;
	d->info.default_size = rd_cfg.prefetch;
	pthread_mutex_init(&d->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->cond, &ca);
	pthread_condattr_destroy(&ca);
	hist_init(&d->st.wait);
	hist_init(&d->st.service);
	rd_order_stats_init(&d->st.order);
	d->q.order = (struct rd_order){ .mode = rd_cfg.order, .deadline_ns = rd_cfg.deadline_ns };
	d->q.state = rd_waiter_state;
	d->st.created_ns = rd_now_ns();
	if (start_policy(d))
		goto fail;
	d->nworkers = rd_cfg.inflight ? rd_cfg.inflight : d->policy.concurrency ? d->policy.concurrency : 1;
	if (d->nworkers > 64)
		d->nworkers = 64;
	if (!start_workers(d))
		goto fail;
	rd_log("device %s (%u:%u): policy %s%s%s, %u worker%s, reads asked %llu KiB at a time%s",
	       d->name, major(info.disk), minor(info.disk), d->policy.ops->name,
	       d->args[0] ? ":" : "", d->args, d->nworkers, d->nworkers == 1 ? "" : "s",
	       (unsigned long long)(info.hint_bytes >> 10),
	       d->policy.direct ? ", direct (ENSUREs answered at once, the library reads)" : "");
	/* Published whole: the metrics thread walks the list unlocked. */
	__atomic_store_n(devices_tail, d, __ATOMIC_RELEASE);
	devices_tail = &d->next;
	ndevices++;
	return d;
fail:
	free(d);
	return NULL;
}

static struct dev_map *find_map(dev_t fs_dev)
{
	for (struct dev_map *m = maps; m; m = m->next)
		if (m->fs_dev == fs_dev)
			return m;
	return NULL;
}

static struct dev_map *add_map(dev_t fs_dev)
{
	struct dev_map *m = nmaps < RD_MAX_MAPS ? calloc(1, sizeof *m) : NULL;
	if (!m)
		return NULL;
	nmaps++;
	m->fs_dev = fs_dev;
	m->next = maps;
	maps = m;
	return m;
}

/* A new device takes over the library-only record of its disk. */
static void absorb_lib_disk(struct rd_device *d)
{
	for (struct rd_lib_disk **p = &lib_disks; *p; p = &(*p)->next) {
		struct rd_lib_disk *l = *p;
		if (l->disk != d->info.disk)
			continue;
		pthread_mutex_lock(&d->lock);
		d->st.lib_calls += l->st.calls;
		d->st.lib_hits += l->st.hits;
		d->st.lib_hit_bytes += l->st.hit_bytes;
		pthread_mutex_unlock(&d->lock);
		for (struct dev_map *m = maps; m; m = m->next)
			if (m->lib == l) {
				m->lib = NULL;
				if (!m->direct)   /* a direct file system stays direct */
					m->dev = d;
			}
		*p = l->next;
		if (lib_disks_tail == &l->next)
			lib_disks_tail = p;
		free(l);
		return;
	}
}

struct rd_device *rd_device_for(dev_t fs_dev, int *direct)
{
	struct dev_map *m = find_map(fs_dev);
	*direct = m && m->direct;
	if (m && (m->dev || m->direct))
		return m->dev;
	struct rd_device *d = create(fs_dev, direct);
	if (*direct && (m || (m = add_map(fs_dev))))
		m->direct = 1;
	if (!d)
		return NULL;
	absorb_lib_disk(d);  /* re-points m too, if it was library-only */
	if (!m && !(m = add_map(fs_dev)))
		return d;        /* found again, through its disk, next time */
	m->dev = d;
	m->lib = NULL;
	return d;
}

/* 1 if some mount in /proc/self/mountinfo has st_dev dev. */
static int mounted(dev_t dev)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return 0;
	char line[4096];
	int found = 0;
	while (!found && fgets(line, sizeof line, f)) {
		unsigned ma, mi;
		found = sscanf(line, "%*d %*d %u:%u", &ma, &mi) == 2 && makedev(ma, mi) == dev;
		/* a line longer than the buffer: skip its tail */
		while (!strchr(line, '\n') && fgets(line, sizeof line, f))
			;
	}
	fclose(f);
	return found;
}

static void add_counts(struct rd_lib_dev_stats *s, const struct lc_report_dev *e)
{
	s->calls += e->calls;
	s->hits += e->hits;
	s->hit_bytes += e->hit_bytes;
}

int rd_device_count_library(dev_t fs_dev, const struct lc_report_dev *e)
{
	struct dev_map *m = find_map(fs_dev);
	/* A file system answered DIRECT (tmpfs, memfd: rd_device_for) has a
	 * map with neither a device nor a library-only record: its counts go
	 * to such a record, and the map keeps no device, so it stays direct. */
	if (!m || (!m->dev && !m->lib)) {
		if (!m && !mounted(fs_dev))
			return -1;
		struct rd_device_info info;
		char name[64];
		rd_device_identify(fs_dev, &info, name, sizeof name);
		struct rd_device *d = m && m->direct ? NULL : find_by_disk(info.disk);
		struct rd_lib_disk *l = NULL;
		if (!d) {
			for (l = lib_disks; l && l->disk != info.disk; l = l->next)
				;
			if (!l) {
				if (!(l = calloc(1, sizeof *l)))
					return -1;
				l->disk = info.disk;
				snprintf(l->name, sizeof l->name, "%s", name);
				*lib_disks_tail = l;
				lib_disks_tail = &l->next;
			}
		}
		if (!m && !(m = add_map(fs_dev)))
			return -1;
		m->dev = d;
		m->lib = l;
	}
	if (m->lib) {
		add_counts(&m->lib->st, e);
		return 0;
	}
	struct rd_device *d = m->dev;
	pthread_mutex_lock(&d->lock);
	d->st.lib_calls += e->calls;
	d->st.lib_hits += e->hits;
	d->st.lib_hit_bytes += e->hit_bytes;
	pthread_mutex_unlock(&d->lock);
	return 0;
}

struct rd_lib_disk *rd_lib_disk_list(void)
{
	return lib_disks;
}

struct rd_device *rd_device_list(void)
{
	return __atomic_load_n(&devices, __ATOMIC_ACQUIRE);
}

unsigned rd_device_busy(void)
{
	unsigned n = 0;
	for (struct rd_device *d = devices; d; d = d->next) {
		pthread_mutex_lock(&d->lock);
		n += d->q.len + d->q.nflying;
		pthread_mutex_unlock(&d->lock);
	}
	return n;
}

void rd_device_stop_all(void)
{
	for (struct rd_device *d = devices; d; d = d->next) {
		pthread_mutex_lock(&d->lock);
		d->stop = 1;
		pthread_cond_broadcast(&d->cond);
		pthread_mutex_unlock(&d->lock);
	}
	/* Workers stop after their current piece, but one blocked on a hung
	 * device (a stopped FUSE server) may never return: wait a bounded
	 * time, and leave such a device's policy alone (its worker could still
	 * call a hook) — the process is about to exit anyway. */
	uint64_t deadline = rd_now_ns() + RD_STOP_WAIT_NS;
	for (struct rd_device *d = devices; d; d = d->next) {
		pthread_mutex_lock(&d->lock);
		while (d->running && rd_now_ns() < deadline) {
			struct timespec ts;
			uint64_t t = rd_now_ns() + 10000000u;   /* the cond's clock is monotonic */
			ts.tv_sec = (time_t)(t / 1000000000u);
			ts.tv_nsec = (long)(t % 1000000000u);
			pthread_cond_timedwait(&d->cond, &d->lock, &ts);
		}
		int left = d->running;
		pthread_mutex_unlock(&d->lock);
		if (left) {
			rd_log("device %s: a read is still blocked; exiting without it", d->name);
			continue;
		}
		if (d->policy.ops->destroy)
			d->policy.ops->destroy(&d->policy);
	}
}
