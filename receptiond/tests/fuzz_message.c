/*
 * fuzz_message.c - libFuzzer target for receptiond's message path: the
 * main thread's reading, parsing and handling of everything a client may
 * send (server.c, included here for its static functions), through a
 * real SOCK_SEQPACKET socket pair, with real file descriptors and the
 * kernel's credentials on every message.  ENSUREs reach the real device
 * queues and workers (on a small cached file), STATS replies the real
 * buffered output, passed fds the real closers.
 *
 * Input: a sequence of messages, each
 *   byte 0: bits 0-3 how many fds (0-15; above 8 the kernel truncates),
 *           bits 4-6 which kind of fd, bit 7: the message's type and
 *           magic/version are made valid (so the fuzzer reaches the
 *           handlers, not only the checks)
 *   bytes 1-2: length (little-endian, mod LC_MAX_MESSAGE + 64)
 *   then that many bytes (fewer if the input ends).
 * Build and run: `make -C receptiond fuzz` (docs/receptiond.md "Fuzzing").
 */
#include "../server.c"

#include <stdint.h>
#include <sys/stat.h>

static int kinds[8];     /* fds of each kind, dup'ed into each message */
static char file_path[] = "/tmp/lc-fuzz-XXXXXX";

static void setup(void)
{
	static int done;
	if (done)
		return;
	done = 1;
	rd_log_open("/dev/null");
	epfd = epoll_create1(EPOLL_CLOEXEC);
	int f = mkstemp(file_path);
	char block[65536];
	memset(block, 'x', sizeof block);
	for (int i = 0; i < 16 && f >= 0; i++)
		if (write(f, block, sizeof block) < 0)
			break;
	int p[2] = { -1, -1 };
	if (pipe2(p, O_CLOEXEC)) { /* kinds stay -1 */ }
	kinds[0] = open(file_path, O_RDONLY | O_CLOEXEC);      /* a regular file, cached */
	kinds[1] = f;                                          /* read-write */
	kinds[2] = open(file_path, O_WRONLY | O_CLOEXEC);      /* write-only */
	kinds[3] = open(file_path, O_PATH | O_CLOEXEC);        /* O_PATH */
	kinds[4] = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	kinds[5] = p[0];                                       /* a pipe */
	kinds[6] = open("/dev/null", O_RDONLY | O_CLOEXEC);    /* a device */
	kinds[7] = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	unlink(file_path);
	rd_access = (struct rd_access){ .kind = RD_ACCESS_ALL, .owner = geteuid() };
}

/* Read and drop whatever the daemon sent back. */
static void drain(int fd)
{
	char buf[LC_STATS_CHUNK + 64];
	while (recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0)
		;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	setup();
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv))
		return 0;
	int one = 1;
	setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &one, sizeof one);
	struct rd_conn *c = calloc(1, sizeof *c);
	/* refs: the server's, and ours, so c outlives a close by the server. */
	*c = (struct rd_conn){ .fd = sv[1], .refs = 2, .pid = getpid(), .uid = geteuid() };
	rd_quota_take(c->uid, RD_Q_CONNS, 1, 1);
	rd_stats.conns_now++;
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
	epoll_ctl(epfd, EPOLL_CTL_ADD, sv[1], &ev);

	size_t at = 0;
	while (at + 3 <= size && !c->closed) {
		uint8_t ctl = data[at];
		size_t len = (size_t)(data[at + 1] | data[at + 2] << 8) % (LC_MAX_MESSAGE + 64);
		at += 3;
		if (len > size - at)
			len = size - at;
		char msg[LC_MAX_MESSAGE + 64] __attribute__((aligned(8)));
		memcpy(msg, data + at, len);
		at += len;
		if ((ctl & 0x80) && len >= sizeof(struct lc_header)) {
			struct lc_header *h = (void *)msg;
			h->magic = LC_PROTO_MAGIC;
			h->version = LC_PROTO_VERSION;
			h->type = (uint16_t)(1 + h->type % 5);
		}
		int nfds = ctl & 0x0f, kind = (ctl >> 4) & 0x07;
		union {
			char buf[CMSG_SPACE(sizeof(int) * 16)];
			struct cmsghdr align;
		} u;
		struct iovec iov = { msg, len };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		if (nfds && kinds[kind] >= 0) {
			mh.msg_control = u.buf;
			mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
			struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
			for (int i = 0; i < nfds; i++)
				memcpy(CMSG_DATA(cm) + (size_t)i * sizeof(int), &kinds[(kind + i) % 8], sizeof(int));
		}
		if (sendmsg(sv[0], &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
			serve_conn(c, EPOLLIN);
			drain(sv[0]);
			continue;
		}
		if (at >= size || (ctl & 0x08))   /* sometimes several messages per turn */
			serve_conn(c, EPOLLIN);
		drain(sv[0]);
	}
	if (!c->closed)
		serve_conn(c, EPOLLIN);
	drain(sv[0]);
	if (!c->closed)
		conn_close(c);
	rd_conn_put(c);
	housekeeping(rd_now_ns());
	close(sv[0]);
	return 0;
}
