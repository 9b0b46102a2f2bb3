/*
 * test_sizing.c - unit tests of the prefetch-sizing policies on synthetic
 * inputs: argument parsing, profiles, per-bitrate scaling, streams and
 * accounting, slow start, and the adaptive policy driven by a model disk
 * on a synthetic clock (it must find the best size from below and from
 * above, stay put under light load, and jump on evictions).  This file:
 * main, the helpers the others share, and the small policies; the rest is
 * listed in test_sizing.h.
 *
 * SIZING_VERBOSE=1 prints the policies' log lines.
 */
#include "test_sizing.h"

int failures;

void test_args(void)
{
	const char *cur = "interval=30s,step=512K,,deflate=5%";
	char k[32], v[64];
	CHECK(sz_args_next(&cur, k, sizeof k, v, sizeof v) == 1 && !strcmp(k, "interval") &&
	      !strcmp(v, "30s"));
	CHECK(sz_args_next(&cur, k, sizeof k, v, sizeof v) == 1 && !strcmp(k, "step"));
	CHECK(sz_args_next(&cur, k, sizeof k, v, sizeof v) == 1 && !strcmp(v, "5%"));
	CHECK(sz_args_next(&cur, k, sizeof k, v, sizeof v) == 0);
	cur = "novalue";
	CHECK(sz_args_next(&cur, k, sizeof k, v, sizeof v) == -1);

	uint64_t ns;
	CHECK(sz_parse_duration("180s", &ns) == 0 && ns == 180 * SEC);
	CHECK(sz_parse_duration("500ms", &ns) == 0 && ns == SEC / 2);
	CHECK(sz_parse_duration("2m", &ns) == 0 && ns == 120 * SEC);
	CHECK(sz_parse_duration("1.5", &ns) == 0 && ns == 3 * SEC / 2);
	CHECK(sz_parse_duration("12x", &ns) == -1);
	CHECK(sz_parse_duration("-1s", &ns) == -1);
	double f;
	CHECK(sz_parse_fraction("5%", &f) == 0 && fabs(f - 0.05) < 1e-12);
	CHECK(sz_parse_fraction("0.6", &f) == 0 && fabs(f - 0.6) < 1e-12);
	CHECK(sz_parse_fraction("150%", &f) == -1);
	struct rd_device_info dev = {.name = "vda"};
	struct sz_base b;
	char err[160];
	sz_base_defaults(&b, "bitrate", &dev);
	CHECK(b.ref_pct == 95);
	CHECK(sz_base_arg(&b, "ref", "90%", err, sizeof err) == 1 && fabs(b.ref_pct - 90) < 1e-9);
	CHECK(sz_base_arg(&b, "ref", "20%", err, sizeof err) == -1 && strstr(err, "ref=\"20%\""));
	CHECK(sz_parse_bytes("0.5M", &f) == 0 && f == 512 * 1024);
	CHECK(sz_parse_bytes("122MB", &f) == 0 && f == 122.0 * MiB);
	CHECK(sz_parse_bytes("x", &f) == -1);
}

void test_profile(void)
{
	struct sz_profile p;
	/* Nested "rate" keys (per position, per thread count) must not be
	 * taken for the top-level one. */
	const char *text = "{\"version\": 1, \"sequential\": [{\"position\": 0.01, \"rate\": 1},"
	                   " {\"rate\": 2}], \"rate\": 120000000,\n \"switch_s\": 0.0125,"
	                   " \"parallel\": {\"results\": [{\"threads\": 1, \"rate\": 5}]},"
	                   " \"path\": \"a \\\"quoted\\\" rate\", \"concurrency\": 4}";
	CHECK(sz_profile_parse(text, &p) == 0);
	CHECK(p.rate == 120000000.0);
	CHECK(fabs(p.switch_s - 0.0125) < 1e-12);
	CHECK(fabs(p.competitive_size - 1.5e6) < 1);
	CHECK(p.concurrency == 4);
	CHECK(sz_profile_parse("{\"rate\": 5}", &p) == -2);
	CHECK(sz_profile_parse("garbage", &p) == -2);
	CHECK(sz_profile_load(makedev(0, 0), "/nonexistent/profile.json", &p) == -1);
}

void test_scale(void)
{
	/* sqrt: a quarter of the top bitrate gets half the size. */
	CHECK(sz_scale_size(SZ_SCALE_SQRT, 4 * MiB, 1e5, 4e5, 128 << 10) == 2 * MiB);
	CHECK(sz_scale_size(SZ_SCALE_LINEAR, 4 * MiB, 1e5, 4e5, 128 << 10) == 1 * MiB);
	CHECK(sz_scale_size(SZ_SCALE_NONE, 4 * MiB, 1e5, 4e5, 128 << 10) == 4 * MiB);
	/* unknown bitrate, or the top one: the policy's size */
	CHECK(sz_scale_size(SZ_SCALE_SQRT, 4 * MiB, 0, 4e5, 128 << 10) == 4 * MiB);
	CHECK(sz_scale_size(SZ_SCALE_SQRT, 4 * MiB, 4e5, 4e5, 128 << 10) == 4 * MiB);
	/* never below min */
	CHECK(sz_scale_size(SZ_SCALE_LINEAR, 4 * MiB, 1, 4e5, 128 << 10) == 128 << 10);
	enum sz_scale s;
	CHECK(sz_scale_parse("sqrt", &s) == 0 && s == SZ_SCALE_SQRT);
	CHECK(sz_scale_parse("cubic", &s) == -1);
}

struct rd_completion completion(ino_t ino, uint64_t off, uint64_t len, uint64_t win,
                                uint64_t read, uint64_t service, uint64_t now)
{
	struct rd_completion c;
	memset(&c, 0, sizeof c);
	c.req.dev = makedev(0, 99);
	c.req.ino = ino;
	c.req.file_size = 1ull << 40;
	c.req.offset = off;
	c.req.length = len;
	c.fd = -1;
	c.was_resident = read == 0;
	c.window_offset = off;
	c.window_length = win;
	c.bytes_read = read;
	c.service_ns = service;
	c.done_ns = now;
	return c;
}

struct rd_device_info dev_info(const char *args)
{
	struct rd_device_info d;
	memset(&d, 0, sizeof d);
	d.name = "test";
	d.fs_dev = d.disk = makedev(0, 99);
	d.default_size = 2 * MiB;
	d.args = args;
	return d;
}

void test_competitive(void)
{
	/* Without a profile (an empty profile directory): the daemon's size. */
	setenv("LIBCEPTION_PROFILES", "/nonexistent-sizing-test", 1);
	struct rd_device_info d = dev_info("switch=12ms,rate=125M,first=64K");
	struct rd_policy p = { .ops = &rd_policy_competitive, .dev = &d, .concurrency = 1 };
	char err[256] = "";
	CHECK(p.ops->init(&p, err, sizeof err) == 0);
	/* 12 ms x 125 MiB/s = 1.5 MiB */
	struct rd_request_info r = { .dev = d.fs_dev, .ino = 5, .offset = 0, .length = 4096 };
	uint64_t want[] = { 64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20, 1536 << 10, 1536 << 10 };
	uint64_t off = 0, now = rd_now_ns();
	for (unsigned i = 0; i < sizeof want / sizeof want[0]; i++) {
		r.offset = off;
		uint64_t size = p.ops->size(&p, &r);
		CHECK(size == want[i]);
		struct rd_completion c = completion(5, off, 4096, size, size, 1000000, now);
		c.req = r;
		p.ops->observe(&p, &c);
		off += size;
		now += SEC / 10;
	}
	/* A new stream (another file) starts small again. */
	struct rd_request_info r2 = { .dev = d.fs_dev, .ino = 6, .offset = 0, .length = 4096 };
	CHECK(p.ops->size(&p, &r2) == 64 << 10);
	struct rd_json j;
	rd_json_init(&j);
	rd_json_obj_begin(&j, NULL);
	p.ops->describe(&p, &j);
	rd_json_obj_end(&j);
	CHECK(rd_json_text(&j) && strstr(rd_json_text(&j), "\"size\":1572864"));
	rd_json_free(&j);
	p.ops->destroy(&p);

	/* A profile file gives the size and the concurrency. */
	char path[] = "/tmp/test_sizing_prof.XXXXXX";
	int fd = mkstemp(path);
	const char *prof = "{\"rate\": 100000000, \"switch_s\": 0.02, \"concurrency\": 4}";
	CHECK(fd >= 0 && write(fd, prof, strlen(prof)) == (ssize_t)strlen(prof));
	close(fd);
	char args[300];
	snprintf(args, sizeof args, "profile=%s,slowstart=0", path);
	d = dev_info(args);
	p = (struct rd_policy){ .ops = &rd_policy_competitive, .dev = &d, .concurrency = 1 };
	CHECK(p.ops->init(&p, err, sizeof err) == 0);
	CHECK(p.concurrency == 4);
	CHECK(p.ops->size(&p, &r) == 2000000 / 4096 * 4096 + (2000000 % 4096 >= 2048 ? 4096 : 0));
	CHECK(strstr(sz_test_last_log, "switch 20.00 ms x 100.0 MB/s"));
	p.ops->destroy(&p);
	unlink(path);

	/* Direct: no mechanical switch (under 1 ms) and parallel reads
	 * faster, whatever switch x rate comes to; not with one read at a
	 * time, an explicit size=, or direct=0. */
	struct { const char *args; int direct; } dc[] = {
		{ "switch=0.05ms,rate=1000M,concurrency=4", 1 },
		{ "switch=0.066ms,rate=2861M,concurrency=4", 1 },   /* 189 KB > min */
		{ "switch=0.05ms,rate=1000M,concurrency=1", 0 },
		{ "switch=0.05ms,rate=1000M,concurrency=4,direct=0", 0 },
		{ "size=64K,concurrency=4", 0 },
		{ "switch=12ms,rate=125M,concurrency=4", 0 },
		{ "switch=12ms,rate=125M,direct=1", 1 },
	};
	for (unsigned i = 0; i < sizeof dc / sizeof dc[0]; i++) {
		d = dev_info(dc[i].args);
		p = (struct rd_policy){ .ops = &rd_policy_competitive, .dev = &d, .concurrency = 1 };
		CHECK(p.ops->init(&p, err, sizeof err) == 0);
		CHECK(p.direct == dc[i].direct);
		CHECK(!strstr(sz_test_last_log, "direct: nothing to add") == !dc[i].direct);
		p.ops->destroy(&p);
	}

	d = dev_info("switch=fast");
	p = (struct rd_policy){ .ops = &rd_policy_competitive, .dev = &d, .concurrency = 1 };
	CHECK(p.ops->init(&p, err, sizeof err) == -1 && strstr(err, "switch=fast"));
	d = dev_info("direct=2");
	CHECK(p.ops->init(&p, err, sizeof err) == -1 && strstr(err, "direct=2"));
	d = dev_info("profile=/nonexistent/x.json");
	CHECK(p.ops->init(&p, err, sizeof err) == -1 && strstr(err, "/nonexistent/x.json"));
}

void test_bitrate_policy(void)
{
	struct rd_device_info d = dev_info("size=4M,scale=sqrt");
	struct rd_policy p = { .ops = &rd_policy_bitrate, .dev = &d, .concurrency = 1 };
	char err[256];
	CHECK(p.ops->init(&p, err, sizeof err) == 0);
	/* Two streams, 400 kB/s and 100 kB/s, for 30 s (bitrates are known
	 * from the second 10 s pacing period on). */
	uint64_t now = rd_now_ns();
	uint64_t off[2] = {0, 0};
	double rate[2] = {400e3, 100e3};
	for (unsigned s = 0; s < 30; s++) {
		for (unsigned i = 0; i < 2; i++) {
			struct rd_completion c = completion(700 + i, off[i], 65536, 65536, 65536, 1000, now);
			p.ops->observe(&p, &c);
			off[i] += (uint64_t)rate[i];
		}
		now += SEC;
		p.ops->tick(&p, now);
	}
	struct rd_request_info hi = { .dev = d.fs_dev, .ino = 700, .offset = off[0], .length = 4096 };
	struct rd_request_info lo = { .dev = d.fs_dev, .ino = 701, .offset = off[1], .length = 4096 };
	CHECK(p.ops->size(&p, &hi) == 4 * MiB);
	uint64_t l = p.ops->size(&p, &lo);
	CHECK(l > 1900 * 1024 && l < 2200 * 1024);   /* sqrt(1/4) of 4 MiB */
	p.ops->destroy(&p);
}

int main(void)
{
	sz_test_verbose = getenv("SIZING_VERBOSE") != NULL;
	test_args();
	test_profile();
	test_scale();
	test_streams_and_accounting();
	test_evictions_needed();
	test_evictions_before_a_cut();
	test_pacing_skips_the_opening_burst();
	test_reference_bitrate_is_a_percentile();
	test_stream_continues_inside_its_ask();
	test_busy_union();
	test_recheck();
	test_competitive();
	test_adaptive();
	test_adaptive_evictions();
	test_bitrate_policy();
	if (failures) {
		fprintf(stderr, "test_sizing: %d check%s failed\n", failures, failures == 1 ? "" : "s");
		return 1;
	}
	printf("test_sizing: all tests passed\n");
	return 0;
}
