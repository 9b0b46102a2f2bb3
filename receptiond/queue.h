/*
 * queue.h - one device's queue of misses, with merging.
 *
 * A request is one range of one file (dev, ino) that some clients wait
 * for.  A new ENSURE whose range overlaps a queued request of the same
 * file joins it (the queued range grows to the union); one whose range
 * lies inside the window an in-flight request is reading joins that.
 * Either way the device reads the bytes once and answers every waiter.
 *
 * A range that starts where a queued request of the same file ends (or
 * ends where it starts) joins it too if both are demand or both
 * look-ahead, up to a cap: one window, one positioning, instead of two
 * reads back to back.
 *
 * Order (order.h): a request someone waits for goes before one only
 * look-aheads (LC_F_LOOKAHEAD) asked for.  A program blocks on every miss,
 * and nobody on a look-ahead: a demand read queued behind speculative ones
 * would make the reader wait for reads it did not ask for, which is what
 * the look-ahead was meant to spare it.  A look-ahead that a reader
 * catches up with (its miss joins it) waits like any demand read from
 * then on.  Whether someone waits is asked at each pick (state): a
 * watched reader let go at the listener's deadline no longer does, and
 * its window then goes after the readers still blocked.  Then users in
 * turn, the deadline (a waiter's own due time, else the order's
 * deadline after it asked), and the disk position.
 *
 * A request nobody waits for any more is taken off the queue unread
 * (rd_queue_take_abandoned): at once when every connection that asked
 * has closed (each program gave up on the daemon, or exited); when
 * waiters remain but none waits (look-aheads, watched readers let go at
 * the listener's deadline), once nothing has asked for it for the
 * order's deadline: its window would be read for nobody, or too late.
 *
 * The queue does no locking: the device's lock guards it.
 */
#ifndef RD_QUEUE_H
#define RD_QUEUE_H

#include <stdint.h>
#include <sys/types.h>

#include "order.h"

struct rd_conn;

struct rd_waiter {
	struct rd_waiter *next;
	struct rd_conn *conn;     /* holds a reference */
	uint64_t id;              /* the client's request id */
	uint64_t offset, length;
	uint64_t arrival_ns;
	uint64_t letgo_ns;        /* when its program stops waiting (watch mode's
	                           * listener lets it go), or 0: it does not say */
	uint64_t due_ns;          /* when the order is to have read it (QUEUE ORDER
	                           * rule 3), or 0: the order's --deadline */
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
	uint64_t demand_ns;       /* arrival of the first waiter that is not a look-ahead */
	uint64_t pos;             /* disk offset of lo (placement.h), or RD_POS_UNKNOWN */
	int place;                /* enum rd_place_state */
	unsigned cuts;            /* times its window was cut for another user */
	int in_flight;
	uint64_t win_lo, win_hi;  /* set when taken off the queue */
	struct rd_waiter *waiters;
	unsigned nwaiters;
	unsigned demand;          /* waiters that are not look-aheads */
};

/* What a waiter is to its request now (the caller knows connections). */
enum rd_waiter_state {
	RD_W_WAITING,   /* a program is blocked on the answer */
	RD_W_LET_GO,    /* nobody is blocked, but its program may read there soon */
	RD_W_GONE,      /* its connection closed: no answer can reach anyone */
};

/* A queued request's disk position: not asked yet, being asked by a
 * worker (not to be taken meanwhile: the worker uses its fd), known (or
 * known to be unknown). */
enum rd_place_state { RD_PLACE_TODO, RD_PLACE_ASKING, RD_PLACE_DONE };

struct rd_queue {
	struct rd_req *head, *tail;  /* in arrival order, but for cut windows' rests */
	struct rd_req *flying;    /* in-flight requests */
	unsigned len;             /* queued, not in flight */
	unsigned nflying;
	struct rd_order order;
	/* What a waiter is now (the device's, which knows connections);
	 * NULL: every waiter but a look-ahead waits, and none is gone. */
	enum rd_waiter_state (*state)(const struct rd_waiter *w, uint64_t now);
};

/* The request a new range of (dev, ino) should join, or NULL; an adjacent
 * range joins a request of its own class (demand: a program waits for it)
 * if the union stays within cap bytes. */
struct rd_req *rd_queue_find_join(struct rd_queue *q, dev_t dev, ino_t ino,
                                  uint64_t offset, uint64_t length, int demand, uint64_t cap);
/* Add a waiter to r (growing the range of a queued request). */
void rd_req_join(struct rd_req *r, struct rd_waiter *w, uint64_t client_size, int no_prefetch);
void rd_queue_push(struct rd_queue *q, struct rd_req *r);
/* Take the request order.h picks at time now and mark it in flight (the
 * pick in *pick); NULL if nothing can be taken. */
struct rd_req *rd_queue_pop(struct rd_queue *q, uint64_t now, struct rd_pick *pick);
/* Take off the queue every request whose waiters are all RD_W_GONE, or
 * none RD_W_WAITING and the latest arrived stale_ns or more before now
 * (0: never); returns them chained through next, or NULL.  One being
 * placed stays: a worker uses its fd. */
struct rd_req *rd_queue_take_abandoned(struct rd_queue *q, uint64_t now, uint64_t stale_ns);
/* A queued request whose position has not been asked, or NULL. */
struct rd_req *rd_queue_unplaced(struct rd_queue *q);
/* 1 if a request some program waits for, of a user other than uid, is queued. */
int rd_queue_other_user_waits(const struct rd_queue *q, uid_t uid);
/* Remove a finished request from the in-flight list. */
void rd_queue_done(struct rd_queue *q, struct rd_req *r);

#endif
