/*
 * hitcost - what libception.so adds to a call that hits the page cache.
 *
 *   LD_PRELOAD=build/lib/libception.so preload/bench/hitcost FILE [BATCHES]
 *
 * FILE (at least 1 MiB) is read once so it is cached.  Then, alternating
 * in the same process, batches of 64 KiB preads and sendfiles (to
 * /dev/null) go through the interposed symbol (the library) and through
 * libc's own function found with dlsym on libc.so.6 (no library).  For
 * each batch the mean time per call is taken; the report gives the median
 * over batches of each and their difference, the library's extra cost.
 * A third pair opens the file, preads 64 KiB and closes it each time: a
 * new descriptor's first hit, which pays the library's fstat for the
 * device of the hit, plus its close wrapper.
 * Not a test: the numbers depend on the machine.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BS (64 * 1024)
#define PER_BATCH 200

typedef ssize_t (*pread_fn)(int, void *, size_t, off_t);
typedef ssize_t (*sendfile_fn)(int, int, off_t *, size_t);
typedef int (*close_fn)(int);

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int fd, devnull;
static off_t blocks;
static char buf[BS];

static double batch_pread(pread_fn f)
{
	uint64_t t0 = now_ns();
	for (int i = 0; i < PER_BATCH; i++)
		if (f(fd, buf, BS, (off_t)(i % blocks) * BS) != BS)
			exit(1);
	return (double)(now_ns() - t0) / PER_BATCH / 1000.0;
}

static double batch_sendfile(sendfile_fn f)
{
	uint64_t t0 = now_ns();
	for (int i = 0; i < PER_BATCH; i++) {
		off_t off = (off_t)(i % blocks) * BS;
		if (f(devnull, fd, &off, BS) != BS)
			exit(1);
	}
	return (double)(now_ns() - t0) / PER_BATCH / 1000.0;
}

static const char *path;

static double batch_open_pread(pread_fn f, close_fn c)
{
	uint64_t t0 = now_ns();
	for (int i = 0; i < PER_BATCH; i++) {
		int nfd = open(path, O_RDONLY);
		if (nfd < 0 || f(nfd, buf, BS, (off_t)(i % blocks) * BS) != BS)
			exit(1);
		c(nfd);
	}
	return (double)(now_ns() - t0) / PER_BATCH / 1000.0;
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: hitcost FILE [BATCHES]\n");
		return 2;
	}
	int batches = argc > 2 ? atoi(argv[2]) : 400;
	if (batches < 1) {
		fprintf(stderr, "hitcost: BATCHES must be a positive number\n");
		return 2;
	}
	path = argv[1];
	fd = open(argv[1], O_RDONLY);
	devnull = open("/dev/null", O_WRONLY);
	struct stat st;
	if (fd < 0 || devnull < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "hitcost: \"%s\": %s\n", argv[1], strerror(errno));
		return 1;
	}
	blocks = st.st_size / BS;
	if (blocks < 16) {
		fprintf(stderr, "hitcost: \"%s\": need at least 1 MiB\n", argv[1]);
		return 1;
	}
	if (blocks > 256)
		blocks = 256;  /* 16 MiB: stays cached, fits any machine */

	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	pread_fn libc_pread = libc ? (pread_fn)dlsym(libc, "pread64") : NULL;
	sendfile_fn libc_sendfile = libc ? (sendfile_fn)dlsym(libc, "sendfile64") : NULL;
	close_fn libc_close = libc ? (close_fn)dlsym(libc, "close") : NULL;
	if (!libc_pread || !libc_sendfile || !libc_close) {
		fprintf(stderr, "hitcost: libc's pread64/sendfile64/close not found\n");
		return 1;
	}
	/* Through the PLT: the library's wrapper when it is preloaded. */
	pread_fn lib_pread = pread64;
	sendfile_fn lib_sendfile = sendfile64;
	close_fn lib_close = close;
	if ((void *)dlsym(RTLD_DEFAULT, "pread64") == (void *)libc_pread) {
		fprintf(stderr, "hitcost: libception.so is not preloaded (set LD_PRELOAD)\n");
		return 1;
	}

	for (off_t b = 0; b < blocks; b++)  /* make it resident */
		libc_pread(fd, buf, BS, b * BS);

	double *pl = malloc(sizeof(double) * (size_t)batches), *pc = malloc(sizeof(double) * (size_t)batches);
	double *sl = malloc(sizeof(double) * (size_t)batches), *sc = malloc(sizeof(double) * (size_t)batches);
	double *ol = malloc(sizeof(double) * (size_t)batches), *oc = malloc(sizeof(double) * (size_t)batches);
	for (int i = 0; i < batches; i++) {
		/* alternate which goes first, so drift hits both alike */
		if (i % 2) {
			pc[i] = batch_pread(libc_pread);
			pl[i] = batch_pread(lib_pread);
			sc[i] = batch_sendfile(libc_sendfile);
			sl[i] = batch_sendfile(lib_sendfile);
			oc[i] = batch_open_pread(libc_pread, libc_close);
			ol[i] = batch_open_pread(lib_pread, lib_close);
		} else {
			pl[i] = batch_pread(lib_pread);
			pc[i] = batch_pread(libc_pread);
			sl[i] = batch_sendfile(lib_sendfile);
			sc[i] = batch_sendfile(libc_sendfile);
			ol[i] = batch_open_pread(lib_pread, lib_close);
			oc[i] = batch_open_pread(libc_pread, libc_close);
		}
	}
	double mpc = median(pc, batches), mpl = median(pl, batches);
	double msc = median(sc, batches), msl = median(sl, batches);
	double moc = median(oc, batches), mol = median(ol, batches);
	printf("hitcost: %d batches of %d calls, 64 KiB each, file cached\n", batches, PER_BATCH);
	printf("hitcost: pread64   libc %.3f us  libception %.3f us  extra %.3f us\n", mpc, mpl, mpl - mpc);
	printf("hitcost: sendfile64 libc %.3f us  libception %.3f us  extra %.3f us\n", msc, msl, msl - msc);
	printf("hitcost: open+pread64+close libc %.3f us  libception %.3f us  extra %.3f us\n", moc, mol,
	       mol - moc);
	return 0;
}
