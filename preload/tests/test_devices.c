/*
 * test_devices - unit tests of devices.c (device slots, the fd -> device
 * cache and its invalidation) and of the per-device part of the REPORT
 * that stats.c builds.  Exit 0 when all pass.  Build alone:
 *   cc -std=gnu11 -D_GNU_SOURCE -I../../common -I.. -o test_devices \
 *      test_devices.c ../devices.c ../stats.c
 */
#include <string.h>

#include "shim.h"

#define CHECK_PROGRAM "test_devices"
#include "check.h"

/* What stats.c needs from the rest of the library. */
struct shim_config shim_cfg = { .mode = SHIM_MODE_PREFETCH_SERIALIZE };
static struct lc_report sent_report;
static int reports_sent;
int shim_client_send_report(const struct lc_report *r)
{
	sent_report = *r;
	reports_sent++;
	return 0;
}
void shim_debug(const char *fmt, ...)
{
	(void)fmt;
}

static void test_fd_cache(void)
{
	uint64_t tok, tok2;
	int a = shim_dev_slot(0x801);
	int b = shim_dev_slot(0xfe00);
	CHECK(a == 0 && b == 1);
	CHECK(shim_dev_slot(0x801) == a);               /* claimed once */

	CHECK(shim_fd_lookup(5, &tok) == -1);           /* nothing known yet */
	shim_fd_learn(5, tok, a);
	CHECK(shim_fd_lookup(5, &tok) == a);
	CHECK(shim_fd_lookup(5 + 64, &tok2) == -1);     /* same entry, other fd */

	shim_fd_forget(5);                              /* close(5) */
	CHECK(shim_fd_lookup(5, &tok) == -1);
	shim_fd_learn(5, tok, b);                       /* fd 5 reused for a file on b */
	CHECK(shim_fd_lookup(5, &tok) == b);

	/* A fill that raced with a close: fstat saw the old file, the close
	 * came before the store; the store must not land. */
	shim_fd_forget(7);
	CHECK(shim_fd_lookup(7, &tok) == -1);
	shim_fd_forget(7);
	shim_fd_learn(7, tok, a);
	CHECK(shim_fd_lookup(7, &tok) == -1);

	/* Forgetting one fd leaves a colliding entry's other fd alone. */
	shim_fd_lookup(9, &tok);
	shim_fd_learn(9, tok, a);
	shim_fd_forget(9 + 64);
	CHECK(shim_fd_lookup(9, &tok) == a);

	/* close_range and closefrom. */
	for (int fd = 10; fd < 20; fd++) {
		shim_fd_lookup(fd, &tok);
		shim_fd_learn(fd, tok, b);
	}
	shim_fd_forget_range(12, 14);
	CHECK(shim_fd_lookup(11, &tok) == b && shim_fd_lookup(15, &tok) == b);
	CHECK(shim_fd_lookup(12, &tok) == -1 && shim_fd_lookup(14, &tok) == -1);
	shim_fd_forget_range(15, ~0u);
	CHECK(shim_fd_lookup(11, &tok) == b && shim_fd_lookup(19, &tok) == -1);
	CHECK(shim_fd_lookup(9, &tok) == a && shim_fd_lookup(5, &tok) == b);
	shim_fd_forget_range(20, 10);                   /* empty range: no-op */
	CHECK(shim_fd_lookup(11, &tok) == b);
}

static void test_slots_fill_up(void)
{
	uint64_t dev;
	for (uint64_t d = 100; d < 100 + LC_REPORT_DEVS - 2; d++)
		CHECK(shim_dev_slot(d) < LC_REPORT_DEVS);
	CHECK(shim_dev_slot(0x801) == 0);               /* earlier ones stay */
	CHECK(shim_dev_slot(999) == LC_REPORT_DEVS);    /* full: "other" */
	CHECK(shim_dev_slot(998) == LC_REPORT_DEVS);
	CHECK(shim_dev_id(0, &dev) == 0 && dev == 0x801);
	CHECK(shim_dev_id(1, &dev) == 0 && dev == 0xfe00);
	CHECK(shim_dev_id(LC_REPORT_DEVS, &dev) < 0);
}

static void test_report(void)
{
	/* slot 0 (0x801): 2 hits of 4096 and a miss; slot 1: 1 miss;
	 * "other": 1 hit; unknown device: counted per call only */
	shim_stats_record(LC_CALL_PREAD, 1, 4096, 1000, 0);
	shim_stats_record(LC_CALL_PREAD, 1, 4096, 1000, 0);
	shim_stats_record(LC_CALL_PREAD, 0, 4096, 1000, 0);
	shim_stats_record(LC_CALL_READ, 0, 100, 1000, 1);
	shim_stats_record(LC_CALL_SENDFILE, 1, 777, 1000, LC_REPORT_DEVS);
	shim_stats_record(LC_CALL_READ, 1, 50, 1000, -1);
	shim_stats_final();
	CHECK(reports_sent == 1);
	const struct lc_report *r = &sent_report;
	CHECK(r->h.version == LC_PROTO_VERSION && r->h.type == LC_MSG_REPORT);
	CHECK(r->calls[LC_CALL_PREAD] == 3 && r->hits[LC_CALL_PREAD] == 2);
	CHECK(r->calls[LC_CALL_READ] == 2 && r->hits[LC_CALL_READ] == 1);
	CHECK(r->devs[0].dev == 0x801 && r->devs[0].calls == 3 && r->devs[0].hits == 2 &&
	      r->devs[0].hit_bytes == 8192);
	CHECK(r->devs[1].dev == 0xfe00 && r->devs[1].calls == 1 && r->devs[1].hits == 0 &&
	      r->devs[1].hit_bytes == 0);
	CHECK(r->devs[2].calls == 0 && r->devs[2].hits == 0);
	CHECK(r->other.dev == 0 && r->other.calls == 1 && r->other.hits == 1 &&
	      r->other.hit_bytes == 777);

	/* The next report carries deltas only. */
	shim_stats_record(LC_CALL_PREAD, 1, 10, 1000, 0);
	shim_stats_final();
	CHECK(reports_sent == 2);
	CHECK(r->devs[0].calls == 1 && r->devs[0].hits == 1 && r->devs[0].hit_bytes == 10);
	CHECK(r->devs[1].calls == 0 && r->other.calls == 0);
}

int main(void)
{
	test_fd_cache();
	test_slots_fill_up();
	test_report();
	return check_done();
}
