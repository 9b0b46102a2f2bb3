/*
 * client.c - the connection to receptiond.
 *
 * One SOCK_SEQPACKET connection per thread, made on the thread's first
 * miss, so threads never share a socket or a lock and replies need no
 * routing.  A request is synchronous and its wait bounded by
 * LIBCEPTION_TIMEOUT_MS.  Any failure (no daemon, a dead or slow one, a
 * short reply) closes the connection and makes every thread of the
 * process skip the daemon for BACKOFF_NS: an absent daemon costs one
 * failed connect per second, not one per call.
 *
 * The socket is non-blocking throughout: a full listen backlog or a full
 * socket buffer is a failure, never a hang.
 *
 * Our descriptor lives in the program's fd table, where the program may
 * close it (daemons close everything they do not know) and reuse the
 * number.  Before every use the socket's inode is checked against the one
 * we connected, so we never write into a descriptor that became the
 * program's.  It is moved to a high number (FD_FLOOR) so that the numbers
 * open() and friends give the program -- always the lowest free one --
 * are the ones it would get without the library.
 *
 * Every socket is an fd the program may need: under an fd limit below
 * MIN_NOFILE the library never connects (calls pass through), and the
 * process's sockets stay below 1/SOCKET_SHARE of the limit (a thread
 * beyond that passes its calls through).
 *
 * Before the first fd goes out, the listener must be root or this
 * process's own user (SO_PEERCRED): whoever made the socket path, no
 * other user's program ever receives our descriptors (docs/receptiond.md
 * "Access model").
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "shim.h"

#define BACKOFF_NS 1000000000ull
#define MIN_NOFILE 256
#define SOCKET_SHARE 16

struct conn {
	int fd;            /* valid when open */
	int open;
	unsigned gen;      /* generation it was made in (see atfork) */
	uint64_t dev, ino; /* of the socket, to recognise it later */
	uint64_t next_id;
};

static __thread struct conn conn __attribute__((tls_model("initial-exec")));
static pthread_key_t conn_key;
static int have_key;
/* Bumped in a forked child: connections inherited from the parent share
 * the parent's socket and must not be used. */
static unsigned generation;
static uint64_t backoff_until;  /* CLOCK_MONOTONIC ns; atomic */
static int incompatible;        /* the daemon speaks another protocol version */
static int nsockets;            /* our open sockets in this process; atomic */

/* Where our sockets go: 512, or half the fd limit when that is below
 * 1024 (the kernel's fd table grows to hold the number, 8 bytes per
 * slot, so not near a limit of a million). */
#define FD_FLOOR 512

static int move_out_of_the_way(int fd)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return fd;
	int floor = rl.rlim_cur >= 2 * FD_FLOOR ? FD_FLOOR : (int)(rl.rlim_cur / 2);
	if (fd >= floor)
		return fd;
	int high = fcntl(fd, F_DUPFD_CLOEXEC, floor);
	if (high < 0)  /* all taken up there: stay where we are */
		return fd;
	close(fd);
	return high;
}

static int still_ours(struct conn *c)
{
	struct stat st;
	return fstat(c->fd, &st) == 0 && (uint64_t)st.st_dev == c->dev && (uint64_t)st.st_ino == c->ino;
}

/* Close our socket -- in a forked child, the child's own copy of the
 * parent's -- unless the number now belongs to the program. */
static void drop(struct conn *c)
{
	if (c->open && still_ours(c))
		close(c->fd);
	if (c->open)
		__atomic_sub_fetch(&nsockets, 1, __ATOMIC_RELAXED);
	c->open = 0;
}

/* Take a place for one more socket of ours under the fd limit (see
 * above): 1, or 0 if there is none.  A place not used is given back with
 * release_socket(). */
static int reserve_socket(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur < MIN_NOFILE)
		return 0;
	rlim_t share = rl.rlim_cur == RLIM_INFINITY ? (rlim_t)1 << 20 : rl.rlim_cur / SOCKET_SHARE;
	if ((rlim_t)__atomic_add_fetch(&nsockets, 1, __ATOMIC_RELAXED) <= share)
		return 1;
	__atomic_sub_fetch(&nsockets, 1, __ATOMIC_RELAXED);
	return 0;
}

static void release_socket(void)
{
	__atomic_sub_fetch(&nsockets, 1, __ATOMIC_RELAXED);
}

/* 1 if the listener on fd is root or our own user. */
static int trusted_listener(int fd, unsigned *peer)
{
	struct ucred cred;
	socklen_t len = sizeof cred;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return 0;
	*peer = cred.uid;
	return cred.uid == 0 || cred.uid == getuid() || cred.uid == geteuid();
}

static void conn_exit(void *p)
{
	drop(p);
}

static void back_off(const char *why)
{
	__atomic_store_n(&backoff_until, shim_now_ns() + BACKOFF_NS, __ATOMIC_RELAXED);
	shim_debug("daemon %s: %s; passing calls through for 1 s", shim_cfg.socket, why);
}

static struct conn *get_conn(void)
{
	struct conn *c = &conn;
	if (c->open && (c->gen != __atomic_load_n(&generation, __ATOMIC_RELAXED) || !still_ours(c)))
		drop(c);
	if (c->open)
		return c;
	if (shim_now_ns() < __atomic_load_n(&backoff_until, __ATOMIC_RELAXED) || !reserve_socket())
		return NULL;

	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		release_socket();
		back_off("socket() failed");
		return NULL;
	}
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	memcpy(sa.sun_path, shim_cfg.socket, strlen(shim_cfg.socket));
	struct stat st;
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		release_socket();
		back_off(strerror(e));
		return NULL;
	}
	unsigned peer = 0;
	if (!trusted_listener(fd, &peer)) {
		close(fd);
		release_socket();
		shim_debug("daemon %s: listener runs as uid %u, neither root nor ours; not used",
			   shim_cfg.socket, peer);
		back_off("untrusted listener");
		return NULL;
	}
	c->fd = move_out_of_the_way(fd);
	c->open = 1;
	c->gen = __atomic_load_n(&generation, __ATOMIC_RELAXED);
	c->dev = st.st_dev;
	c->ino = st.st_ino;
	if (have_key)
		pthread_setspecific(conn_key, c);
	return c;
}

static int send_ensure(struct conn *c, const struct lc_ensure *m, int fd)
{
	struct iovec iov = { .iov_base = (void *)m, .iov_len = sizeof *m };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof u);
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = u.buf, .msg_controllen = sizeof u.buf,
	};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof fd);
	return sendmsg(c->fd, &mh, MSG_NOSIGNAL) == (ssize_t)sizeof *m ? 0 : -1;
}

/* Wait for the reply with our id; older ids are answers we gave up on. */
static int wait_reply(struct conn *c, uint64_t id, uint64_t deadline, struct lc_ensure_reply *r,
		      const char **why)
{
	for (;;) {
		uint64_t now = shim_now_ns();
		if (now >= deadline) {
			*why = "timed out";
			return -1;
		}
		int ms = (int)((deadline - now + 999999) / 1000000);
		struct pollfd p = { .fd = c->fd, .events = POLLIN };
		int n = poll(&p, 1, ms);
		if (n < 0 && errno == EINTR)
			continue;  /* the program's handler ran; its call has not started */
		if (n < 0) {
			*why = "poll() failed";
			return -1;
		}
		if (n == 0)
			continue;  /* re-check the deadline */
		ssize_t got = recv(c->fd, r, sizeof *r, MSG_DONTWAIT | MSG_TRUNC);
		if (got < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (got <= 0) {
			*why = got == 0 ? "closed the connection" : "recv() failed";
			return -1;
		}
		if (got >= (ssize_t)sizeof r->h && r->h.magic == LC_PROTO_MAGIC &&
		    r->h.version != LC_PROTO_VERSION) {
			*why = "speaks another protocol version";
			__atomic_store_n(&incompatible, 1, __ATOMIC_RELAXED);
			return -1;
		}
		if (got != (ssize_t)sizeof *r || r->h.magic != LC_PROTO_MAGIC ||
		    r->h.type != LC_MSG_ENSURE) {
			*why = "sent a malformed reply";
			return -1;
		}
		if (r->h.id == id)
			return 0;
		/* an older id: a reply we stopped waiting for; skip it */
	}
}

enum shim_ensure shim_client_ensure(int fd, uint64_t off, uint64_t len, int call,
				    uint64_t *res_off, uint64_t *res_len)
{
	if (__atomic_load_n(&incompatible, __ATOMIC_RELAXED))
		return SHIM_ENSURE_SKIPPED;
	struct conn *c = get_conn();
	if (!c)
		return SHIM_ENSURE_SKIPPED;

	/* Waiting for the daemon is not a cancellation point of the program's
	 * call; the call itself, made afterwards, is. */
	int oldstate;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &oldstate);

	uint64_t t0 = shim_now_ns();
	struct lc_ensure m = {
		.h = { .magic = LC_PROTO_MAGIC, .version = LC_PROTO_VERSION,
		       .type = LC_MSG_ENSURE, .id = ++c->next_id },
		.offset = off,
		.length = len,
		.flags = shim_cfg.mode == SHIM_MODE_SERIALIZE ? LC_F_NO_PREFETCH : 0,
		.call = (uint32_t)call,
		.prefetch = shim_cfg.prefetch_set ? shim_cfg.prefetch : 0,
	};
	struct lc_ensure_reply r;
	const char *why = NULL;
	enum shim_ensure ret = SHIM_ENSURE_FAILED;
	if (send_ensure(c, &m, fd) < 0) {
		why = errno == EAGAIN ? "socket buffer full" : "send failed";
		goto fail;
	}
	if (wait_reply(c, m.h.id, t0 + (uint64_t)shim_cfg.timeout_ms * 1000000u, &r, &why) < 0)
		goto fail;
	shim_debug("ensure fd %d [%llu, +%llu) status %d resident %d read %llu window [%llu, +%llu) %llu us",
		   fd, (unsigned long long)off, (unsigned long long)len, r.status, r.was_resident,
		   (unsigned long long)r.bytes_read, (unsigned long long)r.resident_offset,
		   (unsigned long long)r.resident_length,
		   (unsigned long long)((shim_now_ns() - t0) / 1000));
	if (r.status == LC_ST_OK) {
		*res_off = r.resident_offset;
		*res_len = r.resident_length;
		ret = SHIM_ENSURE_OK;
	} else if (r.status == LC_ST_DIRECT) {
		ret = SHIM_ENSURE_DIRECT;
	} else if (r.status == LC_ST_BADVERSION) {
		__atomic_store_n(&incompatible, 1, __ATOMIC_RELAXED);
		shim_debug("daemon %s: speaks another protocol version; passing all calls through",
			   shim_cfg.socket);
	}
	goto out;
fail:
	drop(c);
	back_off(why);
out:
	pthread_setcancelstate(oldstate, &oldstate);
	return ret;
}

/* A look-ahead: the same ENSURE, flagged LC_F_LOOKAHEAD, sent and not
 * waited for.  It takes an id of the sequence, so a reply an old daemon
 * sends anyway is older than the next blocking ENSURE's and dropped by
 * wait_reply.  A full socket buffer drops the look-ahead, not the
 * connection: the program's own misses still get through once the daemon
 * has read what is queued. */
int shim_client_lookahead(int fd, uint64_t off, uint64_t len, int call)
{
	if (__atomic_load_n(&incompatible, __ATOMIC_RELAXED))
		return -1;
	struct conn *c = get_conn();
	if (!c)
		return -1;
	int oldstate, ret = 0;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &oldstate);
	struct lc_ensure m = {
		.h = { .magic = LC_PROTO_MAGIC, .version = LC_PROTO_VERSION,
		       .type = LC_MSG_ENSURE, .id = ++c->next_id },
		.offset = off,
		.length = len,
		.flags = LC_F_LOOKAHEAD,
		.call = (uint32_t)call,
		.prefetch = shim_cfg.prefetch_set ? shim_cfg.prefetch : 0,
	};
	if (send_ensure(c, &m, fd) < 0) {
		ret = -1;
		if (errno != EAGAIN) {
			drop(c);
			back_off("look-ahead not sent");
		}
	}
	shim_debug("look-ahead fd %d [%llu, +%llu)%s", fd, (unsigned long long)off,
		   (unsigned long long)len, ret ? " dropped" : "");
	pthread_setcancelstate(oldstate, &oldstate);
	return ret;
}

int shim_client_send_report(const struct lc_report *r)
{
	if (__atomic_load_n(&incompatible, __ATOMIC_RELAXED))
		return -1;
	struct conn *c = get_conn();
	if (!c)
		return -1;
	if (send(c->fd, r, sizeof *r, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof *r) {
		drop(c);
		back_off("report not sent");
		return -1;
	}
	return 0;
}

void shim_client_atfork_child(void)
{
	__atomic_add_fetch(&generation, 1, __ATOMIC_RELAXED);
	/* Only this thread exists here; its inherited socket is dropped
	 * (and uncounted) on its next use. */
	__atomic_store_n(&nsockets, conn.open ? 1 : 0, __ATOMIC_RELAXED);
	/* A parent that just gave up on the daemon should not make its child
	 * wait out the whole backoff; a child starts fresh. */
	__atomic_store_n(&backoff_until, 0, __ATOMIC_RELAXED);
}

void shim_client_init(void)
{
	have_key = pthread_key_create(&conn_key, conn_exit) == 0;
}
