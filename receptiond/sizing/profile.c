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
 *
 * This file: the arguments, the budget, the verdict and the JSON; the
 * logical space in profile_space.c, the probes in profile_probe.c.
 */
#include "profile.h"

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

struct cfg {
	const char *path;
	double budget_s;
	unsigned seed;
	unsigned positions;
	unsigned max_threads;
	int no_direct;
};

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
