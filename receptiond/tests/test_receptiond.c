/* test_receptiond.c - unit tests of the daemon's pure parts: sizes,
 * windows, queue merging, policy specs and the JSON writer; where the
 * libraries' per-device report entries are counted; and how a window is
 * made resident up to the end of a file. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "access.h"
#include "cfg.h"
#include "device.h"
#include "json.h"
#include "policy.h"
#include "prefetch.h"
#include "queue.h"
#include "quota.h"
#include "server.h"
#include "stats.h"

#define CHECK_PROGRAM "test_receptiond"
#include "check.h"

static void test_sizes(void)
{
	uint64_t v;
	CHECK(rd_parse_size("4096", &v) == 0 && v == 4096);
	CHECK(rd_parse_size("2M", &v) == 0 && v == 2u << 20);
	CHECK(rd_parse_size("512k", &v) == 0 && v == 512u << 10);
	CHECK(rd_parse_size("1GiB", &v) == 0 && v == 1u << 30);
	CHECK(rd_parse_size("3MB", &v) == 0 && v == 3u << 20);
	CHECK(rd_parse_size("", &v) == -1);
	CHECK(rd_parse_size("-1", &v) == -1);
	CHECK(rd_parse_size("2X", &v) == -1);
	CHECK(rd_parse_size("2M ", &v) == -1);
	CHECK(rd_parse_size("99999999999999999999", &v) == -1);
}

static void test_window(void)
{
	uint64_t lo, hi;
	rd_window(4096, 8192, 2 << 20, 100 << 20, &lo, &hi);
	CHECK(lo == 4096 && hi == 4096 + (2 << 20));
	rd_window(4096, 8192, 2 << 20, 1 << 20, &lo, &hi);      /* clipped at EOF */
	CHECK(lo == 4096 && hi == 1 << 20);
	rd_window(0, 8 << 20, 2 << 20, 100 << 20, &lo, &hi);    /* never below the ask */
	CHECK(lo == 0 && hi == 8 << 20);
	rd_window(4096, 8192, 0, 100 << 20, &lo, &hi);          /* serialize mode */
	CHECK(lo == 4096 && hi == 8192);
	rd_window(200, 300, 1 << 20, 100, &lo, &hi);            /* past EOF: empty */
	CHECK(lo == 100 && hi == 100);
	rd_window(10, 20, UINT64_MAX, 1000, &lo, &hi);          /* no overflow */
	CHECK(lo == 10 && hi == 1000);
}

static struct rd_req *req(dev_t dev, ino_t ino, uint64_t lo, uint64_t hi)
{
	struct rd_req *r = calloc(1, sizeof *r);
	r->dev = dev;
	r->ino = ino;
	r->lo = lo;
	r->hi = hi;
	r->no_prefetch = 1;
	return r;
}

static struct rd_req *pop(struct rd_queue *q)
{
	struct rd_pick pick;
	return rd_queue_pop(q, 0, &pick);
}

static void test_queue(void)
{
	struct rd_queue q = { 0 };
	struct rd_req *a = req(1, 10, 0, 4096), *b = req(1, 11, 0, 4096);
	rd_queue_push(&q, a);
	rd_queue_push(&q, b);
	CHECK(q.len == 2);
	/* same file, overlapping: joins; another file or a disjoint range: not */
	CHECK(rd_queue_find_join(&q, 1, 10, 2048, 4096, 0, 64 << 20) == a);
	CHECK(rd_queue_find_join(&q, 1, 10, 1024, 1024, 0, 64 << 20) == a);
	CHECK(rd_queue_find_join(&q, 2, 10, 0, 4096, 0, 64 << 20) == NULL);
	CHECK(rd_queue_find_join(&q, 1, 10, 8192, 4096, 0, 64 << 20) == NULL);
	CHECK(rd_queue_find_join(&q, 1, 11, 100, 1, 0, 64 << 20) == b);
	/* joining a queued request grows it to the union */
	struct rd_waiter w1 = { .offset = 2048, .length = 4096 };
	rd_req_join(a, &w1, 1 << 20, 0);
	CHECK(a->lo == 0 && a->hi == 6144 && a->client_size == 1 << 20 && !a->no_prefetch);
	CHECK(a->nwaiters == 1);
	/* FIFO order; in flight, only ranges inside the window join */
	CHECK(pop(&q) == a);
	a->win_lo = 0;
	a->win_hi = 2 << 20;
	CHECK(q.len == 1 && q.nflying == 1);
	CHECK(rd_queue_find_join(&q, 1, 10, 1 << 20, 4096, 0, 64 << 20) == a);
	CHECK(rd_queue_find_join(&q, 1, 10, (2 << 20) - 10, 4096, 0, 64 << 20) == NULL);
	struct rd_waiter w2 = { .offset = 1 << 20, .length = 4096 };
	rd_req_join(a, &w2, 0, 0);
	CHECK(a->lo == 0 && a->hi == 6144);   /* in flight: the range is fixed */
	CHECK(pop(&q) == b);
	CHECK(pop(&q) == NULL);
	rd_queue_done(&q, a);
	CHECK(q.nflying == 1 && q.flying == b);
	rd_queue_done(&q, b);
	CHECK(q.nflying == 0 && q.flying == NULL);
	free(a);
	free(b);

	/* a request someone waits for goes before older look-aheads; one a
	 * reader joined counts as waited for; the tail stays right */
	struct rd_req *la1 = req(1, 20, 0, 4096), *la2 = req(1, 21, 0, 4096);
	struct rd_req *d1 = req(1, 22, 0, 4096);
	rd_queue_push(&q, la1);
	rd_queue_push(&q, la2);
	rd_queue_push(&q, d1);
	d1->demand = 1;
	CHECK(pop(&q) == d1 && q.tail == la2);
	struct rd_waiter w3 = { .offset = 0, .length = 4096 };
	rd_req_join(la2, &w3, 0, 0);
	CHECK(la2->demand == 1);
	CHECK(pop(&q) == la2 && q.head == la1 && q.tail == la1);
	struct rd_req *d2 = req(1, 23, 0, 4096);
	rd_queue_push(&q, d2);        /* appended after the pop left la1 the tail */
	CHECK(q.head == la1 && la1->next == d2 && q.tail == d2);
	CHECK(pop(&q) == la1);   /* no demand queued: oldest first */
	CHECK(pop(&q) == d2 && q.head == NULL && q.tail == NULL && q.len == 0);
	struct rd_req *all[] = { la1, la2, d1, d2 };
	for (unsigned i = 0; i < 4; i++) {
		rd_queue_done(&q, all[i]);
		free(all[i]);
	}
	CHECK(q.nflying == 0);
}

static void test_policy_specs(void)
{
	struct rd_policy_spec s[3];
	char err[256];
	CHECK(rd_policy_spec_parse("fixed", &s[0], err, sizeof err) == 0);
	CHECK(strcmp(s[0].name, "fixed") == 0 && !s[0].device[0] && !s[0].args[0]);
	CHECK(rd_policy_spec_parse("sdb=fixed:4M", &s[1], err, sizeof err) == 0);
	CHECK(strcmp(s[1].device, "sdb") == 0 && strcmp(s[1].args, "4M") == 0);
	CHECK(rd_policy_spec_parse("fuse-0:57=fixed:8M", &s[2], err, sizeof err) == 0);
	CHECK(strcmp(s[2].device, "fuse-0:57") == 0 && strcmp(s[2].args, "8M") == 0);
	CHECK(rd_policy_spec_parse("nosuch", &s[0], err, sizeof err) == -1 && strstr(err, "unknown"));
	CHECK(rd_policy_spec_parse("=fixed", &s[0], err, sizeof err) == -1);
	CHECK(rd_policy_spec_parse("sdb=", &s[0], err, sizeof err) == -1);
	rd_policy_spec_parse("fixed", &s[0], err, sizeof err);
	CHECK(rd_policy_spec_for(s, 3, "sdb") == &s[1]);
	CHECK(rd_policy_spec_for(s, 3, "vda") == &s[0]);
	CHECK(rd_policy_spec_for(s, 0, "vda") == NULL);

	/* the fixed policy: its argument, else the daemon's size; the
	 * library's own size wins for a request that carries one */
	struct rd_device_info info = { .name = "t", .default_size = 2 << 20, .args = "" };
	struct rd_policy p = { .ops = &rd_policy_fixed, .dev = &info, .concurrency = 1 };
	CHECK(p.ops->init(&p, err, sizeof err) == 0);
	struct rd_request_info r = { .length = 4096 };
	CHECK(p.ops->size(&p, &r) == 2u << 20);
	r.client_size = 512 << 10;
	CHECK(p.ops->size(&p, &r) == 512u << 10);
	p.ops->destroy(&p);
	info.args = "8M";
	CHECK(p.ops->init(&p, err, sizeof err) == 0);
	r.client_size = 0;
	CHECK(p.ops->size(&p, &r) == 8u << 20);
	p.ops->destroy(&p);
	info.args = "lots";
	CHECK(p.ops->init(&p, err, sizeof err) == -1 && strstr(err, "not a size"));
	info.args = "1M,parallel=4";
	p.concurrency = 1;
	CHECK(p.ops->init(&p, err, sizeof err) == 0 && p.concurrency == 4);
	CHECK(p.ops->size(&p, &r) == 1u << 20);
	p.ops->destroy(&p);
	info.args = "parallel=0";
	CHECK(p.ops->init(&p, err, sizeof err) == -1 && strstr(err, "parallel"));
	info.args = "parallel=2x";
	CHECK(p.ops->init(&p, err, sizeof err) == -1);
}

static void test_json(void)
{
	struct rd_json j;
	rd_json_init(&j);
	rd_json_obj_begin(&j, NULL);
	rd_json_str(&j, "s", "a\"b\\c\n");
	rd_json_arr_begin(&j, "a");
	rd_json_u64(&j, NULL, 1);
	rd_json_u64(&j, NULL, 2);
	rd_json_arr_end(&j);
	rd_json_obj_begin(&j, "o");
	rd_json_dbl(&j, "x", 0.5);
	rd_json_obj_end(&j);
	rd_json_bool(&j, "t", 1);
	rd_json_obj_end(&j);
	const char *t = rd_json_text(&j);
	CHECK(t && strcmp(t, "{\"s\":\"a\\\"b\\\\c\\u000a\",\"a\":[1,2],\"o\":{\"x\":0.5},\"t\":true}") == 0);
	rd_json_free(&j);
}

/* REPORT's per-device entries land on a library-only record of their
 * disk when a file system with that st_dev is mounted, else in
 * library_unattributed, as does a library's "other" entry.  A first
 * ENSURE's device takes the record over. */
static void test_report_devices(void)
{
	struct stat st;
	CHECK(stat("/", &st) == 0);
	struct lc_report r;
	memset(&r, 0, sizeof r);
	r.devs[0] = (struct lc_report_dev){ .dev = st.st_dev, .calls = 3, .hits = 2, .hit_bytes = 8192 };
	r.devs[1] = (struct lc_report_dev){ .dev = makedev(4095, 1048575), .calls = 5, .hits = 5,
	                                    .hit_bytes = 500 };
	r.other = (struct lc_report_dev){ .calls = 7, .hits = 6, .hit_bytes = 600 };
	rd_stats_report(&r);
	rd_stats_report(&r);
	CHECK(rd_device_list() == NULL);  /* no queue, no worker for a report */
	struct rd_lib_disk *l = rd_lib_disk_list();
	CHECK(l && !l->next && l->st.calls == 6 && l->st.hits == 4 && l->st.hit_bytes == 16384);
	CHECK(rd_stats.unattributed.calls == 24 && rd_stats.unattributed.hits == 22 &&
	      rd_stats.unattributed.hit_bytes == 2200);
	char *json = rd_stats_json();
	CHECK(json && strstr(json, "\"library_calls\":6,\"library_hits\":4,\"library_hit_bytes\":16384}"));
	CHECK(json && strstr(json, "\"library_unattributed\":{\"calls\":24,\"hits\":22,\"hit_bytes\":2200}"));
	free(json);

	int direct;
	struct rd_device *d = rd_device_for(st.st_dev, &direct);  /* a first ENSURE */
	CHECK(d && d->st.lib_calls == 6 && d->st.lib_hits == 4 && d->st.lib_hit_bytes == 16384);
	CHECK(rd_lib_disk_list() == NULL);
	rd_stats_report(&r);
	CHECK(d && d->st.lib_calls == 9 && d->st.lib_hits == 6 && rd_lib_disk_list() == NULL);
	CHECK(rd_device_for(st.st_dev, &direct) == d && !direct);
	rd_device_stop_all();
}

/* A file system answered DIRECT (proc here, as tmpfs and memfd) that a
 * library then reports calls on: the counts go to a library-only record
 * and the file system stays direct (the map without a device once made
 * the report dereference NULL; found by the fuzz target). */
static void test_report_on_direct_fs(void)
{
	struct stat st;
	CHECK(stat("/proc/self", &st) == 0);
	int direct = 0;
	CHECK(rd_device_for(st.st_dev, &direct) == NULL && direct);
	struct lc_report r;
	memset(&r, 0, sizeof r);
	r.devs[0] = (struct lc_report_dev){ .dev = st.st_dev, .calls = 3, .hits = 1, .hit_bytes = 4096 };
	rd_stats_report(&r);
	rd_stats_report(&r);
	struct rd_lib_disk *l = rd_lib_disk_list();
	CHECK(l && l->st.calls == 6 && l->st.hits == 2);
	CHECK(rd_device_for(st.st_dev, &direct) == NULL && direct);
}

/* A window that reaches past the end of the file (the file shrank after
 * the request was made) ends at the file's end, without an error: the
 * loads past it raise SIGBUS, which the prefetcher catches. */
static void test_prefetch_to_file_end(void)
{
	char path[] = "/tmp/test_receptiond.XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	unlink(path);
	uint64_t size = (3u << 19) + 100;  /* 1.5 MiB and a partial page */
	static char block[4096];
	memset(block, 'x', sizeof block);
	for (uint64_t done = 0; done < size; done += sizeof block)
		CHECK(pwrite(fd, block, size - done < sizeof block ? size - done : sizeof block,
		             (off_t)done) > 0);
	void *scratch = malloc(RD_PIECE);
	struct rd_prefetch_result res;
	rd_prefetch(fd, 0, 4u << 20, RD_HINT, scratch, NULL, &res);
	CHECK(res.error == 0 && res.end == size);
	CHECK(rd_is_resident(fd, 0, size) != 0);
	rd_prefetch(fd, 4096, size, RD_HINT, scratch, NULL, &res);  /* all cached: nothing to do */
	CHECK(res.error == 0 && res.end == size && res.bytes_read == 0);
	CHECK(ftruncate(fd, 8192) == 0);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	rd_prefetch(fd, 0, 1u << 20, RD_HINT, scratch, NULL, &res);
	CHECK(res.error == 0 && res.end == 8192);
	free(scratch);
	close(fd);
}

/* Who may connect and who may stop the daemon (access.h). */
static void test_access(void)
{
	struct rd_access a;
	char err[200], note[200];
	gid_t g[] = { 100, 27 };
	CHECK(rd_access_parse("all", 1000, &a, err, sizeof err, note, sizeof note) == 0);
	CHECK(rd_access_allows(&a, 65534, 65534, NULL, 0));
	CHECK(rd_access_parse("owner", 1000, &a, err, sizeof err, note, sizeof note) == 0);
	CHECK(rd_access_allows(&a, 0, 0, NULL, 0) && rd_access_allows(&a, 1000, 1000, NULL, 0));
	CHECK(!rd_access_allows(&a, 65534, 65534, NULL, 0));
	CHECK(rd_access_parse("group:root", 1000, &a, err, sizeof err, note, sizeof note) == 0);
	CHECK(a.kind == RD_ACCESS_GROUP && a.gid == 0);
	CHECK(rd_access_allows(&a, 65534, 0, NULL, 0));          /* primary group */
	a.gid = 27;
	CHECK(rd_access_allows(&a, 65534, 65534, g, 2));         /* supplementary */
	CHECK(!rd_access_allows(&a, 65534, 65534, g, 1));
	CHECK(rd_access_parse("group:no-such-group-lc", 0, &a, err, sizeof err, note, sizeof note) == -1);
	CHECK(strstr(err, "no group no-such-group-lc") != NULL);
	CHECK(rd_access_parse("everyone", 0, &a, err, sizeof err, note, sizeof note) == -1);
	CHECK(rd_access_parse("group:", 0, &a, err, sizeof err, note, sizeof note) == -1);
	/* The default: a non-root daemon admits its owner (and root). */
	CHECK(rd_access_parse(NULL, 1000, &a, err, sizeof err, note, sizeof note) == 0);
	CHECK(a.kind == RD_ACCESS_OWNER && !note[0]);
	/* Control is judged on the message's sender, whatever the access. */
	CHECK(rd_access_parse("all", 1000, &a, err, sizeof err, note, sizeof note) == 0);
	CHECK(rd_access_may_control(&a, 0) && rd_access_may_control(&a, 1000));
	CHECK(!rd_access_may_control(&a, 65534));
}

static void test_quota(void)
{
	rd_cfg.user_misses = 3;
	CHECK(rd_quota_take(4242, RD_Q_MISSES, 2, 0) == 0);
	CHECK(rd_quota_take(4242, RD_Q_MISSES, 2, 0) == -1);     /* would pass the limit */
	CHECK(rd_quota_take(4243, RD_Q_MISSES, 3, 0) == 0);      /* another user's own share */
	CHECK(rd_quota_full(4243, RD_Q_MISSES) && !rd_quota_full(4242, RD_Q_MISSES));
	CHECK(rd_quota_take(4242, RD_Q_MISSES, 5, 1) == 0 && rd_quota_held(4242, RD_Q_MISSES) == 7);
	rd_quota_give(4242, RD_Q_MISSES, 7);
	rd_quota_give(4243, RD_Q_MISSES, 3);
	CHECK(rd_quota_held(4242, RD_Q_MISSES) == 0 && rd_quota_users() == 0);
	rd_cfg.user_misses = 64;
}

static void test_prefetched_fs(void)
{
	CHECK(rd_fs_type_prefetched("ext4") && rd_fs_type_prefetched("fuse") &&
	      rd_fs_type_prefetched("xfs") && rd_fs_type_prefetched("btrfs"));
	CHECK(!rd_fs_type_prefetched("tmpfs") && !rd_fs_type_prefetched("proc") &&
	      !rd_fs_type_prefetched("sysfs") && !rd_fs_type_prefetched("dev") &&
	      !rd_fs_type_prefetched("ramfs") && !rd_fs_type_prefetched(""));
}

static void test_socket_dir(void)
{
	char why[128];
	struct stat st = { .st_mode = S_IFDIR | 0700, .st_uid = 1000 };
	CHECK(rd_dir_trusted(&st, 1000, why, sizeof why));
	st.st_uid = 65534;                             /* made by someone else */
	CHECK(!rd_dir_trusted(&st, 1000, why, sizeof why) && strstr(why, "uid 65534"));
	st = (struct stat){ .st_mode = S_IFDIR | 0777, .st_uid = 1000 };
	CHECK(!rd_dir_trusted(&st, 1000, why, sizeof why) && strstr(why, "writable"));
	st = (struct stat){ .st_mode = S_IFDIR | 01777, .st_uid = 0 };   /* /tmp */
	CHECK(rd_dir_trusted(&st, 1000, why, sizeof why));
	st = (struct stat){ .st_mode = S_IFDIR | 01777, .st_uid = 1000 };
	CHECK(!rd_dir_trusted(&st, 0, why, sizeof why));
	st = (struct stat){ .st_mode = S_IFLNK | 0777, .st_uid = 1000 };
	CHECK(!rd_dir_trusted(&st, 1000, why, sizeof why));
}

int main(void)
{
	test_access();
	test_quota();
	test_prefetched_fs();
	test_socket_dir();
	test_sizes();
	test_window();
	test_queue();
	test_policy_specs();
	test_json();
	test_report_devices();
	test_report_on_direct_fs();
	test_prefetch_to_file_end();
	return check_done();
}
