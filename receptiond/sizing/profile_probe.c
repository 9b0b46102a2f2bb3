/*
 * profile_probe.c - receptiond-profile's three measurements: the
 * sequential rate by position, the switch cost, and serialized against
 * concurrent reads.
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

double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* xorshift64*: reproducible positions from --seed, and thread-safe with a
 * state per caller. */
uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

/* ---- sequential rate by position ---- */

/* Read sequentially from pos for up to max_s seconds or max_bytes; the first
 * request pays the positioning and is not counted. */
int seq_probe(double position, double max_s, uint64_t max_bytes, char *buf,
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
int switch_probe(unsigned max_reads, double max_s, uint64_t *seed, char *buf,
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
double par_round(unsigned threads, size_t chunk, uint64_t *seed)
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
