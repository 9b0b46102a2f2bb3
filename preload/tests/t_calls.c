/*
 * t_calls - drive one libc read entry point over a file, for the
 * transparency tests (tests/test_preload_*.py), which run it with and
 * without libception.so and compare everything it outputs.
 *
 *   t_calls copy METHOD FILE [BS [OUT]]   copy FILE to stdout (or OUT) with
 *       METHOD: read read_chk pread pread_chk readv preadv preadv2 sendfile
 *       sendfile_off splice splice_off cfr cfr_off; then print the final
 *       offset of FILE's fd on stderr
 *   t_calls errors FILE DIR               run error cases; one line each:
 *       name, return value, errno name, file offset afterwards
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

static void die(const char *what)
{
	fprintf(stderr, "t_calls: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void write_all(int fd, const char *b, ssize_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, b, (size_t)n);
		if (w < 0)
			die("write");
		b += w;
		n -= w;
	}
}

/* Through the fortified entry points: glibc maps read() with a known
 * buffer size to __read_chk, pread to __pread64_chk. */
extern ssize_t __read_chk(int, void *, size_t, size_t);
extern ssize_t __pread64_chk(int, void *, size_t, off_t, size_t);

static int copy(const char *method, const char *path, size_t bs, const char *outpath)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		die(path);
	int out = 1;
	if (outpath && (out = open(outpath, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0)
		die(outpath);
	char *buf = malloc(bs);
	off_t off = 0;
	int pfd[2] = { -1, -1 };
	if (strncmp(method, "splice", 6) == 0 && pipe(pfd) < 0)
		die("pipe");
	for (;;) {
		ssize_t r;
		if (!strcmp(method, "read")) {
			r = read(fd, buf, bs);
		} else if (!strcmp(method, "read_chk")) {
			r = __read_chk(fd, buf, bs, bs);
		} else if (!strcmp(method, "pread")) {
			r = pread(fd, buf, bs, off);
		} else if (!strcmp(method, "pread_chk")) {
			r = __pread64_chk(fd, buf, bs, off, bs);
		} else if (!strcmp(method, "readv") || !strcmp(method, "preadv") || !strcmp(method, "preadv2")) {
			/* uneven pieces, so iovec boundaries fall mid-page */
			size_t a = bs / 3;
			struct iovec iov[2] = { { buf, a }, { buf + a, bs - a } };
			if (method[1] == 'e')
				r = readv(fd, iov, 2);
			else if (method[6] == '2')
				r = preadv2(fd, iov, 2, off, 0);
			else
				r = preadv(fd, iov, 2, off);
		} else if (!strcmp(method, "sendfile")) {
			r = sendfile(out, fd, NULL, bs);
		} else if (!strcmp(method, "sendfile_off")) {
			r = sendfile(out, fd, &off, bs);
		} else if (!strcmp(method, "cfr")) {
			r = copy_file_range(fd, NULL, out, NULL, bs, 0);
		} else if (!strcmp(method, "cfr_off")) {
			r = copy_file_range(fd, &off, out, NULL, bs, 0);
		} else if (!strcmp(method, "splice") || !strcmp(method, "splice_off")) {
			r = method[6] ? splice(fd, &off, pfd[1], NULL, bs, 0)
				      : splice(fd, NULL, pfd[1], NULL, bs, 0);
			for (ssize_t left = r; left > 0;) {
				ssize_t g = read(pfd[0], buf, (size_t)left < bs ? (size_t)left : bs);
				if (g <= 0)
					die("read pipe");
				write_all(out, buf, g);
				left -= g;
			}
		} else {
			fprintf(stderr, "t_calls: unknown method \"%s\"\n", method);
			return 2;
		}
		if (r < 0)
			die(method);
		if (r == 0)
			break;
		int self_advancing = !strcmp(method, "sendfile_off") || !strcmp(method, "cfr_off") ||
				     !strcmp(method, "splice_off");
		if (!self_advancing)
			off += r;
		if (strstr(method, "read"))
			write_all(out, buf, r);
	}
	fprintf(stderr, "t_calls: offset %lld\n", (long long)lseek(fd, 0, SEEK_CUR));
	return 0;
}

static int fd_g;

static void line(const char *name, ssize_t r, int err)
{
	/* errno is printed after successes too: the library must not touch it */
	printf("%s %zd %s %lld\n", name, r, err ? strerrorname_np(err) : "-",
	       fd_g >= 0 ? (long long)lseek(fd_g, 0, SEEK_CUR) : -1LL);
}

#define CASE(name, fd, expr) \
	do { fd_g = (fd); errno = 0; ssize_t r_ = (expr); line(name, r_, errno); } while (0)

static int errors(const char *path, const char *dir)
{
	char buf[8192];
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		die(path);
	struct stat st;
	fstat(fd, &st);

	CASE("read_badfd", fd, read(999, buf, 10));
	CASE("pread_badfd", fd, pread(999, buf, 10, 0));
	CASE("sendfile_badfd", fd, sendfile(1, 999, NULL, 10));
	int d = open(dir, O_RDONLY | O_DIRECTORY);
	CASE("read_dir", d, read(d, buf, 10));
	CASE("pread_dir", d, pread(d, buf, 10, 0));
	close(d);
	CASE("pread_negative", fd, pread(fd, buf, 10, -1));
	CASE("preadv_negative", fd, preadv(fd, &(struct iovec){ buf, 10 }, 1, -5));
	/* volatile: the compiler must not see (and refuse) the bad counts */
	volatile int badcnt = -1, toomany = 5000;
	CASE("readv_badcount", fd, readv(fd, &(struct iovec){ buf, 10 }, badcnt));
	CASE("readv_toomany", fd, readv(fd, &(struct iovec){ buf, 10 }, toomany));
	CASE("read_first", fd, read(fd, buf, 100));
	CASE("read_zero_len", fd, read(fd, buf, 0));
	CASE("pread_past_eof", fd, pread(fd, buf, 10, st.st_size + 4096));
	CASE("pread_at_eof", fd, pread(fd, buf, 10, st.st_size));
	CASE("pread_straddle_eof", fd, pread(fd, buf, sizeof buf, st.st_size - 10));
	off_t neg = -1;
	CASE("sendfile_negative", fd, sendfile(1, fd, &neg, 10));
	int devnull = open("/dev/null", O_WRONLY);
	off_t o = 0;
	CASE("sendfile_devnull", fd, sendfile(devnull, fd, &o, 5000));
	CASE("sendfile_cur", fd, sendfile(devnull, fd, NULL, 3000));
	CASE("cfr_to_devnull", fd, copy_file_range(fd, NULL, devnull, NULL, 10, 0));
	CASE("cfr_badflags", fd, copy_file_range(fd, NULL, devnull, NULL, 10, 99));
	CASE("splice_to_file", fd, splice(fd, NULL, devnull, NULL, 10, 0));
	close(devnull);
	int wo = open(path, O_WRONLY);
	CASE("read_wronly", wo, read(wo, buf, 10));
	CASE("pread_wronly", wo, pread(wo, buf, 10, 0));
	close(wo);
	int pa = open(path, O_PATH);
	CASE("read_opath", pa, read(pa, buf, 10));
	close(pa);
	int di = open(path, O_RDONLY | O_DIRECT);
	if (di >= 0) {
		CASE("odirect_misaligned", di, pread(di, buf + 1, 4095, 1));
		void *al = NULL;
		if (posix_memalign(&al, 4096, 8192) == 0) {
			CASE("odirect_aligned", di, pread(di, al, 8192, 0));
			free(al);
		}
		close(di);
	}
	int z = open("/dev/zero", O_RDONLY);
	CASE("read_devzero", z, read(z, buf, 10));
	close(z);
	int p[2];
	if (pipe(p) == 0) {
		write(p[1], "abc", 3);
		CASE("read_pipe", -1, read(p[0], buf, 10));
		fcntl(p[0], F_SETFL, O_NONBLOCK);
		CASE("read_pipe_empty", -1, read(p[0], buf, 10));
		close(p[0]);
		close(p[1]);
	}
	int s[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0) {
		write(s[1], "hello", 5);
		CASE("read_socket", -1, read(s[0], buf, 10));
		CASE("pread_socket", -1, pread(s[0], buf, 10, 0));
		close(s[0]);
		close(s[1]);
	}
	/* Pointers the program cannot read: the kernel answers EFAULT, and
	 * so must the library (it reads offsets and iovecs before the call).
	 * An address never mapped, and a mapped page without PROT_READ. */
	/* volatile: the compiler must not see (and refuse) the bad address */
	volatile uintptr_t wild_addr = 16;
	off_t *wild = (off_t *)wild_addr;
	char *pages = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pages == MAP_FAILED)
		die("mmap");
	mprotect(pages + 4096, 4096, PROT_NONE);
	off_t *noread = (off_t *)(pages + 4096);
	int dn = open("/dev/null", O_WRONLY);
	int sp[2];
	if (pipe(sp) < 0)
		die("pipe");
	CASE("sendfile_wild_off", fd, sendfile(dn, fd, wild, 10));
	CASE("sendfile_noread_off", fd, sendfile(dn, fd, noread, 10));
	CASE("sendfile64_wild_off", fd, sendfile64(dn, fd, wild, 10));
	CASE("cfr_wild_off", fd, copy_file_range(fd, wild, dn, NULL, 10, 0));
	CASE("cfr_noread_off", fd, copy_file_range(fd, noread, dn, NULL, 10, 0));
	CASE("splice_wild_off", fd, splice(fd, wild, sp[1], NULL, 10, 0));
	CASE("splice_noread_off", fd, splice(fd, noread, sp[1], NULL, 10, 0));
	CASE("readv_wild_iov", fd, readv(fd, (struct iovec *)wild_addr, 1));
	CASE("preadv_noread_iov", fd, preadv(fd, (struct iovec *)noread, 1, 0));
	/* an array whose first entry is readable and second is not */
	struct iovec *edge = (struct iovec *)(pages + 4096 - sizeof(struct iovec));
	*edge = (struct iovec){ buf, 10 };
	CASE("readv_iov_crosses_noread", fd, readv(fd, edge, 2));
	CASE("preadv2_iov_crosses_noread", fd, preadv2(fd, edge, 2, 0, 0));
	close(sp[0]);
	close(sp[1]);
	close(dn);
	munmap(pages, 8192);
	CASE("preadv2_nowait", fd, preadv2(fd, &(struct iovec){ buf, 10 }, 1, 0, RWF_NOWAIT));
	CASE("preadv2_cur", fd, preadv2(fd, &(struct iovec){ buf, 10 }, 1, -1, 0));
	CASE("lseek_end", fd, lseek(fd, 0, SEEK_END));
	CASE("read_at_eof", fd, read(fd, buf, 10));
	close(fd);
	CASE("read_closed", -1, read(fd, buf, 10));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && !strcmp(argv[1], "copy"))
		return copy(argv[2], argv[3], argc > 4 ? (size_t)atol(argv[4]) : 65536, argc > 5 ? argv[5] : NULL);
	if (argc == 4 && !strcmp(argv[1], "errors"))
		return errors(argv[2], argv[3]);
	fprintf(stderr, "usage: t_calls copy METHOD FILE [BS [OUT]] | t_calls errors FILE DIR\n");
	return 2;
}
