/* model.c - service-time model of one hard disk; see model.h. */
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define NS_PER_MS 1e6

static double ms_to_ns(double ms) { return ms * NS_PER_MS; }

/* Media rate in bytes per ns, piecewise linear in LBA fraction. */
double model_rate(const struct model *m, uint64_t pos)
{
	double f = (double)pos / (double)m->d.capacity;
	double r;
	if (f < 0.5)
		r = m->d.rate_outer + (m->d.rate_middle - m->d.rate_outer) * (f / 0.5);
	else if (f < 1.0)
		r = m->d.rate_middle + (m->d.rate_inner - m->d.rate_middle) * ((f - 0.5) / 0.5);
	else
		r = m->d.rate_inner;
	return r * 1e-3; /* MB/s -> bytes/ns */
}

/* Integral of db / (r0 + k*b) from 0 to len, in ns of transfer. */
static double lin_int(double r0, double k, double len)
{
	if (fabs(k * len) < 1e-9 * r0)
		return len / r0;
	return log((r0 + k * len) / r0) / k;
}

/* Transfer time from the outer edge to pos, in ns; the rate is linear on
 * each half, so the integral has a closed form and is exact for any span. */
static double xfer_from_zero(const struct model *m, uint64_t pos)
{
	double C = (double)m->d.capacity, half = C / 2, p = (double)pos;
	double ro = m->d.rate_outer * 1e-3, rm = m->d.rate_middle * 1e-3, ri = m->d.rate_inner * 1e-3;
	double k1 = (rm - ro) / half, k2 = (ri - rm) / half;
	if (p <= half)
		return lin_int(ro, k1, p);
	double t = lin_int(ro, k1, half);
	if (p <= C)
		return t + lin_int(rm, k2, p - half);
	return t + lin_int(rm, k2, half) + (p - C) / ri;
}

double model_revs(const struct model *m, uint64_t pos)
{
	return xfer_from_zero(m, pos) / (double)m->trev;
}

int64_t model_xfer_ns(const struct model *m, uint64_t from, uint64_t to)
{
	if (to <= from)
		return 0;
	return (int64_t)llround(xfer_from_zero(m, to) - xfer_from_zero(m, from));
}

static uint64_t track_bytes(const struct model *m, uint64_t pos)
{
	return (uint64_t)(model_rate(m, pos) * (double)m->trev);
}

double model_seek_ms(const struct model *m, uint64_t dist)
{
	if (dist == 0)
		return 0;
	double x = (double)dist / (double)m->d.capacity;
	if (x < m->fit.x0)
		return m->d.seek_min + m->fit.B * sqrt(x);
	return m->fit.c + m->fit.e * x;
}

static int fail(char *err, size_t errlen, const char *what, const struct drive *d)
{
	snprintf(err, errlen, "drive \"%s\": %s", d->name, what);
	return -1;
}

int model_init(struct model *m, const struct drive *d, char *err, size_t errlen)
{
	memset(m, 0, sizeof *m);
	m->d = *d;
	if (d->rpm <= 0 || d->capacity < (1u << 20))
		return fail(err, errlen, "rpm and capacity (>= 1 MiB) must be positive", d);
	if (d->rate_outer <= 0 || d->rate_middle <= 0 || d->rate_inner <= 0 || d->interface_rate <= 0)
		return fail(err, errlen, "rates must be positive", d);
	if (d->segments < 1 || d->segments > MODEL_MAX_SEGMENTS)
		return fail(err, errlen, "segments must be 1..64", d);
	if (d->queue_depth < 1)
		return fail(err, errlen, "queue_depth must be at least 1", d);
	m->trev = (int64_t)llround(60e9 / d->rpm);

	/* The papers' access times include half a revolution, the controller
	 * overhead, a page's transfer and the host's own path (which hddsim's
	 * FUSE path adds for real); what is left is the seek. */
	double half_rev = 30e3 / d->rpm;
	double page = 4096 / (d->rate_middle * 1e3);  /* ms */
	double fixed = half_rev + d->overhead + page + d->host_overhead;
	double sq = d->access_quarter - fixed;
	double sf = d->access_full - fixed;
	if (!(sq > d->seek_min && sf > sq))
		return fail(err, errlen, "need seek_min < quarter-stroke seek < full-stroke seek "
			    "(access times minus half a revolution)", d);
	m->fit.e = (sf - sq) / 0.75;
	m->fit.c = sf - m->fit.e;
	m->fit.x0 = (m->fit.c - d->seek_min) / m->fit.e;
	if (m->fit.x0 <= 0) {
		/* The long-seek line already starts below seek_min: a pure line. */
		m->fit.x0 = 0;
		m->fit.B = 0;
	} else {
		m->fit.B = 2 * m->fit.e * sqrt(m->fit.x0);
	}
	m->ra_seg = -1;
	m->free_t = -1;
	for (unsigned i = 0; i < d->segments; i++)
		m->seg[i] = (struct segment){0, 0, -1};
	return 0;
}

/* Where the idle read-ahead has got to by time t. */
static uint64_t ra_frontier(const struct model *m, int64_t t)
{
	if (m->ra_seg < 0 || t <= m->head_t)
		return m->head;
	double n = (double)(t - m->head_t) * model_rate(m, m->head);
	uint64_t f = m->head + (uint64_t)n;
	return f < m->ra_limit ? f : m->ra_limit;
}

static int64_t rot_wait(const struct model *m, int64_t t, uint64_t pos)
{
	double angle = model_revs(m, pos);
	angle -= floor(angle);
	double phase = (double)(t % m->trev) / (double)m->trev;
	double w = angle - phase;
	w -= floor(w);
	int64_t ns = (int64_t)(w * (double)m->trev);
	/* Rounding can turn "exactly here" into "one revolution away". */
	return ns > m->trev - 2000 ? 0 : ns;
}

enum kind { MISS, HIT, CONTINUE };

static enum kind classify(const struct model *m, int64_t t, const struct model_req *r,
			  uint64_t frontier, int *seg)
{
	uint64_t end = r->pos + r->len;
	for (unsigned i = 0; i < m->d.segments; i++) {
		uint64_t s = m->seg[i].start;
		uint64_t e = (int)i == m->ra_seg ? frontier : m->seg[i].end;
		if (m->seg[i].used < 0)
			continue;
		*seg = (int)i;
		if (s <= r->pos && end <= e)
			return HIT;
		if ((int)i == m->ra_seg && s <= r->pos && r->pos <= e)
			return CONTINUE;
	}
	*seg = -1;
	/* Back to back with the previous read: the head is right there. */
	if (r->pos == m->head && t == m->head_t)
		return CONTINUE;
	return MISS;
}

static void position(const struct model *m, int64_t t, uint64_t from, uint64_t to,
		     struct model_cost *c)
{
	c->seek_dist = from > to ? from - to : to - from;
	uint64_t dist = c->seek_dist < track_bytes(m, from) ? 0 : c->seek_dist;
	c->overhead = (int64_t)ms_to_ns(m->d.overhead);
	c->seek = (int64_t)ms_to_ns(model_seek_ms(m, dist));
	c->rot = rot_wait(m, t + c->overhead + c->seek, to);
}

int64_t model_position_cost(const struct model *m, int64_t t, const struct model_req *r)
{
	uint64_t frontier = ra_frontier(m, t);
	int seg;
	enum kind k = classify(m, t, r, frontier, &seg);
	if (k != MISS)
		return 0;
	struct model_cost c = {0};
	position(m, t, frontier, r->pos, &c);
	return c.overhead + c.seek + c.rot;
}

static int lru_segment(const struct model *m)
{
	int best = 0;
	for (unsigned i = 0; i < m->d.segments; i++) {
		if (m->seg[i].used < 0)
			return (int)i;
		if (m->seg[i].used < m->seg[best].used)
			best = (int)i;
	}
	return best;
}

/* The segment a read continuing at pos extends, else the LRU one. */
static int segment_ending_at(const struct model *m, uint64_t pos)
{
	for (unsigned i = 0; i < m->d.segments; i++)
		if (m->seg[i].used >= 0 && m->seg[i].end == pos)
			return (int)i;
	return lru_segment(m);
}

int model_joins(const struct model *m, const struct model_req *r)
{
	return r->pos == m->head && m->head_t == m->free_t && r->arrival <= m->head_t + MODEL_MERGE_NS;
}

int64_t model_start(const struct model *m, int64_t t, const struct model_req *r)
{
	return model_joins(m, r) && m->head_t < t ? m->head_t : t;
}

struct model_cost model_serve(struct model *m, int64_t t, const struct model_req *r)
{
	struct model_cost c = {0};
	uint64_t end = r->pos + r->len;
	uint64_t frontier = ra_frontier(m, t);
	int seg;
	enum kind k = classify(m, t, r, frontier, &seg);
	int joined = t == m->head_t && model_joins(m, r);

	/* The read-ahead ran until now: keep what it read. */
	if (m->ra_seg >= 0) {
		struct segment *s = &m->seg[m->ra_seg];
		s->end = frontier;
		if (s->end - s->start > m->d.segment_bytes)
			s->start = s->end - m->d.segment_bytes;
		if (frontier > m->head)
			m->head_t = t;
		m->head = frontier;
		if (frontier >= m->ra_limit)
			m->ra_seg = -1;
	}

	if (k == HIT) {
		c.hit = 1;
		c.overhead = (int64_t)ms_to_ns(m->d.hit_overhead);
		c.xfer = (int64_t)((double)r->len / (m->d.interface_rate * 1e-3));
		c.total = c.overhead + c.xfer;
		c.media = model_xfer_ns(m, r->pos, end);
		m->free_t = t + c.total;
		m->seg[seg].used = t;
		/* A sequential reader keeps the read-ahead going in front of it;
		 * if it had stopped at the head, it resumes when the platter
		 * brings the next sector round. */
		if (seg == m->ra_seg && end + m->d.readahead > m->ra_limit) {
			m->ra_limit = end + m->d.readahead;
		} else if (m->ra_seg < 0 && m->d.readahead > 0 && m->seg[seg].end == m->head) {
			m->ra_seg = seg;
			m->ra_limit = end + m->d.readahead;
			m->head_t = t + rot_wait(m, t, m->head);
		}
		return c;
	}

	if (k == CONTINUE) {
		c.hit = joined ? 3 : 2;
		c.xfer = model_xfer_ns(m, m->head, end);
		if (seg < 0)
			seg = segment_ending_at(m, m->head);
		if (m->seg[seg].used < 0 || m->seg[seg].end != m->head)
			m->seg[seg].start = r->pos;
	} else {
		position(m, t, m->head, r->pos, &c);
		c.xfer = model_xfer_ns(m, r->pos, end);
		seg = lru_segment(m);
		m->seg[seg].start = r->pos;
	}
	c.total = c.overhead + c.seek + c.rot + c.xfer;
	c.media = c.xfer;
	m->head = end;
	m->head_t = m->free_t = t + c.total;
	m->seg[seg].end = end;
	m->seg[seg].used = t;
	if (m->seg[seg].end - m->seg[seg].start > m->d.segment_bytes)
		m->seg[seg].start = m->seg[seg].end - m->d.segment_bytes;
	if (m->d.readahead > 0) {
		m->ra_seg = seg;
		m->ra_limit = end + m->d.readahead;
	} else {
		m->ra_seg = -1;
	}
	return c;
}

/* The queued piece that ends where q[i] starts (one large command split
 * by the host), or n if there is none. */
static size_t predecessor(const struct model_req *q, size_t n, size_t i, int64_t t)
{
	for (size_t j = 0; j < n; j++)
		if (j != i && q[j].arrival <= t && q[j].pos + q[j].len == q[i].pos)
			return j;
	return n;
}

/* The first piece of the chain q[i] belongs to. */
static size_t chain_start(const struct model_req *q, size_t n, size_t i, int64_t t)
{
	for (size_t steps = 0; steps < n; steps++) {
		size_t j = predecessor(q, n, i, t);
		if (j == n)
			break;
		i = j;
	}
	return i;
}

size_t model_pick(const struct model *m, int64_t t, const struct model_req *q, size_t n)
{
	if (n == 0 || q[0].arrival > t)
		return 0;
	/* Past the age limit the oldest goes next, so that a stream of
	 * joining pieces cannot hold the head forever. */
	if ((double)(t - q[0].arrival) > ms_to_ns(m->d.age_limit))
		return chain_start(q, n, 0, t);
	for (size_t i = 0; i < n; i++)
		if (q[i].arrival <= t && model_joins(m, &q[i]))
			return i;
	if (m->d.policy == MODEL_FIFO)
		return chain_start(q, n, 0, t);
	/* A command the drive can serve without positioning (cache hit, or
	 * continuing the head's read) goes first wherever it is queued: the
	 * host's elevator would have sorted or merged it in. */
	for (size_t i = 0; i < n; i++)
		if (q[i].arrival <= t && model_position_cost(m, t, &q[i]) == 0)
			return i;
	size_t best = n, depth = n < m->d.queue_depth ? n : m->d.queue_depth;
	int64_t best_cost = 0;
	for (size_t i = 0; i < depth; i++) {
		if (q[i].arrival > t || predecessor(q, n, i, t) < n)
			continue;
		int64_t c = model_position_cost(m, t, &q[i]);
		if (best == n || c < best_cost)
			best = i, best_cost = c;
	}
	return best < n ? best : chain_start(q, n, 0, t);
}
