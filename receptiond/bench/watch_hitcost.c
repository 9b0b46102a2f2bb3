/*
 * watch_hitcost - what watch mode adds to a read that hits the page cache.
 *
 *   watch_hitcost WATCHED PLAIN [BATCHES]
 *
 * WATCHED and PLAIN are one file (at least 1 MiB) seen through two mounts
 * of one file system, the first marked by `receptiond --watch`, the second
 * a bind mount without the mark: the same pages, only the event differs
 * (bench/watch_hitcost.sh sets this up).  Batches of 64 KiB preads and of
 * sendfiles to /dev/null alternate between the two; the report gives the
 * median over batches of the mean time per call, and the difference.
 * Not a test: the numbers depend on the machine and its load.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BS (64 * 1024)
#define PER_BATCH 200

static char buf[BS];

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Mean microseconds per call of one batch. */
static double batch(int fd, int out, off_t size, int use_sendfile)
{
	double t0 = now_us();
	for (int i = 0; i < PER_BATCH; i++) {
		off_t off = (off_t)i * BS % (size - BS + 1) / 4096 * 4096;
		ssize_t n = use_sendfile ? sendfile(out, fd, &off, BS) : pread(fd, buf, BS, off);
		if (n <= 0) {
			perror("watch_hitcost: read");
			exit(1);
		}
	}
	return (now_us() - t0) / PER_BATCH;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: watch_hitcost WATCHED PLAIN [BATCHES]\n");
		return 2;
	}
	int batches = argc > 3 ? atoi(argv[3]) : 200;
	int fd[2], out = open("/dev/null", O_WRONLY);
	struct stat st;
	for (int k = 0; k < 2; k++) {
		fd[k] = open(argv[1 + k], O_RDONLY);
		if (fd[k] < 0 || fstat(fd[k], &st) || st.st_size < (1 << 20) || batches < 1) {
			fprintf(stderr, "watch_hitcost: \"%s\": need a readable file of 1 MiB or more\n", argv[1 + k]);
			return 2;
		}
	}
	double *v = calloc((size_t)batches * 4, sizeof *v);
	batch(fd[0], out, st.st_size, 0);   /* make it resident */
	for (int b = 0; b < batches; b++)
		for (int k = 0; k < 4; k++)
			v[k * batches + b] = batch(fd[k & 1], out, st.st_size, k >> 1);
	double m[4];
	for (int k = 0; k < 4; k++)
		m[k] = median(v + k * batches, batches);
	printf("watch_hitcost: %d batches of %d calls, 64 KiB each, file cached\n", batches, PER_BATCH);
	printf("watch_hitcost: pread     plain %.3f us  watched %.3f us  extra %.3f us\n", m[1], m[0], m[0] - m[1]);
	printf("watch_hitcost: sendfile  plain %.3f us  watched %.3f us  extra %.3f us\n", m[3], m[2], m[2] - m[3]);
	return 0;
}
