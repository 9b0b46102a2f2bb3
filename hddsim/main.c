/*
 * main.c - hddsim: mount a read-only FUSE file system whose reads take the
 * time a modelled hard disk would take.  Options: docs/hddsim.md.
 */
#include "drives.h"
#include "fs.h"

#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROG "hddsim"

struct opts {
	const char *mountpoint, *drive, *drive_file, *library, *trace, *disk, *disk_map;
	double start;
	unsigned long max_request, threads, max_background, congestion;
	long policy, queue_depth, segments;
	long long readahead, meta_group;
	int allow_other, list, spread, realtime, placed; /* placed: --start/--meta-group given */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " MOUNTPOINT --library LIB [--drive PRESET] [options]\n"
		"       " PROG " MOUNTPOINT --disk IMAGE --disk-map MAP [--drive PRESET] [options]\n"
		"  --library LIB           library file (lcvl 1) or a directory tree\n"
		"  --disk IMAGE            disk mode: MOUNT/disk is the whole disk, its file system's\n"
		"                          blocks from the sparse IMAGE, video extents from MAP (lcdm 1)\n"
		"  --disk-map MAP          the extent map of --disk\n"
		"  --drive PRESET          drive preset (default wd-red); --list-drives shows them\n"
		"  --drive-file FILE       presets file (default: installed drives.conf)\n"
		"  --start FRACTION        where the library starts on the platter, 0..1 (default 0)\n"
		"  --spread                spread the videos evenly from --start to the inner edge\n"
		"  --trace FILE            one line per drive command\n"
		"  --max-request BYTES     largest read request (FUSE max_read, default 1048576)\n"
		"  --max-background N      kernel's async requests in flight (default 64)\n"
		"  --congestion-threshold N  (default 3/4 of max-background)\n"
		"  --threads N             FUSE worker threads (default 128)\n"
		"  --policy fifo|sptf      drive queue order (default: preset)\n"
		"  --queue-depth N         commands SPTF looks at (default: preset)\n"
		"  --readahead BYTES       drive read-ahead past a request (default: preset)\n"
		"  --segments N            drive cache segments (default: preset)\n"
		"  --meta-group BYTES      inode table every BYTES; 0 = no metadata reads (default 134217728)\n"
		"  --no-allow-other        only the mounting user may read\n"
		"  --no-realtime           do not sleep at SCHED_FIFO priority 1 (wakes may be late)\n"
		"  --version               print the version and exit\n");
}

static int bad(const char *what, const char *val)
{
	fprintf(stderr, PROG ": bad value for %s: \"%s\"\n", what, val);
	return -1;
}

static int num(const char *what, const char *v, unsigned long long lo, unsigned long long hi,
	       unsigned long long *out)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	if (errno || end == v || *end || *v == '-' || x < lo || x > hi)
		return bad(what, v);
	*out = x;
	return 0;
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{"library", 1, 0, 'l'}, {"disk", 1, 0, 'i'}, {"disk-map", 1, 0, 'M'},
		{"drive", 1, 0, 'd'}, {"drive-file", 1, 0, 'D'},
		{"start", 1, 0, 's'}, {"trace", 1, 0, 't'}, {"max-request", 1, 0, 'r'},
		{"max-background", 1, 0, 'b'}, {"congestion-threshold", 1, 0, 'c'},
		{"threads", 1, 0, 'T'}, {"policy", 1, 0, 'p'}, {"queue-depth", 1, 0, 'q'},
		{"readahead", 1, 0, 'a'}, {"segments", 1, 0, 'S'}, {"meta-group", 1, 0, 'm'},
		{"no-allow-other", 0, 0, 'n'}, {"spread", 0, 0, 'P'}, {"no-realtime", 0, 0, 'R'}, {"list-drives", 0, 0, 'L'}, {"help", 0, 0, 'h'}, {"version", 0, 0, 'V'},
		{0, 0, 0, 0},
	};
	*o = (struct opts){ .drive = "wd-red", .max_request = 1 << 20, .threads = 128,
			    .max_background = 64, .policy = -1, .queue_depth = -1, .segments = -1,
			    .readahead = -1, .meta_group = 128ll << 20, .allow_other = geteuid() == 0,
			    .realtime = 1 };
	int c;
	unsigned long long v;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'l': o->library = optarg; break;
		case 'i': o->disk = optarg; break;
		case 'M': o->disk_map = optarg; break;
		case 'd': o->drive = optarg; break;
		case 'D': o->drive_file = optarg; break;
		case 't': o->trace = optarg; break;
		case 'n': o->allow_other = 0; break;
		case 'P': o->spread = 1; break;
		case 'R': o->realtime = 0; break;
		case 'L': o->list = 1; break;
		case 'h': usage(stdout); exit(0);
		case 'V': printf(PROG " %s\n", LC_VERSION); exit(0);
		case 's': {
			char *end;
			o->placed = 1;
			o->start = strtod(optarg, &end);
			if (end == optarg || *end || !(o->start >= 0 && o->start < 1))
				return bad("--start", optarg);
			break;
		}
		case 'r':
			if (num("--max-request", optarg, 4096, 1 << 20, &v)) return -1;
			o->max_request = v; break;
		case 'b':
			if (num("--max-background", optarg, 1, 65535, &v)) return -1;
			o->max_background = v; break;
		case 'c':
			if (num("--congestion-threshold", optarg, 1, 65535, &v)) return -1;
			o->congestion = v; break;
		case 'T':
			if (num("--threads", optarg, 2, 100000, &v)) return -1;
			o->threads = v; break;
		case 'p':
			if (!strcmp(optarg, "fifo")) o->policy = MODEL_FIFO;
			else if (!strcmp(optarg, "sptf")) o->policy = MODEL_SPTF;
			else return bad("--policy", optarg);
			break;
		case 'q':
			if (num("--queue-depth", optarg, 1, 1 << 20, &v)) return -1;
			o->queue_depth = (long)v; break;
		case 'a':
			if (num("--readahead", optarg, 0, 1ull << 40, &v)) return -1;
			o->readahead = (long long)v; break;
		case 'S':
			if (num("--segments", optarg, 1, MODEL_MAX_SEGMENTS, &v)) return -1;
			o->segments = (long)v; break;
		case 'm':
			o->placed = 1;
			if (num("--meta-group", optarg, 0, 1ull << 50, &v) || (v && v % 4096))
				return bad("--meta-group (0 or a multiple of 4096)", optarg);
			o->meta_group = (long long)v; break;
		default:
			usage(stderr);
			return -2;
		}
	}
	if (o->list)
		return 0;
	if (optind != argc - 1 || !o->library == !o->disk || !o->disk != !o->disk_map) {
		usage(stderr);
		return -2;
	}
	if (o->disk && (o->placed || o->spread)) {
		/* The file system on the disk placed everything and reads its own
		 * metadata: there is nothing for these to do. */
		fprintf(stderr, PROG ": --start, --spread and --meta-group do not apply to --disk\n");
		return -2;
	}
	o->mountpoint = argv[optind];
	if (!o->congestion)
		o->congestion = o->max_background * 3 / 4 ? o->max_background * 3 / 4 : 1;
	return 0;
}

/* SIGUSR1: answer reads at once, outside the model; SIGUSR2: back to the
 * modelled drive (sched_set_timed).  A benchmark fills the page cache
 * with a probe's past this way (docs/hddsim.md, "Observing it"). */
static struct sched *timing;

static void on_timing_signal(int sig)
{
	sched_set_timed(timing, sig == SIGUSR2);
}

static int timing_signals(struct sched *s)
{
	struct sigaction sa = { .sa_handler = on_timing_signal, .sa_flags = SA_RESTART };
	sigemptyset(&sa.sa_mask);
	timing = s;
	return sigaction(SIGUSR1, &sa, NULL) || sigaction(SIGUSR2, &sa, NULL);
}

/* drives.conf next to an installed binary, or in the source directory. */
static const char *default_drive_file(void)
{
	static char path[PATH_MAX + 64];
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n < 0)
		return "drives.conf";
	exe[n] = 0;
	char *dir = dirname(exe);
	snprintf(path, sizeof path, "%s/../share/libception/drives.conf", dir);
	if (access(path, R_OK) == 0)
		return path;
	snprintf(path, sizeof path, "%s/drives.conf", dir);
	return path;
}

/* The mount's device number from mountinfo (stat() on our own mount point
 * would need the loop that is not running yet). */
static int mount_bdi(const char *mnt, char *out, size_t len)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[4096];
	int found = -1;
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f)) {
		char devno[64], point[PATH_MAX];
		if (sscanf(line, "%*s %*s %63s %*s %4095s", devno, point) == 2 && !strcmp(point, mnt)) {
			snprintf(out, len, "%s", devno);
			found = 0; /* keep going: the last match is the top mount */
		}
	}
	fclose(f);
	return found;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct drive d;
	char err[512], mnt[PATH_MAX];
	static struct hddsim h;
	FILE *trace = NULL;
	struct fuse_session *se = NULL;
	struct fuse_loop_config *lc = NULL;
	int rc = 1, mounted = 0, sched_on = 0;

	int p = parse(argc, argv, &o);
	if (p)
		return p == -2 ? 2 : 2;
	if (!o.drive_file)
		o.drive_file = default_drive_file();
	if (o.list) {
		if (drives_list(o.drive_file, err, sizeof err)) {
			fprintf(stderr, PROG ": %s\n", err);
			return 1;
		}
		return 0;
	}
	if (drives_load(o.drive_file, o.drive, &d, err, sizeof err)) {
		fprintf(stderr, PROG ": %s\n", err);
		return 1;
	}
	if (o.policy >= 0) d.policy = (enum model_policy)o.policy;
	if (o.queue_depth > 0) d.queue_depth = (unsigned)o.queue_depth;
	if (o.segments > 0) d.segments = (unsigned)o.segments;
	if (o.readahead >= 0) d.readahead = (uint64_t)o.readahead;
	if (!realpath(o.mountpoint, mnt)) {
		fprintf(stderr, PROG ": mount point \"%s\": %s\n", o.mountpoint, strerror(errno));
		return 1;
	}
	uint64_t start = (uint64_t)(o.start * (double)d.capacity) & ~4095ull;
	h.disk.fd = -1;
	if (o.disk ? disk_open(&h.disk, o.disk, o.disk_map, err, sizeof err) ||
		     layout_build_disk(&h.layout, h.disk.map.bytes, err, sizeof err)
		   : layout_build(&h.layout, o.library, start, o.spread ? d.capacity : 0, err, sizeof err)) {
		fprintf(stderr, PROG ": %s\n", err);
		disk_close(&h.disk);
		return 1;
	}
	if (h.layout.end > d.capacity) {
		fprintf(stderr, PROG ": %s \"%s\": needs %.1f GB from %.1f GB on, drive \"%s\" holds %.1f GB\n",
			o.disk ? "disk map" : "library", o.disk ? o.disk_map : o.library,
			(double)(h.layout.end - start) / 1e9, (double)start / 1e9, d.name,
			(double)d.capacity / 1e9);
		goto out;
	}
	h.stats_node = layout_add_stats(&h.layout);
	/* On a disk the file system above reads its own metadata. */
	h.meta_group = o.disk ? 0 : (uint64_t)o.meta_group;
	layout_assign_metadata(&h.layout, h.meta_group);
	h.max_read = (unsigned)o.max_request;
	h.max_background = (unsigned)o.max_background;
	h.congestion_threshold = (unsigned)o.congestion;
	if (o.trace && !(trace = fopen(o.trace, "w"))) {
		fprintf(stderr, PROG ": trace \"%s\": %s\n", o.trace, strerror(errno));
		goto out;
	}
	if (sched_start(&h.sched, &d, trace, o.realtime, err, sizeof err)) {
		fprintf(stderr, PROG ": %s\n", err);
		goto out;
	}
	sched_on = 1;

	char mopts[256];
	snprintf(mopts, sizeof mopts, "ro,default_permissions,fsname=hddsim,subtype=hddsim,max_read=%lu%s",
		 o.max_request, o.allow_other ? ",allow_other" : "");
	char *fargv[] = { argv[0], "-o", mopts, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
	se = fuse_session_new(&args, &hddsim_ops, sizeof hddsim_ops, &h);
	if (!se) {
		fprintf(stderr, PROG ": cannot create the FUSE session\n");
		goto out;
	}
	if (fuse_set_signal_handlers(se) || timing_signals(&h.sched)) {
		fprintf(stderr, PROG ": cannot install signal handlers\n");
		goto out;
	}
	if (fuse_session_mount(se, mnt)) {
		fprintf(stderr, PROG ": cannot mount on \"%s\"\n", mnt);
		goto out;
	}
	mounted = 1;
	char bdi[64] = "?";
	mount_bdi(mnt, bdi, sizeof bdi);
	if (o.disk)
		printf(PROG ": mounted %s drive %s disk %s map %s extents %zu bytes %llu platter 0.0000..%.4f bdi %s\n",
		       mnt, d.name, o.disk, o.disk_map, h.disk.map.count,
		       (unsigned long long)h.disk.map.bytes, (double)h.layout.end / (double)d.capacity, bdi);
	else
		printf(PROG ": mounted %s drive %s library %s files %zu bytes %llu platter %.4f..%.4f bdi %s\n",
		       mnt, d.name, o.library, h.layout.count, (unsigned long long)(h.layout.end - start),
		       (double)start / (double)d.capacity, (double)h.layout.end / (double)d.capacity, bdi);
	fflush(stdout);

	lc = fuse_loop_cfg_create();
	fuse_loop_cfg_set_max_threads(lc, (unsigned)o.threads);
	fuse_loop_cfg_set_idle_threads(lc, (unsigned)o.threads);
	rc = fuse_session_loop_mt(se, lc) < 0 ? 1 : 0;
out:
	if (se) {
		if (mounted)
			fuse_session_unmount(se);
		fuse_remove_signal_handlers(se);
		fuse_session_destroy(se);
	}
	if (lc)
		fuse_loop_cfg_destroy(lc);
	if (sched_on)
		sched_stop(&h.sched);
	if (trace)
		fclose(trace);
	layout_free(&h.layout);
	disk_close(&h.disk);
	if (mounted)
		fprintf(stderr, PROG ": unmounted %s\n", mnt);
	return rc;
}
