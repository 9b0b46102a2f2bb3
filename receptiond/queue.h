/*
 * queue.h - one device's queue of misses, with merging.
 *
 * A request is one range of one file (dev, ino) that some clients wait
 * for.  A new ENSURE whose range overlaps a queued request of the same
 * file joins it (the queued range grows to the union); one whose range
 * lies inside the window an in-flight request is reading joins that.
 * Either way the device reads the bytes once and answers every waiter.
 *
 * Order: oldest first among the requests someone waits for; a request
 * only look-aheads (LC_F_LOOKAHEAD) asked for goes when no such request
 * is queued.  A program blocks on every miss, and nobody on a look-ahead:
 * a demand read queued behind speculative ones would make the reader wait
 * for reads it did not ask for, which is what the look-ahead was meant to
 * spare it.  A look-ahead that a reader catches up with (its miss joins
 * it) waits like any demand read from then on.
 *
 * The queue does no locking: the device's lock guards it.
 */
#ifndef RD_QUEUE_H
#define RD_QUEUE_H

#include <stdint.h>
#include <sys/types.h>

struct rd_conn;

struct rd_waiter {
	struct rd_waiter *next;
	struct rd_conn *conn;     /* holds a reference */
	uint64_t id;              /* the client's request id */
	uint64_t offset, length;
	int silent;               /* a look-ahead (LC_F_LOOKAHEAD): no answer */
	uint64_t charged;         /* bytes taken from its user's quota */
};

struct rd_req {
	struct rd_req *next;      /* FIFO, or the in-flight list */
	int fd;                   /* the first asker's fd (ours to close) */
	dev_t dev;
	ino_t ino;
	uint64_t file_size;
	uint64_t lo, hi;          /* union of the waiters' ranges */
	uint64_t client_size;     /* largest prefetch size a waiter asked for */
	int no_prefetch;          /* all waiters asked for exactly their range */
	pid_t pid;
	uid_t uid;
	uint32_t call;
	uint64_t arrival_ns;
	int in_flight;
	uint64_t win_lo, win_hi;  /* set when taken off the queue */
	struct rd_waiter *waiters;
	unsigned nwaiters;
	unsigned demand;          /* waiters that are not look-aheads */
};

struct rd_queue {
	struct rd_req *head, *tail;
	struct rd_req *flying;    /* in-flight requests */
	unsigned len;             /* queued, not in flight */
	unsigned nflying;
};

/* The request a new range of (dev, ino) should join, or NULL. */
struct rd_req *rd_queue_find_join(struct rd_queue *q, dev_t dev, ino_t ino,
                                  uint64_t offset, uint64_t length);
/* Add a waiter to r (growing the range of a queued request). */
void rd_req_join(struct rd_req *r, struct rd_waiter *w, uint64_t client_size, int no_prefetch);
void rd_queue_push(struct rd_queue *q, struct rd_req *r);
/* Take the oldest request with demand (else the oldest) and mark it in
 * flight; NULL if empty. */
struct rd_req *rd_queue_pop(struct rd_queue *q);
/* Remove a finished request from the in-flight list. */
void rd_queue_done(struct rd_queue *q, struct rd_req *r);

#endif
