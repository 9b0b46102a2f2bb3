/*
 * server.c - the main thread: an epoll loop over the listening socket,
 * the connections and a signalfd.  Every message is validated here
 * (exact size for its type, magic, version, fds) before anything acts on
 * it; bad input costs one (rate-limited) log line and the message, never
 * the daemon.
 */
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include "access.h"
#include "cfg.h"
#include "closer.h"
#include "device.h"
#include "log.h"
#include "metrics.h"
#include "protocol.h"
#include "quota.h"
#include "stats.h"

/* A connection that sends this many malformed messages is closed. */
#define RD_MAX_MALFORMED 16
/* fds a message may carry before the kernel truncates (and closes) the rest. */
#define RD_MAX_FDS 8
/* One connection's share of a loop turn: after this much work (or 64
 * messages) the others go first.  A message may cost a millisecond or so
 * (a hit check of a 64 MiB window). */
#define RD_CONN_TURN_NS (1000000u)
/* Accepting pauses this long when the daemon is out of fds. */
#define RD_ACCEPT_PAUSE_NS (100ull * 1000000u)

/* Log budgets: bad input, refused connections, and the lines that end a
 * client's connection. */
static struct rd_log_limit bad_log, refused_log, closed_log;
/* fds held back for the moment the daemon runs out: to accept (and
 * close) a connection, instead of leaving it in the backlog while epoll
 * reports it again and again. */
static int reserve_fd = -1;
static uint64_t accept_paused_until;
static struct rd_conn *slow;    /* connections with a buffered reply */

void rd_conn_get(struct rd_conn *c)
{
	__atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
}

void rd_conn_put(struct rd_conn *c)
{
	if (__atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		close(c->fd);   /* a socket: never blocks */
		free(c->out);
		free(c);
	}
}

void rd_conn_send(struct rd_conn *c, const void *msg, size_t len)
{
	while (send(c->fd, msg, len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && errno == EINTR)
		;
}

/* ---- messages ---- */

static void malformed(struct rd_conn *c, const char *what)
{
	rd_stats.malformed++;
	c->malformed++;
	rd_log_limited(&bad_log, "client pid %d uid %u: %s; dropped", (int)c->pid,
	               (unsigned)c->uid, what);
}

static void answer_status(struct rd_conn *c, const struct lc_header *h, int status)
{

	struct lc_ensure_reply r = {
		.h = { .magic = LC_PROTO_MAGIC, .version = LC_PROTO_VERSION, .type = h->type,
		       .id = h->id },
		.status = status,
	};
	rd_conn_send(c, &r, sizeof r);
}

/* Answer a well-formed ENSURE, unless it is a look-ahead, which nobody
 * waits for (protocol.h). */
static void answer_ensure(struct rd_conn *c, const struct lc_ensure *m, int status)
{
	if (!(m->flags & LC_F_LOOKAHEAD))
		answer_status(c, &m->h, status);
}

/*
 * fstat without a round trip to the file system: on FUSE a plain fstat may
 * ask the server, and a hung server must not stall the main thread (only
 * its own device's worker).  Cached attributes are good enough: the
 * window is clipped at this size and pread stops at the real end anyway.
 */
static int quick_stat(int fd, struct stat *st)
{
	struct statx sx;
	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC,
	          STATX_TYPE | STATX_INO | STATX_SIZE, &sx) != 0)
		return fstat(fd, st);
	memset(st, 0, sizeof *st);
	st->st_mode = sx.stx_mode;
	st->st_ino = sx.stx_ino;
	st->st_size = (off_t)sx.stx_size;
	st->st_dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
	return 0;
}

/* Close a passed fd off this thread (closer.h); returns 1 if the user has
 * too many closes pending, and the connection should go. */
static int close_passed(struct rd_conn *c, int fd)
{
	return rd_close_later(fd, c->uid);
}

static void handle_ensure(struct rd_conn *c, const struct lc_ensure *m, int fd)
{
	struct stat st;
	const char *why = NULL;
	int fl = fcntl(fd, F_GETFL);
	if (quick_stat(fd, &st))
		why = "fstat failed";
	else if (!S_ISREG(st.st_mode))
		why = S_ISDIR(st.st_mode) ? "fd is a directory" :
		      S_ISFIFO(st.st_mode) ? "fd is a pipe" :
		      S_ISSOCK(st.st_mode) ? "fd is a socket" : "fd is not a regular file";
	else if (fl < 0 || (fl & O_ACCMODE) == O_WRONLY || (fl & O_PATH))
		why = "fd is not open for reading";
	else if (m->call >= LC_CALL_COUNT)
		why = "unknown call";
	if (why) {
		rd_stats.bad_requests++;
		rd_log_limited(&bad_log, "client pid %d uid %u: ENSURE: %s",
		               (int)c->pid, (unsigned)c->uid, why);
		answer_ensure(c, m, LC_ST_BADREQUEST);
		close_passed(c, fd);
		return;
	}
	rd_stats_client(c->pid, c->uid, 0);
	int direct = 0;
	struct rd_device *d = rd_device_for(st.st_dev, &direct);
	if (!d) {
		/* Memory-backed or unknown file systems have no disk to spare:
		 * the library reads them itself (LC_ST_DIRECT). */
		if (direct)
			rd_stats.direct_fs++;
		answer_ensure(c, m, direct ? LC_ST_DIRECT : LC_ST_BUSY);
		close_passed(c, fd);
		return;
	}
	rd_device_submit(d, c, m, fd, &st);
}

/* ---- buffered replies ---- */

static int epfd = -1;

static void watch_conn(struct rd_conn *c, uint32_t events)
{
	struct epoll_event ev = { .events = events | EPOLLRDHUP, .data.ptr = c };
	epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Send what c->out holds, one message at a time, as far as the socket
 * takes it.  Returns 0 when all is sent, 1 when some is left (the
 * connection then waits for EPOLLOUT and reads nothing more), -1 on
 * error. */
static int flush_out(struct rd_conn *c)
{
	while (c->out_off < c->out_len) {
		size_t end = c->out_off < c->out_first ? c->out_first : c->out_off + LC_STATS_CHUNK;
		if (end > c->out_len)
			end = c->out_len;
		ssize_t n = send(c->fd, c->out + c->out_off, end - c->out_off,
		                 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 1;
		if (n < 0)
			return -1;
		c->out_off = end;
	}
	free(c->out);
	c->out = NULL;
	return 0;
}

/* Queue a reply of several messages (the first first_len bytes long, the
 * rest LC_STATS_CHUNK each) and send what fits now; takes buf. */
static void send_buffered(struct rd_conn *c, char *buf, size_t len, size_t first_len)
{
	c->out = buf;
	c->out_len = len;
	c->out_off = 0;
	c->out_first = first_len;
	int rc = flush_out(c);
	if (rc == 1) {
		c->out_deadline = rd_now_ns() + (uint64_t)RD_REPLY_WAIT_MS * 1000000u;
		c->slow_next = slow;
		slow = c;
		rd_conn_get(c);   /* the slow list's reference */
		watch_conn(c, EPOLLOUT);
	} else if (rc < 0) {
		free(c->out);
		c->out = NULL;
	}
}

/* The statistics (JSON) or the metrics (Prometheus text): a reply header,
 * then the text in chunks, buffered (send_buffered); takes text. */
static void send_text(struct rd_conn *c, const struct lc_header *h, char *json)
{
	size_t len = json ? strlen(json) : 0;
	struct lc_stats_reply r = {
		.h = { .magic = LC_PROTO_MAGIC, .version = LC_PROTO_VERSION,
		       .type = LC_MSG_STATS_REPLY, .id = h->id },
		.json_length = (uint32_t)len,
		.chunks = (uint32_t)((len + LC_STATS_CHUNK - 1) / LC_STATS_CHUNK),
	};
	char *buf = malloc(sizeof r + len);
	if (!buf) {
		free(json);
		return;
	}
	memcpy(buf, &r, sizeof r);
	if (len)
		memcpy(buf + sizeof r, json, len);
	free(json);
	send_buffered(c, buf, sizeof r + len, sizeof r);
}

/* Returns 1 when the daemon should shut down.  sender: the uid that sent
 * this message (SCM_CREDENTIALS), (uid_t)-1 if unknown. */
static int handle_message(struct rd_conn *c, const char *buf, ssize_t n, int flags,
                          const int *fds, int nfds, uid_t sender)
{
	const struct lc_header *h = (const void *)buf;
	int fd_used = 0, stop = 0;
	if (flags & MSG_TRUNC) {
		malformed(c, "oversized message");
		goto out;
	}
	if (flags & MSG_CTRUNC) {
		malformed(c, "too many file descriptors");
		goto out;
	}
	if ((size_t)n < sizeof *h) {
		malformed(c, n ? "short message" : "empty message");
		goto out;
	}
	if (h->magic != LC_PROTO_MAGIC) {
		malformed(c, "bad magic");
		goto out;
	}
	if (h->version != LC_PROTO_VERSION) {
		rd_stats.bad_version++;
		rd_log_limited(&bad_log, "client pid %d: protocol version %u, not %u",
		               (int)c->pid, h->version, LC_PROTO_VERSION);
		answer_status(c, h, LC_ST_BADVERSION);
		goto out;
	}
	size_t want;
	switch (h->type) {
	case LC_MSG_ENSURE: want = sizeof(struct lc_ensure); break;
	case LC_MSG_REPORT: want = sizeof(struct lc_report); break;
	case LC_MSG_STATS: case LC_MSG_METRICS: case LC_MSG_SHUTDOWN:
		want = sizeof(struct lc_header);
		break;
	default:
		malformed(c, "unknown message type");
		goto out;
	}
	if ((size_t)n != want) {
		malformed(c, "wrong size for its type");
		if (h->type == LC_MSG_ENSURE)
			answer_status(c, h, LC_ST_BADREQUEST);
		goto out;
	}
	if (h->type != LC_MSG_ENSURE && nfds) {
		malformed(c, "unexpected file descriptor");
		goto out;
	}
	switch (h->type) {
	case LC_MSG_ENSURE:
		if (nfds != 1) {
			malformed(c, nfds ? "more than one file descriptor" : "ENSURE without a file descriptor");
			answer_ensure(c, (const void *)buf, LC_ST_BADREQUEST);
			goto out;
		}
		fd_used = 1;
		handle_ensure(c, (const void *)buf, fds[0]);
		break;
	case LC_MSG_REPORT:
		rd_stats_client(c->pid, c->uid, 1);
		rd_stats_report((const void *)buf);
		break;
	case LC_MSG_STATS:
		send_text(c, h, rd_stats_json());
		break;
	case LC_MSG_METRICS:
		send_text(c, h, rd_metrics_text());
		break;
	case LC_MSG_SHUTDOWN:
		/* Judged on who sent this message, not who connected: a
		 * root process's socket inherited by a child that dropped
		 * privileges carries the child's uid. */
		if (sender == (uid_t)-1 || !rd_access_may_control(&rd_access, sender)) {
			rd_log_limited(&bad_log,
			               "shutdown refused: uid %d is neither root nor the daemon's",
			               sender == (uid_t)-1 ? -1 : (int)sender);
			answer_status(c, h, LC_ST_BADREQUEST);
			break;
		}
		rd_log("shutdown asked by pid %d uid %u", (int)c->pid, (unsigned)sender);
		answer_status(c, h, LC_ST_OK);
		stop = 1;
		break;
	}
out:
	for (int i = fd_used; i < nfds; i++)
		close_passed(c, fds[i]);
	return stop;
}

/* ---- the loop ---- */

static void conn_close(struct rd_conn *c)
{
	epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
	shutdown(c->fd, SHUT_RDWR);
	rd_stats.conns_now--;
	rd_quota_give(c->uid, RD_Q_CONNS, 1);
	__atomic_store_n(&c->closed, 1, __ATOMIC_RELAXED);
	rd_conn_put(c);
}

/* Out of fds: take one connection off the backlog with the reserve fd
 * and close it (its client sees the daemon go away and backs off), then
 * stop accepting for a moment rather than spin on a backlog epoll keeps
 * reporting. */
static void accept_out_of_fds(void)
{
	rd_stats.accept_paused++;
	rd_log_limited(&bad_log, "accept: %s; pausing", strerror(errno));
	if (reserve_fd >= 0) {
		close(reserve_fd);
		int fd = accept4(rd_listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0)
			close(fd);
		reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	}
	struct epoll_event ev = { .events = 0, .data.ptr = NULL };
	epoll_ctl(epfd, EPOLL_CTL_MOD, rd_listen_fd, &ev);
	accept_paused_until = rd_now_ns() + RD_ACCEPT_PAUSE_NS;
}

static void refuse(int fd, uid_t uid, const char *why)
{
	rd_stats.conns_refused++;
	rd_log_limited(&refused_log, "connection of uid %d refused: %s", (int)uid, why);
	close(fd);
}

static void accept_all(void)
{
	for (;;) {
		int fd = accept4(rd_listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				accept_out_of_fds();
			return;
		}
		uid_t uid = (uid_t)-1;
		pid_t pid = 0;
		int allowed = rd_access_check_peer(&rd_access, fd, &uid, &pid);
		if (rd_stats.conns_now >= rd_cfg.max_conns) {
			refuse(fd, uid, "the daemon's connections are all taken");
			continue;
		}
		if (!allowed) {
			char acc[80];
			rd_stats.conns_denied++;
			rd_log_limited(&refused_log, "connection refused: uid %d (pid %d) is not "
			               "allowed by --access %s", (int)uid, (int)pid,
			               rd_access_describe(&rd_access, acc, sizeof acc));
			close(fd);
			continue;
		}
		if (rd_quota_full(uid, RD_Q_CLOSES)) {
			refuse(fd, uid, "too many of its fds wait to be closed");
			continue;
		}
		if (rd_quota_take(uid, RD_Q_CONNS, 1, 0)) {
			refuse(fd, uid, "at its limit of connections (--user-conns)");
			continue;
		}
		struct rd_conn *c = calloc(1, sizeof *c);
		if (c)
			*c = (struct rd_conn){ .fd = fd, .refs = 1, .pid = pid, .uid = uid,
			                       .own = pid == getpid() };
		int one = 1;   /* inherited from the listener; said again for a passed one */
		setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof one);
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP, .data.ptr = c };
		if (!c || epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev)) {
			rd_quota_give(uid, RD_Q_CONNS, 1);
			free(c);
			close(fd);
			continue;
		}
		rd_stats.conns_total++;
		if (++rd_stats.conns_now > rd_stats.conns_max)
			rd_stats.conns_max = rd_stats.conns_now;
	}
}

/* Split a message's ancillary data into fds and the sender's uid. */
static int take_control(struct msghdr *mh, int *fds, uid_t *sender)
{
	int nfds = 0;
	*sender = (uid_t)-1;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET)
			continue;
		if (cm->cmsg_type == SCM_CREDENTIALS && cm->cmsg_len >= CMSG_LEN(sizeof(struct ucred))) {
			struct ucred cred;
			memcpy(&cred, CMSG_DATA(cm), sizeof cred);
			*sender = cred.uid;
		} else if (cm->cmsg_type == SCM_RIGHTS) {
			int k = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			for (int j = 0; j < k && nfds < RD_MAX_FDS; j++)
				memcpy(&fds[nfds++], CMSG_DATA(cm) + (size_t)j * sizeof(int), sizeof(int));
		}
	}
	return nfds;
}

/* Read what a connection has (a bounded number of messages, so one busy
 * client cannot starve the rest); returns 1 to shut down. */
static int serve_conn(struct rd_conn *c, uint32_t events)
{
	if (c->out) {
		/* Nothing more is read until the buffered reply is sent. */
		int rc = (events & (EPOLLHUP | EPOLLERR)) ? -1 : flush_out(c);
		if (rc == 1)
			return 0;
		if (rc < 0) {
			conn_close(c);
			return 0;
		}
		watch_conn(c, EPOLLIN);
	}
	int cut = rd_quota_full(c->uid, RD_Q_CLOSES);
	uint64_t turn_end = rd_now_ns() + RD_CONN_TURN_NS;
	/* At least one message a turn, however late the turn began: a loaded
	 * machine can deschedule us past turn_end before the first read. */
	for (int i = 0; i < 64 && !cut && (i == 0 || rd_now_ns() < turn_end); i++) {
		char buf[LC_MAX_MESSAGE + 1] __attribute__((aligned(8)));
		char cbuf[CMSG_SPACE(sizeof(int) * RD_MAX_FDS) + CMSG_SPACE(sizeof(struct ucred))]
			__attribute__((aligned(8)));
		struct iovec iov = { buf, sizeof buf };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
		                     .msg_control = cbuf, .msg_controllen = sizeof cbuf };
		ssize_t n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			if (events & (EPOLLHUP | EPOLLRDHUP | EPOLLERR))
				break;
			return 0;
		}
		/* 0 bytes: the end, unless it came with ancillary data (every
		 * message carries credentials): an empty message, whose fds
		 * must be closed like any other's. */
		if (n < 0 || (n == 0 && mh.msg_controllen == 0))
			break;
		int fds[RD_MAX_FDS];
		uid_t sender;
		int nfds = take_control(&mh, fds, &sender);
		if (handle_message(c, buf, n, mh.msg_flags, fds, nfds, sender))
			return 1;
		if (c->malformed >= RD_MAX_MALFORMED) {
			rd_log_limited(&closed_log,
			               "client pid %d uid %u: too much malformed input; connection closed",
			               (int)c->pid, (unsigned)c->uid);
			break;
		}
		if (c->out)
			return 0;   /* a reply waits for the client to read it */
		cut = rd_quota_full(c->uid, RD_Q_CLOSES);
	}
	if (!cut && c->malformed < RD_MAX_MALFORMED) {
		/* Messages left (the turn's budget ran out, or the client hung
		 * up after sending them): come back later, so that a client's
		 * last messages are served, and the fds they carry closed, like
		 * any others.  Nothing left, or an error: the connection ends. */
		char peek;
		ssize_t n = recv(c->fd, &peek, 1, MSG_PEEK | MSG_DONTWAIT);
		if (n > 0 || (n < 0 && errno == EAGAIN && !(events & (EPOLLHUP | EPOLLERR))))
			return 0;
	}
	conn_close(c);
	return 0;
}

/* Once per loop turn: drop readers too slow for their reply, resume
 * accepting after a pause. */
static void housekeeping(uint64_t now)
{
	for (struct rd_conn **p = &slow; *p;) {
		struct rd_conn *c = *p;
		int closed = c->closed;
		if (!closed && c->out && now >= c->out_deadline) {
			rd_stats.slow_dropped++;
			rd_log_limited(&closed_log,
			               "client pid %d uid %u: did not read its reply in %u ms; dropped",
			               (int)c->pid, (unsigned)c->uid, RD_REPLY_WAIT_MS);
			conn_close(c);
			closed = 1;
		}
		if (closed || !c->out) {
			*p = c->slow_next;
			rd_conn_put(c);
		} else {
			p = &c->slow_next;
		}
	}
	if (accept_paused_until && now >= accept_paused_until) {
		accept_paused_until = 0;
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
		epoll_ctl(epfd, EPOLL_CTL_MOD, rd_listen_fd, &ev);
	}
}

int rd_server_run(void)
{
	int rc = 0;
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	int sfd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
	epfd = epoll_create1(EPOLL_CLOEXEC);
	reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (epfd < 0 || sfd < 0) {
		rd_log("epoll/signalfd: %s", strerror(errno));
		return 1;
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	epoll_ctl(epfd, EPOLL_CTL_ADD, rd_listen_fd, &ev);
	ev.data.ptr = &sfd;
	epoll_ctl(epfd, EPOLL_CTL_ADD, sfd, &ev);
	uint64_t idle_since = rd_now_ns();
	for (;;) {
		struct epoll_event evs[64];
		int n = epoll_wait(epfd, evs, 64, 100);
		if (n < 0 && errno != EINTR) {
			rd_log("epoll_wait: %s", strerror(errno));
			rc = 1;
			break;
		}
		int stop = 0;
		for (int i = 0; i < n; i++) {
			if (evs[i].data.ptr == NULL) {
				accept_all();
			} else if (evs[i].data.ptr == &sfd) {
				struct signalfd_siginfo si;
				if (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
					rd_log("signal %u: exiting", si.ssi_signo);
					stop = 1;
				}
			} else if (serve_conn(evs[i].data.ptr, evs[i].events)) {
				stop = 1;
			}
		}
		if (stop)
			break;
		uint64_t now = rd_now_ns();
		housekeeping(now);
		if (rd_cfg.idle_timeout) {
			if (rd_stats.conns_now || rd_device_busy())
				idle_since = now;
			else if (now - idle_since >= (uint64_t)rd_cfg.idle_timeout * 1000000000u) {
				rd_log("idle for %u s: exiting", rd_cfg.idle_timeout);
				break;
			}
		}
	}
	close(sfd);
	return rc;
}
