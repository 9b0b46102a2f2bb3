/*
 * main.c - receptiond: options, daemonizing, and the run of the server.
 *
 * Without --foreground the daemon detaches (setsid, double fork) and the
 * command returns 0 only once the socket accepts connections, so a
 * caller can start it and use it at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
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
#include "protocol.h"
#include "server.h"
#include "stats.h"
#include "watch.h"

#define RD_VERSION "0.1"


static void usage(FILE *f)
{
	fprintf(f,
	        "usage: receptiond [--socket PATH] [--foreground] [--prefetch SIZE]\n"
	        "                  [--policy [DEVICE=]NAME[:ARGS]]... [--queue-depth N]\n"
	        "                  [--order position|fifo] [--deadline MS] [--inflight N]\n"
	        "                  [--idle-timeout SEC] [--log FILE] [--pidfile FILE] [--version]\n"
	        "                  [--watch PATH]... [--watch-deadline MS] [--watch-spin US]\n");
}

static int bad(const char *fmt, const char *arg)
{
	fprintf(stderr, "receptiond: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n");
	usage(stderr);
	return 2;
}

static int parse_uint(const char *s, unsigned *out, unsigned max)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > max || *s == '-')
		return -1;
	*out = (unsigned)v;
	return 0;
}

static char default_socket[128];
static char *watch_paths[RD_WATCH_MAX_PATHS];
static unsigned nwatch, watch_deadline_ms = RD_WATCH_DEFAULT_DEADLINE_MS;
static unsigned watch_spin_us = RD_WATCH_DEFAULT_SPIN_US;

static int parse_options(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, 0, 's' },
		{ "foreground", no_argument, 0, 'f' },
		{ "prefetch", required_argument, 0, 'p' },
		{ "policy", required_argument, 0, 'P' },
		{ "queue-depth", required_argument, 0, 'q' },
		{ "idle-timeout", required_argument, 0, 'i' },
		{ "order", required_argument, 0, 'o' },
		{ "deadline", required_argument, 0, 'D' },
		{ "inflight", required_argument, 0, 'n' },
		{ "log", required_argument, 0, 'l' },
		{ "pidfile", required_argument, 0, 'd' },
		{ "watch", required_argument, 0, 'w' },
		{ "watch-deadline", required_argument, 0, 'W' },
		{ "watch-spin", required_argument, 0, 'S' },
		{ "version", no_argument, 0, 'V' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	int o;
	char err[256];
	opterr = 0;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 's': rd_cfg.socket_path = optarg; break;
		case 'f': rd_cfg.foreground = 1; break;
		case 'p':
			if (rd_parse_size(optarg, &rd_cfg.prefetch) || rd_cfg.prefetch > (1ull << 30))
				return bad("--prefetch \"%s\": expected a size up to 1G (e.g. 2M, 512K)", optarg);
			break;
		case 'P':
			if (rd_cfg.npolicies == RD_MAX_POLICY_SPECS)
				return bad("--policy \"%s\": too many policies", optarg);
			if (rd_policy_spec_parse(optarg, &rd_cfg.policies[rd_cfg.npolicies], err, sizeof err))
				return bad("%s", err);
			rd_cfg.npolicies++;
			break;
		case 'q':
			if (parse_uint(optarg, &rd_cfg.queue_depth, 1u << 20) || !rd_cfg.queue_depth)
				return bad("--queue-depth \"%s\": expected a number from 1", optarg);
			break;
		case 'i':
			if (parse_uint(optarg, &rd_cfg.idle_timeout, 1u << 30))
				return bad("--idle-timeout \"%s\": expected seconds", optarg);
			break;
		case 'w':
			if (nwatch == RD_WATCH_MAX_PATHS)
				return bad("--watch \"%s\": too many paths", optarg);
			watch_paths[nwatch++] = optarg;
			break;
		case 'W':
			if (parse_uint(optarg, &watch_deadline_ms, 60000) || !watch_deadline_ms)
				return bad("--watch-deadline \"%s\": expected milliseconds from 1 to 60000", optarg);
			break;
		case 'S':
			if (parse_uint(optarg, &watch_spin_us, 10000))
				return bad("--watch-spin \"%s\": expected microseconds from 0 to 10000", optarg);
			break;
		case 'o':
			if (rd_order_mode_parse(optarg, &rd_cfg.order))
				return bad("--order \"%s\": expected position or fifo", optarg);
			break;
		case 'D': {
			unsigned ms;
			if (parse_uint(optarg, &ms, 3600u * 1000u))
				return bad("--deadline \"%s\": expected milliseconds (0: no age bound)", optarg);
			rd_cfg.deadline_ns = (uint64_t)ms * 1000000u;
			break;
		}
		case 'n':
			if (parse_uint(optarg, &rd_cfg.inflight, 64) || !rd_cfg.inflight)
				return bad("--inflight \"%s\": expected a number from 1 to 64", optarg);
			break;
		case 'l': rd_cfg.log_path = optarg; break;
		case 'd': rd_cfg.pidfile = optarg; break;
		case 'V': printf("receptiond %s (protocol %d)\n", RD_VERSION, LC_PROTO_VERSION); exit(0);
		case 'h': usage(stdout); exit(0);
		default:
			return bad("unknown or incomplete option \"%s\"", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return bad("unexpected argument \"%s\"", argv[optind]);
	if (!rd_cfg.socket_path) {
		const char *env = getenv(LC_ENV_SOCKET);
		if (env && *env) {
			rd_cfg.socket_path = env;
		} else if (getuid() == 0) {
			rd_cfg.socket_path = LC_DEFAULT_SOCKET_ROOT;
		} else {
			snprintf(default_socket, sizeof default_socket, LC_DEFAULT_SOCKET_USER,
			         (unsigned)getuid());
			rd_cfg.socket_path = default_socket;
		}
	}
	return 0;
}

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

int main(int argc, char **argv)
{
	int rc = parse_options(argc, argv);
	if (rc)
		return rc;
	char err[512];
	signal(SIGPIPE, SIG_IGN);
	if (rd_cfg.log_path && rd_log_open(rd_cfg.log_path)) {
		fprintf(stderr, "receptiond: log \"%s\": %s\n", rd_cfg.log_path, strerror(errno));
		return 1;
	}
	raise_fd_limit();
	if (rd_server_listen(rd_cfg.socket_path, err, sizeof err)) {
		fprintf(stderr, "receptiond: %s\n", err);
		if (rd_cfg.log_path)
			rd_log("%s", err);
		return 1;
	}
	if (nwatch && rd_watch_open(watch_paths, nwatch, watch_deadline_ms, watch_spin_us, err, sizeof err)) {
		fprintf(stderr, "receptiond: %s\n", err);
		if (rd_cfg.log_path)
			rd_log("%s", err);
		rd_server_cleanup();
		return 1;
	}
	int ready = -1;
	if (!rd_cfg.foreground && daemonize(&ready)) {
		fprintf(stderr, "receptiond: cannot detach: %s\n", strerror(errno));
		rd_server_cleanup();
		return 1;
	}
	if (rd_cfg.pidfile && write_pidfile(rd_cfg.pidfile))
		rd_log("pidfile \"%s\": %s", rd_cfg.pidfile, strerror(errno));
	rd_stats.started_ns = rd_now_ns();
	rd_log("listening on %s (pid %d, prefetch %llu, policy %s)", rd_cfg.socket_path, (int)getpid(),
	       (unsigned long long)rd_cfg.prefetch,
	       rd_cfg.npolicies ? rd_cfg.policies[0].name : "fixed");
	if (nwatch && rd_watch_run(rd_cfg.socket_path, err, sizeof err)) {
		fprintf(stderr, "receptiond: %s\n", err);
		if (rd_cfg.log_path)
			rd_log("%s", err);
		rd_server_cleanup();
		return 1;
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
