/*
 * main.c - vidload: the papers' HTTP video-streaming workload, open loop.
 * Options, URL and library set-up, then one of: a run, a search for the
 * maximum failure-free rate, generator samples, or materializing a
 * library.  Manual: docs/vidload.md.
 */
#include "modes.h"
#include "past.h"
#include "report.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static const char usage[] =
	"usage: vidload --url URL --library FILE --rate R --duration S [--warmup S] [--past S] [--seed N] [--json FILE]\n"
	"               [--zipf A] [--views SHARE,SPAN] [--segment S] [--burst N] [--deadline S]\n"
	"               [--links LIST] [--delay-ms MS] [--tick-ms MS] [--rcvbuf BYTES] [--mss BYTES]\n"
	"               [--late-ms MS] [--progress S] [--timeline S] [--no-shuffle] [--quiet]\n"
	"       vidload ... --search LO:HI [--resolution R] [--repeats N] [--max-fail PCT] [--between CMD]\n"
	"       vidload --sample zipf|arrivals|views --count N [--library FILE | --videos N] [--rate R] [--seed N]\n"
	"       vidload --past-reads --past S --library FILE --rate R [--seed N]\n"
	"       vidload --materialize DIR --library FILE\n"
	"       vidload --version\n";

static int bad(const char *opt, const char *val, const char *want)
{
	fprintf(stderr, "vidload: %s \"%s\": expected %s\n", opt, val, want);
	return 2;
}

static int num(const char *s, double *out, double min)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < min)
		return -1;
	*out = v;
	return 0;
}

/* "3.5M,10M": bits per second with optional k/M/G suffix; 0 = unlimited. */
static int parse_links(const char *s, struct vl_config *c)
{
	char buf[256], *save = NULL;
	snprintf(buf, sizeof buf, "%s", s);
	c->nlinks = 0;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *end;
		double v = strtod(t, &end), mult = 1;
		if (*end == 'k' || *end == 'K')
			mult = 1e3, end++;
		else if (*end == 'M')
			mult = 1e6, end++;
		else if (*end == 'G')
			mult = 1e9, end++;
		if (end == t || *end || !(v >= 0) || c->nlinks == VL_MAX_LINKS)
			return -1;
		c->links[c->nlinks++] = v * mult;
	}
	return c->nlinks ? 0 : -1;
}

/* http://HOST[:PORT][/PREFIX] */
static int parse_url(struct vl_config *c)
{
	const char *p = c->url, *host, *hend, *slash;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	int rc;

	if (strncmp(p, "http://", 7))
		return bad("--url", c->url, "http://HOST[:PORT][/PREFIX]");
	host = p + 7;
	slash = strchr(host, '/');
	if (!slash)
		slash = host + strlen(host);
	if (*host == '[') {
		hend = memchr(host, ']', (size_t)(slash - host));
		if (!hend)
			return bad("--url", c->url, "http://HOST[:PORT][/PREFIX]");
		host++;
	} else {
		hend = memchr(host, ':', (size_t)(slash - host));
		if (!hend)
			hend = slash;
	}
	if (hend == host || (size_t)(hend - host) >= sizeof c->host)
		return bad("--url", c->url, "http://HOST[:PORT][/PREFIX]");
	snprintf(c->host, sizeof c->host, "%.*s", (int)(hend - host), host);
	if (*hend == ']')
		hend++;
	if (*hend == ':' && hend + 1 < slash)
		snprintf(c->port, sizeof c->port, "%.*s", (int)(slash - hend - 1), hend + 1);
	else
		snprintf(c->port, sizeof c->port, "80");
	snprintf(c->prefix, sizeof c->prefix, "%s", slash);
	size_t n = strlen(c->prefix);
	while (n > 0 && c->prefix[n - 1] == '/')
		c->prefix[--n] = 0;
	if ((rc = getaddrinfo(c->host, c->port, &hints, &ai))) {
		fprintf(stderr, "vidload: --url \"%s\": %s\n", c->url, gai_strerror(rc));
		return 1;
	}
	memcpy(&c->addr, ai->ai_addr, ai->ai_addrlen);
	c->addrlen = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

static void raise_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

enum {
	O_URL = 256, O_LIBRARY, O_RATE, O_DURATION, O_SEED, O_JSON, O_ZIPF, O_VIEWS, O_SEGMENT,
	O_BURST, O_DEADLINE, O_LINKS, O_DELAY, O_TICK, O_RCVBUF, O_MSS, O_LATE, O_PROGRESS, O_NOSHUFFLE,
	O_QUIET, O_SEARCH, O_RESOLUTION, O_REPEATS, O_MAXFAIL, O_BETWEEN, O_SAMPLE, O_COUNT,
	O_VIDEOS, O_MATERIALIZE, O_WARMUP, O_PAST, O_PAST_READS, O_TIMELINE, O_HELP, O_VERSION,
};

static const struct option options[] = {
	{ "url", 1, 0, O_URL }, { "library", 1, 0, O_LIBRARY }, { "rate", 1, 0, O_RATE },
	{ "duration", 1, 0, O_DURATION }, { "seed", 1, 0, O_SEED }, { "json", 1, 0, O_JSON },
	{ "zipf", 1, 0, O_ZIPF }, { "views", 1, 0, O_VIEWS }, { "segment", 1, 0, O_SEGMENT },
	{ "burst", 1, 0, O_BURST }, { "deadline", 1, 0, O_DEADLINE }, { "links", 1, 0, O_LINKS },
	{ "delay-ms", 1, 0, O_DELAY }, { "tick-ms", 1, 0, O_TICK }, { "rcvbuf", 1, 0, O_RCVBUF },
	{ "mss", 1, 0, O_MSS },
	{ "late-ms", 1, 0, O_LATE }, { "progress", 1, 0, O_PROGRESS },
	{ "no-shuffle", 0, 0, O_NOSHUFFLE }, { "quiet", 0, 0, O_QUIET },
	{ "search", 1, 0, O_SEARCH }, { "resolution", 1, 0, O_RESOLUTION },
	{ "repeats", 1, 0, O_REPEATS }, { "max-fail", 1, 0, O_MAXFAIL },
	{ "between", 1, 0, O_BETWEEN }, { "sample", 1, 0, O_SAMPLE }, { "count", 1, 0, O_COUNT },
	{ "videos", 1, 0, O_VIDEOS }, { "materialize", 1, 0, O_MATERIALIZE },
	{ "warmup", 1, 0, O_WARMUP }, { "timeline", 1, 0, O_TIMELINE },
	{ "past", 1, 0, O_PAST }, { "past-reads", 0, 0, O_PAST_READS },
	{ "help", 0, 0, O_HELP }, { "version", 0, 0, O_VERSION }, { 0 },
};

int main(int argc, char **argv)
{
	struct vl_config c = {
		.rate = -1, .duration = -1, .seed = 1,
		.wl = { .zipf_alpha = 0.8, .early_share = 0.44, .early_span = 0.2, .segment_s = 10,
			.burst = 3, .shuffle = 1 },
		.deadline = 10, .links = { 3.5e6, 10e6 }, .nlinks = 2, .delay = 0.05, .tick = 0.01,
		.rcvbuf = 65536, .mss = 1448, .progress = 5, .timeline = 5, .late = 0.02,
	};
	struct search_opts so = { .resolution = 1, .repeats = 1, .max_fail_pct = 0.3 };
	const char *json = NULL, *sample = NULL, *materialize = NULL, *search = NULL;
	double v, count = 0, videos = 0;
	int opt, rc = 1, past_reads = 0;

	while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
		const char *a = optarg;
		switch (opt) {
		case O_URL: c.url = a; break;
		case O_LIBRARY: c.library_path = a; break;
		case O_RATE: if (num(a, &c.rate, 0)) return bad("--rate", a, "sessions per second >= 0"); break;
		case O_DURATION: if (num(a, &c.duration, 0)) return bad("--duration", a, "seconds"); break;
		case O_WARMUP: if (num(a, &c.warmup, 0)) return bad("--warmup", a, "seconds >= 0"); break;
		case O_PAST: if (num(a, &c.past, 0)) return bad("--past", a, "seconds >= 0"); break;
		case O_PAST_READS: past_reads = 1; break;
		case O_TIMELINE: if (num(a, &c.timeline, 0)) return bad("--timeline", a, "seconds (0 = off)"); break;
		case O_SEED: if (num(a, &v, 0) || v != floor(v)) return bad("--seed", a, "an integer >= 0");
			c.seed = (uint64_t)v; break;
		case O_JSON: json = a; break;
		case O_ZIPF: if (num(a, &c.wl.zipf_alpha, 0)) return bad("--zipf", a, "an exponent >= 0"); break;
		case O_VIEWS:
			if (sscanf(a, "%lf,%lf", &c.wl.early_share, &c.wl.early_span) != 2 ||
			    !(c.wl.early_share >= 0 && c.wl.early_share <= 1) ||
			    !(c.wl.early_span > 0 && c.wl.early_span <= 1))
				return bad("--views", a, "SHARE,SPAN (0..1, 0<SPAN<=1)");
			break;
		case O_SEGMENT: if (num(a, &c.wl.segment_s, 0.001)) return bad("--segment", a, "seconds > 0"); break;
		case O_BURST: if (num(a, &v, 1) || v != floor(v) || v > 1000) return bad("--burst", a, "1..1000");
			c.wl.burst = (unsigned)v; break;
		case O_DEADLINE: if (num(a, &c.deadline, 0.001)) return bad("--deadline", a, "seconds > 0"); break;
		case O_LINKS: if (parse_links(a, &c)) return bad("--links", a, "bits/s list like 3.5M,10M (0 = unlimited)"); break;
		case O_DELAY: if (num(a, &v, 0)) return bad("--delay-ms", a, "milliseconds >= 0");
			c.delay = v / 1e3; break;
		case O_TICK: if (num(a, &v, 0.1)) return bad("--tick-ms", a, "milliseconds >= 0.1");
			c.tick = v / 1e3; break;
		case O_RCVBUF: if (num(a, &v, 0) || v > 1 << 30) return bad("--rcvbuf", a, "bytes (0 = default)");
			c.rcvbuf = (int)v; break;
		case O_MSS: if (num(a, &v, 0) || v > 65535 || (v > 0 && v < 88)) return bad("--mss", a, "88..65535 bytes (0 = the interface's)");
			c.mss = (int)v; break;
		case O_LATE: if (num(a, &v, 0)) return bad("--late-ms", a, "milliseconds >= 0");
			c.late = v / 1e3; break;
		case O_PROGRESS: if (num(a, &c.progress, 0)) return bad("--progress", a, "seconds (0 = off)"); break;
		case O_NOSHUFFLE: c.wl.shuffle = 0; break;
		case O_QUIET: c.quiet = 1; break;
		case O_SEARCH:
			search = a;
			if (sscanf(a, "%lf:%lf", &so.lo, &so.hi) != 2 || !(so.lo > 0) || !(so.hi >= so.lo))
				return bad("--search", a, "LO:HI with 0 < LO <= HI");
			break;
		case O_RESOLUTION: if (num(a, &so.resolution, 1e-6)) return bad("--resolution", a, "a rate > 0"); break;
		case O_REPEATS: if (num(a, &v, 1) || v != floor(v)) return bad("--repeats", a, "an integer >= 1");
			so.repeats = (unsigned)v; break;
		case O_MAXFAIL: if (num(a, &so.max_fail_pct, 0)) return bad("--max-fail", a, "a percentage >= 0"); break;
		case O_BETWEEN: so.between = a; break;
		case O_SAMPLE: sample = a; break;
		case O_COUNT: if (num(a, &count, 0) || count != floor(count)) return bad("--count", a, "an integer >= 0"); break;
		case O_VIDEOS: if (num(a, &videos, 1) || videos != floor(videos)) return bad("--videos", a, "an integer >= 1"); break;
		case O_MATERIALIZE: materialize = a; break;
		case O_HELP: fputs(usage, stdout); return 0;
		case O_VERSION: printf("vidload %s\n", LC_VERSION); return 0;
		default: fputs(usage, stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "vidload: unexpected argument \"%s\"\n", argv[optind]);
		return 2;
	}
	if (c.library_path) {
		char err[512];
		if (library_load(c.library_path, &c.lib, err, sizeof err)) {
			fprintf(stderr, "vidload: %s\n", err);
			return 1;
		}
	}
	if (sample) {
		rc = sample_run(&c, sample, (unsigned long)count, (size_t)videos);
		goto out;
	}
	if (past_reads) {
		if (!c.library_path || c.rate < 0) {
			fprintf(stderr, "vidload: --past-reads needs --library and --rate\n");
			rc = 2;
			goto out;
		}
		rc = past_reads_run(&c);
		goto out;
	}
	if (materialize) {
		if (!c.library_path) {
			fprintf(stderr, "vidload: --materialize needs --library\n");
			rc = 2;
			goto out;
		}
		rc = materialize_run(&c.lib, materialize);
		goto out;
	}
	if (!c.url || !c.library_path || (!search && c.rate < 0) || c.duration <= 0) {
		fprintf(stderr, "vidload: --url, --library, --rate and --duration are required\n%s", usage);
		rc = 2;
		goto out;
	}
	if ((rc = parse_url(&c)))
		goto out;
	raise_nofile();
	if (search) {
		c.quiet = 1;
		rc = search_run(&c, &so, json);
		goto out;
	}
	struct vl_result res;
	if (vl_run(&c, c.seed, &res)) {
		rc = 1;
		goto out;
	}
	report_summary(stdout, &res);
	if (json) {
		FILE *f = fopen(json, "w");
		if (!f) {
			fprintf(stderr, "vidload: --json \"%s\": %s\n", json, strerror(errno));
			goto out;
		}
		fprintf(f, "{\"vidload\": %d, \"mode\": \"run\", \"settings\": ", VL_JSON_VERSION);
		report_json_settings(f, &c);
		fprintf(f, ",\n  \"result\": ");
		report_json_result(f, &res);
		fprintf(f, "}\n");
		fclose(f);
	}
	rc = 0;
	vl_result_free(&res);
out:
	library_free(&c.lib);
	return rc;
}
