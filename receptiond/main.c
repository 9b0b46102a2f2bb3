/*
 * main.c - receptiond: start-up (options.c has the settings), daemonizing, and the run of the server.
 *
 * Without --foreground the daemon detaches (setsid, double fork) and the
 * command returns 0 only once the socket accepts connections, so a
 * caller can start it and use it at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cfg.h"
#include "device.h"
#include "log.h"
#include "metrics.h"
#include "options.h"
#include "protocol.h"
#include "server.h"
#include "stats.h"
#include "watch.h"


/* Each queued request holds a passed fd: allow as many as the system does. */
static void raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
		/* Keep room for one fd per queued request per connection. */
		rlim_t room = rl.rlim_cur > 64 ? rl.rlim_cur - 64 : rl.rlim_cur / 2;
		if (rd_cfg.max_conns > room / 2)
			rd_cfg.max_conns = (unsigned)(room / 2);
	}
}

/* Detach; returns in the daemon, exits 0 in the caller once *ready_fd is
 * written by the daemon (1 if it closes without writing). */
static int daemonize(int *ready_fd)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC))
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid > 0) {
		close(p[1]);
		char c;
		ssize_t n;
		while ((n = read(p[0], &c, 1)) < 0 && errno == EINTR)
			;
		waitpid(pid, NULL, 0);
		_exit(n == 1 ? 0 : 1);
	}
	close(p[0]);
	setsid();
	pid = fork();
	if (pid < 0)
		_exit(1);
	if (pid > 0)
		_exit(0);
	if (chdir("/")) {
		/* stay where we are; nothing depends on the cwd */
	}
	int null = open("/dev/null", O_RDWR);
	if (null >= 0) {
		/* Let go of the caller's terminal or pipes (a caller waiting
		 * for EOF on them must not wait for the daemon); the log
		 * goes to --log, or nowhere. */
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		if (null > 2)
			close(null);
	}
	*ready_fd = p[1];
	return 0;
}

static int write_pidfile(const char *path)
{
	FILE *f = fopen(path, "we");
	if (!f)
		return -1;
	fprintf(f, "%d\n", (int)getpid());
	return fclose(f);
}

static int fail(const char *msg)
{
	fprintf(stderr, "receptiond: %s\n", msg);
	if (rd_cfg.log_path)
		rd_log("%s", msg);
	return 1;
}

int main(int argc, char **argv)
{
	int rc = rd_options_parse(argc, argv);
	if (rc >= 0)
		return rc;
	char err[512];
	signal(SIGPIPE, SIG_IGN);
	if (rd_cfg.log_path && rd_log_open(rd_cfg.log_path)) {
		fprintf(stderr, "receptiond: log \"%s\": %s\n", rd_cfg.log_path, strerror(errno));
		return 1;
	}
	raise_fd_limit();
	int adopted = rd_server_adopt_systemd(err, sizeof err);
	if (adopted < 0 || (!adopted && rd_server_listen(rd_cfg.socket_path, err, sizeof err)))
		return fail(err);
	if (rd_cfg.metrics_listen && rd_metrics_bind(rd_cfg.metrics_listen, err, sizeof err)) {
		rd_server_cleanup();
		return fail(err);
	}
	if (rd_cfg.nwatch && rd_watch_open(rd_cfg.watch_paths, rd_cfg.nwatch, rd_cfg.watch_deadline_ms,
	                                   rd_cfg.watch_spin_us, err, sizeof err)) {
		rd_server_cleanup();
		return fail(err);
	}
	int ready = -1;
	if (!rd_cfg.foreground && daemonize(&ready)) {
		fprintf(stderr, "receptiond: cannot detach: %s\n", strerror(errno));
		rd_server_cleanup();
		return 1;
	}
	if (rd_metrics_start(err, sizeof err)) {
		rd_log("%s", err);
		rd_server_cleanup();
		return 1;
	}
	if (rd_cfg.pidfile && write_pidfile(rd_cfg.pidfile))
		rd_log("pidfile \"%s\": %s", rd_cfg.pidfile, strerror(errno));
	rd_stats.started_ns = rd_now_ns();
	char acc[80];
	rd_log("listening on %s%s (pid %d, prefetch %llu, policy %s, access %s)%s%s", rd_cfg.socket_path,
	       adopted ? " (from systemd)" : "", (int)getpid(), (unsigned long long)rd_cfg.prefetch,
	       rd_cfg.npolicies ? rd_cfg.policies[0].name : "fixed",
	       rd_access_describe(&rd_access, acc, sizeof acc),
	       rd_cfg.metrics_listen ? "; metrics on http://" : "",
	       rd_cfg.metrics_listen ? rd_cfg.metrics_listen : "");
	if (rd_access_note[0])
		rd_log("%s", rd_access_note);
	if (rd_cfg.nwatch && rd_watch_run(rd_cfg.socket_path, err, sizeof err)) {
		rd_server_cleanup();
		return fail(err);
	}
	if (ready >= 0) {
		ssize_t w = write(ready, "1", 1);
		(void)w;
		close(ready);
	}
	rc = rd_server_run();
	rd_watch_stop();
	rd_server_cleanup();
	rd_device_stop_all();
	if (rd_cfg.pidfile)
		unlink(rd_cfg.pidfile);
	rd_log("exited");
	return rc;
}
