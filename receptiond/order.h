/*
 * order.h - which queued window of one device to read next.
 *
 * Pure: the caller describes the queued requests (in arrival order) and
 * gets back the index of the one to serve and the rule that chose it.
 * The rules, first that applies:
 *
 *   class     demand (a request a program is blocked on) before
 *             look-ahead: look-aheads (nobody waits) go only when no
 *             demand is queued.
 *   users     users in turn: among the class, the next uid after the one
 *             served last, so one user's flood costs another user at most
 *             one window (and the worker cuts long windows, see worker.c).
 *   deadline  one of that user's demand requests would pass its due time
 *             if one other window and the user's requests queued before
 *             it were served first: serve the user's earliest due (EDF).  A request is due the
 *             order's deadline after its first waiting program asked, or
 *             sooner if a waiter says so: watch mode's listener lets its
 *             reader go at its own deadline (500 ms by default), after
 *             which the reader reads for itself and the window comes too
 *             late.  With one deadline for all the earliest due is the
 *             oldest.  Nothing starves under a flood of near requests.
 *   sweep     among that user's requests with a known disk position, an
 *             elevator sweep: the lowest position at or past the head,
 *             wrapping to the lowest (one direction, so both edges of the
 *             disk are served alike).
 *   fifo      requests whose position is unknown (FUSE, no FIEMAP) keep
 *             arrival order among themselves; between them and the placed
 *             ones the older goes first.  --order fifo treats every
 *             position as unknown: today's order (the worker still asks,
 *             so the head's travel can be compared).
 *
 * Why: at a video server's answer the disk spends half its busy time
 * positioning (docs/receptiond.md QUEUE ORDER).
 */
#ifndef RD_ORDER_H
#define RD_ORDER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define RD_POS_UNKNOWN UINT64_MAX
/* What one user reads before another waiting user gets the device. */
#define RD_USER_SHARE (2u << 20)

enum rd_order_mode { RD_ORDER_POSITION, RD_ORDER_FIFO };

enum rd_pick_rule { RD_PICK_DEADLINE, RD_PICK_SWEEP, RD_PICK_FIFO, RD_PICK_RULES };

struct rd_order_cand {
	uint64_t since_ns;   /* demand: first demand waiter's arrival; else the request's */
	uint64_t due_ns;     /* demand: the earliest due time its waiting programs
	                      * ask for (rd_waiter.due_ns), else 0; due no later
	                      * than since_ns plus the order's deadline either way */
	uint64_t pos;        /* disk byte offset of the window's start, or RD_POS_UNKNOWN */
	uid_t uid;
	int demand;          /* a program waits for it */
};

struct rd_order {
	enum rd_order_mode mode;
	uint64_t deadline_ns;
	uint64_t service_ns; /* expected time to read one window (a running mean) */
	uint64_t head;       /* disk offset where the last window ended */
	uid_t last_uid;
	int served_any;      /* last_uid and head are set */
};

struct rd_pick {
	size_t index;
	enum rd_pick_rule rule;
	int turn;            /* the users rule passed over another user's requests */
};

/* Parse "position" or "fifo"; -1 otherwise. */
int rd_order_mode_parse(const char *s, enum rd_order_mode *out);
const char *rd_order_rule_name(enum rd_pick_rule r);

/* Choose among c[0..n) (n > 0, arrival order); does not change o. */
struct rd_pick rd_order_pick(const struct rd_order *o, const struct rd_order_cand *c, size_t n,
                             uint64_t now);
/* Note that a window of `len` bytes at disk offset pos (or RD_POS_UNKNOWN)
 * was served for uid and took service_ns; returns the head's travel in
 * bytes (0 if either end is unknown). */
uint64_t rd_order_served(struct rd_order *o, uid_t uid, uint64_t pos, uint64_t len,
                         uint64_t service_ns);

#endif
