/*
 * t_forkthreads - threads and fork while reading, for the fork/thread
 * safety test (tests/test_preload_threads.py): the output must be the
 * same with and without libception.so, and nothing may hang.
 *
 *   t_forkthreads FILE THREADS FORKS
 *
 * Each of THREADS threads reads FILE, half with pread at its own
 * interleaved offsets, half with read on a shared fd; the main thread
 * forks FORKS children while they run, and each child does the same with
 * its own threads.  One line per process: a checksum of all it read, in
 * an order that does not depend on scheduling.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define BS 65536

static const char *path;
static int nthreads;
static off_t size;

struct job {
	int idx;
	uint64_t sum;  /* sum of bytes * position: order-independent per byte */
};

static uint64_t mix(const unsigned char *b, ssize_t n, off_t at)
{
	uint64_t s = 0;
	for (ssize_t i = 0; i < n; i++)
		s += (uint64_t)b[i] * (uint64_t)(at + i + 1);
	return s;
}

static void *worker(void *arg)
{
	struct job *j = arg;
	unsigned char *buf = malloc(BS);
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		perror("t_forkthreads: open");
		exit(1);
	}
	if (j->idx % 2 == 0) {
		/* blocks j, j+n, j+2n, ... */
		for (off_t off = (off_t)j->idx * BS; off < size; off += (off_t)nthreads * BS) {
			ssize_t r = pread(fd, buf, BS, off);
			if (r < 0) {
				perror("t_forkthreads: pread");
				exit(1);
			}
			j->sum += mix(buf, r, off);
		}
	} else {
		off_t at = 0;
		ssize_t r;
		while ((r = read(fd, buf, BS - 1000 * (size_t)j->idx)) > 0) {
			j->sum += mix(buf, r, at);
			at += r;
		}
		if (r < 0) {
			perror("t_forkthreads: read");
			exit(1);
		}
	}
	close(fd);
	free(buf);
	return NULL;
}

static void run(const char *who, int forks)
{
	pthread_t t[64];
	struct job jobs[64];
	pid_t kids[64];
	for (int i = 0; i < nthreads; i++) {
		jobs[i] = (struct job){ .idx = i };
		pthread_create(&t[i], NULL, worker, &jobs[i]);
	}
	/* fork while the threads are mid-read */
	for (int k = 0; k < forks; k++) {
		fflush(stdout);
		kids[k] = fork();
		if (kids[k] == 0) {
			char name[32];
			snprintf(name, sizeof name, "child%d", k);
			run(name, 0);
			fflush(stdout);
			_exit(0);
		}
	}
	for (int i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	for (int k = 0; k < forks; k++) {
		int st;
		waitpid(kids[k], &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "t_forkthreads: child %d failed\n", k);
			exit(1);
		}
	}
	uint64_t pr = 0, rd = 0;
	for (int i = 0; i < nthreads; i++)
		*(i % 2 ? &rd : &pr) += jobs[i].sum;
	printf("%s pread %llu read %llu\n", who, (unsigned long long)pr, (unsigned long long)rd);
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: t_forkthreads FILE THREADS FORKS\n");
		return 2;
	}
	path = argv[1];
	nthreads = atoi(argv[2]);
	int forks = atoi(argv[3]);
	if (nthreads < 1 || nthreads > 64 || forks < 0 || forks > 64) {
		fprintf(stderr, "t_forkthreads: 1..64 threads, 0..64 forks\n");
		return 2;
	}
	struct stat st;
	if (stat(path, &st) < 0) {
		perror("t_forkthreads: stat");
		return 1;
	}
	size = st.st_size;
	setvbuf(stdout, NULL, _IOLBF, 0);
	run("parent", forks);
	return 0;
}
