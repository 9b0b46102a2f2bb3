/*
 * watch.c - the fanotify listener of watch mode (see watch.h).
 *
 * Threads: the listener reads events and answers hits and replies; the
 * deadline thread does nothing but allow misses past their deadline and
 * look after the watchdog.  A miss is a slot: the event's fd (which the
 * listener keeps open until the daemon's reply, since the ENSURE's copy
 * is the daemon's) and an id the reply carries back.  The watchdog
 * (watchdog.h) finds a stopped daemon's pending events by its open fds.
 */
#include "watch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cfg.h"
#include "json.h"
#include "log.h"
#include "policy.h"
#include "prefetch.h"
#include "protocol.h"
#include "watch_quiet.h"
#include "watchdog.h"

/* Linux 6.14 uapi; Debian 12's headers predate it. */
#ifndef FAN_PRE_ACCESS
#define FAN_PRE_ACCESS 0x00100000
#endif
#ifndef FAN_EVENT_INFO_TYPE_RANGE
#define FAN_EVENT_INFO_TYPE_RANGE 6
#endif
struct watch_range_info {
	struct fanotify_event_info_header hdr;
	uint32_t pad;
	uint64_t offset, count;
};

#define EXT4_MAGIC  0xEF53
#define XFS_MAGIC   0x58465342
#define BTRFS_MAGIC 0x9123683E

#define TICK_MS 10              /* beats and deadline checks */
#define DOG_STALE_NS (2000ull * 1000000)  /* a watchdog silent this long is replaced */
#define DOG_TAKEOVER_MIN_NS (10ull * TICK_MS * 1000000)  /* ten beats */
#define RD_WATCH_SLOTS 4096     /* misses waiting at once; more are allowed at once */

enum { FREE, WAITING, ANSWERED };

struct slot {
	int state;
	int fd;
	uint16_t gen;
	uint64_t since_ns;
};

static struct {
	int fan_fd, sock;
	uint64_t deadline_ns;
	uint64_t spin_ns;           /* look for a next event this long before sleeping */
	struct rd_watch_shared *sh;
	struct slot slot[RD_WATCH_SLOTS];
	unsigned free_hint;
	pthread_mutex_t lock;       /* slots and their shared mirror */
	pthread_t listener, deadline;
	volatile int stop;
	pid_t dog;
	char paths[RD_WATCH_MAX_PATHS][256];
	unsigned npaths;
	/* counters (listener, or atomically) */
	uint64_t events, own, hits, misses, replies, refused, deadline_answers, allowed_at_once;
	uint64_t dog_restarts, wait_max_ns;
	unsigned waiting, waiting_max;
} W = { .fan_fd = -1, .sock = -1, .lock = PTHREAD_MUTEX_INITIALIZER, .dog = -1 };

int rd_watch_fs_ok(const char *path, char *err, size_t errlen)
{
	struct statfs fs;
	if (statfs(path, &fs) != 0) {
		snprintf(err, errlen, "--watch %s: %s", path, strerror(errno));
		return -1;
	}
	switch ((unsigned long)fs.f_type) {
	case EXT4_MAGIC: case XFS_MAGIC: case BTRFS_MAGIC:
		return 0;
	}
	snprintf(err, errlen, "--watch %s: file system type 0x%lx has no pre-content events "
	         "(ext4, xfs and btrfs have; FUSE and tmpfs do not)", path, (unsigned long)fs.f_type);
	return -1;
}

static int mount_id(const char *path, uint64_t *id)
{
	struct statx sx;
	if (statx(AT_FDCWD, path, 0, STATX_MNT_ID, &sx) != 0 || !(sx.stx_mask & STATX_MNT_ID))
		return -1;
	*id = sx.stx_mnt_id;
	return 0;
}

/* A mark on a mount holding the daemon's own code (its binary, ld.so,
 * libc: every file it has mapped) or its log could make the listener
 * fault on a page only it can let through.  Refuse those mounts. */
static int holds_own_files(uint64_t mnt, char *what, size_t whatlen)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[4096];
	uint64_t id;
	int found = 0;
	while (f && !found && fgets(line, sizeof line, f)) {
		char *p = strchr(line, '/');
		if (!p)
			continue;
		p[strcspn(p, "\n")] = 0;
		if (mount_id(p, &id) == 0 && id == mnt) {
			snprintf(what, whatlen, "%s", p);
			found = 1;
		}
	}
	if (f)
		fclose(f);
	if (!found && rd_cfg.log_path && mount_id(rd_cfg.log_path, &id) == 0 && id == mnt) {
		snprintf(what, whatlen, "%s", rd_cfg.log_path);
		found = 1;
	}
	return found;
}

/* Answer slot i's event if nobody has (lock held). */
static void answer_locked(unsigned i, uint64_t now)
{
	struct slot *s = &W.slot[i];
	if (s->state != WAITING)
		return;
	rd_watch_allow(W.fan_fd, s->fd);
	s->state = ANSWERED;
	W.waiting--;
	if (now - s->since_ns > W.wait_max_ns)
		W.wait_max_ns = now - s->since_ns;
}

static void release_locked(unsigned i)
{
	struct slot *s = &W.slot[i];
	answer_locked(i, rd_now_ns());
	close(s->fd);
	s->fd = -1;
	s->state = FREE;
	s->gen++;
}

/* A miss: queue an ENSURE for the event's range; 0, or -1 if it must be
 * allowed at once (no slot, the daemon's socket full or gone). */
static int send_miss(int fd, uint64_t off, uint64_t len)
{
	pthread_mutex_lock(&W.lock);
	unsigned i = W.free_hint, n = 0;
	while (W.slot[i].state != FREE && n < RD_WATCH_SLOTS)
		i = (i + 1) % RD_WATCH_SLOTS, n++;
	if (n == RD_WATCH_SLOTS || W.sock < 0) {
		pthread_mutex_unlock(&W.lock);
		return -1;
	}
	W.free_hint = (i + 1) % RD_WATCH_SLOTS;
	struct slot *s = &W.slot[i];
	struct lc_ensure m = {
		.h = { LC_PROTO_MAGIC, LC_PROTO_VERSION, LC_MSG_ENSURE, ((uint64_t)s->gen << 16) | i },
		.offset = off, .length = len, .call = LC_CALL_READ,
	};
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { &m, sizeof m };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
	                     .msg_control = cbuf, .msg_controllen = sizeof cbuf };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof fd);
	if (sendmsg(W.sock, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof m) {
		pthread_mutex_unlock(&W.lock);
		return -1;
	}
	uint64_t now = rd_now_ns();
	s->state = WAITING;
	s->fd = fd;
	s->since_ns = now;
	if (++W.waiting > W.waiting_max)
		W.waiting_max = W.waiting;
	pthread_mutex_unlock(&W.lock);
	return 0;
}

static void on_event(const struct fanotify_event_metadata *m)
{
	W.events++;
	if (m->fd < 0)
		return;
	/* Our own reads (a worker loading a window through its reopened
	 * file) go at once: the queue they serve may be what waits. */
	if (m->pid == getpid() || !(m->mask & FAN_PRE_ACCESS)) {
		W.own++;
		goto allow;
	}
	uint64_t off = 0, len = 0;
	for (const char *p = (const char *)m + m->metadata_len; p < (const char *)m + m->event_len;) {
		const struct fanotify_event_info_header *h = (const void *)p;
		if (h->len < sizeof *h)
			break;
		if (h->info_type == FAN_EVENT_INFO_TYPE_RANGE && h->len >= sizeof(struct watch_range_info)) {
			const struct watch_range_info *r = (const void *)p;
			off = r->offset, len = r->count;
		}
		p += h->len;
	}
	int res = len ? rd_is_resident(m->fd, off, off + len) : 1;
	if (res == 0) {
		/* A read that runs past the end of the file asks for pages
		 * that cannot be cached: judge the part that exists. */
		struct stat st;
		if (fstat(m->fd, &st) == 0 && off + len > (uint64_t)st.st_size)
			res = off >= (uint64_t)st.st_size ? 1 :
			      rd_is_resident(m->fd, off, (uint64_t)st.st_size);
	}
	if (res != 0) {            /* resident, or the kernel will not say */
		W.hits++;
		if (res == 1)
			rd_quiet_after_hit(m->fd, off, len);
		goto allow;
	}
	W.misses++;
	if (send_miss(m->fd, off, len) == 0)
		return;
	W.allowed_at_once++;
allow:
	rd_watch_allow(W.fan_fd, m->fd);
	close(m->fd);
}

static void on_replies(void)
{
	struct lc_ensure_reply r;
	ssize_t n;
	while ((n = recv(W.sock, &r, sizeof r, MSG_DONTWAIT)) > 0) {
		if (n < (ssize_t)sizeof r.h || r.h.magic != LC_PROTO_MAGIC)
			continue;
		unsigned i = (unsigned)(r.h.id & 0xffff);
		if (i >= RD_WATCH_SLOTS)
			continue;
		pthread_mutex_lock(&W.lock);
		struct slot *s = &W.slot[i];
		if (s->state != FREE && s->gen == (uint16_t)(r.h.id >> 16)) {
			/* resident, or not: the queue was full, the read failed;
			 * a reader let go at the deadline was counted then */
			if (s->state == WAITING) {
				if (n == (ssize_t)sizeof r && r.status == LC_ST_OK)
					W.replies++;
				else
					W.refused++;
			}
			release_locked(i);
		}
		pthread_mutex_unlock(&W.lock);
	}
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		/* The daemon dropped us: nothing we wait for will come. */
		rd_log("watch: lost the connection to the daemon; allowing every read from now on");
		pthread_mutex_lock(&W.lock);
		for (unsigned i = 0; i < RD_WATCH_SLOTS; i++)
			if (W.slot[i].state != FREE)
				release_locked(i);
		close(W.sock);
		W.sock = -1;
		pthread_mutex_unlock(&W.lock);
	}
}

/* Read and handle every event waiting; 1 if there was any. */
static int drain_events(char *buf, size_t len)
{
	int any = 0;
	ssize_t n;
	while ((n = read(W.fan_fd, buf, len)) > 0) {
		const struct fanotify_event_metadata *m = (const void *)buf;
		for (; FAN_EVENT_OK(m, n); m = FAN_EVENT_NEXT(m, n))
			on_event(m);
		any = 1;
	}
	return any;
}

/* Handle events until none has come for the spin time.  A reader let go
 * usually asks again within microseconds (its next read): looking for
 * that event a little while before sleeping spares it the listener's
 * wake-up.  Beats and replies are kept up meanwhile. */
static void spin_on_events(char *buf, size_t len)
{
	uint64_t now = rd_now_ns(), until = now + W.spin_ns, next_chores = now + TICK_MS * 100000ull;
	while (!W.stop) {
		if (drain_events(buf, len))
			until = rd_now_ns() + W.spin_ns;
		now = rd_now_ns();
		if (now >= next_chores) {   /* every tenth of a tick */
			atomic_store(&W.sh->listener_beat_ns, now);
			if (W.sock >= 0)
				on_replies();
			next_chores = now + TICK_MS * 100000ull;
		}
		if (now >= until)
			return;
	}
}

static void *listener_main(void *arg)
{
	(void)arg;
	static char buf[65536] __attribute__((aligned(8)));
	while (!W.stop) {
		atomic_store(&W.sh->listener_beat_ns, rd_now_ns());
		struct pollfd p[2] = { { W.fan_fd, POLLIN, 0 }, { W.sock, POLLIN, 0 } };
		if (poll(p, W.sock >= 0 ? 2 : 1, TICK_MS) <= 0)
			continue;
		if (p[0].revents & POLLIN)
			spin_on_events(buf, sizeof buf);
		if (W.sock >= 0 && (p[1].revents & (POLLIN | POLLHUP | POLLERR)))
			on_replies();
	}
	return NULL;
}

/* Replace a watchdog that died or stopped beating. */
static void mind_watchdog(uint64_t now)
{
	int st;
	int dead = W.dog > 0 && waitpid(W.dog, &st, WNOHANG) == W.dog;
	if (!dead && now > atomic_load(&W.sh->dog_beat_ns) + DOG_STALE_NS && W.dog > 0) {
		kill(W.dog, SIGKILL);
		waitpid(W.dog, &st, 0);
		dead = 1;
	}
	if (!dead)
		return;
	W.dog_restarts++;
	rd_log("watch: the watchdog (pid %d) %s; starting another", (int)W.dog,
	       WIFSIGNALED(st) ? "was killed or stopped" : "exited");
	atomic_store(&W.sh->dog_beat_ns, now);
	W.dog = rd_watchdog_spawn(W.sh, W.fan_fd);
}

static void *deadline_main(void *arg)
{
	(void)arg;
	while (!W.stop) {
		uint64_t now = rd_now_ns();
		atomic_store(&W.sh->deadline_beat_ns, now);
		pthread_mutex_lock(&W.lock);
		/* The time again, under the lock: a slot the listener filled
		 * since the beat is younger than that `now`, and its age would
		 * wrap around to past any deadline. */
		uint64_t at = rd_now_ns();
		for (unsigned i = 0; W.waiting && i < RD_WATCH_SLOTS; i++)
			if (W.slot[i].state == WAITING && at - W.slot[i].since_ns >= W.deadline_ns) {
				W.deadline_answers++;
				answer_locked(i, at);
			}
		pthread_mutex_unlock(&W.lock);
		mind_watchdog(now);
		rd_quiet_tick(now);
		struct timespec t = { 0, TICK_MS * 1000000L };
		nanosleep(&t, NULL);
	}
	return NULL;
}

static int connect_daemon(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof a.sun_path)
		return -1;
	strcpy(a.sun_path, path);
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s >= 0 && connect(s, (struct sockaddr *)&a, sizeof a) != 0) {
		close(s);
		s = -1;
	}
	return s;
}

static int fail(char *err, size_t errlen, const char *fmt, const char *a, const char *b)
{
	snprintf(err, errlen, fmt, a, b);
	rd_watch_stop();
	return -1;
}

int rd_watch_open(char *const *paths, unsigned npaths, unsigned deadline_ms, unsigned spin_us,
                  char *err, size_t errlen)
{
	char what[512];
	W.deadline_ns = (uint64_t)deadline_ms * 1000000;
	W.spin_ns = (uint64_t)spin_us * 1000;
	for (unsigned i = 0; i < RD_WATCH_SLOTS; i++)
		W.slot[i].fd = -1;
	W.fan_fd = fanotify_init(FAN_CLASS_PRE_CONTENT | FAN_CLOEXEC | FAN_NONBLOCK |
	                         FAN_UNLIMITED_QUEUE | FAN_UNLIMITED_MARKS,
	                         O_RDONLY | O_LARGEFILE | O_CLOEXEC | O_NOATIME);
	if (W.fan_fd < 0)
		return fail(err, errlen, "--watch: fanotify_init: %s%s", strerror(errno),
		            errno == EINVAL ? " (pre-content events need Linux 6.14 or later)" :
		            errno == EPERM ? " (needs CAP_SYS_ADMIN)" : "");
	for (unsigned i = 0; i < npaths; i++) {
		uint64_t mnt;
		if (rd_watch_fs_ok(paths[i], err, errlen)) {
			rd_watch_stop();
			return -1;
		}
		if (mount_id(paths[i], &mnt) == 0 && holds_own_files(mnt, what, sizeof what))
			return fail(err, errlen, "--watch %s: its mount holds the daemon's own %s; "
			            "a listener must never wait on itself", paths[i], what);
		if (fanotify_mark(W.fan_fd, FAN_MARK_ADD | FAN_MARK_MOUNT, FAN_PRE_ACCESS, AT_FDCWD, paths[i]))
			return fail(err, errlen, "--watch %s: fanotify_mark: %s", paths[i],
			            errno == EINVAL ? "this kernel or file system has no pre-content events" :
			            strerror(errno));
		if (W.npaths < RD_WATCH_MAX_PATHS)
			snprintf(W.paths[W.npaths++], sizeof W.paths[0], "%s", paths[i]);
	}
	W.sh = mmap(NULL, sizeof *W.sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (W.sh == MAP_FAILED) {
		W.sh = NULL;
		return fail(err, errlen, "--watch: %s%s", strerror(errno), "");
	}
	return 0;
}

int rd_watch_run(const char *socket_path, char *err, size_t errlen)
{
	W.sock = connect_daemon(socket_path);
	if (W.sock < 0)
		return fail(err, errlen, "--watch: cannot connect to %s: %s", socket_path, strerror(errno));
	uint64_t now = rd_now_ns();
	/* Stale after the deadline, but never within a few of the beats'
	 * ticks: a 1 ms deadline must not hand the queue to the watchdog. */
	W.sh->stale_ns = W.deadline_ns > DOG_TAKEOVER_MIN_NS ? W.deadline_ns : DOG_TAKEOVER_MIN_NS;
	W.sh->daemon = getpid();
	W.sh->listener_beat_ns = W.sh->deadline_beat_ns = W.sh->dog_beat_ns = now;
	rd_quiet_init(W.fan_fd, rd_cfg.watch_quiet, rd_cfg.watch_recheck_ms);
	W.dog = rd_watchdog_spawn(W.sh, W.fan_fd);
	if (W.dog < 0)
		return fail(err, errlen, "--watch: cannot start the watchdog: %s%s", strerror(errno), "");
	if (pthread_create(&W.listener, NULL, listener_main, NULL) ||
	    pthread_create(&W.deadline, NULL, deadline_main, NULL))
		return fail(err, errlen, "--watch: cannot start threads%s%s", "", "");
	rd_log("watch: %u path(s), deadline %llu ms, watchdog pid %d", W.npaths,
	       (unsigned long long)(W.deadline_ns / 1000000), (int)W.dog);
	return 0;
}

void rd_watch_stop(void)
{
	if (W.fan_fd < 0)
		return;
	W.stop = 1;
	if (W.listener)
		pthread_join(W.listener, NULL);
	if (W.deadline)
		pthread_join(W.deadline, NULL);
	if (W.dog > 0) {
		kill(W.dog, SIGKILL);
		waitpid(W.dog, NULL, 0);
	}
	if (W.sh) {
		pthread_mutex_lock(&W.lock);
		for (unsigned i = 0; i < RD_WATCH_SLOTS; i++)
			if (W.slot[i].state != FREE)
				release_locked(i);
		pthread_mutex_unlock(&W.lock);
	}
	/* Closing the group allows whatever is still pending. */
	close(W.fan_fd);
	W.fan_fd = -1;
	if (W.sock >= 0)
		close(W.sock);
	W.sock = -1;
}

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

static void counter(FILE *f, const char *name, const char *help, uint64_t v)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name,
	        (unsigned long long)v);
}

void rd_watch_metrics(FILE *f)
{
	if (!W.sh)
		return;
	uint64_t quieted, flushes;
	rd_quiet_counts(&quieted, &flushes);
	counter(f, "libception_watch_events_total",
	        "Pre-content events read, the daemon's own reads included.", LOAD(W.events));
	counter(f, "libception_watch_hits_total", "Events whose range was already cached.",
	        LOAD(W.hits));
	counter(f, "libception_watch_misses_total", "Events whose range was not cached.",
	        LOAD(W.misses));
	fprintf(f, "# HELP libception_watch_answers_total Misses answered, by how.\n"
	        "# TYPE libception_watch_answers_total counter\n"
	        "libception_watch_answers_total{how=\"resident\"} %llu\n"
	        "libception_watch_answers_total{how=\"refused\"} %llu\n"
	        "libception_watch_answers_total{how=\"deadline\"} %llu\n"
	        "libception_watch_answers_total{how=\"unqueued\"} %llu\n"
	        "libception_watch_answers_total{how=\"watchdog\"} %llu\n",
	        (unsigned long long)LOAD(W.replies), (unsigned long long)LOAD(W.refused),
	        (unsigned long long)LOAD(W.deadline_answers),
	        (unsigned long long)LOAD(W.allowed_at_once),
	        (unsigned long long)atomic_load(&W.sh->dog_answers));
	fprintf(f, "# HELP libception_watch_waiting Readers waiting for their window now.\n"
	        "# TYPE libception_watch_waiting gauge\nlibception_watch_waiting %u\n", LOAD(W.waiting));
	counter(f, "libception_watch_watchdog_restarts_total", "Watchdogs replaced.",
	        LOAD(W.dog_restarts));
	counter(f, "libception_watch_quieted_files_total",
	        "Files found wholly cached and quieted (no events until the recheck).", quieted);
	counter(f, "libception_watch_quiet_flushes_total", "Rechecks that flushed the quiet marks.",
	        flushes);
}

void rd_watch_json(struct rd_json *j)
{
	if (!W.sh)
		return;
	rd_json_obj_begin(j, "watch");
	rd_json_arr_begin(j, "paths");
	for (unsigned i = 0; i < W.npaths; i++)
		rd_json_str(j, NULL, W.paths[i]);
	rd_json_arr_end(j);
	rd_json_u64(j, "deadline_ms", W.deadline_ns / 1000000);
	rd_json_u64(j, "events", W.events);
	rd_json_u64(j, "own_events", W.own);
	rd_json_u64(j, "hits", W.hits);
	rd_json_u64(j, "misses", W.misses);
	rd_json_u64(j, "answered_resident", W.replies);
	rd_json_u64(j, "answered_refused", W.refused);
	rd_json_u64(j, "answered_at_deadline", W.deadline_answers);
	rd_json_u64(j, "allowed_unqueued", W.allowed_at_once);
	rd_json_u64(j, "answered_by_watchdog", atomic_load(&W.sh->dog_answers));
	rd_json_u64(j, "watchdog_restarts", W.dog_restarts);
	rd_json_u64(j, "waiting", W.waiting);
	rd_json_u64(j, "waiting_max", W.waiting_max);
	rd_json_dbl(j, "wait_max_ms", (double)W.wait_max_ns / 1e6);
	rd_quiet_json(j);
	rd_json_obj_end(j);
}
