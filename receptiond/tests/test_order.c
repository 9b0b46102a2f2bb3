/* test_order.c - unit tests of the queue order (order.c), the queue's
 * joins and pick (queue.c) and the extent lookup (placement.c): sweep
 * order, demand before look-ahead, users in turn, the age bound under a
 * flood of near requests, a waiter's own due time (watch mode), FIFO
 * where places are unknown, merging of adjacent windows of one file, and
 * dropping requests nobody waits for. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "order.h"
#include "placement.h"
#include "queue.h"

#define CHECK_PROGRAM "test_order"
#include "check.h"

#define MiB (1ull << 20)
#define MS  1000000ull

/* A queue of candidates the tests drain through the order. */
struct sim {
	struct rd_order o;
	struct rd_order_cand c[4096];
	int tag[4096];
	size_t n;
	uint64_t now;
};

static void add(struct sim *s, int tag, uint64_t pos, uid_t uid, int demand)
{
	s->c[s->n] = (struct rd_order_cand){ .since_ns = s->now, .pos = pos, .uid = uid,
	                                     .demand = demand };
	s->tag[s->n++] = tag;
}

/* Pick, serve (1 MiB, 30 ms) and remove one; returns its tag. */
static int serve(struct sim *s, struct rd_pick *out)
{
	struct rd_pick p = rd_order_pick(&s->o, s->c, s->n, s->now);
	if (out)
		*out = p;
	int tag = s->tag[p.index];
	rd_order_served(&s->o, s->c[p.index].uid, s->c[p.index].pos, MiB, 30 * MS);
	s->now += 30 * MS;
	memmove(&s->c[p.index], &s->c[p.index + 1], (s->n - p.index - 1) * sizeof s->c[0]);
	memmove(&s->tag[p.index], &s->tag[p.index + 1], (s->n - p.index - 1) * sizeof s->tag[0]);
	s->n--;
	return tag;
}

static void drain(struct sim *s, int *order)
{
	for (size_t i = 0; s->n; i++)
		order[i] = serve(s, NULL);
}

/* Misses sent at 1,16,4,11,8,20,6,13 MiB are served in position order;
 * --order fifo keeps the sent order. */
static void test_sweep(void)
{
	static const int sent[8] = { 1, 16, 4, 11, 8, 20, 6, 13 };
	static const int sorted[8] = { 1, 4, 6, 8, 11, 13, 16, 20 };
	struct sim s = { .o = { .mode = RD_ORDER_POSITION, .deadline_ns = 2000 * MS } };
	for (int i = 0; i < 8; i++)
		add(&s, sent[i], (uint64_t)sent[i] * MiB, 1000, 1);
	int got[8];
	drain(&s, got);
	CHECK(!memcmp(got, sorted, sizeof got));

	struct sim f = { .o = { .mode = RD_ORDER_FIFO, .deadline_ns = 2000 * MS } };
	for (int i = 0; i < 8; i++)
		add(&f, sent[i], (uint64_t)sent[i] * MiB, 1000, 1);
	drain(&f, got);
	CHECK(!memcmp(got, sent, sizeof got));

	/* one direction: past the last, the sweep starts again at the lowest */
	struct sim w = { .o = { .mode = RD_ORDER_POSITION, .head = 10 * MiB, .served_any = 1 } };
	add(&w, 2, 2 * MiB, 0, 1);
	add(&w, 12, 12 * MiB, 0, 1);
	add(&w, 5, 5 * MiB, 0, 1);
	drain(&w, got);
	CHECK(got[0] == 12 && got[1] == 2 && got[2] == 5);

	/* the head's travel: from the end of one window to the next's start */
	struct rd_order o = { 0 };
	CHECK(rd_order_served(&o, 0, 10 * MiB, MiB, MS) == 0);
	CHECK(rd_order_served(&o, 0, 15 * MiB, MiB, MS) == 4 * MiB);
	CHECK(rd_order_served(&o, 0, 2 * MiB, MiB, MS) == 14 * MiB);
	CHECK(rd_order_served(&o, 0, RD_POS_UNKNOWN, MiB, MS) == 0 && o.head == RD_POS_UNKNOWN);
	CHECK(rd_order_served(&o, 0, 7 * MiB, MiB, MS) == 0);
}

/* Unknown places keep arrival order; between them and placed requests
 * the older goes first. */
static void test_unknown(void)
{
	struct sim s = { .o = { .mode = RD_ORDER_POSITION } };
	add(&s, 1, RD_POS_UNKNOWN, 0, 1);
	s.now += MS;
	add(&s, 2, 50 * MiB, 0, 1);
	s.now += MS;
	add(&s, 3, RD_POS_UNKNOWN, 0, 1);
	s.now += MS;
	add(&s, 4, 10 * MiB, 0, 1);
	struct rd_pick p;
	CHECK(serve(&s, &p) == 1 && p.rule == RD_PICK_FIFO);
	/* placed ones are older than request 3 now: the sweep's pick (10 MiB) */
	CHECK(serve(&s, &p) == 4 && p.rule == RD_PICK_SWEEP);
	CHECK(serve(&s, &p) == 2 && p.rule == RD_PICK_SWEEP);
	CHECK(serve(&s, &p) == 3 && p.rule == RD_PICK_FIFO);
}

/* A request a program waits for goes before look-aheads, however near. */
static void test_demand_first(void)
{
	struct sim s = { .o = { .mode = RD_ORDER_POSITION, .head = 100 * MiB, .served_any = 1 } };
	add(&s, 1, 100 * MiB, 0, 0);
	add(&s, 2, 101 * MiB, 0, 0);
	s.now += 5 * MS;
	add(&s, 3, 900 * MiB, 0, 1);
	s.now += MS;
	add(&s, 4, RD_POS_UNKNOWN, 0, 1);
	int got[4];
	drain(&s, got);
	CHECK(got[0] == 3 && got[1] == 4);   /* 4 is younger than 3: fifo waits */
	CHECK(got[2] == 1 && got[3] == 2);
}

/* Users in turn: one user's flood costs another one window. */
static void test_users(void)
{
	struct sim s = { .o = { .mode = RD_ORDER_POSITION, .deadline_ns = 2000 * MS } };
	for (int i = 0; i < 6; i++)
		add(&s, 100 + i, (uint64_t)(10 + i) * MiB, 1000, 1);
	s.now += MS;
	add(&s, 200, 500 * MiB, 33, 1);
	add(&s, 201, 501 * MiB, 33, 1);
	struct rd_pick p;
	CHECK(serve(&s, &p) == 100 && p.turn);   /* the oldest request's user first */
	CHECK(serve(&s, &p) == 200 && p.turn);   /* then the other user */
	CHECK(serve(&s, &p) == 101);             /* wrapping to the lowest uid above... */
	CHECK(serve(&s, &p) == 201);
	CHECK(serve(&s, &p) == 102 && !p.turn);  /* one user left */
	/* a user's backlog past the deadline is served oldest first, but in
	 * its turns: it never makes another user's new miss wait behind it */
	struct sim b = { .o = { .mode = RD_ORDER_POSITION, .deadline_ns = 2000 * MS,
	                        .service_ns = 30 * MS } };
	for (int i = 0; i < 50; i++)
		add(&b, 100 + i, (uint64_t)(50 - i) * MiB, 1000, 1);
	b.now = 5000 * MS;
	add(&b, 200, 999 * MiB, 33, 1);
	CHECK(serve(&b, &p) == 100 && p.rule == RD_PICK_DEADLINE);
	CHECK(serve(&b, &p) == 200);
	CHECK(serve(&b, &p) == 101 && p.rule == RD_PICK_DEADLINE);
	/* look-aheads take turns among themselves, after all demand */
	struct sim l = { .o = { .mode = RD_ORDER_FIFO } };
	add(&l, 1, 0, 5, 0);
	add(&l, 2, 0, 5, 0);
	add(&l, 3, 0, 7, 0);
	add(&l, 4, 0, 9, 1);
	int got[4];
	drain(&l, got);
	CHECK(got[0] == 4 && got[1] == 1 && got[2] == 3 && got[3] == 2);
}

/*
 * No starvation: a far request waits while a flood of near ones keeps
 * arriving ahead of the head (three per window read).  The sweep alone
 * would leave it until the head crawls 900 MiB up; the age bound serves
 * it before the deadline.  The flood's own requests are due in turn, so
 * every wait stays bounded.
 */
static uint64_t far_wait(uint64_t deadline_ns, uint64_t *worst)
{
	struct sim s = { .o = { .mode = RD_ORDER_POSITION, .deadline_ns = deadline_ns,
	                        .served_any = 1 } };
	uint64_t since[100000];
	int next = 1;
	add(&s, 0, 900 * MiB, 1000, 1);
	since[0] = 0;
	*worst = 0;
	for (int round = 0; round < 3000; round++) {
		for (int k = 0; k < 3 && s.n < 4000; k++) {
			uint64_t head = s.o.head == RD_POS_UNKNOWN ? 0 : s.o.head;
			since[next] = s.now;
			add(&s, next++, head + (uint64_t)(k + 1) * 64 * 1024, 1000, 1);
		}
		uint64_t t = s.now;
		int tag = serve(&s, NULL);
		if (t - since[tag] > *worst)
			*worst = t - since[tag];
		if (tag == 0)
			return t;
	}
	return UINT64_MAX;
}

static void test_age_bound(void)
{
	uint64_t worst;
	uint64_t bounded = far_wait(2000 * MS, &worst);
	CHECK(bounded <= 2000 * MS);
	CHECK(worst <= 2000 * MS);
	uint64_t unbounded = far_wait(0, &worst);
	CHECK(unbounded > 10000 * MS);   /* the test can fail: the flood starves it */

	/* the rule: the oldest demand, once one is due */
	/* (ages, and one window read first: the worker picks only between windows) */
	struct sim s = { .o = { .mode = RD_ORDER_POSITION, .deadline_ns = 115 * MS,
	                        .service_ns = 30 * MS } };
	add(&s, 1, 900 * MiB, 0, 1);
	s.now += 50 * MS;
	add(&s, 2, 1 * MiB, 0, 1);
	struct rd_pick p;
	CHECK(serve(&s, &p) == 2 && p.rule == RD_PICK_SWEEP);   /* 50+2*30, 0+3*30 < 115 */
	struct sim t = { .o = { .mode = RD_ORDER_POSITION, .deadline_ns = 115 * MS,
	                        .service_ns = 30 * MS } };
	add(&t, 1, 900 * MiB, 0, 1);
	t.now += 50 * MS;
	add(&t, 2, 1 * MiB, 0, 1);
	add(&t, 3, 2 * MiB, 0, 1);
	CHECK(serve(&t, &p) == 1 && p.rule == RD_PICK_DEADLINE); /* 3: 0+4*30 >= 115 */
	CHECK(strcmp(rd_order_rule_name(RD_PICK_DEADLINE), "deadline") == 0);
}

/*
 * A waiter's own due time: watch mode's listener lets its reader go at
 * 500 ms, well before the order's 2 s.  Under the flood of near requests
 * the far read is served before its reader is let go; with the order's
 * deadline alone it waits past it.
 */
static uint64_t watched_far_wait(uint64_t due_ns)
{
	struct sim s = { .o = { .mode = RD_ORDER_POSITION, .deadline_ns = 2000 * MS,
	                        .served_any = 1 } };
	add(&s, 0, 900 * MiB, 1000, 1);
	s.c[0].due_ns = due_ns;
	for (int round = 0; round < 3000; round++) {
		for (int k = 0; k < 3 && s.n < 4000; k++) {
			uint64_t head = s.o.head == RD_POS_UNKNOWN ? 0 : s.o.head;
			add(&s, 1, head + (uint64_t)(k + 1) * 64 * 1024, 1000, 1);
		}
		uint64_t t = s.now;
		if (serve(&s, NULL) == 0)
			return t;
	}
	return UINT64_MAX;
}

static void test_own_due(void)
{
	CHECK(watched_far_wait(500 * MS) + 30 * MS <= 500 * MS);   /* read before it is let go */
	CHECK(watched_far_wait(0) > 500 * MS);   /* the test can fail: the 2 s rule alone */
	CHECK(watched_far_wait(0) <= 2000 * MS);

	/* the earliest due goes first, not the oldest */
	struct sim s = { .o = { .mode = RD_ORDER_POSITION, .deadline_ns = 2000 * MS,
	                        .service_ns = 30 * MS } };
	add(&s, 1, 900 * MiB, 0, 1);             /* the library's: due at 2 s */
	s.now += 100 * MS;
	add(&s, 2, 800 * MiB, 0, 1);
	s.c[1].due_ns = s.now + 500 * MS;        /* watched: due at 600 ms */
	add(&s, 3, 1 * MiB, 0, 1);
	struct rd_pick p;
	CHECK(serve(&s, &p) == 3 && p.rule == RD_PICK_SWEEP);     /* none due yet */
	s.now = 520 * MS;                        /* 2 is due: 520 + 3 * 30 >= 600 */
	CHECK(serve(&s, &p) == 2 && p.rule == RD_PICK_DEADLINE);

	/* a waiter that waits longer than the order's deadline (watch mode at
	 * 5 s) does not make its request due later than the order's 2 s */
	struct sim l = { .o = { .mode = RD_ORDER_POSITION, .deadline_ns = 2000 * MS,
	                        .service_ns = 30 * MS } };
	add(&l, 1, 900 * MiB, 0, 1);
	l.c[0].due_ns = 5000 * MS;               /* due at 2 s all the same */
	l.now = 100 * MS;
	add(&l, 2, 1 * MiB, 0, 1);
	l.now = 1940 * MS;                       /* 1: 1940 + 2 * 30 >= 2000 */
	CHECK(serve(&l, &p) == 1 && p.rule == RD_PICK_DEADLINE);
}

static struct rd_req *req(ino_t ino, uint64_t lo, uint64_t hi)
{
	struct rd_req *r = calloc(1, sizeof *r);
	r->dev = 1;
	r->ino = ino;
	r->lo = lo;
	r->hi = hi;
	r->pos = RD_POS_UNKNOWN;
	r->place = RD_PLACE_DONE;
	return r;
}

/* Adjacent windows of one file join, up to the cap; the queue's pick
 * goes through the order and skips a request whose place is being asked. */
static void test_queue_merge(void)
{
	struct rd_queue q = { .order = { .mode = RD_ORDER_POSITION } };
	struct rd_req *a = req(10, 0, MiB), *b = req(11, MiB, 2 * MiB);
	rd_queue_push(&q, a);
	rd_queue_push(&q, b);
	a->demand = 1;
	CHECK(rd_queue_find_join(&q, 1, 10, MiB, MiB, 1, 64 * MiB) == a);      /* after a */
	CHECK(rd_queue_find_join(&q, 1, 11, 0, MiB, 0, 64 * MiB) == b);        /* before b */
	CHECK(rd_queue_find_join(&q, 1, 10, 2 * MiB, MiB, 1, 64 * MiB) == NULL); /* a gap */
	CHECK(rd_queue_find_join(&q, 1, 10, MiB, MiB, 1, MiB + MiB / 2) == NULL); /* past the cap */
	CHECK(rd_queue_find_join(&q, 1, 12, MiB, MiB, 1, 64 * MiB) == NULL);   /* another file */
	/* a demand read does not grow by a look-ahead's range, nor the other way */
	CHECK(rd_queue_find_join(&q, 1, 10, MiB, MiB, 0, 64 * MiB) == NULL);
	CHECK(rd_queue_find_join(&q, 1, 11, 0, MiB, 1, 64 * MiB) == NULL);
	/* overlapping ranges join whatever their class (the bytes are read once) */
	CHECK(rd_queue_find_join(&q, 1, 11, MiB, 4096, 1, 64 * MiB) == b);
	a->demand = 0;
	struct rd_waiter w = { .offset = MiB, .length = MiB, .arrival_ns = 7 };
	rd_req_join(a, &w, 0, 0);
	CHECK(a->lo == 0 && a->hi == 2 * MiB && a->demand == 1 && a->demand_ns == 7);
	/* joining below a placed request moves its place with its start */
	b->pos = 100 * MiB;
	struct rd_waiter w2 = { .offset = 0, .length = MiB, .silent = 1 };
	rd_req_join(b, &w2, 0, 0);
	CHECK(b->lo == 0 && b->pos == 99 * MiB && b->demand == 0);

	CHECK(rd_queue_other_user_waits(&q, 0) == 0);
	a->uid = 5;
	CHECK(rd_queue_other_user_waits(&q, 0) == 1 && rd_queue_other_user_waits(&q, 5) == 0);

	struct rd_pick p;
	a->place = RD_PLACE_ASKING;
	CHECK(rd_queue_pop(&q, 0, &p) == b && q.head == a && q.tail == a && q.len == 1);
	CHECK(rd_queue_pop(&q, 0, &p) == NULL);
	CHECK(rd_queue_unplaced(&q) == NULL);
	a->place = RD_PLACE_TODO;
	CHECK(rd_queue_unplaced(&q) == a);
	CHECK(rd_queue_pop(&q, 0, &p) == a && q.len == 0 && q.head == NULL && q.tail == NULL);
	rd_queue_done(&q, a);
	rd_queue_done(&q, b);
	CHECK(q.nflying == 0);
	free(a);
	free(b);
}

/* In these tests a waiter's id says what it is: 1 gone, 2 let go, 3 waiting. */
static enum rd_waiter_state by_id(const struct rd_waiter *w, uint64_t now)
{
	(void)now;
	return w->id == 1 ? RD_W_GONE : w->id == 2 ? RD_W_LET_GO : RD_W_WAITING;
}

/* A request is taken off as abandoned when every waiter has gone, or
 * when none waits and none asked within the stale time; never while a
 * program waits or its place is being asked; the queue stays whole. */
static void test_abandoned(void)
{
	struct rd_queue q = { .order = { .mode = RD_ORDER_POSITION }, .state = by_id };
	struct rd_req *a = req(10, 0, MiB), *b = req(11, 0, MiB), *c = req(12, 0, MiB),
		      *e = req(13, 0, MiB), *f = req(14, 0, MiB);
	struct rd_waiter a1 = { .id = 1 }, b1 = { .id = 1 }, b2 = { .id = 3 },
			 c1 = { .id = 1 }, c2 = { .id = 1, .silent = 1 },
			 f1 = { .id = 2, .arrival_ns = 100 * MS }, f2 = { .id = 1, .arrival_ns = 900 * MS };
	rd_req_join(a, &a1, 0, 0);
	rd_req_join(b, &b1, 0, 0);
	rd_req_join(b, &b2, 0, 0);
	rd_req_join(c, &c1, 0, 0);
	rd_req_join(c, &c2, 0, 0);
	rd_req_join(f, &f1, 0, 0);
	rd_req_join(f, &f2, 0, 0);
	rd_queue_push(&q, a);
	rd_queue_push(&q, b);
	rd_queue_push(&q, c);
	rd_queue_push(&q, e);   /* no waiter yet: nobody gave up on it */
	rd_queue_push(&q, f);   /* let go and gone: stale 2 s after its latest */
	a->place = RD_PLACE_ASKING;
	uint64_t now = 2 * 1000 * MS;
	CHECK(rd_queue_take_abandoned(&q, now, 2000 * MS) == c && c->next == NULL);
	CHECK(q.len == 4 && q.head == a && a->next == b && b->next == e && e->next == f);
	CHECK(rd_queue_take_abandoned(&q, now, 0) == NULL);
	now = 2900 * MS;   /* f's latest asked 2 s ago */
	CHECK(rd_queue_take_abandoned(&q, now, 0) == NULL);   /* 0: no stale rule */
	CHECK(rd_queue_take_abandoned(&q, now, 2000 * MS) == f);
	CHECK(q.len == 3 && q.tail == e && e->next == NULL);
	a->place = RD_PLACE_DONE;
	struct rd_waiter e1 = { .id = 1 };
	rd_req_join(e, &e1, 0, 0);   /* now both ends go: the tail moves back */
	struct rd_req *taken = rd_queue_take_abandoned(&q, now, 2000 * MS);
	CHECK(taken == e && e->next == a && a->next == NULL);
	CHECK(q.len == 1 && q.head == b && q.tail == b && b->next == NULL);
	CHECK(rd_queue_take_abandoned(&q, now, 2000 * MS) == NULL);   /* b2 waits */
	struct rd_waiter e2 = { .id = 3 };
	rd_req_join(e, &e2, 0, 0);   /* pushed again with a waiting program: it stays */
	rd_queue_push(&q, e);
	CHECK(rd_queue_take_abandoned(&q, now, 2000 * MS) == NULL && q.tail == e && q.len == 2);
	struct rd_pick p;
	CHECK(rd_queue_pop(&q, 0, &p) == b && rd_queue_pop(&q, 0, &p) == e && q.len == 0);
	CHECK(q.head == NULL && q.tail == NULL);
	free(a);
	free(b);
	free(c);
	free(e);
	free(f);
}

/* A request whose programs were all let go goes after one a program is
 * still blocked on, however much older it is; without a state every
 * waiter but a look-ahead waits (the older goes first). */
static void test_let_go_after_waiting(void)
{
	for (int with_state = 0; with_state < 2; with_state++) {
		struct rd_queue q = { .order = { .mode = RD_ORDER_FIFO },
		                      .state = with_state ? by_id : NULL };
		struct rd_req *old = req(10, 0, MiB), *young = req(11, 0, MiB);
		struct rd_waiter o1 = { .id = 2, .arrival_ns = 1 * MS },
				 y1 = { .id = 3, .arrival_ns = 900 * MS };
		rd_req_join(old, &o1, 0, 0);
		rd_req_join(young, &y1, 0, 0);
		rd_queue_push(&q, old);
		rd_queue_push(&q, young);
		struct rd_pick p;
		CHECK(rd_queue_pop(&q, 1000 * MS, &p) == (with_state ? young : old));
		rd_queue_pop(&q, 1000 * MS, &p);
		CHECK(q.len == 0);
		free(old);
		free(young);
	}
}

/* A request is due when the first of its waiting programs stops
 * waiting: a waiter's own due time (a watched reader), else the order's
 * deadline after it asked; a waiter let go or gone no longer counts. */
static void test_due_of_waiters(void)
{
	struct rd_queue q = { .order = { .mode = RD_ORDER_POSITION, .deadline_ns = 2000 * MS,
	                                 .service_ns = 30 * MS },
	                      .state = by_id };
	struct rd_req *lib = req(10, 0, MiB), *watched = req(11, 0, MiB), *near = req(12, 0, MiB);
	lib->pos = 900 * MiB;
	watched->pos = 800 * MiB;
	near->pos = 0;
	struct rd_waiter l1 = { .id = 3, .arrival_ns = 0 },
			 w1 = { .id = 3, .arrival_ns = 100 * MS, .due_ns = 600 * MS },
			 w2 = { .id = 2, .arrival_ns = 50 * MS, .due_ns = 300 * MS },   /* let go */
			 n1 = { .id = 3, .arrival_ns = 100 * MS };
	rd_req_join(lib, &l1, 0, 0);
	rd_req_join(watched, &w1, 0, 0);
	rd_req_join(watched, &w2, 0, 0);
	rd_req_join(near, &n1, 0, 0);
	rd_queue_push(&q, lib);
	rd_queue_push(&q, watched);
	rd_queue_push(&q, near);
	struct rd_pick p;
	/* at 300 ms the let-go waiter's due time has passed; it does not count */
	CHECK(rd_queue_pop(&q, 300 * MS, &p) == near && p.rule == RD_PICK_SWEEP);
	CHECK(rd_queue_pop(&q, 550 * MS, &p) == watched && p.rule == RD_PICK_DEADLINE);
	CHECK(rd_queue_pop(&q, 560 * MS, &p) == lib);
	CHECK(q.len == 0);
	free(lib);
	free(watched);
	free(near);
}

static void test_extents(void)
{
	const struct rd_extent e[2] = { { 0, 1000 * MiB, 4 * MiB }, { 8 * MiB, 20 * MiB, MiB } };
	CHECK(rd_extent_lookup(e, 2, 0) == 1000 * MiB);
	CHECK(rd_extent_lookup(e, 2, 3 * MiB + 5) == 1003 * MiB + 5);
	CHECK(rd_extent_lookup(e, 2, 5 * MiB) == 20 * MiB);          /* a hole: the next extent */
	CHECK(rd_extent_lookup(e, 2, 8 * MiB + 1) == 20 * MiB + 1);
	CHECK(rd_extent_lookup(e, 2, 9 * MiB) == RD_POS_UNKNOWN);    /* past what is known */
	CHECK(rd_extent_lookup(e, 0, 0) == RD_POS_UNKNOWN);
	enum rd_order_mode m;
	CHECK(rd_order_mode_parse("fifo", &m) == 0 && m == RD_ORDER_FIFO);
	CHECK(rd_order_mode_parse("position", &m) == 0 && m == RD_ORDER_POSITION);
	CHECK(rd_order_mode_parse("sptf", &m) == -1);
}

int main(void)
{
	test_sweep();
	test_unknown();
	test_demand_first();
	test_users();
	test_age_bound();
	test_own_due();
	test_queue_merge();
	test_abandoned();
	test_let_go_after_waiting();
	test_due_of_waiters();
	test_extents();
	return check_done();
}
