/* queue.c - see queue.h. */
#include "queue.h"

#include <stddef.h>

static int overlaps(uint64_t a_lo, uint64_t a_hi, uint64_t b_lo, uint64_t b_hi)
{
	return a_lo < b_hi && b_lo < a_hi;
}

struct rd_req *rd_queue_find_join(struct rd_queue *q, dev_t dev, ino_t ino,
                                  uint64_t offset, uint64_t length)
{
	uint64_t lo = offset, hi = offset + length;
	/* In flight: only if the window being read already covers the range,
	 * since the read has been sized and cannot grow any more. */
	for (struct rd_req *r = q->flying; r; r = r->next)
		if (r->dev == dev && r->ino == ino && lo >= r->win_lo && hi <= r->win_hi)
			return r;
	for (struct rd_req *r = q->head; r; r = r->next)
		if (r->dev == dev && r->ino == ino &&
		    (overlaps(lo, hi, r->lo, r->hi) || (lo >= r->lo && hi <= r->hi)))
			return r;
	return NULL;
}

void rd_req_join(struct rd_req *r, struct rd_waiter *w, uint64_t client_size, int no_prefetch)
{
	w->next = r->waiters;
	r->waiters = w;
	r->nwaiters++;
	r->demand += !w->silent;
	if (r->in_flight)
		return;
	uint64_t hi = w->offset + w->length;
	if (w->offset < r->lo)
		r->lo = w->offset;
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

struct rd_req *rd_queue_pop(struct rd_queue *q)
{
	/* before: the request ahead of the one taken (NULL: it is the head) */
	struct rd_req *before = NULL, *r = q->head;
	for (struct rd_req *p = NULL, *i = q->head; i; p = i, i = i->next) {
		if (i->demand) {
			before = p;
			r = i;
			break;
		}
	}
	if (!r)
		return NULL;
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
