/*
 * ensure_rtt - what asking receptiond costs a program, side by side with
 * the read it precedes.
 *
 *   ensure_rtt SOCKET FILE [ROUNDS]
 *
 * FILE is read once to make it resident.  Then, for ROUNDS random 64 KiB
 * ranges, it times (a) a plain pread of the range and (b) one ENSURE round
 * trip for it (a daemon-side hit: cachestat, answer), and prints the
 * median and 90th percentile of each and their ratio.  (b) is what every
 * read outside the library's hint window costs a process that may not
 * cachestat the file itself (nginx workers as www-data).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "protocol.h"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int ensure(int sock, int fd, uint64_t id, uint64_t off, uint64_t len)
{
	struct lc_ensure m = {
		.h = { .magic = LC_PROTO_MAGIC, .version = LC_PROTO_VERSION, .type = LC_MSG_ENSURE, .id = id },
		.offset = off, .length = len, .call = LC_CALL_PREAD,
	};
	char cbuf[CMSG_SPACE(sizeof(int))] __attribute__((aligned(8))) = { 0 };
	struct iovec iov = { &m, sizeof m };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
	                     .msg_controllen = sizeof cbuf };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof fd);
	if (sendmsg(sock, &mh, 0) != (ssize_t)sizeof m)
		return -1;
	struct lc_ensure_reply r;
	if (recv(sock, &r, sizeof r, 0) != (ssize_t)sizeof r || r.h.id != id)
		return -1;
	return r.status;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: ensure_rtt SOCKET FILE [ROUNDS]\n");
		return 2;
	}
	int rounds = argc > 3 ? atoi(argv[3]) : 20000;
	if (rounds < 10) {
		fprintf(stderr, "ensure_rtt: ROUNDS \"%s\": at least 10\n", argv[3]);
		return 2;
	}
	int fd = open(argv[2], O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) || st.st_size < (1 << 20)) {
		fprintf(stderr, "ensure_rtt: file \"%s\": need a readable file of at least 1 MiB\n", argv[2]);
		return 1;
	}
	int sock = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", argv[1]);
	if (sock < 0 || connect(sock, (struct sockaddr *)&sa, sizeof sa)) {
		fprintf(stderr, "ensure_rtt: socket \"%s\": %s\n", argv[1], strerror(errno));
		return 1;
	}
	static char buf[65536];
	for (off_t o = 0; o < st.st_size; o += (off_t)sizeof buf)   /* make it resident */
		if (pread(fd, buf, sizeof buf, o) < 0)
			return 1;
	uint64_t *tp = calloc((size_t)rounds, sizeof *tp), *te = calloc((size_t)rounds, sizeof *te);
	uint64_t pages = (uint64_t)(st.st_size - (off_t)sizeof buf) / 4096;
	srand(1);
	for (int i = 0; i < rounds; i++) {
		uint64_t off = ((uint64_t)rand() % pages) * 4096;
		uint64_t t0 = now_ns();
		if (pread(fd, buf, sizeof buf, (off_t)off) < 0)
			return 1;
		uint64_t t1 = now_ns();
		int s = ensure(sock, fd, (uint64_t)i + 1, off, sizeof buf);
		uint64_t t2 = now_ns();
		if (s != LC_ST_OK) {
			fprintf(stderr, "ensure_rtt: ENSURE failed (status %d)\n", s);
			return 1;
		}
		tp[i] = t1 - t0;
		te[i] = t2 - t1;
	}
	qsort(tp, (size_t)rounds, sizeof *tp, cmp_u64);
	qsort(te, (size_t)rounds, sizeof *te, cmp_u64);
	double p50p = (double)tp[rounds / 2] / 1e3, p90p = (double)tp[rounds * 9 / 10] / 1e3;
	double p50e = (double)te[rounds / 2] / 1e3, p90e = (double)te[rounds * 9 / 10] / 1e3;
	printf("ensure_rtt: %d rounds, 64 KiB ranges of a resident %lld-byte file\n", rounds,
	       (long long)st.st_size);
	printf("ensure_rtt: pread 64 KiB     median %7.2f us  p90 %7.2f us\n", p50p, p90p);
	printf("ensure_rtt: ENSURE (hit)     median %7.2f us  p90 %7.2f us\n", p50e, p90e);
	printf("ensure_rtt: ENSURE / pread   median ratio %.2f\n", p50e / p50p);
	return 0;
}
