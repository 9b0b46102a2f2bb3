/*
 * run.c - the event loop: Poisson session arrivals, one persistent HTTP
 * connection per session, fixed-schedule segment requests, client-side
 * link emulation and per-segment deadlines.  Single-threaded, epoll
 * (edge-triggered) plus one timer per session in a min-heap, all on
 * CLOCK_MONOTONIC nanoseconds.
 *
 * Link emulation (no netem here): a request is written `delay` after its
 * planned time (uplink), the socket is read only as fast as the session's
 * link rate allows (token bucket refilled continuously, read in `tick`
 * quanta; the small SO_RCVBUF set before connect makes the server's send
 * block, i.e. real TCP back-pressure), and data count as received `delay`
 * after they were read (downlink).
 */
#include "run.h"
#include "content.h"
#include "heap.h"
#include "http.h"
#include "past.h"

#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define NS 1000000000LL
#define HDR_MAX 2048
#define OUT_MAX 2048
#define READ_BUF (256 * 1024)
#define READS_PER_TURN 16   /* unpaced sessions yield to others after this many reads */

const char *const vl_error_names[VL_ERR_KINDS] = {
	[VL_ERR_CONNECT] = "connect",
	[VL_ERR_CLOSED] = "closed",
	[VL_ERR_HTTP] = "http",
	[VL_ERR_DEADLINE] = "deadline",
	[VL_ERR_INTEGRITY] = "integrity",
	[VL_ERR_CLIENT] = "client",
};

struct sess {
	struct heap_node timer;       /* first: the heap hands back &timer */
	struct sess *prev, *next;     /* active list */
	const struct lib_video *v;
	int fd;
	int64_t start;                /* planned start, ns */
	int64_t prev_done;            /* client time segment next_recv-1 arrived */
	int64_t burst_done;           /* ... and the burst's last one, 0 = not yet */
	unsigned nseg, next_send, next_recv;
	unsigned conn_gen;            /* bumped by every connect */
	/* link */
	double rate;                  /* bytes per ns, 0 = unlimited */
	double tokens, cap;
	int64_t tok_ns;
	int64_t resume;               /* paced read due, INT64_MAX if none */
	unsigned connected : 1, readable : 1, writable : 1, close_after : 1;
	unsigned judged : 1;          /* started after the warm-up */
	unsigned past : 1;            /* carried on from before the start */
	/* request bytes not yet written */
	unsigned out_len, out_off;
	char out[OUT_MAX];
	/* response being received */
	int in_body;
	uint64_t body_left, body_off;
	unsigned hdr_len;
	char hdr[HDR_MAX];
};

struct run {
	const struct vl_config *cfg;
	struct vl_result *res;
	struct workload wl;
	struct rng arrivals;
	struct heap timers;
	int ep;
	struct sess *active;
	uint64_t nactive;
	int64_t t0, delay_ns;
	int64_t judged_from;          /* end of the warm-up */
	char *buf;
};

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NS + ts.tv_nsec;
}

double vl_failed_pct(const struct vl_result *res)
{
	return res->started ? 100.0 * (double)res->failed / (double)res->started : 0.0;
}

/* When segment k is asked for, in client time (the request reaches the server
 * delay_ns later), or NEVER while that is not yet known.  As in the papers,
 * each burst segment is asked for as soon as the previous reply has arrived;
 * later ones keep a fixed schedule from the planned start.  A burst that
 * overruns the first scheduled request (HD at 3.5 Mbit/s: 18 s) shifts the
 * whole schedule once by the overrun, as a player whose buffer fills late
 * drains it late; otherwise the backlog would fail such sessions by
 * construction.  Only k == next_recv or k == next_send are asked about. */
#define NEVER INT64_MAX
static int64_t sched_ns(struct run *r, struct sess *s, unsigned k)
{
	const struct workload_params *p = &r->cfg->wl;
	if (k == 0)
		return s->start;
	if (k < p->burst)
		return k == s->next_recv ? s->prev_done : NEVER;
	if (!s->burst_done)
		return NEVER;
	int64_t first = s->start + (int64_t)llround(workload_send_time(p, p->burst) * NS);
	int64_t shift = s->burst_done > first ? s->burst_done - first : 0;
	return s->start + (int64_t)llround(workload_send_time(p, k) * NS) + shift;
}

static void seg(const struct run *r, const struct sess *s, unsigned k, struct segment *out)
{
	workload_segment(&r->cfg->wl, s->v, k, out);
}

static void sess_close_fd(struct sess *s)
{
	if (s->fd >= 0)
		close(s->fd);  /* also leaves the epoll set */
	s->fd = -1;
	s->connected = s->readable = s->writable = 0;
	s->out_len = s->out_off = 0;
	s->in_body = 0;
	s->hdr_len = 0;
}

static void sess_free(struct run *r, struct sess *s)
{
	sess_close_fd(s);
	heap_set(&r->timers, &s->timer, INT64_MAX);
	if (s->prev)
		s->prev->next = s->next;
	else
		r->active = s->next;
	if (s->next)
		s->next->prev = s->prev;
	r->nactive--;
	free(s);
}

static void sess_fail(struct run *r, struct sess *s, enum vl_error kind, const char *fmt, ...)
{
	struct vl_result *res = r->res;
	if (!s->judged) {  /* a warm-up or past session: counted apart */
		if (s->past)
			res->past_failed++;
		else
			res->warmup_failed++;
		sess_free(r, s);
		return;
	}
	res->failed++;
	res->errors[kind]++;
	if (!res->first_error[0]) {
		va_list ap;
		int n = snprintf(res->first_error, sizeof res->first_error, "%s: ", vl_error_names[kind]);
		va_start(ap, fmt);
		vsnprintf(res->first_error + n, sizeof res->first_error - (size_t)n, fmt, ap);
		va_end(ap);
	}
	sess_free(r, s);
}

/* Append request k to the output buffer; -1 if it does not fit. */
static int queue_request(struct run *r, struct sess *s, unsigned k)
{
	const struct vl_config *c = r->cfg;
	size_t room = OUT_MAX - s->out_len;
	struct segment g;
	seg(r, s, k, &g);
	/* A whole chunk file is asked for without a Range; a video's one file
	 * always with one. */
	char range[64] = "";
	if (g.chunk < 0 || !g.whole_file)
		snprintf(range, sizeof range, "Range: bytes=%llu-%llu\r\n",
			 (unsigned long long)g.file_off, (unsigned long long)(g.file_off + g.len - 1));
	char *out = s->out + s->out_len;
	int n = g.chunk >= 0
		? snprintf(out, room, "GET %s/" LIB_CHUNK_FMT " HTTP/1.1\r\nHost: %s\r\n%s\r\n",
			   c->prefix, s->v->name, (unsigned long long)g.chunk, c->host, range)
		: snprintf(out, room, "GET %s/%s HTTP/1.1\r\nHost: %s\r\n%s\r\n",
			   c->prefix, s->v->name, c->host, range);
	if (n < 0 || (size_t)n >= room)
		return -1;
	s->out_len += (unsigned)n;
	r->res->requests++;
	return 0;
}

static int sess_connect(struct run *r, struct sess *s)
{
	const struct vl_config *c = r->cfg;
	int one = 1;
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.ptr = s };

	s->conn_gen++;
	s->fd = socket(c->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->fd < 0) {
		sess_fail(r, s, VL_ERR_CLIENT, "socket: %s", strerror(errno));
		return -1;
	}
	/* Before connect, so the window the server sees is small from the start. */
	if (c->rcvbuf > 0)
		setsockopt(s->fd, SOL_SOCKET, SO_RCVBUF, &c->rcvbuf, sizeof c->rcvbuf);
	/* Ethernet-sized segments: with loopback's 64 KiB MSS the server's initial
	 * cwnd (and so its autotuned send buffer) would swallow whole segments. */
	if (c->mss > 0)
		setsockopt(s->fd, IPPROTO_TCP, TCP_MAXSEG, &c->mss, sizeof c->mss);
	setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (connect(s->fd, (const struct sockaddr *)&c->addr, c->addrlen) < 0 && errno != EINPROGRESS) {
		sess_fail(r, s, VL_ERR_CONNECT, "%s:%s: %s", c->host, c->port, strerror(errno));
		return -1;
	}
	if (epoll_ctl(r->ep, EPOLL_CTL_ADD, s->fd, &ev) < 0) {
		sess_fail(r, s, VL_ERR_CLIENT, "epoll_ctl: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* Reconnect after the server closed an idle (or Connection: close) connection,
 * re-sending whatever was asked and not yet answered. */
static int sess_reconnect(struct run *r, struct sess *s)
{
	sess_close_fd(s);
	r->res->reconnects++;
	if (sess_connect(r, s))
		return -1;
	for (unsigned k = s->next_recv; k < s->next_send; k++)
		if (queue_request(r, s, k)) {
			sess_fail(r, s, VL_ERR_CLIENT, "request buffer full");
			return -1;
		}
	return 0;
}

static int sess_flush(struct run *r, struct sess *s)
{
	while (s->connected && s->writable && s->out_off < s->out_len) {
		ssize_t n = write(s->fd, s->out + s->out_off, s->out_len - s->out_off);
		if (n < 0 && errno == EAGAIN) {
			s->writable = 0;
		} else if (n < 0) {
			sess_fail(r, s, VL_ERR_CLOSED, "%s: write: %s", s->v->name, strerror(errno));
			return -1;
		} else {
			s->out_off += (unsigned)n;
		}
	}
	if (s->out_off == s->out_len)
		s->out_off = s->out_len = 0;
	return 0;
}

static void link_refill(struct sess *s, int64_t now)
{
	s->tokens += (double)(now - s->tok_ns) * s->rate;
	if (s->tokens > s->cap)
		s->tokens = s->cap;
	s->tok_ns = now;
}

/* Send every request that is due; 0, or -1 if the session ended. */
static int sess_send_due(struct run *r, struct sess *s, int64_t now)
{
	const struct vl_config *c = r->cfg;
	while (s->next_send < s->nseg && sched_ns(r, s, s->next_send) <= now - r->delay_ns) {
		int64_t late = now - (sched_ns(r, s, s->next_send) + r->delay_ns);
		hist_add(&r->res->lateness, (uint64_t)late);
		if ((double)late > c->late * NS)
			r->res->late_sends++;
		if (s->next_recv == s->next_send) {
			/* The link was idle: the response starts arriving from now on. */
			s->tokens = 0;
			s->tok_ns = now;
		}
		if (s->fd < 0 && sess_reconnect(r, s))
			return -1;
		if (queue_request(r, s, s->next_send)) {
			sess_fail(r, s, VL_ERR_CLIENT, "request buffer full");
			return -1;
		}
		s->next_send++;
	}
	return sess_flush(r, s);
}

/* A segment's last byte was read at `now`; -1 if the session ended. */
static int segment_done(struct run *r, struct sess *s, int64_t now)
{
	int64_t sched = sched_ns(r, s, s->next_recv);
	int64_t lat = now + r->delay_ns - sched;
	struct vl_result *res = r->res;

	if (s->judged)
		hist_add(&res->latency, (uint64_t)lat);
	if ((double)lat > r->cfg->deadline * NS) {
		sess_fail(r, s, VL_ERR_DEADLINE, "%s segment %u took %.3f s", s->v->name,
			  s->next_recv, (double)lat / NS);
		return -1;
	}
	res->segments += now >= r->judged_from;
	s->prev_done = now + r->delay_ns;
	if (s->next_recv + 1 == r->cfg->wl.burst)
		s->burst_done = s->prev_done;
	s->next_recv++;
	s->in_body = 0;
	s->hdr_len = 0;
	if (s->close_after) {
		/* Server announced the close: reconnect lazily, re-asking the rest. */
		s->close_after = 0;
		if (s->next_recv < s->next_send)
			return sess_reconnect(r, s);
		sess_close_fd(s);
	}
	return 0;
}

static int check_head(struct run *r, struct sess *s, const struct http_head *h)
{
	unsigned k = s->next_recv;
	struct segment g;
	seg(r, s, k, &g);
	uint64_t off = g.file_off, len = g.len;
	const char *why = NULL;

	if (h->chunked)
		why = "chunked transfer encoding";
	else if (h->length < 0)
		why = "no Content-Length";
	else if ((uint64_t)h->length != len)
		why = "wrong Content-Length";
	else if (!(h->status == 206 && (uint64_t)h->range_first == off &&
		   (uint64_t)h->range_last == off + len - 1) &&
		 !(h->status == 200 && g.whole_file))
		why = "wrong status or Content-Range";
	if (why) {
		sess_fail(r, s, VL_ERR_HTTP, "%s segment %u: status %d, %s", s->v->name, k, h->status, why);
		return -1;
	}
	s->in_body = 1;
	s->body_left = len;
	s->body_off = g.off;   /* the content check goes by video offset */
	s->close_after = h->close;
	return 0;
}

/* content_check, a word at a time where the offset is 8-aligned: the
 * client checks every byte at hundreds of MB/s, so this is its hot loop. */
static long check_bytes(uint64_t seed, uint64_t off, const char *p, size_t len)
{
	size_t i = (8 - (off & 7)) & 7;
	long bad;
	if (i > len)
		i = len;
	if (i && (bad = content_check(seed, off, p, i)) >= 0)
		return bad;
	for (; i + 8 <= len; i += 8) {
		uint64_t w;
		memcpy(&w, p + i, 8);
		if (w != content_mix(seed + ((off + i) >> 3)))
			return (long)i + content_check(seed, off + i, p + i, 8);
	}
	if (i < len && (bad = content_check(seed, off + i, p + i, len - i)) >= 0)
		return (long)i + bad;
	return -1;
}

/* Feed received bytes to the response parser; -1 if the session ended. */
static int sess_consume(struct run *r, struct sess *s, const char *p, size_t n, int64_t now)
{
	unsigned gen = s->conn_gen;
	/* Stop at a reconnect: anything after a Connection: close reply is not ours. */
	while (n > 0 && s->conn_gen == gen && s->fd >= 0) {
		if (s->next_recv >= s->next_send) {
			sess_fail(r, s, VL_ERR_HTTP, "%s: data without a request", s->v->name);
			return -1;
		}
		if (!s->in_body) {
			size_t take = n < HDR_MAX - s->hdr_len ? n : HDR_MAX - s->hdr_len;
			size_t from = s->hdr_len > 3 ? s->hdr_len - 3 : 0, end = 0;
			memcpy(s->hdr + s->hdr_len, p, take);
			s->hdr_len += (unsigned)take;
			for (size_t i = from; i + 4 <= s->hdr_len; i++)
				if (!memcmp(s->hdr + i, "\r\n\r\n", 4)) {
					end = i + 4;
					break;
				}
			if (!end) {
				if (s->hdr_len == HDR_MAX) {
					sess_fail(r, s, VL_ERR_HTTP, "%s: response head too long", s->v->name);
					return -1;
				}
				return 0;
			}
			struct http_head h;
			size_t used = end - (s->hdr_len - take);
			if (http_parse_head(s->hdr, end, &h)) {
				sess_fail(r, s, VL_ERR_HTTP, "%s: malformed response head", s->v->name);
				return -1;
			}
			p += used, n -= used;
			if (check_head(r, s, &h))
				return -1;
			continue;
		}
		size_t m = n < s->body_left ? n : (size_t)s->body_left;
		long bad = check_bytes(s->v->seed, s->body_off, p, m);
		if (bad >= 0) {
			sess_fail(r, s, VL_ERR_INTEGRITY, "%s offset %llu: wrong byte", s->v->name,
				  (unsigned long long)(s->body_off + (uint64_t)bad));
			return -1;
		}
		if (now >= r->judged_from)
			r->res->bytes += m;
		s->body_off += m, s->body_left -= m;
		p += m, n -= m;
		if (s->body_left == 0 && segment_done(r, s, now))
			return -1;
	}
	return 0;
}

/* Read what the link allows; -1 if the session ended. */
static int sess_read(struct run *r, struct sess *s, int64_t now)
{
	s->resume = INT64_MAX;
	for (int turn = 0; s->fd >= 0 && s->connected && s->readable; turn++) {
		size_t want = READ_BUF;
		if (s->rate > 0) {
			double need = s->cap;
			link_refill(s, now);
			/* The last bytes of the last outstanding reply need not wait for a full quantum. */
			if (s->in_body && s->next_recv + 1 == s->next_send && (double)s->body_left < need)
				need = (double)s->body_left;
			if (s->tokens < need) {
				s->resume = now + (int64_t)ceil((need - s->tokens) / s->rate);
				return 0;
			}
			want = (size_t)s->tokens < want ? (size_t)s->tokens : want;
		} else if (turn == READS_PER_TURN) {
			s->resume = now + 1;  /* let the others run (after this timer pass) */
			return 0;
		}
		ssize_t n = read(s->fd, r->buf, want);
		if (n < 0 && errno == EAGAIN) {
			s->readable = 0;
		} else if (n <= 0) {
			if (s->next_recv == s->next_send) {  /* idle close: fine, reconnect when needed */
				sess_close_fd(s);
				return 0;
			}
			sess_fail(r, s, VL_ERR_CLOSED, "%s segment %u: %s", s->v->name, s->next_recv,
				  n == 0 ? "server closed the connection" : strerror(errno));
			return -1;
		} else {
			if (s->rate > 0)
				s->tokens -= (double)n;
			if ((size_t)n < want)
				s->readable = 0;
			if (sess_consume(r, s, r->buf, (size_t)n, now))
				return -1;
		}
	}
	return 0;
}

/* Everything due for a session at `now`, then re-arm its timer. */
static void sess_step(struct run *r, struct sess *s, int64_t now)
{
	int64_t wake = INT64_MAX;

	if (sess_send_due(r, s, now) || sess_read(r, s, now))
		return;
	if (s->next_recv < s->next_send) {
		int64_t due = sched_ns(r, s, s->next_recv) + (int64_t)llround(r->cfg->deadline * NS) -
			      r->delay_ns;
		if (now >= due) {
			if (s->judged)
				hist_add(&r->res->latency, (uint64_t)(now + r->delay_ns - sched_ns(r, s, s->next_recv)));
			sess_fail(r, s, VL_ERR_DEADLINE, "%s segment %u not received in %.1f s",
				  s->v->name, s->next_recv, r->cfg->deadline);
			return;
		}
		wake = due;
	} else if (s->next_recv == s->nseg) {
		r->res->finished += s->judged;
		sess_free(r, s);
		return;
	}
	if (s->next_send < s->nseg) {
		int64_t t = sched_ns(r, s, s->next_send);
		if (t != NEVER && t + r->delay_ns < wake)
			wake = t + r->delay_ns;
	}
	wake = s->resume < wake ? s->resume : wake;
	if (heap_set(&r->timers, &s->timer, wake))
		sess_fail(r, s, VL_ERR_CLIENT, "out of memory for timers");
}

static void sess_event(struct run *r, struct sess *s, uint32_t ev, int64_t now)
{
	if (!s->connected && (ev & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
		int err = 0;
		socklen_t len = sizeof err;
		getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len);
		if (err || (ev & EPOLLERR)) {
			sess_fail(r, s, VL_ERR_CONNECT, "%s:%s: %s", r->cfg->host, r->cfg->port,
				  strerror(err ? err : ECONNREFUSED));
			return;
		}
		s->connected = 1;
	}
	if (ev & EPOLLOUT)
		s->writable = 1;
	if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		s->readable = 1;
	if ((ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) && s->next_recv == s->next_send && !s->in_body &&
	    s->hdr_len == 0)
		sess_close_fd(s);  /* idle connection closed by the server */
	sess_step(r, s, now);
}

enum sess_kind { SESS_JUDGED, SESS_WARMUP, SESS_PAST };

/* A new session in the active list, with its link; NULL (counted as a
 * failure of the client) if out of memory. */
static struct sess *sess_new(struct run *r, int64_t planned, const struct lib_video *v,
			     unsigned nseg, enum sess_kind kind)
{
	const struct vl_config *c = r->cfg;
	struct vl_result *res = r->res;
	uint64_t n = res->started + res->warmup_started + res->past_running;
	struct sess *s = calloc(1, sizeof *s);
	switch (kind) {
	case SESS_JUDGED: res->started++; break;
	case SESS_WARMUP: res->warmup_started++; break;
	case SESS_PAST: res->past_running++; break;
	}
	if (!s) {
		if (kind == SESS_JUDGED) {
			res->failed++;
			res->errors[VL_ERR_CLIENT]++;
		} else {
			++*(kind == SESS_PAST ? &res->past_failed : &res->warmup_failed);
		}
		return NULL;
	}
	s->timer.pos = HEAP_NONE;
	s->fd = -1;
	s->start = planned;
	s->v = v;
	s->nseg = nseg;
	s->judged = kind == SESS_JUDGED;
	s->past = kind == SESS_PAST;
	double bps = c->links[n % c->nlinks];
	s->rate = bps / 8.0 / NS;
	/* One tick of link time per read, at least one page. */
	s->cap = fmax(bps / 8.0 * c->tick, 4096.0);
	s->resume = INT64_MAX;
	s->next = r->active;
	if (r->active)
		r->active->prev = s;
	r->active = s;
	if (++r->nactive > res->max_active)
		res->max_active = r->nactive;
	return s;
}

static void start_session(struct run *r, int64_t planned, int64_t now)
{
	const struct vl_config *c = r->cfg;
	const struct lib_video *v = workload_video(&r->wl);
	unsigned nseg = workload_segments_viewed(&c->wl, v,
						 workload_view(&r->wl, workload_video_seconds(v)));
	struct sess *s = sess_new(r, planned, v, nseg,
				  planned >= r->judged_from ? SESS_JUDGED : SESS_WARMUP);
	if (!s)
		return;
	hist_add(&r->res->lateness, (uint64_t)(now - planned));
	if (sess_connect(r, s))
		return;
	sess_step(r, s, now);
}

/* A past session still watching at the start: it connects now and asks
 * for its next segment when that is due, its burst long done. */
static int resume_session(void *ctx, const struct past_session *p)
{
	struct run *r = ctx;
	if (p->next >= p->nseg)
		return 0;   /* it asked for its last segment before the start */
	int64_t planned = r->t0 + (int64_t)llround(p->start * NS);
	struct sess *s = sess_new(r, planned, p->v, p->nseg, SESS_PAST);
	if (!s)
		return 0;
	s->next_send = s->next_recv = p->next;
	s->burst_done = s->prev_done = planned;
	if (sess_connect(r, s) == 0)
		sess_step(r, s, r->t0);
	return 0;
}

static void progress(struct run *r, int64_t now, uint64_t *last_bytes, int64_t *last_t)
{
	struct vl_result *res = r->res;
	double dt = (double)(now - *last_t) / NS;
	fprintf(stderr, "vidload: %6.1fs%s active %llu started %llu finished %llu failed %llu (%.2f%%) %.1f MB/s\n",
		(double)(now - r->t0) / NS, now < r->judged_from ? " warm-up" : "",
		(unsigned long long)r->nactive,
		(unsigned long long)res->started, (unsigned long long)res->finished,
		(unsigned long long)res->failed, vl_failed_pct(res),
		dt > 0 ? (double)(res->bytes - *last_bytes) / dt / 1e6 : 0.0);
	*last_bytes = res->bytes;
	*last_t = now;
}

/* Grows one of the timeline's arrays to `cap` elements of `size` bytes;
 * 0, or -1 with the array as it was. */
static int grow(void *arrayp, size_t cap, size_t size)
{
	void **a = arrayp;
	void *p = realloc(*a, cap * size);
	if (!p)
		return -1;
	*a = p;
	return 0;
}

static void timeline_add(struct run *r, int64_t now)
{
	struct vl_timeline *tl = &r->res->timeline;
	const struct vl_result *res = r->res;
	if (tl->n == tl->cap) {
		size_t cap = tl->cap ? tl->cap * 2 : 64;
		if (grow(&tl->t, cap, sizeof *tl->t) || grow(&tl->active, cap, sizeof *tl->active) ||
		    grow(&tl->failed, cap, sizeof *tl->failed) ||
		    grow(&tl->past_failed, cap, sizeof *tl->past_failed))
			return;  /* out of memory: the timeline stops, the run goes on */
		tl->cap = cap;
	}
	tl->t[tl->n] = (double)(now - r->t0) / NS;
	tl->active[tl->n] = r->nactive;
	tl->failed[tl->n] = res->failed + res->warmup_failed + res->past_failed;
	tl->past_failed[tl->n++] = res->past_failed;
}

void vl_result_free(struct vl_result *res)
{
	free(res->timeline.t);
	free(res->timeline.active);
	free(res->timeline.failed);
	free(res->timeline.past_failed);
	res->timeline = (struct vl_timeline){ 0 };
}

static double cpu_seconds(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
	       ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
}

int vl_run(const struct vl_config *cfg, uint64_t seed, struct vl_result *res)
{
	struct run r = { .cfg = cfg, .res = res, .ep = -1 };
	struct epoll_event events[256];
	char err[256];
	int rc = -1;

	*res = (struct vl_result){ .rate = cfg->rate, .duration = cfg->duration,
				   .warmup = cfg->warmup, .past = cfg->past, .seed = seed };
	hist_init(&res->latency);
	hist_init(&res->lateness);
	heap_init(&r.timers);
	if (workload_init(&r.wl, &cfg->wl, &cfg->lib, 0, seed, err, sizeof err)) {
		fprintf(stderr, "vidload: %s\n", err);
		goto out;
	}
	r.buf = malloc(READ_BUF);
	r.ep = epoll_create1(EPOLL_CLOEXEC);
	if (!r.buf || r.ep < 0) {
		fprintf(stderr, "vidload: %s\n", r.buf ? strerror(errno) : "out of memory");
		goto out;
	}
	rng_init(&r.arrivals, seed, RNG_ARRIVALS);
	r.delay_ns = (int64_t)llround(cfg->delay * NS);

	double cpu0 = cpu_seconds();
	int64_t now = now_ns();
	r.t0 = now;
	r.judged_from = now + (int64_t)llround(cfg->warmup * NS);
	int64_t end = r.judged_from + (int64_t)llround(cfg->duration * NS);
	int64_t arrival = cfg->rate > 0 ? now + (int64_t)llround(rng_exp(&r.arrivals, 1.0 / cfg->rate) * NS)
					: INT64_MAX;
	int64_t step = (int64_t)llround(cfg->progress * NS), next_progress = step > 0 ? now + step : INT64_MAX;
	int64_t last_t = now;
	uint64_t last_bytes = 0;
	int64_t tl_step = (int64_t)llround(cfg->timeline * NS);
	int64_t next_sample = tl_step > 0 ? now : INT64_MAX;
	if (past_each(cfg, seed, resume_session, &r, err, sizeof err)) {
		fprintf(stderr, "vidload: %s\n", err);
		goto out;
	}

	for (;;) {
		now = now_ns();
		if (now >= end)
			break;
		while (arrival <= now && arrival < end) {
			start_session(&r, arrival, now);
			arrival += (int64_t)llround(rng_exp(&r.arrivals, 1.0 / cfg->rate) * NS);
		}
		struct heap_node *t;
		while ((t = heap_top(&r.timers)) && t->when <= now)
			sess_step(&r, (struct sess *)t, now);
		if (now >= next_progress) {
			if (!cfg->quiet)
				progress(&r, now, &last_bytes, &last_t);
			next_progress += step;
		}
		if (now >= next_sample) {
			timeline_add(&r, now);
			next_sample += tl_step;
		}
		int64_t wake = end;
		wake = arrival < wake ? arrival : wake;
		wake = next_progress < wake ? next_progress : wake;
		wake = next_sample < wake ? next_sample : wake;
		if ((t = heap_top(&r.timers)) && t->when < wake)
			wake = t->when;
		int64_t wait = wake > now ? wake - now : 0;
		struct timespec ts = { .tv_sec = wait / NS, .tv_nsec = wait % NS };
		int n = epoll_pwait2(r.ep, events, 256, &ts, NULL);
		if (n < 0 && errno != EINTR) {
			fprintf(stderr, "vidload: epoll_pwait2: %s\n", strerror(errno));
			goto out;
		}
		now = now_ns();
		for (int i = 0; i < n; i++)
			sess_event(&r, events[i].data.ptr, events[i].events, now);
	}
	/* Sessions still running at the end count as completed if nothing failed. */
	for (struct sess *s = r.active; s; s = s->next)
		res->active_at_end += s->judged;
	if (tl_step > 0)
		timeline_add(&r, now);
	res->elapsed = (double)(now - r.judged_from) / NS;
	res->cpu_seconds = cpu_seconds() - cpu0;
	rc = 0;
out:
	while (r.active)
		sess_free(&r, r.active);
	if (r.ep >= 0)
		close(r.ep);
	free(r.buf);
	heap_free(&r.timers);
	workload_free(&r.wl);
	return rc;
}
