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

#include "cfg.h"
#include "device.h"
#include "log.h"
#include "metrics.h"
#include "protocol.h"
#include "stats.h"

/* A connection that sends this many malformed messages is closed. */
#define RD_MAX_MALFORMED 16
/* fds a message may carry before the kernel truncates (and closes) the rest. */
#define RD_MAX_FDS 8

static int listen_fd = -1;
static char socket_path[sizeof ((struct sockaddr_un *)0)->sun_path];
static ino_t socket_ino;
static dev_t socket_dev;
static int bad_sec;
static unsigned bad_suppressed;

void rd_conn_get(struct rd_conn *c)
{
	__atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
}

void rd_conn_put(struct rd_conn *c)
{
	if (__atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		close(c->fd);
		free(c);
	}
}

void rd_conn_send(struct rd_conn *c, const void *msg, size_t len)
{
	while (send(c->fd, msg, len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && errno == EINTR)
		;
}

static int mkdirs(const char *dir)
{
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof tmp, "%s", dir);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(tmp, 0755) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(tmp, 0755) && errno != EEXIST)
		return -1;
	return 0;
}

int rd_server_listen(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof sa.sun_path) {
		snprintf(err, errlen, "socket \"%s\": path too long", path);
		return -1;
	}
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		if (mkdirs(dir)) {
			snprintf(err, errlen, "socket \"%s\": cannot create %s: %s", path, dir,
			         strerror(errno));
			return -1;
		}
	}
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	/* A socket file nobody answers on is left over from a daemon that
	 * died; one that answers means another daemon is running. */
	int probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (probe >= 0) {
		int up = connect(probe, (struct sockaddr *)&sa, sizeof sa) == 0;
		close(probe);
		if (up) {
			snprintf(err, errlen, "socket \"%s\": another receptiond is listening", path);
			close(fd);
			return -1;
		}
	}
	unlink(path);
	mode_t old = umask(0);
	int rc = bind(fd, (struct sockaddr *)&sa, sizeof sa);
	umask(old);
	if (rc || chmod(path, 0666) || listen(fd, 512)) {
		snprintf(err, errlen, "socket \"%s\": %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	struct stat st;
	if (stat(path, &st) == 0) {
		socket_ino = st.st_ino;
		socket_dev = st.st_dev;
	}
	listen_fd = fd;
	snprintf(socket_path, sizeof socket_path, "%s", path);
	return 0;
}

/*
 * systemd's socket activation (sd_listen_fds(3)): LISTEN_PID names this
 * process and LISTEN_FDS the number of sockets passed from fd 3 on.  Read
 * here rather than through libsystemd: the protocol is these two
 * variables, and the daemon keeps no dependency beyond libc.
 */
#define RD_LISTEN_FDS_START 3

int rd_server_adopt_systemd(char *err, size_t errlen)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	if (!pid || !fds || strtol(pid, NULL, 10) != (long)getpid())
		return 0;
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	if (strcmp(fds, "1")) {
		snprintf(err, errlen, "systemd passed %s sockets (LISTEN_FDS); expected one", fds);
		return -1;
	}
	int fd = RD_LISTEN_FDS_START, type = 0, listening = 0;
	socklen_t tl = sizeof type, ll = sizeof listening;
	struct sockaddr_un sa;
	socklen_t sl = sizeof sa;
	memset(&sa, 0, sizeof sa);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) ||
	    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ll) ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) || sa.sun_family != AF_UNIX ||
	    type != SOCK_SEQPACKET || !listening) {
		snprintf(err, errlen, "the socket systemd passed is not a listening Unix "
		         "SOCK_SEQPACKET socket (ListenSequentialPacket=)");
		return -1;
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) || fcntl(fd, F_SETFD, FD_CLOEXEC)) {
		snprintf(err, errlen, "systemd's socket: %s", strerror(errno));
		return -1;
	}
	/* Its file is systemd's: socket_path stays empty, so it is never
	 * unlinked here; the name is only shown in the statistics. */
	static char name[sizeof sa.sun_path + 1];
	snprintf(name, sizeof name, "%.*s", (int)sizeof sa.sun_path, sa.sun_path);
	rd_cfg.socket_path = name;
	listen_fd = fd;
	return 1;
}

void rd_server_cleanup(void)
{
	/* Remove the socket only if it is still ours (a successor may have
	 * replaced it). */
	struct stat st;
	if (listen_fd >= 0 && socket_path[0] && stat(socket_path, &st) == 0 &&
	    st.st_ino == socket_ino && st.st_dev == socket_dev)
		unlink(socket_path);
}

/* ---- messages ---- */

static void malformed(struct rd_conn *c, const char *what)
{
	rd_stats.malformed++;
	c->malformed++;
	rd_log_limited(&bad_sec, &bad_suppressed, "client pid %d uid %u: %s; dropped", (int)c->pid,
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
		rd_log_limited(&bad_sec, &bad_suppressed, "client pid %d uid %u: ENSURE: %s",
		               (int)c->pid, (unsigned)c->uid, why);
		answer_ensure(c, m, LC_ST_BADREQUEST);
		close(fd);
		return;
	}
	rd_stats_client(c->pid, c->uid, 0);
	struct rd_device *d = rd_device_for(st.st_dev);
	if (!d) {
		answer_ensure(c, m, LC_ST_BUSY);
		close(fd);
		return;
	}
	rd_device_submit(d, c, m, fd, &st);
}

/* The statistics (JSON) or the metrics (Prometheus text): a reply header,
 * then the text in chunks. */
static void send_text(struct rd_conn *c, const struct lc_header *h, char *json)
{
	size_t len = json ? strlen(json) : 0;
	uint32_t chunks = (uint32_t)((len + LC_STATS_CHUNK - 1) / LC_STATS_CHUNK);
	struct lc_stats_reply r = {
		.h = { .magic = LC_PROTO_MAGIC, .version = LC_PROTO_VERSION,
		       .type = LC_MSG_STATS_REPLY, .id = h->id },
		.json_length = (uint32_t)len,
		.chunks = chunks,
	};
	rd_conn_send(c, &r, sizeof r);
	for (uint32_t i = 0; i < chunks; i++) {
		size_t off = (size_t)i * LC_STATS_CHUNK;
		size_t n = len - off < LC_STATS_CHUNK ? len - off : LC_STATS_CHUNK;
		/* The client reads the chunks right away; wait briefly rather
		 * than lose the tail of a large reply. */
		for (int tries = 0; tries < 1000; tries++) {
			if (send(c->fd, json + off, n, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0)
				break;
			if (errno != EAGAIN && errno != EINTR)
				break;
			usleep(1000);
		}
	}
	free(json);
}

/* Returns 1 when the daemon should shut down. */
static int handle_message(struct rd_conn *c, const char *buf, ssize_t n, int flags,
                          const int *fds, int nfds)
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
		malformed(c, "short message");
		goto out;
	}
	if (h->magic != LC_PROTO_MAGIC) {
		malformed(c, "bad magic");
		goto out;
	}
	if (h->version != LC_PROTO_VERSION) {
		rd_stats.bad_version++;
		rd_log_limited(&bad_sec, &bad_suppressed, "client pid %d: protocol version %u, not %u",
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
		if (c->uid != 0 && c->uid != getuid()) {
			rd_log("shutdown refused: uid %u is neither root nor the daemon's", (unsigned)c->uid);
			answer_status(c, h, LC_ST_BADREQUEST);
			break;
		}
		rd_log("shutdown asked by pid %d uid %u", (int)c->pid, (unsigned)c->uid);
		answer_status(c, h, LC_ST_OK);
		stop = 1;
		break;
	}
out:
	for (int i = fd_used; i < nfds; i++)
		close(fds[i]);
	return stop;
}

/* ---- the loop ---- */

static int epfd = -1;

static void conn_close(struct rd_conn *c)
{
	epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
	shutdown(c->fd, SHUT_RDWR);
	rd_stats.conns_now--;
	rd_conn_put(c);
}

/*
 * Whether a connected peer may use the daemon: the one place the access
 * model is applied, for a socket made here and one passed by systemd
 * alike.  Today whoever can open the socket file may: its mode and group
 * (0666 when made here; SocketMode= and SocketGroup= under systemd) are
 * the whole check.
 */
static int peer_allowed(const struct ucred *cred)
{
	(void)cred;
	return 1;
}

static void accept_all(void)
{
	for (;;) {
		int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				rd_log_limited(&bad_sec, &bad_suppressed, "accept: %s", strerror(errno));
			return;
		}
		if (rd_stats.conns_now >= rd_cfg.max_conns) {
			rd_stats.conns_refused++;
			rd_log_limited(&bad_sec, &bad_suppressed, "connection refused: %u connections open",
			               rd_cfg.max_conns);
			close(fd);
			continue;
		}
		struct ucred cred;
		socklen_t cl = sizeof cred;
		struct rd_conn *c = calloc(1, sizeof *c);
		if (!c || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) || !peer_allowed(&cred)) {
			free(c);
			close(fd);
			continue;
		}
		*c = (struct rd_conn){ .fd = fd, .refs = 1, .pid = cred.pid, .uid = cred.uid };
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP, .data.ptr = c };
		if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev)) {
			free(c);
			close(fd);
			continue;
		}
		rd_stats.conns_total++;
		if (++rd_stats.conns_now > rd_stats.conns_max)
			rd_stats.conns_max = rd_stats.conns_now;
	}
}

/* Read what a connection has (a bounded number of messages, so one busy
 * client cannot starve the rest); returns 1 to shut down. */
static int serve_conn(struct rd_conn *c, uint32_t events)
{
	for (int i = 0; i < 64; i++) {
		char buf[LC_MAX_MESSAGE + 1] __attribute__((aligned(8)));
		char cbuf[CMSG_SPACE(sizeof(int) * RD_MAX_FDS)] __attribute__((aligned(8)));
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
		if (n <= 0)
			break;   /* closed or failed */
		int fds[RD_MAX_FDS], nfds = 0;
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
			if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
				continue;
			int k = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			for (int j = 0; j < k && nfds < RD_MAX_FDS; j++)
				memcpy(&fds[nfds++], CMSG_DATA(cm) + (size_t)j * sizeof(int), sizeof(int));
		}
		if (handle_message(c, buf, n, mh.msg_flags, fds, nfds))
			return 1;
		if (c->malformed >= RD_MAX_MALFORMED) {
			rd_log("client pid %d uid %u: too much malformed input; connection closed",
			       (int)c->pid, (unsigned)c->uid);
			break;
		}
	}
	if (c->malformed < RD_MAX_MALFORMED && !(events & (EPOLLHUP | EPOLLRDHUP | EPOLLERR))) {
		/* Only the 64-message budget ran out; come back later. */
		char peek;
		ssize_t n = recv(c->fd, &peek, 1, MSG_PEEK | MSG_DONTWAIT);
		if (n > 0 || (n < 0 && errno == EAGAIN))
			return 0;
	}
	conn_close(c);
	return 0;
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
	if (epfd < 0 || sfd < 0) {
		rd_log("epoll/signalfd: %s", strerror(errno));
		return 1;
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	epoll_ctl(epfd, EPOLL_CTL_ADD, listen_fd, &ev);
	ev.data.ptr = &sfd;
	epoll_ctl(epfd, EPOLL_CTL_ADD, sfd, &ev);
	uint64_t idle_since = rd_now_ns();
	for (;;) {
		struct epoll_event evs[64];
		int n = epoll_wait(epfd, evs, 64, 1000);
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
		if (rd_cfg.idle_timeout) {
			uint64_t now = rd_now_ns();
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
