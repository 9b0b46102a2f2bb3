/*
 * shim.c - initialisation of libception.so: the real_<sym> pointers, the
 * configuration, fork handling, and the thread-local in_shim guard.
 *
 * Init runs once, through pthread_once, from the constructor and from any
 * wrapper that gets there first (a library constructor that runs before
 * ours may already read files).  While it runs, a wrapper re-entered from
 * the same thread (dlsym may allocate, an allocator may read) sees
 * shim_in_shim set and goes straight to the kernel through syscall(),
 * because pthread_once would deadlock on itself.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "shim.h"

struct real_syms shim_real;
int shim_ready;
/* initial-exec: this library is preloaded, so its TLS is static and the
 * guard costs one %fs-relative load instead of a __tls_get_addr call. */
__thread int shim_in_shim __attribute__((tls_model("initial-exec")));

static pthread_once_t once = PTHREAD_ONCE_INIT;

uint64_t shim_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static const char *env(const char *name)
{
	return getenv(name);
}

/* Registered once from init, never again: re-registering pthread_atfork
 * handlers from a fork path deadlocked nocache on glibc 2.28 (nocache #34). */
static void atfork_child(void)
{
	shim_client_atfork_child();
	shim_stats_atfork_child();
	shim_ahead_atfork_child();
}

#define RESOLVE(field, name) \
	shim_real.field = (__typeof__(shim_real.field))dlsym(RTLD_NEXT, name)

static void init_once(void)
{
	shim_in_shim++;
	RESOLVE(read, "read");
	RESOLVE(pread, "pread");
	RESOLVE(pread64, "pread64");
	RESOLVE(readv, "readv");
	RESOLVE(preadv, "preadv");
	RESOLVE(preadv64, "preadv64");
	RESOLVE(preadv2, "preadv2");
	RESOLVE(preadv64v2, "preadv64v2");
	RESOLVE(sendfile, "sendfile");
	RESOLVE(sendfile64, "sendfile64");
	RESOLVE(copy_file_range, "copy_file_range");
	RESOLVE(splice, "splice");
	RESOLVE(read_chk, "__read_chk");
	RESOLVE(pread_chk, "__pread_chk");
	RESOLVE(pread64_chk, "__pread64_chk");
	RESOLVE(close, "close");
	RESOLVE(dup2, "dup2");
	RESOLVE(dup3, "dup3");
	RESOLVE(close_range, "close_range");
	RESOLVE(closefrom, "closefrom");

	shim_config_parse(&shim_cfg, env, (unsigned)getuid());
	shim_client_init();
	shim_local_init();
	pthread_atfork(NULL, NULL, atfork_child);
	if (shim_cfg.bad[0])
		shim_debug("bad environment: %s", shim_cfg.bad);
	shim_debug("loaded: mode %s, prefetch %llu, socket %s, timeout %d ms",
		   shim_mode_name(shim_cfg.mode), (unsigned long long)shim_cfg.prefetch,
		   shim_cfg.socket, shim_cfg.timeout_ms);
	__atomic_store_n(&shim_ready, 1, __ATOMIC_RELEASE);
	shim_in_shim--;
}

void shim_init(void)
{
	pthread_once(&once, init_once);
}

__attribute__((constructor)) static void shim_constructor(void)
{
	if (!shim_in_shim)
		shim_init();
}

/* Only flushes counters: nothing is freed, so a thread still reading after
 * exit() began (the destructor race that crashed git under nocache) finds
 * every structure intact. */
__attribute__((destructor)) static void shim_destructor(void)
{
	if (__atomic_load_n(&shim_ready, __ATOMIC_ACQUIRE) && !shim_in_shim) {
		shim_in_shim++;
		shim_stats_final();
		shim_in_shim--;
	}
}
