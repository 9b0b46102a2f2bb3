/*
 * watchdog.c - see watchdog.h.
 *
 * The child of a fork in a threaded daemon may only make async-signal-safe
 * calls: everything below is a raw system call on fds and the shared page,
 * with static buffers.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/fanotify.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "watchdog.h"

#define TICK_MS 10

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int rd_watch_allow(int fan_fd, int fd)
{
	struct fanotify_response r = { .fd = fd, .response = FAN_ALLOW };
	ssize_t n;
	while ((n = write(fan_fd, &r, sizeof r)) < 0 && errno == EINTR)
		;
	return n == (ssize_t)sizeof r ? 0 : -1;
}

static int stale(const struct rd_watch_shared *sh, uint64_t now)
{
	uint64_t l = atomic_load(&sh->listener_beat_ns), d = atomic_load(&sh->deadline_beat_ns);
	return now > l + sh->stale_ns || now > d + sh->stale_ns;
}

/* FAN_ALLOW under every fd number the daemon holds (see watchdog.h):
 * /proc/PID/fd read with raw getdents64, or, without /proc, every number
 * below the daemon's fd limit. */
static void allow_daemon_fds(struct rd_watch_shared *sh, int fan_fd, int dir)
{
	static char buf[8192] __attribute__((aligned(8)));
	long n;
	if (dir < 0) {
		struct rlimit rl = { 0 };
		syscall(SYS_prlimit64, sh->daemon, RLIMIT_NOFILE, NULL, &rl);
		for (rlim_t fd = 0; fd < rl.rlim_cur && fd < (1u << 20); fd++)
			if (rd_watch_allow(fan_fd, (int)fd) == 0)
				atomic_fetch_add(&sh->dog_answers, 1);
		return;
	}
	lseek(dir, 0, SEEK_SET);
	while ((n = syscall(SYS_getdents64, dir, buf, sizeof buf)) > 0) {
		for (long off = 0; off < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);
			int fd = 0, digits = 0;
			for (const char *c = d->d_name; *c >= '0' && *c <= '9'; c++, digits++)
				fd = fd * 10 + (*c - '0');
			if (digits && d->d_name[digits] == 0 && rd_watch_allow(fan_fd, fd) == 0)
				atomic_fetch_add(&sh->dog_answers, 1);
			off += d->d_reclen;
		}
	}
}

/* The daemon is not answering: allow what it holds, and read and allow
 * what arrives meanwhile. */
static void take_over(struct rd_watch_shared *sh, int fan_fd, int dir)
{
	allow_daemon_fds(sh, fan_fd, dir);
	static char buf[16384] __attribute__((aligned(8)));
	ssize_t n;
	while ((n = read(fan_fd, buf, sizeof buf)) > 0) {
		struct fanotify_event_metadata *m = (void *)buf;
		for (; FAN_EVENT_OK(m, n); m = FAN_EVENT_NEXT(m, n)) {
			if (m->fd < 0)
				continue;
			if (rd_watch_allow(fan_fd, m->fd) == 0)
				atomic_fetch_add(&sh->dog_answers, 1);
			close(m->fd);
		}
	}
}

static void __attribute__((noreturn)) watchdog_main(struct rd_watch_shared *sh, int fan_fd,
                                                     const char *fd_dir)
{
	/* Opened now, while the daemon surely runs: its fd table. */
	int dir = open(fd_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (;;) {
		uint64_t now = now_ns();
		atomic_store(&sh->dog_beat_ns, now);
		/* Reparented: the daemon is gone.  Exiting drops the group's
		 * last reference; the kernel then allows every pending event. */
		if (getppid() != sh->daemon)
			_exit(0);
		if (stale(sh, now)) {
			take_over(sh, fan_fd, dir);
			struct pollfd p = { .fd = fan_fd, .events = POLLIN };
			poll(&p, 1, TICK_MS);
		} else {
			struct timespec t = { 0, TICK_MS * 1000000L };
			nanosleep(&t, NULL);
		}
	}
}

pid_t rd_watchdog_spawn(struct rd_watch_shared *sh, int fan_fd)
{
	char fd_dir[32];   /* formatted before the fork: snprintf is not async-signal-safe */
	snprintf(fd_dir, sizeof fd_dir, "/proc/%d/fd", (int)sh->daemon);
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	/* Child.  Its own process group, so that a terminal's stop signal
	 * for the daemon's group does not stop the watchdog as well. */
	setpgid(0, 0);
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	for (int s = 1; s < 32; s++)
		if (s != SIGKILL && s != SIGSTOP)
			sigaction(s, &dfl, NULL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* Hold nothing but the group: no client socket or listening socket
	 * may outlive the daemon in here. */
	if (fan_fd != 3) {
		if (dup2(fan_fd, 3) < 0)
			_exit(1);
		fan_fd = 3;
	}
	syscall(SYS_close_range, 4u, ~0u, 0u);   /* before watchdog_main opens /proc */
	watchdog_main(sh, fan_fd, fd_dir);   /* the group is FAN_NONBLOCK */
}
