/* sched.c - the actuator thread and its request queue; see sched.h. */
#include "sched.h"

#include <errno.h>
#include <sched.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#define PLUG_NS 50000

int64_t sched_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_until(int64_t t)
{
	struct timespec ts = { .tv_sec = t / 1000000000, .tv_nsec = t % 1000000000 };
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* Drive commands by size, a split command's pieces joined (model.h). */
static void cmd_sizes_add(struct cmd_sizes *c, uint64_t len)
{
	if (!len)
		return;
	c->n++;
	c->le_4k += len <= 4096;
	c->under_128k += len < (128u << 10);
	c->under_1m += len < (1u << 20);
	c->over_1m += len > (1u << 20);
}

static void *actuator(void *arg)
{
	struct sched *s = arg;
	struct model_req *cand = NULL;
	size_t capc = 0;

	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	pthread_mutex_lock(&s->lock);
	while (!s->stop) {
		if (s->nq == 0) {
			pthread_cond_wait(&s->submitted, &s->lock);
			continue;
		}
		int64_t t = s->model_t > s->q[0]->r.arrival ? s->model_t : s->q[0]->r.arrival;
		/* Requests the kernel sent together reach us through different
		 * FUSE threads in any order.  Like the block layer's plug, an
		 * idle drive waits a moment so it can pick among them; it still
		 * starts at the first arrival on the model's timeline. */
		if (t == s->q[0]->r.arrival && sched_now() < t + PLUG_NS) {
			pthread_mutex_unlock(&s->lock);
			sleep_until(t + PLUG_NS);
			pthread_mutex_lock(&s->lock);
		}
		if (capc < s->nq) {
			capc = s->capq;
			free(cand);
			cand = malloc(capc * sizeof *cand);
			if (!cand)
				abort();
		}
		for (size_t i = 0; i < s->nq; i++) {
			cand[i] = s->q[i]->r;
			if (cand[i].arrival > t && cand[i].arrival <= t + PLUG_NS)
				cand[i].arrival = t;
		}
		size_t k = model_pick(&s->m, t, cand, s->nq);
		struct sched_req *req = s->q[k];
		memmove(&s->q[k], &s->q[k + 1], (s->nq - k - 1) * sizeof *s->q);
		s->nq--;
		/* The next piece of the command just served starts where it
		 * ended, even if it reached us a moment later (model.h). */
		t = model_start(&s->m, t, &req->r);
		req->taken = 1;
		req->start = t;
		req->cost = model_serve(&s->m, t, &req->r);
		if (req->cost.hit == 3) {
			s->cmd_len += req->r.len;
		} else {
			cmd_sizes_add(&s->cmds, s->cmd_len);
			s->cmd_len = req->r.len;
		}
		req->done_at = t + req->cost.total;
		s->model_t = req->done_at;
		/* The caller sleeps until done_at itself (one wake-up, not two);
		 * the actuator waits for the same instant before it picks the
		 * next command, so SPTF sees what has arrived by then. */
		int64_t until = req->done_at;
		pthread_cond_signal(&req->cv);
		pthread_mutex_unlock(&s->lock);
		sleep_until(until);
		pthread_mutex_lock(&s->lock);
	}
	pthread_mutex_unlock(&s->lock);
	free(cand);
	return NULL;
}

static void set_realtime(int on)
{
	struct sched_param sp = { .sched_priority = on ? 1 : 0 };
	pthread_setschedparam(pthread_self(), on ? SCHED_FIFO : SCHED_OTHER, &sp);
}

static void snapshot(struct sched *s, int64_t now)
{
	if (now - s->cur.t < 1000000000)
		return;
	s->prev = s->cur;
	if (s->trace)
		fflush(s->trace);
	s->cur = (struct sched_snap){ now, s->reads, s->bytes, s->busy, s->service };
}

void sched_read(struct sched *s, uint64_t pos, uint64_t len, int meta, int pid)
{
	struct sched_req req;
	sched_submit(s, &req, pos, len, meta, pid);
	sched_wait(s, &req);
}

void sched_submit(struct sched *s, struct sched_req *rq, uint64_t pos, uint64_t len, int meta,
		  int pid)
{
	static __thread int slack_set;
	if (!slack_set) {
		/* Wake at the deadline, not up to 50 us after it. */
		prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
		slack_set = 1;
	}
	memset(rq, 0, sizeof *rq);
	rq->r.pos = pos;
	rq->r.len = len;
	rq->meta = meta;
	rq->pid = pid;
	pthread_cond_init(&rq->cv, NULL);
	rq->untimed = atomic_load_explicit(&s->untimed, memory_order_relaxed);
	if (rq->untimed)
		return;
	pthread_mutex_lock(&s->lock);
	rq->r.arrival = sched_now();
	if (s->nq == s->capq) {
		size_t nc = s->capq ? s->capq * 2 : 64;
		struct sched_req **nq = realloc(s->q, nc * sizeof *nq);
		if (!nq)
			abort();
		s->q = nq;
		s->capq = nc;
	}
	s->q[s->nq++] = rq;
	pthread_cond_signal(&s->submitted);
	pthread_mutex_unlock(&s->lock);
}

void sched_wait(struct sched *s, struct sched_req *rq)
{
	uint64_t pos = rq->r.pos, len = rq->r.len;
	int meta = rq->meta;
	pthread_mutex_lock(&s->lock);
	if (rq->untimed) {
		s->untimed_reads++;
		s->untimed_bytes += len;
		pthread_mutex_unlock(&s->lock);
		pthread_cond_destroy(&rq->cv);
		return;
	}
	/* Once the actuator has scheduled the request it is ours to finish,
	 * even when stopping: only an unscheduled one may be abandoned. */
	while (!rq->taken && !s->stop)
		pthread_cond_wait(&rq->cv, &s->lock);
	int64_t now = 0;
	if (rq->taken) {
		pthread_mutex_unlock(&s->lock);
		/* Real-time only while sleeping: wake on time, then give way. */
		if (s->realtime)
			set_realtime(1);
		sleep_until(rq->done_at);
		now = sched_now();
		if (s->realtime)
			set_realtime(0);
		pthread_mutex_lock(&s->lock);
		rq->done = 1;
	}
	/* A joining piece may be due before it arrived (model_start). */
	int64_t late = now - (rq->done_at > rq->r.arrival ? rq->done_at : rq->r.arrival);
	/* A request taken within the plug may start before it arrived. */
	int64_t wait = rq->start > rq->r.arrival ? rq->start - rq->r.arrival : 0;
	if (rq->done) {
		const struct model_cost *c = &rq->cost;
		s->reads++;
		s->bytes += len;
		s->hits += c->hit == 1;
		s->continued += c->hit >= 2;
		s->merged += c->hit == 3;
		s->meta_reads += meta != 0;
		s->reads_4k += len <= 4096;
		s->reads_under_128k += len < (128u << 10);
		s->busy += (uint64_t)c->total;
		s->overhead += (uint64_t)c->overhead;
		s->position += (uint64_t)(c->seek + c->rot);
		s->transfer += (uint64_t)c->xfer;
		s->media += (uint64_t)c->media;
		s->service += (uint64_t)(rq->done_at - rq->start + wait);
		s->wait += (uint64_t)wait;
		s->seek_total += c->seek_dist;
		hist_add(&s->lateness, (uint64_t)(late > 0 ? late : 0));
		hist_add(&s->service_hist, (uint64_t)(rq->done_at - rq->start + wait));
		snapshot(s, now);
		if (s->trace)
			fprintf(s->trace, "%.6f %" PRIu64 " %" PRIu64 " %" PRIu64 " %.3f %.3f %.3f %.3f %s %d\n",
				(double)(rq->start - s->t0) / 1e9, pos, len, c->seek_dist,
				(double)wait / 1e3,
				(double)(c->overhead + c->seek + c->rot) / 1e3, (double)c->xfer / 1e3,
				(double)late / 1e3,
				meta ? "meta" : c->hit == 1 ? "hit" : c->hit == 2 ? "cont" : c->hit == 3 ? "merge" : "miss",
				rq->pid);
	} else {
		/* Shutting down: leave the queue consistent. */
		for (size_t i = 0; i < s->nq; i++)
			if (s->q[i] == rq) {
				memmove(&s->q[i], &s->q[i + 1], (s->nq - i - 1) * sizeof *s->q);
				s->nq--;
				break;
			}
	}
	pthread_mutex_unlock(&s->lock);
	pthread_cond_destroy(&rq->cv);
}

int sched_start(struct sched *s, const struct drive *d, FILE *trace, int realtime,
		char *err, size_t errlen)
{
	memset(s, 0, sizeof *s);
	if (model_init(&s->m, d, err, errlen))
		return -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->submitted, NULL);
	hist_init(&s->lateness);
	hist_init(&s->service_hist);
	s->trace = trace;
	s->realtime = realtime;
	s->t0 = s->model_t = sched_now();
	s->cur.t = s->prev.t = s->t0;
	if (trace)
		fprintf(trace, "# time_s pos len seek_dist wait_us position_us transfer_us lateness_us kind pid\n");
	if (pthread_create(&s->thread, NULL, actuator, s)) {
		snprintf(err, errlen, "cannot start the actuator thread");
		return -1;
	}
	if (realtime) {
		struct sched_param sp = { .sched_priority = 1 };
		if (pthread_setschedparam(s->thread, SCHED_FIFO, &sp))
			s->realtime = 0;
	}
	return 0;
}

void sched_stop(struct sched *s)
{
	pthread_mutex_lock(&s->lock);
	s->stop = 1;
	pthread_cond_broadcast(&s->submitted);
	for (size_t i = 0; i < s->nq; i++)
		pthread_cond_signal(&s->q[i]->cv);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->thread, NULL);
	if (s->trace)
		fflush(s->trace);
	/* s->q stays: abandoned callers may still be unlinking themselves. */
}

void sched_set_timed(struct sched *s, int timed)
{
	atomic_store_explicit(&s->untimed, !timed, memory_order_relaxed);
}

size_t sched_stats(struct sched *s, char *buf, size_t len)
{
	pthread_mutex_lock(&s->lock);
	int64_t now = sched_now();
	snapshot(s, now);
	double up = (double)(now - s->t0) / 1e9;
	double win = (double)(s->cur.t - s->prev.t) / 1e9;
	uint64_t dr = s->cur.reads - s->prev.reads;
	struct cmd_sizes cmds = s->cmds;
	cmd_sizes_add(&cmds, s->cmd_len); /* the one in progress */
	int n = snprintf(buf, len,
		"drive %s\n"
		"uptime_s %.3f\n"
		"reads %" PRIu64 "\n"
		"bytes %" PRIu64 "\n"
		"cache_hits %" PRIu64 "\n"
		"continued %" PRIu64 "\n"
		"merged %" PRIu64 "\n"
		"meta_reads %" PRIu64 "\n"
		"reads_4k %" PRIu64 "\n"
		"reads_under_128k %" PRIu64 "\n"
		"queued %zu\n"
		"busy_s %.6f\n"
		"utilisation %.4f\n"
		"avg_service_ms %.3f\n"
		"avg_wait_ms %.3f\n"
		"window_s %.3f\n"
		"window_reads_per_s %.1f\n"
		"window_mb_per_s %.3f\n"
		"window_utilisation %.4f\n"
		"window_avg_service_ms %.3f\n"
		"lateness_p50_us %.1f\n"
		"lateness_p99_us %.1f\n"
		"lateness_max_us %.1f\n"
		"service_p99_ms %.3f\n"
		"position_s %.6f\n"
		"overhead_s %.6f\n"
		"transfer_s %.6f\n"
		"media_s %.6f\n"
		"commands %" PRIu64 "\n"
		"commands_4k %" PRIu64 "\n"
		"commands_under_128k %" PRIu64 "\n"
		"commands_under_1m %" PRIu64 "\n"
		"commands_over_1m %" PRIu64 "\n"
		"timed %d\n"
		"untimed_reads %" PRIu64 "\n"
		"untimed_bytes %" PRIu64 "\n",
		s->m.d.name, up, s->reads, s->bytes, s->hits, s->continued, s->merged, s->meta_reads,
		s->reads_4k, s->reads_under_128k, s->nq,
		(double)s->busy / 1e9,
		up > 0 ? (double)s->busy / 1e9 / up : 0,
		s->reads ? (double)s->service / 1e6 / (double)s->reads : 0,
		s->reads ? (double)s->wait / 1e6 / (double)s->reads : 0,
		win,
		win > 0 ? (double)dr / win : 0,
		win > 0 ? (double)(s->cur.bytes - s->prev.bytes) / 1e6 / win : 0,
		win > 0 ? (double)(s->cur.busy - s->prev.busy) / 1e9 / win : 0,
		dr ? (double)(s->cur.service - s->prev.service) / 1e6 / (double)dr : 0,
		(double)hist_quantile(&s->lateness, 0.5) / 1e3,
		(double)hist_quantile(&s->lateness, 0.99) / 1e3,
		(double)(s->lateness.total ? s->lateness.max : 0) / 1e3,
		(double)hist_quantile(&s->service_hist, 0.99) / 1e6,
		(double)s->position / 1e9, (double)s->overhead / 1e9, (double)s->transfer / 1e9,
		(double)s->media / 1e9,
		cmds.n, cmds.le_4k, cmds.under_128k, cmds.under_1m, cmds.over_1m,
		!atomic_load_explicit(&s->untimed, memory_order_relaxed),
		s->untimed_reads, s->untimed_bytes);
	pthread_mutex_unlock(&s->lock);
	return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}
