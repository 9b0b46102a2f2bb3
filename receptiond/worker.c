/*
 * worker.c - the life of an ENSURE on its device: the hit check, joining
 * or queueing, the worker that reads the window, and the answers.
 *
 * A look-ahead (LC_F_LOOKAHEAD) lives the same life without answers: a
 * hit ends it, otherwise it joins or queues as a silent waiter.  It only
 * takes the first half of its connection's pending budget and of the
 * queue, so the misses a program waits for are never refused because of
 * reads nobody waits for; a look-ahead that finds no room is dropped.
 *
 * The worker asks where each queued window lies on the disk (placement.h)
 * before it picks one (order.h), and reads a window a share at a time:
 * when another user's miss is queued after a share, the rest of the
 * window goes back into the queue and waits its turn.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cfg.h"
#include "closer.h"
#include "device.h"
#include "log.h"
#include "placement.h"
#include "prefetch.h"
#include "protocol.h"
#include "quota.h"
#include "server.h"

static void reply(struct rd_conn *c, uint64_t id, int status, int was_resident,
                  uint64_t lo, uint64_t hi, uint64_t bytes_read)
{
	struct lc_ensure_reply r = {
		.h = { .magic = LC_PROTO_MAGIC, .version = LC_PROTO_VERSION,
		       .type = LC_MSG_ENSURE, .id = id },
		.status = status,
		.was_resident = (uint32_t)was_resident,
		.resident_offset = lo,
		.resident_length = hi > lo ? hi - lo : 0,
		.bytes_read = bytes_read,
	};
	rd_conn_send(c, &r, sizeof r);
}

static void request_info(const struct rd_req *r, struct rd_request_info *info)
{
	*info = (struct rd_request_info){
		.dev = r->dev, .ino = r->ino, .file_size = r->file_size,
		.offset = r->lo, .length = r->hi - r->lo, .client_size = r->client_size,
		.pid = r->pid, .uid = r->uid, .arrival_ns = r->arrival_ns, .call = r->call,
	};
}

/* A miss's share of its user's limits (quota.h): one miss and the bytes
 * its window may read, held until it is answered.  Not for watch mode's
 * listener (c->own), the daemon's own connection, which asks for every
 * reader of the watched mounts at once: its bounds are its slots
 * (RD_WATCH_SLOTS) and the device's queue.  Nor is it held to a
 * connection's share of queued misses (rd_cfg.conn_pending, 8), which
 * fits a library thread that waits for one miss at a time. */
static int take_share(const struct rd_conn *c, const struct rd_waiter *w)
{
	if (c->own)
		return 0;
	if (rd_quota_take(c->uid, RD_Q_MISSES, 1, 0))
		return -1;
	if (rd_quota_take(c->uid, RD_Q_BYTES, w->charged, 0)) {
		rd_quota_give(c->uid, RD_Q_MISSES, 1);
		return -1;
	}
	return 0;
}

static void give_share(const struct rd_conn *c, const struct rd_waiter *w)
{
	if (c->own)
		return;
	rd_quota_give(c->uid, RD_Q_MISSES, 1);
	rd_quota_give(c->uid, RD_Q_BYTES, w->charged);
}

static void observe(struct rd_device *d, const struct rd_completion *c)
{
	if (d->policy.ops->observe)
		d->policy.ops->observe(&d->policy, c);
}

void rd_device_submit(struct rd_device *d, struct rd_conn *c, const struct lc_ensure *m, int fd,
                      const struct stat *st)
{
	uint64_t now = rd_now_ns();
	uint64_t size = (uint64_t)st->st_size;
	uint64_t lo = m->offset, len = m->length;
	if (len > rd_cfg.max_window)
		len = rd_cfg.max_window;
	uint64_t hi = lo + len < lo ? UINT64_MAX : lo + len;
	if (hi > size)
		hi = size;
	if (lo > hi)
		lo = hi;
	int no_prefetch = (m->flags & LC_F_NO_PREFETCH) != 0;
	int silent = (m->flags & LC_F_LOOKAHEAD) != 0;

	/* Nothing to add on this device: no residency check, no queue.
	 * (policy.direct is set before the device is published.) */
	if (d->policy.direct) {
		pthread_mutex_lock(&d->lock);
		d->st.requests++;
		d->st.direct++;
		pthread_mutex_unlock(&d->lock);
		if (!silent)
			reply(c, m->h.id, LC_ST_DIRECT, 0, 0, 0, 0);
		rd_close_later(fd, c->uid);
		return;
	}

	/* A hit: nothing to read, say how far the cached run goes.  The
	 * common hit lies in a window prefetched earlier, so one cachestat
	 * of the whole window usually settles both questions. */
	uint64_t want = no_prefetch ? 0 : (m->prefetch ? m->prefetch : rd_cfg.prefetch);
	if (want > rd_cfg.max_window)   /* no window is longer: check no more */
		want = rd_cfg.max_window;
	uint64_t wlo, whi;
	rd_window(lo, hi, want, size, &wlo, &whi);
	int whole = rd_is_resident(fd, lo, whi) == 1;
	if (whole || rd_is_resident(fd, lo, hi) == 1) {
		if (!whole)
			whi = rd_resident_end_step(fd, lo, hi, whi, RD_PIECE);
		struct rd_completion comp = {
			.req = { .dev = st->st_dev, .ino = st->st_ino, .file_size = size,
			         .offset = lo, .length = hi - lo, .client_size = m->prefetch,
			         .pid = c->pid, .uid = c->uid, .arrival_ns = now, .call = m->call },
			.fd = fd, .was_resident = 1, .status = LC_ST_OK,
			.window_offset = lo, .window_length = whi - lo, .done_ns = now,
		};
		pthread_mutex_lock(&d->lock);
		d->st.requests++;
		d->st.lookahead += (uint64_t)silent;
		d->st.hits++;
		d->st.bytes_asked += hi - lo;
		observe(d, &comp);
		pthread_mutex_unlock(&d->lock);
		if (!silent)
			reply(c, m->h.id, LC_ST_OK, 1, lo, whi, 0);
		rd_close_later(fd, c->uid);
		return;
	}

	struct rd_waiter *w = calloc(1, sizeof *w);
	if (!w)
		goto busy_nolock;
	/* watch mode's listener lets its reader go at the watch deadline,
	 * and the order serves it by then unless told not to (--watch-due) */
	uint64_t letgo = c->own ? now + (uint64_t)rd_cfg.watch_deadline_ms * 1000000u : 0;
	*w = (struct rd_waiter){ .conn = c, .id = m->h.id, .offset = lo, .length = hi - lo,
	                         .arrival_ns = now, .letgo_ns = letgo,
	                         .due_ns = rd_cfg.watch_due ? letgo : 0, .silent = silent,
	                         .charged = whi - lo > hi - lo ? whi - lo : hi - lo };
	if (take_share(c, w))
		goto busy_nolock;

	pthread_mutex_lock(&d->lock);
	d->st.requests++;
	d->st.lookahead += (uint64_t)silent;
	d->st.bytes_asked += hi - lo;
	unsigned pending = __atomic_load_n(&c->pending, __ATOMIC_RELAXED);
	if (silent && (pending >= rd_cfg.conn_pending / 2 || d->q.len >= rd_cfg.queue_depth / 2)) {
		d->st.lookahead_dropped++;
		goto busy;
	}
	if (pending >= rd_cfg.conn_pending && !c->own)
		goto busy;
	struct rd_req *r = rd_queue_find_join(&d->q, st->st_dev, st->st_ino, lo, hi - lo,
	                                      !silent, rd_cfg.max_window);
	if (r) {
		rd_conn_get(c);
		__atomic_add_fetch(&c->pending, 1, __ATOMIC_RELAXED);
		rd_req_join(r, w, m->prefetch, no_prefetch);
		d->st.misses++;
		d->st.merged++;
		pthread_mutex_unlock(&d->lock);
		rd_close_later(fd, c->uid);
		return;
	}
	if (d->q.len >= rd_cfg.queue_depth)
		goto busy;
	r = calloc(1, sizeof *r);
	if (!r)
		goto busy;
	*r = (struct rd_req){
		.fd = fd, .dev = st->st_dev, .ino = st->st_ino, .file_size = size,
		.lo = lo, .hi = hi, .client_size = m->prefetch, .no_prefetch = no_prefetch,
		.pid = c->pid, .uid = c->uid, .call = m->call, .arrival_ns = now,
		.demand_ns = silent ? 0 : now, .pos = RD_POS_UNKNOWN,
		.place = d->info.block ? RD_PLACE_TODO : RD_PLACE_DONE,
		.waiters = w, .nwaiters = 1, .demand = !silent,
	};
	rd_conn_get(c);
	__atomic_add_fetch(&c->pending, 1, __ATOMIC_RELAXED);
	rd_queue_push(&d->q, r);
	rd_device_wake(d);
	d->st.misses++;
	if (d->q.len > d->st.queue_max)
		d->st.queue_max = d->q.len;
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->lock);
	return;
busy:
	if (!silent)
		d->st.busy++;
	pthread_mutex_unlock(&d->lock);
	give_share(c, w);
	goto refuse;
busy_nolock:
	if (!silent) {
		pthread_mutex_lock(&d->lock);
		d->st.busy++;
		pthread_mutex_unlock(&d->lock);
	}
refuse:
	free(w);
	if (!silent)
		reply(c, m->h.id, LC_ST_BUSY, 0, 0, 0, 0);
	rd_close_later(fd, c->uid);
}

/* Answer r's waiters from c, give back what they held and free r. */
static void release(struct rd_req *r, const struct rd_completion *c)
{
	for (struct rd_waiter *w = r->waiters, *next; w; w = next) {
		next = w->next;
		if (!w->silent && !__atomic_load_n(&w->conn->closed, __ATOMIC_RELAXED)) {
			/* A window that skipped a cached start vouches for it too. */
			uint64_t lo = w->offset < c->window_offset ? w->offset : c->window_offset;
			reply(w->conn, w->id, c->status, 0, lo, c->window_offset + c->window_length,
			      c->bytes_read);
		}
		__atomic_sub_fetch(&w->conn->pending, 1, __ATOMIC_RELAXED);
		give_share(w->conn, w);
		rd_conn_put(w->conn);
		free(w);
	}
	rd_close_later(r->fd, r->uid);
	free(r);
}

void rd_device_complete(struct rd_device *d, struct rd_req *r, const struct rd_completion *c)
{
	observe(d, c);
	release(r, c);
}

enum rd_waiter_state rd_waiter_state(const struct rd_waiter *w, uint64_t now)
{
	if (__atomic_load_n(&w->conn->closed, __ATOMIC_RELAXED))
		return RD_W_GONE;
	if (w->silent)
		return RD_W_LET_GO;
	if (w->letgo_ns && now >= w->letgo_ns)
		return RD_W_LET_GO;
	return RD_W_WAITING;
}

/* Drop the queued requests nobody waits for any more (queue.h).  The
 * library closes its connection when its wait times out, and watch mode
 * lets its reader go at its deadline: under overload these are misses
 * whose programs already read for themselves.  Read anyway, they would
 * keep the disk on windows for nobody, minutes late, ahead of misses a
 * program still waits for, and the readers let go would pile up more.
 * Lock held. */
static void drop_abandoned(struct rd_device *d)
{
	for (struct rd_req *r = rd_queue_take_abandoned(&d->q, rd_now_ns(), d->q.order.deadline_ns),
	     *next; r; r = next) {
		next = r->next;
		d->st.abandoned++;
		/* an answer all the same: the watch listener frees its slot on it */
		release(r, &(struct rd_completion){ .status = LC_ST_BUSY });
	}
}

static void deadline_in(struct timespec *ts, uint64_t ns_from_now)
{
	uint64_t t = rd_now_ns() + ns_from_now;
	ts->tv_sec = (time_t)(t / 1000000000u);
	ts->tv_nsec = (long)(t % 1000000000u);
}

/* Ask where the queued requests lie on the disk; lock held on entry and
 * exit, dropped around each question (FIEMAP may read the disk). */
static void place_queued(struct rd_device *d)
{
	struct rd_req *r;
	while (!d->stop && (r = rd_queue_unplaced(&d->q))) {
		r->place = RD_PLACE_ASKING;   /* no worker takes it meanwhile */
		uint64_t lo = r->lo;
		pthread_mutex_unlock(&d->lock);
		uint64_t pos = rd_placement(r->fd, r->dev, r->ino, lo);
		pthread_mutex_lock(&d->lock);
		/* a join may have moved its start down meanwhile */
		if (pos != RD_POS_UNKNOWN && r->lo < lo)
			pos = pos > lo - r->lo ? pos - (lo - r->lo) : 0;
		r->pos = pos;
		r->place = RD_PLACE_DONE;
	}
}

/* Count a request taken at `start`: the rule, and (on its first turn)
 * its wait, split by whether a program waits for it. */
static void count_pick(struct rd_device *d, const struct rd_req *r, const struct rd_pick *pick,
                       uint64_t start)
{
	struct rd_order_stats *o = &d->st.order;
	o->picks[pick->rule]++;
	o->user_turns += (uint64_t)pick->turn;
	if (r->cuts)
		return;   /* the rest of a cut window: counted on its first turn */
	hist_add(&d->st.wait, start - r->arrival_ns);
	if (r->demand) {
		uint64_t wait = start - r->demand_ns;
		hist_add(&o->wait_demand, wait);
		if (d->q.order.deadline_ns && wait > d->q.order.deadline_ns)
			o->deadline_misses++;
	} else {
		hist_add(&o->wait_lookahead, start - r->arrival_ns);
	}
}

/* Make [lo, hi) of fd resident a share at a time; stop after a share if
 * another user's miss waits (*cut set).  Lock not held. */
static void read_window(struct rd_device *d, const struct rd_req *r, int fd, void *scratch,
                        struct rd_prefetch_result *out, int *cut)
{
	*out = (struct rd_prefetch_result){ .end = r->win_lo };
	*cut = 0;
	for (uint64_t at = r->win_lo; at < r->win_hi;) {
		uint64_t end = (at / RD_USER_SHARE + 1) * RD_USER_SHARE;
		if (end > r->win_hi)
			end = r->win_hi;
		struct rd_prefetch_result res;
		rd_prefetch(fd, at, end, d->info.hint_bytes, scratch, &d->stop, &res);
		out->bytes_read += res.bytes_read;
		out->error = res.error;
		out->end = res.end;
		if (res.error || res.end < end || end == r->win_hi)
			return;
		pthread_mutex_lock(&d->lock);
		*cut = rd_queue_other_user_waits(&d->q, r->uid);
		pthread_mutex_unlock(&d->lock);
		if (*cut)
			return;
		at = end;
	}
}

/* Read the window of a request taken off the queue; lock held on entry
 * and exit. */
static void serve_one(struct rd_device *d, struct rd_req *r, const struct rd_pick *pick,
                      void *scratch)
{
	if (++d->inflight > d->st.inflight_max)
		d->st.inflight_max = d->inflight;
	uint64_t start = rd_now_ns();
	if (d->inflight == 1)
		d->st.busy_since = start;
	count_pick(d, r, pick, start);

	struct rd_request_info info;
	request_info(r, &info);
	uint64_t size = r->no_prefetch ? 0 : d->policy.ops->size(&d->policy, &info);
	if (size > rd_cfg.max_window)
		size = rd_cfg.max_window;
	/* The window starts at the first page of the asked range that is not
	 * cached.  What lies before it came from an earlier window (or a
	 * look-ahead the reader caught up with); a window started inside that
	 * would end inside the next one's pages and leave the disk a fragment
	 * to read there.  In flight, only the window's own range can join. */
	uint64_t lo = r->no_prefetch ? r->lo : rd_resident_end(r->fd, r->lo, r->lo, r->hi);
	uint64_t cap = lo + rd_cfg.max_window;
	rd_window(lo, r->hi, size, r->file_size, &r->win_lo, &r->win_hi);
	if (r->win_hi > cap && cap >= r->hi)
		r->win_hi = cap;
	uint64_t pos = r->pos == RD_POS_UNKNOWN ? RD_POS_UNKNOWN : r->pos + (r->win_lo - r->lo);
	pthread_mutex_unlock(&d->lock);

	int own = rd_reopen(r->fd);
	struct rd_prefetch_result res;
	int cut;
	read_window(d, r, own >= 0 ? own : r->fd, scratch, &res, &cut);
	if (own >= 0)
		close(own);
	uint64_t done = rd_now_ns();

	pthread_mutex_lock(&d->lock);
	if (--d->inflight == 0)
		d->st.busy_ns += done - d->st.busy_since;
	rd_queue_done(&d->q, r);
	uint64_t travel = rd_order_served(&d->q.order, r->uid, pos, res.end - r->win_lo, done - start);
	if (pos != RD_POS_UNKNOWN) {
		d->st.order.placed++;
		d->st.order.head_travel += travel;
	}
	d->st.order.cuts += (uint64_t)cut;
	d->st.reads++;
	d->st.bytes_read += res.bytes_read;
	d->st.bytes_window += res.end - r->win_lo;
	hist_add(&d->st.service, done - start);
	if (cut && res.end < r->hi) {
		/* The asked range is not done: its rest waits its turn. */
		r->lo = res.end;
		r->cuts++;
		if (r->pos != RD_POS_UNKNOWN)
			r->place = RD_PLACE_TODO;
		rd_queue_push(&d->q, r);
		return;
	}
	int status = LC_ST_OK;
	if (res.error) {
		status = LC_ST_IOERROR;
		d->st.errors++;
	} else if (res.end < r->win_hi && d->stop) {
		status = LC_ST_BUSY;
	}
	struct rd_completion c = {
		.req = info, .fd = r->fd, .was_resident = 0, .status = status,
		.window_offset = r->win_lo, .window_length = res.end - r->win_lo,
		.bytes_read = res.bytes_read, .wait_ns = start - r->arrival_ns,
		.service_ns = done - start, .joined = r->nwaiters - 1, .done_ns = done,
	};
	if (res.error)
		c.window_length = 0;
	rd_device_complete(d, r, &c);
}

void *rd_worker_main(void *arg)
{
	struct rd_device *d = arg;
	void *scratch = malloc(RD_PIECE);
	if (!scratch) {
		rd_log("device %s: no memory for a worker's buffer", d->name);
		pthread_mutex_lock(&d->lock);
		d->running--;
		pthread_cond_broadcast(&d->cond);
		pthread_mutex_unlock(&d->lock);
		return NULL;
	}
	pthread_mutex_lock(&d->lock);
	/* The first worker also drives the policy's tick. */
	int ticker = !d->ticker_claimed;
	d->ticker_claimed = 1;
	uint64_t next_tick = rd_now_ns() + (uint64_t)d->policy.tick_ms * 1000000u;
	while (!d->stop) {
		uint64_t now = rd_now_ns();
		if (ticker && d->policy.tick_ms && d->policy.ops->tick && now >= next_tick) {
			d->policy.ops->tick(&d->policy, now);
			next_tick = now + (uint64_t)d->policy.tick_ms * 1000000u;
		}
		drop_abandoned(d);
		place_queued(d);
		struct rd_pick pick;
		struct rd_req *r = d->stop ? NULL : rd_queue_pop(&d->q, rd_now_ns(), &pick);
		if (r) {
			serve_one(d, r, &pick, scratch);
			d->active_ns = rd_now_ns();
			continue;
		}
		/* Idle long enough: let the thread go (rd_device_wake starts
		 * another for the next miss). */
		if (!d->inflight && now > d->active_ns &&
		    now - d->active_ns >= (uint64_t)rd_cfg.device_idle * 1000000000u)
			break;
		struct timespec ts;
		uint64_t wait = 1000000000u;
		if (ticker && d->policy.tick_ms && d->policy.ops->tick)
			wait = next_tick > now ? next_tick - now : 0;
		deadline_in(&ts, wait);
		pthread_cond_timedwait(&d->cond, &d->lock, &ts);
	}
	if (ticker)
		d->ticker_claimed = 0;
	d->running--;
	pthread_cond_broadcast(&d->cond);   /* rd_device_stop_all waits for it */
	pthread_mutex_unlock(&d->lock);
	free(scratch);
	return NULL;
}
