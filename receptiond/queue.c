/* queue.c - see queue.h. */
#include "queue.h"

#include <stddef.h>
#include <stdlib.h>

static int overlaps(uint64_t a_lo, uint64_t a_hi, uint64_t b_lo, uint64_t b_hi)
{
	return a_lo < b_hi && b_lo < a_hi;
}

/* [lo, hi) touches [r->lo, r->hi) end to start, both are of one class
 * (a demand read must not wait for look-ahead bytes it did not ask for,
 * nor a look-ahead become a demand read by adjacency), and the union fits
 * in cap. */
static int adjacent(const struct rd_req *r, uint64_t lo, uint64_t hi, int demand, uint64_t cap)
{
	if ((hi != r->lo && lo != r->hi) || demand != (r->demand != 0))
		return 0;
	uint64_t ulo = lo < r->lo ? lo : r->lo, uhi = hi > r->hi ? hi : r->hi;
	return uhi - ulo <= cap;
}

struct rd_req *rd_queue_find_join(struct rd_queue *q, dev_t dev, ino_t ino,
                                  uint64_t offset, uint64_t length, int demand, uint64_t cap)
{
	uint64_t lo = offset, hi = offset + length;
	/* In flight: only if the window being read already covers the range,
	 * since the read has been sized and cannot grow any more. */
	for (struct rd_req *r = q->flying; r; r = r->next)
		if (r->dev == dev && r->ino == ino && lo >= r->win_lo && hi <= r->win_hi)
			return r;
	for (struct rd_req *r = q->head; r; r = r->next)
		if (r->dev == dev && r->ino == ino &&
		    (overlaps(lo, hi, r->lo, r->hi) || (lo >= r->lo && hi <= r->hi) ||
		     adjacent(r, lo, hi, demand, cap)))
			return r;
	return NULL;
}

void rd_req_join(struct rd_req *r, struct rd_waiter *w, uint64_t client_size, int no_prefetch)
{
	w->next = r->waiters;
	r->waiters = w;
	r->nwaiters++;
	if (!w->silent && !r->demand++)
		r->demand_ns = w->arrival_ns;
	if (r->in_flight)
		return;
	uint64_t hi = w->offset + w->length;
	if (w->offset < r->lo) {
		/* The file's bytes lie in order on the disk, as a rule. */
		if (r->pos != RD_POS_UNKNOWN)
			r->pos = r->pos > r->lo - w->offset ? r->pos - (r->lo - w->offset) : 0;
		r->lo = w->offset;
	}
	if (hi > r->hi)
		r->hi = hi;
	if (client_size > r->client_size)
		r->client_size = client_size;
	if (!no_prefetch)
		r->no_prefetch = 0;
}

void rd_queue_push(struct rd_queue *q, struct rd_req *r)
{
	r->next = NULL;
	r->in_flight = 0;
	if (q->tail)
		q->tail->next = r;
	else
		q->head = r;
	q->tail = r;
	q->len++;
}

static enum rd_waiter_state state_of(const struct rd_queue *q, const struct rd_waiter *w,
                                     uint64_t now)
{
	return q->state ? q->state(w, now) : w->silent ? RD_W_LET_GO : RD_W_WAITING;
}

/* A request is demand while a program is blocked on it, since the first
 * such program asked, and due at the earliest due time they ask for. */
static void describe(const struct rd_queue *q, const struct rd_req *r, uint64_t now,
                     struct rd_order_cand *c)
{
	int demand = r->demand != 0;
	uint64_t since = r->demand_ns, due = 0;
	if (q->state && demand) {
		demand = 0;
		for (const struct rd_waiter *w = r->waiters; w; w = w->next) {
			if (state_of(q, w, now) != RD_W_WAITING)
				continue;
			if (w->due_ns && (!due || w->due_ns < due))
				due = w->due_ns;
			if (!demand || w->arrival_ns < since)
				since = w->arrival_ns;
			demand = 1;
		}
	}
	*c = (struct rd_order_cand){
		.since_ns = demand ? since : r->arrival_ns, .due_ns = demand ? due : 0,
		.pos = r->place == RD_PLACE_DONE ? r->pos : RD_POS_UNKNOWN,
		.uid = r->uid, .demand = demand,
	};
}

/* Without memory for the candidates: the oldest request with demand,
 * else the oldest. */
static struct rd_req *pick_plain(struct rd_queue *q, struct rd_pick *pick)
{
	struct rd_req *found = NULL;
	for (struct rd_req *i = q->head; i; i = i->next) {
		if (i->place == RD_PLACE_ASKING)
			continue;
		if (i->demand) {
			found = i;
			break;
		}
		if (!found)
			found = i;
	}
	*pick = (struct rd_pick){ .rule = RD_PICK_FIFO };
	return found;
}

static struct rd_req *pick_ordered(struct rd_queue *q, uint64_t now, struct rd_pick *pick)
{
	size_t n = 0;
	for (struct rd_req *i = q->head; i; i = i->next)
		n += i->place != RD_PLACE_ASKING;
	if (!n)
		return NULL;
	struct rd_order_cand *c = malloc(n * sizeof *c);
	struct rd_req **reqs = malloc(n * sizeof *reqs);
	struct rd_req *r;
	if (c && reqs) {
		size_t k = 0;
		for (struct rd_req *i = q->head; i; i = i->next) {
			if (i->place == RD_PLACE_ASKING)
				continue;
			reqs[k] = i;
			describe(q, i, now, &c[k++]);
		}
		*pick = rd_order_pick(&q->order, c, n, now);
		r = reqs[pick->index];
	} else {
		r = pick_plain(q, pick);
	}
	free(c);
	free(reqs);
	return r;
}

struct rd_req *rd_queue_pop(struct rd_queue *q, uint64_t now, struct rd_pick *pick)
{
	struct rd_req *r = pick_ordered(q, now, pick);
	if (!r)
		return NULL;
	struct rd_req *before = NULL;
	for (struct rd_req *i = q->head; i != r; i = i->next)
		before = i;
	if (before)
		before->next = r->next;
	else
		q->head = r->next;
	if (q->tail == r)
		q->tail = before;
	q->len--;
	r->in_flight = 1;
	r->next = q->flying;
	q->flying = r;
	q->nflying++;
	return r;
}

static int abandoned(const struct rd_queue *q, const struct rd_req *r, uint64_t now,
                     uint64_t stale_ns)
{
	if (!r->waiters || r->place == RD_PLACE_ASKING)
		return 0;
	int all_gone = 1;
	uint64_t latest = 0;
	for (const struct rd_waiter *w = r->waiters; w; w = w->next) {
		enum rd_waiter_state s = state_of(q, w, now);
		if (s == RD_W_WAITING)
			return 0;
		all_gone &= s == RD_W_GONE;
		if (w->arrival_ns > latest)
			latest = w->arrival_ns;
	}
	return all_gone || (stale_ns && now > latest && now - latest >= stale_ns);
}

struct rd_req *rd_queue_take_abandoned(struct rd_queue *q, uint64_t now, uint64_t stale_ns)
{
	struct rd_req *taken = NULL, *last = NULL;
	for (struct rd_req **pp = &q->head; *pp;) {
		struct rd_req *r = *pp;
		if (abandoned(q, r, now, stale_ns)) {
			*pp = r->next;
			q->len--;
			r->next = taken;
			taken = r;
		} else {
			last = r;
			pp = &r->next;
		}
	}
	q->tail = last;
	return taken;
}

struct rd_req *rd_queue_unplaced(struct rd_queue *q)
{
	for (struct rd_req *r = q->head; r; r = r->next)
		if (r->place == RD_PLACE_TODO)
			return r;
	return NULL;
}

int rd_queue_other_user_waits(const struct rd_queue *q, uid_t uid)
{
	for (const struct rd_req *r = q->head; r; r = r->next)
		if (r->demand && r->uid != uid)
			return 1;
	return 0;
}

void rd_queue_done(struct rd_queue *q, struct rd_req *r)
{
	for (struct rd_req **pp = &q->flying; *pp; pp = &(*pp)->next) {
		if (*pp == r) {
			*pp = r->next;
			q->nflying--;
			break;
		}
	}
	r->next = NULL;
	r->in_flight = 0;
}
