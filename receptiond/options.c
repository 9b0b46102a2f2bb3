/*
 * options.c - receptiond's settings: the configuration file and the flags.
 *
 * Every setting has one name, used as `--NAME VALUE` on the command line
 * and as `NAME = VALUE` in the file, and one function applies it (set()),
 * so the two cannot disagree on what a value means.  The file is read
 * first and the flags override it; a repeatable setting (policy) given
 * as a flag replaces the file's list rather than adding to it.  A bad
 * line stops the daemon with FILE:LINE and the reason.
 */
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfg.h"
#include "metrics.h"
#include "order.h"
#include "protocol.h"
#include "socket_path.h"

enum {
	/* settings: flags and file keys */
	O_SOCKET = 1, O_FOREGROUND, O_PREFETCH, O_POLICY, O_QUEUE_DEPTH, O_IDLE_TIMEOUT,
	O_ORDER, O_DEADLINE, O_INFLIGHT, O_LOG, O_PIDFILE, O_METRICS_LISTEN, O_WATCH,
	O_WATCH_DEADLINE, O_WATCH_DUE, O_WATCH_SPIN, O_WATCH_QUIET, O_WATCH_RECHECK, O_ACCESS,
	O_USER_CONNS, O_USER_MISSES, O_USER_BYTES, O_USER_CLOSES, O_MAX_DEVICES, O_DEVICE_IDLE,
	/* the command line only */
	O_CONFIG, O_NO_CONFIG, O_CHECK_CONFIG, O_VERSION, O_HELP,
};

static const struct option opts[] = {
	{ "socket", required_argument, 0, O_SOCKET },
	{ "foreground", no_argument, 0, O_FOREGROUND },
	{ "prefetch", required_argument, 0, O_PREFETCH },
	{ "policy", required_argument, 0, O_POLICY },
	{ "queue-depth", required_argument, 0, O_QUEUE_DEPTH },
	{ "idle-timeout", required_argument, 0, O_IDLE_TIMEOUT },
	{ "order", required_argument, 0, O_ORDER },
	{ "deadline", required_argument, 0, O_DEADLINE },
	{ "inflight", required_argument, 0, O_INFLIGHT },
	{ "log", required_argument, 0, O_LOG },
	{ "pidfile", required_argument, 0, O_PIDFILE },
	{ "metrics-listen", required_argument, 0, O_METRICS_LISTEN },
	{ "watch", required_argument, 0, O_WATCH },
	{ "watch-deadline", required_argument, 0, O_WATCH_DEADLINE },
	{ "watch-due", required_argument, 0, O_WATCH_DUE },
	{ "watch-spin", required_argument, 0, O_WATCH_SPIN },
	{ "watch-quiet", required_argument, 0, O_WATCH_QUIET },
	{ "watch-recheck", required_argument, 0, O_WATCH_RECHECK },
	{ "access", required_argument, 0, O_ACCESS },
	{ "user-conns", required_argument, 0, O_USER_CONNS },
	{ "user-misses", required_argument, 0, O_USER_MISSES },
	{ "user-bytes", required_argument, 0, O_USER_BYTES },
	{ "user-closes", required_argument, 0, O_USER_CLOSES },
	{ "max-devices", required_argument, 0, O_MAX_DEVICES },
	{ "device-idle", required_argument, 0, O_DEVICE_IDLE },
	{ "config", required_argument, 0, O_CONFIG },
	{ "no-config", no_argument, 0, O_NO_CONFIG },
	{ "check-config", no_argument, 0, O_CHECK_CONFIG },
	{ "version", no_argument, 0, O_VERSION },
	{ "help", no_argument, 0, O_HELP },
	{ 0, 0, 0, 0 },
};

static const char usage_text[] =
	"usage: receptiond [--socket PATH] [--foreground] [--prefetch SIZE]\n"
	"                  [--policy [DEVICE=]NAME[:ARGS]]... [--queue-depth N]\n"
	"                  [--order position|fifo] [--deadline MS] [--inflight N]\n"
	"                  [--idle-timeout SEC] [--log FILE] [--pidfile FILE]\n"
	"                  [--watch PATH]... [--watch-deadline MS] [--watch-due yes|no]\n"
	"                  [--watch-spin US] [--watch-quiet SIZE] [--watch-recheck MS]\n"
	"                  [--metrics-listen ADDR:PORT] [--access all|owner|group:NAME]\n"
	"                  [--user-conns N] [--user-misses N] [--user-bytes SIZE] [--user-closes N]\n"
	"                  [--max-devices N] [--device-idle SEC] [--config FILE | --no-config]\n"
	"                  [--check-config] [--version] [--help]\n";

static const char help_text[] =
	"\n"
	"  --socket PATH           listen here (default /run/libception/receptiond.sock as root,\n"
	"                          else $XDG_RUNTIME_DIR/libception.sock if private, else\n"
	"                          /tmp/libception-UID/receptiond.sock); a socket passed by\n"
	"                          systemd (LISTEN_FDS) is used instead\n"
	"  --foreground            do not detach (services, tests)\n"
	"  --prefetch SIZE         default prefetch window, e.g. 2M (default 2M, at most 1G)\n"
	"  --policy [DEVICE=]NAME[:ARGS]  sizing policy, per device or for all; repeatable\n"
	"  --queue-depth N         queued misses per device before BUSY (default 1024)\n"
	"  --order position|fifo   queue order: by disk position, users in turn (default), or FIFO\n"
	"  --deadline MS           position order: a request this old goes next; one that\n"
	"                          nobody waits for, unasked this long, is dropped\n"
	"                          (default 2000; 0: neither)\n"
	"  --inflight N            window reads sent to a device at once (1-64)\n"
	"  --idle-timeout SEC      exit after SEC without clients or requests (default 0: never)\n"
	"  --log FILE              append the log to FILE (default stderr)\n"
	"  --pidfile FILE          write the daemon's pid to FILE\n"
	"  --watch PATH            watch mode: fanotify pre-content events on PATH's mount;\n"
	"                          repeatable (up to 16)\n"
	"  --watch-deadline MS     a watched reader waits at most MS (1-60000, default 500)\n"
	"  --watch-due yes|no      the queue serves a watched miss by its deadline (default yes)\n"
	"  --watch-spin US         poll for the next event this long before sleeping (0-10000, default 50)\n"
	"  --watch-quiet SIZE      no more events for a file up to SIZE found wholly cached\n"
	"                          (default 2M; 0: never)\n"
	"  --watch-recheck MS      hear quieted files again every MS (100-3600000, default 10000)\n"
	"  --metrics-listen ADDR:PORT  serve Prometheus metrics on http://ADDR:PORT/metrics\n"
	"  --access all|owner|group:NAME  who may connect (default: group:libception as root,\n"
	"                          root only if no such group; owner otherwise)\n"
	"  --user-conns N          connections per user (default 256)\n"
	"  --user-misses N         queued misses per user (default 64)\n"
	"  --user-bytes SIZE       bytes those misses may read, per user (default 1G)\n"
	"  --user-closes N         passed fds waiting to be closed, per user (default 256)\n"
	"  --max-devices N         device entries (default 64)\n"
	"  --device-idle SEC       an idle device's workers exit after SEC (default 60)\n"
	"  --config FILE           settings file (default " RD_DEFAULT_CONFIG " if present);\n"
	"                          NAME = VALUE per line, NAME any option above but --config\n"
	"  --no-config             read no settings file\n"
	"  --check-config          check the settings file and flags, then exit\n"
	"See receptiond(8).\n";

/* The repeatable settings (policy, watch) whose list came from the file:
 * the first flag of one replaces the file's list. */
static unsigned lists_from_file;

static int list_start(int code, int from_file)
{
	unsigned bit = 1u << code;
	if (from_file) {
		lists_from_file |= bit;
		return 0;
	}
	int replace = !!(lists_from_file & bit);
	lists_from_file &= ~bit;
	return replace;
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

static int parse_bool(const char *s, int *out)
{
	if (!strcmp(s, "yes") || !strcmp(s, "true") || !strcmp(s, "1"))
		*out = 1;
	else if (!strcmp(s, "no") || !strcmp(s, "false") || !strcmp(s, "0"))
		*out = 0;
	else
		return -1;
	return 0;
}

/*
 * Apply one setting.  name is how the user wrote it ("--prefetch" or
 * "prefetch"), for the message; val is NULL for a flag without argument.
 * Strings are kept as given: the caller keeps them alive.
 */
static int set(int code, const char *name, const char *val, int from_file, char *err, size_t n)
{
	char why[256];
	switch (code) {
	case O_SOCKET: rd_cfg.socket_path = val; return 0;
	case O_LOG: rd_cfg.log_path = val; return 0;
	case O_PIDFILE: rd_cfg.pidfile = val; return 0;
	case O_FOREGROUND:
		if (!val) {
			rd_cfg.foreground = 1;
			return 0;
		}
		if (parse_bool(val, &rd_cfg.foreground) == 0)
			return 0;
		snprintf(err, n, "%s \"%s\": expected yes or no", name, val);
		return -1;
	case O_PREFETCH:
		if (rd_parse_size(val, &rd_cfg.prefetch) == 0 && rd_cfg.prefetch <= (1ull << 30))
			return 0;
		snprintf(err, n, "%s \"%s\": expected a size up to 1G (e.g. 2M, 512K)", name, val);
		return -1;
	case O_POLICY:
		if (list_start(code, from_file))
			rd_cfg.npolicies = 0;
		if (rd_cfg.npolicies == RD_MAX_POLICY_SPECS) {
			snprintf(err, n, "%s \"%s\": too many policies", name, val);
			return -1;
		}
		if (rd_policy_spec_parse(val, &rd_cfg.policies[rd_cfg.npolicies], why, sizeof why)) {
			snprintf(err, n, "%s", why);
			return -1;
		}
		rd_cfg.npolicies++;
		return 0;
	case O_WATCH:
		if (list_start(code, from_file))
			rd_cfg.nwatch = 0;
		if (rd_cfg.nwatch == RD_WATCH_MAX_PATHS) {
			snprintf(err, n, "%s \"%s\": too many paths", name, val);
			return -1;
		}
		rd_cfg.watch_paths[rd_cfg.nwatch++] = (char *)val;
		return 0;
	case O_WATCH_DEADLINE:
		if (parse_uint(val, &rd_cfg.watch_deadline_ms, 60000) == 0 && rd_cfg.watch_deadline_ms)
			return 0;
		snprintf(err, n, "%s \"%s\": expected milliseconds from 1 to 60000", name, val);
		return -1;
	case O_WATCH_DUE:
		if (parse_bool(val, &rd_cfg.watch_due) == 0)
			return 0;
		snprintf(err, n, "%s \"%s\": expected yes or no", name, val);
		return -1;
	case O_WATCH_SPIN:
		if (parse_uint(val, &rd_cfg.watch_spin_us, 10000) == 0)
			return 0;
		snprintf(err, n, "%s \"%s\": expected microseconds from 0 to 10000", name, val);
		return -1;
	case O_WATCH_QUIET:
		if (rd_parse_size(val, &rd_cfg.watch_quiet) == 0 && rd_cfg.watch_quiet <= (1ull << 30))
			return 0;
		snprintf(err, n, "%s \"%s\": expected a size up to 1G (0: never)", name, val);
		return -1;
	case O_WATCH_RECHECK:
		if (parse_uint(val, &rd_cfg.watch_recheck_ms, 3600000) == 0 && rd_cfg.watch_recheck_ms >= 100)
			return 0;
		snprintf(err, n, "%s \"%s\": expected milliseconds from 100 to 3600000", name, val);
		return -1;
	case O_QUEUE_DEPTH:
		if (parse_uint(val, &rd_cfg.queue_depth, 1u << 20) == 0 && rd_cfg.queue_depth)
			return 0;
		snprintf(err, n, "%s \"%s\": expected a number from 1", name, val);
		return -1;
	case O_ORDER:
		if (rd_order_mode_parse(val, &rd_cfg.order) == 0)
			return 0;
		snprintf(err, n, "%s \"%s\": expected position or fifo", name, val);
		return -1;
	case O_DEADLINE: {
		unsigned ms;
		if (parse_uint(val, &ms, 3600u * 1000u) == 0) {
			rd_cfg.deadline_ns = (uint64_t)ms * 1000000u;
			return 0;
		}
		snprintf(err, n, "%s \"%s\": expected milliseconds (0: no age bound)", name, val);
		return -1;
	}
	case O_INFLIGHT:
		if (parse_uint(val, &rd_cfg.inflight, 64) == 0 && rd_cfg.inflight)
			return 0;
		snprintf(err, n, "%s \"%s\": expected a number from 1 to 64", name, val);
		return -1;
	case O_IDLE_TIMEOUT:
		if (parse_uint(val, &rd_cfg.idle_timeout, 1u << 30) == 0)
			return 0;
		snprintf(err, n, "%s \"%s\": expected seconds", name, val);
		return -1;
	case O_ACCESS: {
		struct rd_access a;
		if (rd_access_parse(val, geteuid(), &a, err, n, rd_access_note,
		                    sizeof rd_access_note) == 0) {
			rd_cfg.access = val;
			return 0;
		}
		return -1;
	}
	case O_USER_CONNS: case O_USER_MISSES: case O_USER_CLOSES: case O_MAX_DEVICES:
	case O_DEVICE_IDLE: {
		unsigned *to = code == O_USER_CONNS ? &rd_cfg.user_conns :
		               code == O_USER_MISSES ? &rd_cfg.user_misses :
		               code == O_USER_CLOSES ? &rd_cfg.user_closes :
		               code == O_MAX_DEVICES ? &rd_cfg.max_devices : &rd_cfg.device_idle;
		if (parse_uint(val, to, 1u << 20) == 0 && *to)
			return 0;
		snprintf(err, n, "%s \"%s\": expected a number from 1", name, val);
		return -1;
	}
	case O_USER_BYTES:
		if (rd_parse_size(val, &rd_cfg.user_bytes) == 0 && rd_cfg.user_bytes)
			return 0;
		snprintf(err, n, "%s \"%s\": expected a size (e.g. 1G)", name, val);
		return -1;
	case O_METRICS_LISTEN:
		if (rd_metrics_parse_addr(val, NULL, why, sizeof why) == 0) {
			rd_cfg.metrics_listen = val;
			return 0;
		}
		snprintf(err, n, "%s \"%s\": %s", name, val, why);
		return -1;
	}
	snprintf(err, n, "%s: not a setting", name);
	return -1;
}

static const struct option *setting_named(const char *key)
{
	for (const struct option *o = opts; o->name; o++)
		if (o->val < O_CONFIG && !strcmp(o->name, key))
			return o;
	return NULL;
}

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	char *e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
		*--e = 0;
	return s;
}

/* Read the file; 0, -1 if absent (errno ENOENT), or 2 after a message. */
static int load_file(const char *path)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		if (errno == ENOENT)
			return -1;
		fprintf(stderr, "receptiond: %s: %s\n", path, strerror(errno));
		return 2;
	}
	char *line = NULL, err[512];
	size_t cap = 0;
	unsigned lineno = 0;
	int rc = 0;
	while (getline(&line, &cap, f) >= 0) {
		lineno++;
		char *s = trim(line);
		if (!*s || *s == '#')
			continue;
		char *eq = strchr(s, '=');
		const char *why = NULL;
		if (!eq) {
			why = "expected NAME = VALUE";
		} else {
			*eq = 0;
			char *key = trim(s), *val = trim(eq + 1);
			const struct option *o = setting_named(key);
			if (!o) {
				snprintf(err, sizeof err, "unknown setting \"%s\" (the names are receptiond's "
				         "options without --; see receptiond --help)", key);
				why = err;
			} else if (!*val) {
				snprintf(err, sizeof err, "%s: no value", key);
				why = err;
			} else if (set(o->val, key, strdup(val), 1, err, sizeof err)) {
				why = err;
			}
		}
		if (why) {
			fprintf(stderr, "receptiond: %s:%u: %s\n", path, lineno, why);
			rc = 2;
			break;
		}
	}
	if (!rc && ferror(f)) {
		fprintf(stderr, "receptiond: %s: %s\n", path, strerror(errno));
		rc = 2;
	}
	free(line);
	fclose(f);
	return rc;
}

static int bad(const char *msg)
{
	fprintf(stderr, "receptiond: %s\n%s", msg, usage_text);
	return 2;
}

static char default_socket[128];

int rd_options_parse(int argc, char **argv)
{
	/* The flags are gathered first: --config names the file that comes
	 * before them. */
	struct { int code; const char *name, *val; } given[argc > 0 ? argc : 1];
	int ngiven = 0, check = 0, no_config = 0, o, idx;
	const char *config = NULL;
	char err[512];
	opterr = 0;
	while ((o = getopt_long(argc, argv, "", opts, &idx)) != -1) {
		switch (o) {
		case O_CONFIG: config = optarg; break;
		case O_NO_CONFIG: no_config = 1; break;
		case O_CHECK_CONFIG: check = 1; break;
		case O_VERSION: printf("receptiond %s (protocol %d)\n", LC_VERSION, LC_PROTO_VERSION); return 0;
		case O_HELP: printf("%s%s", usage_text, help_text); return 0;
		case '?': case ':':
			snprintf(err, sizeof err, "unknown or incomplete option \"%s\"", argv[optind - 1]);
			return bad(err);
		default:
			given[ngiven].code = o;
			given[ngiven].name = opts[idx].name;
			given[ngiven].val = optarg;
			ngiven++;
		}
	}
	if (optind < argc) {
		snprintf(err, sizeof err, "unexpected argument \"%s\"", argv[optind]);
		return bad(err);
	}
	if (config && no_config)
		return bad("--config and --no-config exclude each other");
	const char *file = no_config ? NULL : config ? config : RD_DEFAULT_CONFIG;
	int rc = file ? load_file(file) : -1;
	if (rc == -1 && config) {
		fprintf(stderr, "receptiond: %s: %s\n", config, strerror(ENOENT));
		return 2;
	}
	if (rc > 0)
		return rc;
	for (int i = 0; i < ngiven; i++) {
		char flag[64];
		snprintf(flag, sizeof flag, "--%s", given[i].name);
		if (set(given[i].code, flag, given[i].val, 0, err, sizeof err))
			return bad(err);
	}
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
	/* The one access rule (access.h), for flags, file and the default. */
	if (rd_access_parse(rd_cfg.access, geteuid(), &rd_access, err, sizeof err, rd_access_note,
	                    sizeof rd_access_note)) {
		fprintf(stderr, "receptiond: %s\n", err);
		return 2;
	}
	if (check) {
		printf("receptiond: configuration OK (%s%s)\n", rc == 0 ? "file " : "no file",
		       rc == 0 ? file : "");
		return 0;
	}
	return -1;
}
