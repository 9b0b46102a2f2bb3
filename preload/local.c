/*
 * local.c - mode "prefetch": the paper's in-process variant.  On a miss
 * the program's thread itself reads the enlarged range into a scratch
 * buffer, so the kernel sees one large request instead of many small ones;
 * nothing is serialized across processes.
 *
 * Unlike receptiond (receptiond/prefetch.c), it reads with pread, which
 * marks the pages accessed: the program's read that follows is a second
 * access and makes them "active".  That matters only under memory
 * pressure; loading through a mapping instead would need a SIGBUS
 * handler in the program, which a preload library must not install.
 *
 * Positional reads only: the fd's offset stays the program's.  The scratch
 * buffer is per thread (no lock), mapped on first use and unmapped when
 * the thread exits.
 */
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim.h"

#define SCRATCH (4u << 20)  /* bytes per pread; larger prefetches loop */

static pthread_key_t scratch_key;
static int have_key;
static __thread void *scratch __attribute__((tls_model("initial-exec")));

static void scratch_free(void *p)
{
	munmap(p, SCRATCH);
}

void shim_local_init(void)
{
	if (shim_cfg.mode == SHIM_MODE_PREFETCH)
		have_key = pthread_key_create(&scratch_key, scratch_free) == 0;
}

uint64_t shim_local_prefetch(int fd, uint64_t off, uint64_t len)
{
	if (!have_key)
		return 0;
	if (!scratch) {
		void *p = mmap(NULL, SCRATCH, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return 0;
		scratch = p;
		pthread_setspecific(scratch_key, p);
	}
	/* The program's call is the cancellation point, not ours. */
	int oldstate;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &oldstate);
	uint64_t done = 0;
	while (done < len) {
		uint64_t n = len - done < SCRATCH ? len - done : SCRATCH;
		/* raw syscall: libc's pread would be a cancellation point and
		 * its PLT entry is our own wrapper */
		long r = syscall(SYS_pread64, fd, scratch, n, off + done);
		if (r <= 0)
			break;
		done += (uint64_t)r;
	}
	pthread_setcancelstate(oldstate, &oldstate);
	shim_debug("prefetch fd %d [%llu, +%llu) read %llu", fd, (unsigned long long)off,
		   (unsigned long long)len, (unsigned long long)done);
	return done;
}
