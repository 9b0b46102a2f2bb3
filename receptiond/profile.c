/*
 * profile.c - receptiond-profile: measure the storage device under a path
 * the way competitive prefetching needs it (EuroSys 2007, section 2):
 *
 *   - the sequential transfer rate at several positions (zones),
 *   - the switch cost: the time of a small read after a jump to a distant,
 *     random position (seek plus rotation, as the device really delivers),
 *   - whether several reads in flight at once beat one at a time, and with
 *     how many (flash and host-cached virtual disks: yes; a disk arm: no).
 *
 * The files under PATH (regular files, directory order, or physical order
 * where FIEMAP tells it) are treated as one logical space; a "position" is
 * a fraction of that space.  Every read is cold: O_DIRECT where the file
 * system takes it, else a buffered read right after POSIX_FADV_DONTNEED of
 * its range with readahead off (FADV_RANDOM).  The result is one JSON
 * object on stdout; `libception profile` stores it per device.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include "sizing.h"   /* SZ_MECHANICAL_SWITCH_S */

#define PROG "receptiond-profile"
#define ALIGN 4096u
#define MAX_FILES 200000
#define SEQ_REQ (1u << 20)        /* sequential probe request size */
#define SMALL_READ 4096u          /* switch-cost probe read */
#define STREAMS 8                 /* concurrent-read probe: streams */
#define STREAM_REQS 4             /* requests per stream */

struct pfile {
	char *path;
	uint64_t size;
	uint64_t start;     /* offset of this file in the logical space */
	uint64_t phys;      /* first physical byte (FIEMAP), for ordering */
	int fd;             /* opened lazily */
};

struct cfg {
	const char *path;
	double budget_s;
	unsigned seed;
	unsigned positions;
	unsigned max_threads;
	int no_direct;
};

static struct pfile *files;
static size_t nfiles;
static uint64_t total_bytes;
static int use_direct = 1;
static int fiemap_ok;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* xorshift64*: reproducible positions from --seed, and thread-safe with a
 * state per caller. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

static uint64_t first_physical(int fd)
{
	struct {
		struct fiemap fm;
		struct fiemap_extent ext[1];
	} q;
	memset(&q, 0, sizeof q);
	q.fm.fm_length = ~0ull;
	q.fm.fm_extent_count = 1;
	if (ioctl(fd, FS_IOC_FIEMAP, &q.fm) < 0 || q.fm.fm_mapped_extents < 1)
		return UINT64_MAX;
	return q.ext[0].fe_physical;
}

static int add_file(const char *path, const struct stat *st)
{
	if (nfiles >= MAX_FILES || st->st_size < (off_t)ALIGN)
		return 0;
	if (!files) {
		files = calloc(MAX_FILES, sizeof *files);
		if (!files)
			return -1;
	}
	struct pfile *f = &files[nfiles];
	f->path = strdup(path);
	if (!f->path)
		return -1;
	f->size = (uint64_t)st->st_size & ~(uint64_t)(ALIGN - 1);
	f->fd = -1;
	f->phys = UINT64_MAX;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		f->phys = first_physical(fd);
		close(fd);
	}
	nfiles++;
	return 0;
}

/* Directory order (readdir, not sorted: a FUSE disk emulator lays files out
 * in the order it lists them). */
static int walk(const char *path, dev_t dev, int depth)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return 0;
	if (st.st_dev != dev)
		return 0;   /* another device: not what we are measuring */
	if (S_ISREG(st.st_mode))
		return add_file(path, &st);
	if (!S_ISDIR(st.st_mode) || depth > 16)
		return 0;
	DIR *d = opendir(path);
	if (!d)
		return 0;
	struct dirent *e;
	int rc = 0;
	char sub[4096];
	while (rc == 0 && nfiles < MAX_FILES && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) >= (int)sizeof sub)
			continue;
		rc = walk(sub, dev, depth + 1);
	}
	closedir(d);
	return rc;
}

static int by_phys(const void *a, const void *b)
{
	const struct pfile *x = a, *y = b;
	return x->phys < y->phys ? -1 : x->phys > y->phys;
}

static void layout(void)
{
	fiemap_ok = 1;
	for (size_t i = 0; i < nfiles; i++)
		if (files[i].phys == UINT64_MAX)
			fiemap_ok = 0;
	if (fiemap_ok)
		qsort(files, nfiles, sizeof *files, by_phys);
	total_bytes = 0;
	for (size_t i = 0; i < nfiles; i++) {
		files[i].start = total_bytes;
		total_bytes += files[i].size;
	}
}

/* The file holding logical byte pos (binary search). */
static struct pfile *locate(uint64_t pos, uint64_t *off)
{
	size_t lo = 0, hi = nfiles;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (files[mid].start <= pos)
			lo = mid;
		else
			hi = mid;
	}
	*off = (pos - files[lo].start) & ~(uint64_t)(ALIGN - 1);
	return &files[lo];
}

static int file_fd(struct pfile *f)
{
	if (f->fd >= 0)
		return f->fd;
	if (use_direct) {
		f->fd = open(f->path, O_RDONLY | O_CLOEXEC | O_DIRECT);
		if (f->fd >= 0)
			return f->fd;
		if (errno != EINVAL)
			return -1;
		use_direct = 0;   /* the file system refuses O_DIRECT: drop-behind instead */
	}
	f->fd = open(f->path, O_RDONLY | O_CLOEXEC);
	if (f->fd >= 0)
		posix_fadvise(f->fd, 0, 0, POSIX_FADV_RANDOM);
	return f->fd;
}

/* One cold read of len bytes at logical pos, clipped at the file's end.
 * Returns bytes read, or -1. */
static ssize_t cold_read(uint64_t pos, size_t len, char *buf)
{
	uint64_t off;
	struct pfile *f = locate(pos, &off);
	if (off + len > f->size)
		len = (size_t)(f->size - off);
	if (len == 0)
		return 0;
	int fd = file_fd(f);
	if (fd < 0)
		return -1;
	if (!use_direct)
		posix_fadvise(fd, (off_t)off, (off_t)len, POSIX_FADV_DONTNEED);
	size_t done = 0;
	while (done < len) {
		ssize_t n = pread(fd, buf + done, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return done ? (ssize_t)done : -1;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static void *aligned_buf(size_t len)
{
	void *p = NULL;
	if (posix_memalign(&p, ALIGN, len))
		return NULL;
	memset(p, 0, len);
	return p;
}

/* ---- sequential rate by position ---- */

struct seq_result {
	double position, rate, seconds;
	uint64_t bytes;
};

/* Read sequentially from pos for up to max_s seconds or max_bytes; the first
 * request pays the positioning and is not counted. */
static int seq_probe(double position, double max_s, uint64_t max_bytes, char *buf,
                     struct seq_result *r)
{
	uint64_t pos = (uint64_t)(position * (double)(total_bytes - ALIGN));
	pos &= ~(uint64_t)(ALIGN - 1);
	memset(r, 0, sizeof *r);
	r->position = position;
	/* Within one file: consecutive files need not be adjacent on the
	 * device (a spread-out library, a fragmented file system). */
	uint64_t off;
	struct pfile *f = locate(pos, &off);
	uint64_t limit = f->start + f->size;
	/* Leave room for some requests after the first one. */
	uint64_t room = 8ull * SEQ_REQ;
	if (limit - pos < room)
		pos = (limit - f->start > room ? limit - room : f->start) & ~(uint64_t)(ALIGN - 1);
	ssize_t n = cold_read(pos, SEQ_REQ, buf);
	if (n <= 0)
		return -1;
	pos += (uint64_t)n;
	double t0 = now_s(), t = t0;
	while (r->bytes < max_bytes && t - t0 < max_s && pos < limit) {
		n = cold_read(pos, SEQ_REQ, buf);
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		pos += (uint64_t)n;
		r->bytes += (uint64_t)n;
		t = now_s();
	}
	r->seconds = t - t0;
	r->rate = r->seconds > 0 ? (double)r->bytes / r->seconds : 0;
	return r->bytes ? 0 : -1;
}

/* ---- switch cost ---- */

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Small reads at independent random positions: each one pays a full
 * switch (seek + rotation) and a negligible transfer. */
static int switch_probe(unsigned max_reads, double max_s, uint64_t *seed, char *buf,
                        double *mean, double *median, unsigned *count)
{
	double *t = calloc(max_reads, sizeof *t);
	if (!t)
		return -1;
	unsigned n = 0;
	double start = now_s();
	while (n < max_reads && now_s() - start < max_s) {
		uint64_t pos = rnd(seed) % (total_bytes - SMALL_READ);
		double a = now_s();
		if (cold_read(pos, SMALL_READ, buf) < 0) {
			free(t);
			return -1;
		}
		t[n++] = now_s() - a;
	}
	double sum = 0;
	for (unsigned i = 0; i < n; i++)
		sum += t[i];
	qsort(t, n, sizeof *t, cmp_dbl);
	*count = n;
	*mean = n ? sum / n : 0;
	*median = n ? t[n / 2] : 0;
	free(t);
	return n ? 0 : -1;
}

/* ---- serialized vs concurrent reads ---- */

struct par_job {
	uint64_t pos[STREAMS];     /* next position of each stream */
	size_t chunk;
	unsigned next;             /* next request number, shared */
	unsigned total;
	int failed;
	pthread_mutex_t lock;
};

static void *par_worker(void *arg)
{
	struct par_job *j = arg;
	char *buf = aligned_buf(j->chunk);
	if (!buf) {
		j->failed = 1;
		return NULL;
	}
	for (;;) {
		pthread_mutex_lock(&j->lock);
		if (j->next >= j->total) {
			pthread_mutex_unlock(&j->lock);
			break;
		}
		/* Round robin over the streams, as a serializing daemon would see
		 * them: request k goes to stream k % STREAMS. */
		unsigned s = j->next++ % STREAMS;
		uint64_t pos = j->pos[s];
		j->pos[s] += j->chunk;
		pthread_mutex_unlock(&j->lock);
		if (cold_read(pos, j->chunk, buf) < 0)
			j->failed = 1;
	}
	free(buf);
	return NULL;
}

/* One round: STREAMS fresh sequential streams, STREAM_REQS chunk-sized
 * requests each, `threads` requests in flight at once.  Seconds, or -1. */
static double par_round(unsigned threads, size_t chunk, uint64_t *seed)
{
	struct par_job j;
	memset(&j, 0, sizeof j);
	pthread_mutex_init(&j.lock, NULL);
	j.chunk = chunk;
	j.total = STREAMS * STREAM_REQS;
	uint64_t span = (uint64_t)chunk * STREAM_REQS;
	for (unsigned s = 0; s < STREAMS; s++)
		j.pos[s] = (rnd(seed) % (total_bytes - span)) & ~(uint64_t)(ALIGN - 1);
	pthread_t tid[64];
	unsigned started = 0;
	double a = now_s();
	for (unsigned i = 0; i < threads && i < 64; i++)
		if (pthread_create(&tid[i], NULL, par_worker, &j) == 0)
			started++;
	for (unsigned i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	double secs = now_s() - a;
	pthread_mutex_destroy(&j.lock);
	if (j.failed || started == 0 || secs <= 0)
		return -1;
	return secs;
}

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: " PROG " [--budget SEC] [--seed N] [--positions N] [--max-threads N]\n"
	        "       [--no-direct] [--version] PATH\n"
	        "Measures the device under PATH (a file or a directory of large files) and\n"
	        "prints its profile as JSON.\n");
}

static int parse_args(int argc, char **argv, struct cfg *c)
{
	static const struct option opts[] = {
		{"budget", required_argument, NULL, 'b'},
		{"seed", required_argument, NULL, 's'},
		{"positions", required_argument, NULL, 'p'},
		{"max-threads", required_argument, NULL, 't'},
		{"no-direct", no_argument, NULL, 'D'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	c->budget_s = 120;
	c->seed = 1;
	c->positions = 5;
	c->max_threads = 8;
	int o;
	char *end;
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (o) {
		case 'b':
			c->budget_s = strtod(optarg, &end);
			if (*end || c->budget_s < 1 || c->budget_s > 3600) {
				fprintf(stderr, PROG ": --budget \"%s\": expected seconds, 1 to 3600\n", optarg);
				return 2;
			}
			break;
		case 's':
			c->seed = (unsigned)strtoul(optarg, &end, 10);
			if (*end) {
				fprintf(stderr, PROG ": --seed \"%s\": expected a number\n", optarg);
				return 2;
			}
			break;
		case 'p':
			c->positions = (unsigned)strtoul(optarg, &end, 10);
			if (*end || c->positions < 2 || c->positions > 32) {
				fprintf(stderr, PROG ": --positions \"%s\": expected 2 to 32\n", optarg);
				return 2;
			}
			break;
		case 't':
			c->max_threads = (unsigned)strtoul(optarg, &end, 10);
			if (*end || c->max_threads < 1 || c->max_threads > 64) {
				fprintf(stderr, PROG ": --max-threads \"%s\": expected 1 to 64\n", optarg);
				return 2;
			}
			break;
		case 'D':
			c->no_direct = 1;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf(PROG " %s\n", LC_VERSION);
			exit(0);
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	c->path = argv[optind];
	return 0;
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

int main(int argc, char **argv)
{
	struct cfg c;
	memset(&c, 0, sizeof c);
	int rc = parse_args(argc, argv, &c);
	if (rc)
		return rc;
	use_direct = !c.no_direct;
	double t_start = now_s();
	char *buf = NULL;
	struct seq_result *seq = NULL;

	struct stat st;
	if (stat(c.path, &st) < 0) {
		fprintf(stderr, PROG ": \"%s\": %s\n", c.path, strerror(errno));
		return 1;
	}
	if (walk(c.path, st.st_dev, 0) < 0) {
		fprintf(stderr, PROG ": \"%s\": out of memory\n", c.path);
		return 1;
	}
	layout();
	/* Below this there is no "distant" position to switch to. */
	const uint64_t min_total = 64ull << 20;
	if (total_bytes < min_total) {
		fprintf(stderr, PROG ": \"%s\": only %llu MiB of regular files on its device; "
		        "need at least %llu MiB\n", c.path,
		        (unsigned long long)(total_bytes >> 20), (unsigned long long)(min_total >> 20));
		return 1;
	}
	rc = 1;
	buf = aligned_buf(4u << 20);
	seq = calloc(c.positions, sizeof *seq);
	if (!buf || !seq) {
		fprintf(stderr, PROG ": out of memory\n");
		goto out;
	}
	uint64_t seed = c.seed * 0x9e3779b97f4a7c15ull + 1;

	/* Budget: 40% sequential, 25% switching, the rest concurrency. */
	double seq_each = c.budget_s * 0.4 / c.positions;
	if (seq_each > 3)
		seq_each = 3;
	double rate_sum = 0;
	for (unsigned i = 0; i < c.positions; i++) {
		double pos = 0.01 + 0.98 * i / (c.positions - 1);
		if (seq_probe(pos, seq_each, 256ull << 20, buf, &seq[i]) < 0) {
			fprintf(stderr, PROG ": \"%s\": sequential read at %.2f failed: %s\n", c.path, pos,
			        strerror(errno));
			goto out;
		}
		rate_sum += seq[i].rate;
	}
	double rate = rate_sum / c.positions;

	double sw_mean, sw_median;
	unsigned sw_count;
	double sw_budget = c.budget_s * 0.25;
	if (sw_budget > 10)
		sw_budget = 10;
	if (switch_probe(200, sw_budget, &seed, buf, &sw_mean, &sw_median, &sw_count) < 0) {
		fprintf(stderr, PROG ": \"%s\": random reads failed: %s\n", c.path, strerror(errno));
		goto out;
	}
	/* The switch cost excludes the 4 KiB transfer itself. */
	double sw = sw_mean - SMALL_READ / rate;
	if (sw < 0)
		sw = 0;
	double comp = sw * rate;

	/* The concurrency probe reads in chunks of the competitive size
	 * as the daemon would, but at least 1 MiB (the daemon's windows are
	 * rarely smaller) and at most 4 MiB. */
	size_t chunk = (size_t)comp;
	if (chunk < (1u << 20))
		chunk = 1u << 20;
	if (chunk > (4u << 20))
		chunk = 4u << 20;
	chunk = (chunk + ALIGN - 1) & ~(size_t)(ALIGN - 1);
	/* Thread counts 1, 2, 4 ... max_threads, one round each in turn (so a
	 * drift in the machine's load hits all of them alike), until each has
	 * been timed for par_min_s: about a third of the budget in all. */
	unsigned par_threads[8], npar = 0;
	for (unsigned k = 1; k <= c.max_threads && npar < 8; k *= 2)
		par_threads[npar++] = k;
	double par_min_s = c.budget_s * 0.3 / npar;
	if (par_min_s > 3)
		par_min_s = 3;
	double par_secs[8] = {0}, par_bytes[8] = {0}, par_rate[8] = {0};
	for (;;) {
		int more = 0;
		for (unsigned i = 0; i < npar; i++) {
			if (par_secs[i] >= par_min_s)
				continue;
			double t = par_round(par_threads[i], chunk, &seed);
			if (t < 0) {
				fprintf(stderr, PROG ": \"%s\": concurrent reads with %u threads failed\n",
				        c.path, par_threads[i]);
				goto out;
			}
			par_secs[i] += t;
			par_bytes[i] += (double)STREAMS * STREAM_REQS * (double)chunk;
			more = 1;
		}
		if (!more)
			break;
	}
	for (unsigned i = 0; i < npar; i++)
		par_rate[i] = par_bytes[i] / par_secs[i];
	/*
	 * How many reads the daemon may run at once on this device.
	 * - With a mechanical switch cost (1 ms or more), one: the paper's
	 *   serialization.  A drive's command queue (NCQ/TCQ, SPTF in hddsim)
	 *   does read several outstanding requests faster (1.2-1.6x here), but
	 *   it orders them by position, where the daemon's queue orders them
	 *   by arrival, that is by the streams' deadlines.  Measured with
	 *   nginx on the HD library: on the HP 10K preset the competitive size
	 *   with the profile's 8 reads at once reached 0.86x the best fixed
	 *   size, one at a time 0.97x; on the WD Red (SD library) both 1.00x.
	 * - Otherwise (flash, a host-cached virtual disk: serializing cannot
	 *   save a seek, only lose parallelism) parallel reads: the smallest
	 *   count within 5% of the best if the best beats one at a time by
	 *   more than the noise of this probe (15%), else the largest count
	 *   within 5% of the best.
	 */
	double best = 0;
	for (unsigned i = 0; i < npar; i++)
		if (par_rate[i] > best)
			best = par_rate[i];
	unsigned concurrency = 1;
	const char *why = "mechanical switch cost: serialize";
	if (sw < SZ_MECHANICAL_SWITCH_S) {
		int faster = best > 1.15 * par_rate[0];
		why = faster ? "no mechanical switch cost, concurrent reads are faster"
		             : "no mechanical switch cost: serializing cannot gain";
		for (unsigned i = 0; i < npar; i++)
			if (par_rate[i] >= 0.95 * best) {
				concurrency = par_threads[i];
				if (faster)
					break;
			}
	}

	printf("{\"version\": 1, \"path\": ");
	json_str(c.path);
	printf(", \"method\": \"%s\", \"layout\": \"%s\", \"files\": %zu, \"bytes\": %llu,\n",
	       use_direct ? "o_direct" : "drop-behind", fiemap_ok ? "physical" : "directory-order",
	       nfiles, (unsigned long long)total_bytes);
	printf(" \"sequential\": [");
	for (unsigned i = 0; i < c.positions; i++)
		printf("%s{\"position\": %.3f, \"bytes\": %llu, \"seconds\": %.6f, \"rate\": %.0f}",
		       i ? ", " : "", seq[i].position, (unsigned long long)seq[i].bytes, seq[i].seconds,
		       seq[i].rate);
	printf("],\n \"rate\": %.0f,\n", rate);
	printf(" \"switch\": {\"reads\": %u, \"read_bytes\": %u, \"mean_s\": %.6f, \"median_s\": %.6f},\n",
	       sw_count, SMALL_READ, sw_mean, sw_median);
	printf(" \"switch_s\": %.6f,\n \"competitive_size\": %.0f,\n", sw, comp);
	printf(" \"parallel\": {\"streams\": %u, \"requests\": %u, \"chunk\": %zu, \"results\": [",
	       STREAMS, STREAMS * STREAM_REQS, chunk);
	for (unsigned i = 0; i < npar; i++)
		printf("%s{\"threads\": %u, \"rate\": %.0f, \"ratio\": %.3f}", i ? ", " : "",
		       par_threads[i], par_rate[i], par_rate[i] / par_rate[0]);
	printf("]},\n \"concurrency\": %u,\n \"concurrency_reason\": ", concurrency);
	json_str(why);
	printf(",\n \"elapsed_s\": %.3f}\n", now_s() - t_start);
	rc = 0;
out:
	for (size_t i = 0; i < nfiles; i++)
		if (files[i].fd >= 0)
			close(files[i].fd);
	free(seq);
	free(buf);
	return rc;
}
