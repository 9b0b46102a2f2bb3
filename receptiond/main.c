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
#include "socket_path.h"
#include "stats.h"

#define RD_VERSION "0.1"


static void usage(FILE *f)
{
	fprintf(f,
	        "usage: receptiond [--socket PATH] [--foreground] [--prefetch SIZE]\n"
	        "                  [--policy [DEVICE=]NAME[:ARGS]]... [--queue-depth N]\n"
	        "                  [--access all|owner|group:NAME] [--user-conns N] [--user-misses N]\n"
	        "                  [--user-bytes SIZE] [--user-closes N] [--max-devices N]\n"
	        "                  [--device-idle SEC] [--idle-timeout SEC] [--log FILE]\n"
	        "                  [--pidfile FILE] [--version]\n");
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
static char access_note[160];

static int parse_options(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, 0, 's' },
		{ "foreground", no_argument, 0, 'f' },
		{ "prefetch", required_argument, 0, 'p' },
		{ "policy", required_argument, 0, 'P' },
		{ "queue-depth", required_argument, 0, 'q' },
		{ "idle-timeout", required_argument, 0, 'i' },
		{ "log", required_argument, 0, 'l' },
		{ "pidfile", required_argument, 0, 'd' },
		{ "access", required_argument, 0, 'A' },
		{ "user-conns", required_argument, 0, 'C' },
		{ "user-misses", required_argument, 0, 'M' },
		{ "user-bytes", required_argument, 0, 'B' },
		{ "user-closes", required_argument, 0, 'X' },
		{ "max-devices", required_argument, 0, 'D' },
		{ "device-idle", required_argument, 0, 'I' },
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
		case 'A': rd_cfg.access = optarg; break;
		case 'C': case 'M': case 'X': case 'D': case 'I': {
			unsigned *to = o == 'C' ? &rd_cfg.user_conns : o == 'M' ? &rd_cfg.user_misses :
			               o == 'X' ? &rd_cfg.user_closes : o == 'D' ? &rd_cfg.max_devices :
			               &rd_cfg.device_idle;
			if (parse_uint(optarg, to, 1u << 20) || !*to)
				return bad("\"%s\": expected a number from 1", optarg);
			break;
		}
		case 'B':
			if (rd_parse_size(optarg, &rd_cfg.user_bytes) || !rd_cfg.user_bytes)
				return bad("--user-bytes \"%s\": expected a size (e.g. 1G)", optarg);
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
		} else {
			lc_default_socket(getuid(), getenv("XDG_RUNTIME_DIR"), default_socket,
			                  sizeof default_socket);
			rd_cfg.socket_path = default_socket;
		}
	}
	if (rd_access_parse(rd_cfg.access, geteuid(), &rd_access, err, sizeof err, access_note,
	                    sizeof access_note)) {
		fprintf(stderr, "receptiond: %s\n", err);
		return 2;
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
	int ready = -1;
	if (!rd_cfg.foreground && daemonize(&ready)) {
		fprintf(stderr, "receptiond: cannot detach: %s\n", strerror(errno));
		rd_server_cleanup();
		return 1;
	}
	if (rd_cfg.pidfile && write_pidfile(rd_cfg.pidfile))
		rd_log("pidfile \"%s\": %s", rd_cfg.pidfile, strerror(errno));
	rd_stats.started_ns = rd_now_ns();
	char acc[80];
	rd_log("listening on %s (pid %d, prefetch %llu, policy %s, access %s)", rd_cfg.socket_path,
	       (int)getpid(), (unsigned long long)rd_cfg.prefetch,
	       rd_cfg.npolicies ? rd_cfg.policies[0].name : "fixed",
	       rd_access_describe(&rd_access, acc, sizeof acc));
	if (access_note[0])
		rd_log("%s", access_note);
	if (ready >= 0) {
		ssize_t w = write(ready, "1", 1);
		(void)w;
		close(ready);
	}
	rc = rd_server_run();
	rd_server_cleanup();
	rd_device_stop_all();
	if (rd_cfg.pidfile)
		unlink(rd_cfg.pidfile);
	rd_log("exited");
	return rc;
}
