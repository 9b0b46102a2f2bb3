/* order.c - see order.h. */
#include "order.h"

#include <string.h>

int rd_order_mode_parse(const char *s, enum rd_order_mode *out)
{
	if (!strcmp(s, "position"))
		*out = RD_ORDER_POSITION;
	else if (!strcmp(s, "fifo"))
		*out = RD_ORDER_FIFO;
	else
		return -1;
	return 0;
}

const char *rd_order_rule_name(enum rd_pick_rule r)
{
	static const char *const names[RD_PICK_RULES] = {
		[RD_PICK_DEADLINE] = "deadline", [RD_PICK_SWEEP] = "sweep", [RD_PICK_FIFO] = "fifo",
	};
	return r < RD_PICK_RULES ? names[r] : "?";
}

/* The order's deadline after its first waiter asked, or sooner if a
 * waiter stops waiting sooner. */
static uint64_t due_at(const struct rd_order *o, const struct rd_order_cand *c)
{
	uint64_t at = c->since_ns + o->deadline_ns;
	return c->due_ns && c->due_ns < at ? c->due_ns : at;
}

/* Index of uid's earliest-due demand request if one of them is due, else
 * n.  Request i is due when, were one other window read first, the reads
 * of uid's demand queued before it and its own would end past its due
 * time (the worker picks again only when a window ends): serving the
 * earliest due first (EDF) is then what keeps the most in time.  Per
 * user, after the users rule: another user's backlog, however old, never
 * jumps the turns.  --deadline 0 turns the rule off, waiters' own due
 * times included. */
static size_t due(const struct rd_order *o, const struct rd_order_cand *c, size_t n, uid_t uid,
                  uint64_t now)
{
	if (!o->deadline_ns)
		return n;
	size_t first = n, ahead = 0;
	uint64_t first_at = 0;
	int any_due = 0;
	for (size_t i = 0; i < n; i++) {
		if (!c[i].demand || c[i].uid != uid)
			continue;
		uint64_t at = due_at(o, &c[i]);
		if (first == n || at < first_at) {
			first = i;
			first_at = at;
		}
		if (now + (uint64_t)(++ahead + 1) * o->service_ns >= at)
			any_due = 1;
	}
	return any_due ? first : n;
}

/* Users in turn: the lowest uid above the one served last among the
 * requests of the class, wrapping to the lowest; the first pick takes
 * the oldest request's user. */
static uid_t next_user(const struct rd_order *o, const struct rd_order_cand *c, size_t n,
                       int demand, int *several)
{
	int have_above = 0, have_any = 0;
	uid_t above = 0, lowest = 0, oldest_uid = 0;
	uint64_t oldest = UINT64_MAX;
	*several = 0;
	for (size_t i = 0; i < n; i++) {
		if (c[i].demand != demand)
			continue;
		uid_t u = c[i].uid;
		if (have_any && u != lowest)
			*several = 1;
		if (!have_any || u < lowest)
			lowest = u;
		have_any = 1;
		if (o->served_any && u > o->last_uid && (!have_above || u < above)) {
			above = u;
			have_above = 1;
		}
		if (c[i].since_ns < oldest) {
			oldest = c[i].since_ns;
			oldest_uid = u;
		}
	}
	if (!o->served_any)
		return oldest_uid;
	return have_above ? above : lowest;
}

struct rd_pick rd_order_pick(const struct rd_order *o, const struct rd_order_cand *c, size_t n,
                             uint64_t now)
{
	struct rd_pick p = { .index = n };
	int demand = 0;
	for (size_t i = 0; i < n && !demand; i++)
		demand = c[i].demand != 0;
	uid_t uid = next_user(o, c, n, demand, &p.turn);
	if (demand && (p.index = due(o, c, n, uid, now)) < n) {
		p.rule = RD_PICK_DEADLINE;
		return p;
	}

	/* Within the user's class: the oldest unplaced request, and the
	 * sweep's next placed one (plus the oldest placed, to compare ages). */
	size_t fifo = n, sweep = n, lowest = n, placed_oldest = n;
	uint64_t head = o->served_any && o->head != RD_POS_UNKNOWN ? o->head : 0;
	for (size_t i = 0; i < n; i++) {
		if ((c[i].demand != 0) != demand || c[i].uid != uid)
			continue;
		uint64_t pos = o->mode == RD_ORDER_FIFO ? RD_POS_UNKNOWN : c[i].pos;
		if (pos == RD_POS_UNKNOWN) {
			if (fifo == n || c[i].since_ns < c[fifo].since_ns)
				fifo = i;
			continue;
		}
		if (placed_oldest == n || c[i].since_ns < c[placed_oldest].since_ns)
			placed_oldest = i;
		if (lowest == n || pos < c[lowest].pos)
			lowest = i;
		if (pos >= head && (sweep == n || pos < c[sweep].pos))
			sweep = i;
	}
	if (sweep == n)
		sweep = lowest;
	if (fifo < n && (sweep == n || c[fifo].since_ns <= c[placed_oldest].since_ns)) {
		p.index = fifo;
		p.rule = RD_PICK_FIFO;
	} else {
		p.index = sweep;
		p.rule = RD_PICK_SWEEP;
	}
	return p;
}

uint64_t rd_order_served(struct rd_order *o, uid_t uid, uint64_t pos, uint64_t len,
                         uint64_t service_ns)
{
	uint64_t travel = 0;
	if (pos != RD_POS_UNKNOWN && o->served_any && o->head != RD_POS_UNKNOWN)
		travel = pos > o->head ? pos - o->head : o->head - pos;
	o->head = pos == RD_POS_UNKNOWN ? RD_POS_UNKNOWN : pos + len;
	o->last_uid = uid;
	o->served_any = 1;
	/* A running mean over about the last eight windows. */
	o->service_ns = o->service_ns ? o->service_ns - o->service_ns / 8 + service_ns / 8 : service_ns;
	return travel;
}
