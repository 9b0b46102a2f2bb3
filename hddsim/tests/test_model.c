/*
 * test_model.c - unit tests of the disk model on a virtual clock: no real
 * time passes, every instant is chosen by the test.
 * Usage: test_model DRIVES.CONF
 */
#include "../drives.h"
#include "../model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int failures;
static const char *conf;

#define CHECK(cond, ...) do { \
	if (!(cond)) { \
		failures++; \
		printf("test_model: FAIL %s:%d: ", __FILE__, __LINE__); \
		printf(__VA_ARGS__); \
		printf("\n"); \
	} \
} while (0)

static void load(struct model *m, const char *name, void (*tweak)(struct drive *))
{
	struct drive d;
	char err[256];
	if (drives_load(conf, name, &d, err, sizeof err)) {
		printf("test_model: %s\n", err);
		exit(1);
	}
	if (tweak)
		tweak(&d);
	if (model_init(m, &d, err, sizeof err)) {
		printf("test_model: %s\n", err);
		exit(1);
	}
}

/* Deterministic pseudo-random numbers (xorshift) so runs repeat exactly. */
static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return rng;
}

/* Mean time of single-page reads alternating between two points x apart,
 * with random idle gaps so the platter phase is random at each start. */
static double mean_access_ms(struct model *m, double x)
{
	uint64_t C = m->d.capacity;
	uint64_t span = (uint64_t)(x * (double)C) - (x >= 1 ? C / 500 : 0);
	int64_t t = 1000000000;
	double sum = 0;
	int n = 2000;
	for (int i = 0; i < n; i++) {
		/* A random read, then one exactly `span` further in. */
		uint64_t base = (rnd() % (C - span - 4096)) & ~4095ull;
		for (int k = 0; k < 2; k++) {
			struct model_req r = { base + (k ? span : 0), 4096, t };
			struct model_cost c = model_serve(m, t, &r);
			if (k)
				sum += (double)c.total;
			t += c.total + (int64_t)(rnd() % 20000000);
		}
	}
	return sum / n / 1e6;
}

static void test_access(const char *name)
{
	struct model m;
	load(&m, name, NULL);
	double want[3] = { m.d.access_quarter, m.d.access_half, m.d.access_full };
	double xs[3] = { 0.25, 0.5, 1.0 };
	for (int i = 0; i < 3; i++) {
		/* The model leaves out the host's share, which a live mount adds. */
		double got = mean_access_ms(&m, xs[i]) + m.d.host_overhead;
		printf("test_model: %-13s access at %.2f stroke: %6.2f ms (preset %5.2f, %+5.1f%%)\n",
		       name, xs[i], got, want[i], 100 * (got / want[i] - 1));
		CHECK(fabs(got / want[i] - 1) < 0.05, "%s access at %.2f: %.2f ms vs %.2f", name, xs[i], got, want[i]);
	}
}

/* Back-to-back 128 KiB reads: the head never repositions. */
static double seq_rate(struct model *m, double f)
{
	uint64_t pos = (uint64_t)(f * (double)m->d.capacity) & ~4095ull;
	uint64_t len = 64ull << 20;
	int64_t t0 = 5000000000, t = t0;
	for (uint64_t done = 0; done < len; done += 131072) {
		struct model_req r = { pos + done, 131072, t };
		struct model_cost c = model_serve(m, t, &r);
		if (done == 0)
			t0 = t + c.overhead + c.seek + c.rot;
		t += c.total;
	}
	return (double)len / (double)(t - t0) * 1e3;
}

static void test_zones(const char *name)
{
	struct model m;
	load(&m, name, NULL);
	double fs[3] = { 0.0, 0.5, 1.0 - 64.0 * 1048576 / (double)m.d.capacity };
	double want[3] = { m.d.rate_outer, m.d.rate_middle, m.d.rate_inner };
	for (int i = 0; i < 3; i++) {
		double got = seq_rate(&m, fs[i]);
		printf("test_model: %-13s sequential at %.2f: %6.1f MB/s (preset %5.1f)\n", name, fs[i], got, want[i]);
		CHECK(fabs(got / want[i] - 1) < 0.02, "%s rate at %.2f: %.1f vs %.1f", name, fs[i], got, want[i]);
	}
}

/* Transfer time and rotation agree: reading N revolutions' worth of bytes
 * takes N revolutions. */
static void test_rotation(void)
{
	struct model m;
	load(&m, "wd-red", NULL);
	uint64_t a = 123456789ull * 4096;
	double revs = model_revs(&m, a + 10000000) - model_revs(&m, a);
	int64_t x = model_xfer_ns(&m, a, a + 10000000);
	CHECK(fabs((double)x / (double)m.trev - revs) < 1e-6, "xfer %lld ns vs %.6f revs", (long long)x, revs);
	/* Re-reading a sector we just passed costs almost a full revolution. */
	int64_t t = 1000000000;
	struct model_req r = { a, 4096, t };
	struct model_cost c = model_serve(&m, t, &r);
	t += c.total;
	m.ra_seg = -1; /* no read-ahead, no cache: pure mechanics */
	for (unsigned i = 0; i < m.d.segments; i++)
		m.seg[i].used = -1;
	struct model_req back = { a, 4096, t };
	c = model_serve(&m, t, &back);
	CHECK(c.seek == 0 && c.rot > m.trev * 9 / 10, "re-read: seek %lld rot %lld trev %lld",
	      (long long)c.seek, (long long)c.rot, (long long)m.trev);
}

static void no_readahead(struct drive *d) { d->readahead = 0; }

/* A reader that pauses between requests finds its next data in the cache
 * when the drive reads ahead, and waits for the platter when it does not. */
static void test_readahead(void)
{
	struct model m;
	load(&m, "wd-red", NULL);
	uint64_t pos = 1ull << 30;
	int64_t t = 1000000000;
	int hits = 0;
	for (int i = 0; i < 16; i++) {
		struct model_req r = { pos + (uint64_t)i * 65536, 65536, t };
		struct model_cost c = model_serve(&m, t, &r);
		hits += c.hit == 1;
		/* A hit moves at the interface's speed, but its bytes took
		 * the platter's time to read ahead: media counts that. */
		int64_t media = model_xfer_ns(&m, r.pos, r.pos + r.len);
		CHECK(c.media == media && (c.hit != 1 || c.xfer < media / 4),
		      "read %d (kind %d): media %lld ns, platter %lld, xfer %lld", i, c.hit,
		      (long long)c.media, (long long)media, (long long)c.xfer);
		t += c.total + 2000000; /* 2 ms think time */
	}
	CHECK(hits == 15, "read-ahead: %d of 15 follow-up reads hit", hits);

	load(&m, "wd-red", no_readahead);
	t = 1000000000;
	int64_t rot = 0;
	for (int i = 0; i < 16; i++) {
		struct model_req r = { pos + (uint64_t)i * 65536, 65536, t };
		struct model_cost c = model_serve(&m, t, &r);
		CHECK(c.hit != 1, "no read-ahead but hit at %d", i);
		if (i)
			rot += c.rot;
		t += c.total + 2000000;
	}
	CHECK(rot > 15 * m.trev / 2, "without read-ahead each pause costs rotation: %lld ns", (long long)rot);
	printf("test_model: read-ahead: 15/15 hits with, %.1f ms rotation lost without\n", (double)rot / 1e6);
}

/* More interleaved sequential streams than segments thrash the cache. */
static void test_segments(void)
{
	struct model m;
	load(&m, "wd-red", NULL);
	for (unsigned streams = 4; streams <= 32; streams *= 8) {
		load(&m, "wd-red", NULL);
		int64_t t = 1000000000;
		int hits = 0, n = 0;
		for (int round = 0; round < 4; round++)
			for (unsigned s = 0; s < streams; s++) {
				struct model_req r = { (uint64_t)s * (10ull << 30) + (uint64_t)round * 65536, 65536, t };
				struct model_cost c = model_serve(&m, t, &r);
				if (round) {
					hits += c.hit == 1;
					n++;
				}
				t += c.total + 3000000;
			}
		printf("test_model: %2u interleaved streams: %d/%d hits\n", streams, hits, n);
		if (streams < m.d.segments)
			CHECK(hits == n, "%u streams: %d/%d hits", streams, hits, n);
		else
			CHECK(hits == 0, "%u streams: %d/%d hits", streams, hits, n);
	}
}

static void fifo(struct drive *d) { d->policy = MODEL_FIFO; }
static void patient(struct drive *d) { d->age_limit = 1e6; }

static void test_queue(void)
{
	struct model m;
	load(&m, "wd-red", NULL);
	int64_t t = 1000000000;
	/* Head near 1 GB; queue: far, near, farther. */
	struct model_req first = { 1ull << 30, 4096, t };
	struct model_cost c = model_serve(&m, t, &first);
	t += c.total + 100000000;
	struct model_req q[3] = {
		{ 600ull << 30, 4096, t - 3000 },
		{ (1ull << 30) + (50ull << 20), 4096, t - 2000 },
		{ 900ull << 30, 4096, t - 1000 },
	};
	CHECK(model_pick(&m, t, q, 3) == 1, "sptf picks the near one: %zu", model_pick(&m, t, q, 3));
	/* Past the age limit the oldest goes first. */
	q[0].arrival = t - 600 * 1000000ll;
	CHECK(model_pick(&m, t, q, 3) == 0, "age limit: %zu", model_pick(&m, t, q, 3));
	q[0].arrival = t - 3000;
	/* Depth 1 is FIFO. */
	m.d.queue_depth = 1;
	CHECK(model_pick(&m, t, q, 3) == 0, "depth 1: %zu", model_pick(&m, t, q, 3));
	load(&m, "wd-red", fifo);
	CHECK(model_pick(&m, t, q, 3) == 0, "fifo");

	/* SPTF over a deep random queue beats FIFO on throughput. */
	double tp[2];
	for (int pol = 0; pol < 2; pol++) {
		load(&m, "wd-red", pol ? patient : fifo);
		struct model_req rq[32];
		int64_t now = 1000000000;
		for (int i = 0; i < 32; i++)
			rq[i] = (struct model_req){ (rnd() % (m.d.capacity >> 12)) << 12, 4096, now };
		int done = 0;
		size_t n = 32;
		while (done < 2000) {
			size_t k = model_pick(&m, now, rq, n);
			struct model_cost cc = model_serve(&m, now, &rq[k]);
			now += cc.total;
			for (size_t j = k; j + 1 < n; j++)
				rq[j] = rq[j + 1];
			rq[n - 1] = (struct model_req){ (rnd() % (m.d.capacity >> 12)) << 12, 4096, now };
			done++;
		}
		tp[pol] = done / ((double)(now - 1000000000) / 1e9);
	}
	printf("test_model: QD32 random 4 KiB: FIFO %.0f IOPS, SPTF %.0f IOPS\n", tp[0], tp[1]);
	CHECK(tp[1] > 1.5 * tp[0], "SPTF %.0f vs FIFO %.0f IOPS", tp[1], tp[0]);
}

/* The actuator's loop (sched.c) on the virtual clock: serve the queue q,
 * in arrival order, with the drive free from t_free; returns when the last
 * command ends.  Counts commands that needed positioning and pieces that
 * joined the command before them. */
static int64_t serve_queue(struct model *m, int64_t t_free, struct model_req *q, size_t n,
			   int *positioned, int *joined)
{
	*positioned = *joined = 0;
	while (n) {
		int64_t t = t_free > q[0].arrival ? t_free : q[0].arrival;
		size_t k = model_pick(m, t, q, n);
		int64_t start = model_start(m, t, &q[k]);
		struct model_cost c = model_serve(m, start, &q[k]);
		*positioned += c.seek + c.rot + c.overhead > 0;
		*joined += c.hit == 3;
		t_free = start + c.total;
		for (size_t j = k; j + 1 < n; j++)
			q[j] = q[j + 1];
		n--;
	}
	return t_free;
}

/* Drive state before each trial: one read somewhere else, then an idle gap
 * that puts the platter at a random phase. */
static int64_t warm_up(struct model *m, uint64_t far)
{
	struct model_req w = { far, 4096, 1000000000 };
	struct model_cost c = model_serve(m, w.arrival, &w);
	return w.arrival + c.total + (int64_t)(rnd() % 50000000);
}

#define MIB (1ull << 20)

/* A 4 MiB command the host split into four 1 MiB pieces costs what the
 * 4 MiB command costs: one positioning, one transfer, whatever order the
 * pieces reach the queue in. */
static void test_merge_split_command(const char *policy, void (*tweak)(struct drive *))
{
	struct model one, four;
	double sum_one = 0, sum_four = 0, sum_fifo_order = 0;
	int trials = 200, bad = 0;
	for (int i = 0; i < trials; i++) {
		load(&one, "wd-red", tweak);
		load(&four, "wd-red", tweak);
		uint64_t C = one.d.capacity;
		uint64_t pos = (rnd() % (C / 2 - 8 * MIB)) & ~4095ull, far = C / 2 + (rnd() % (C / 4) & ~4095ull);
		int64_t t = warm_up(&one, far);
		warm_up(&four, far);
		struct model_req whole = { pos, 4 * MIB, t };
		struct model_cost c1 = model_serve(&one, t, &whole);
		/* The pieces in a random order, all queued at once. */
		struct model_req q[4];
		int order[4] = { 0, 1, 2, 3 };
		for (int k = 3; k > 0; k--) {
			int j = (int)(rnd() % (uint64_t)(k + 1)), x = order[k];
			order[k] = order[j], order[j] = x;
		}
		for (int k = 0; k < 4; k++)
			q[k] = (struct model_req){ pos + (uint64_t)order[k] * MIB, MIB, t };
		/* For comparison: the same pieces served in that order, each on its own. */
		struct model plain = four;
		int64_t tp = t;
		for (int k = 0; k < 4; k++)
			tp += model_serve(&plain, tp, &q[k]).total;
		int positioned, joined;
		int64_t end = serve_queue(&four, t, q, 4, &positioned, &joined);
		sum_one += (double)c1.total, sum_four += (double)(end - t), sum_fifo_order += (double)(tp - t);
		if (llabs(end - t - c1.total) > 10000 || positioned != 1 || joined != 3)
			bad++;
	}
	printf("test_model: merge (%s): 4 x 1 MiB queued together %.2f ms, one 4 MiB command %.2f ms, "
	       "the pieces one by one in queue order %.2f ms (means of %d)\n", policy,
	       sum_four / trials / 1e6, sum_one / trials / 1e6, sum_fifo_order / trials / 1e6, trials);
	CHECK(bad == 0, "merge (%s): %d of %d split commands did not cost one command", policy, bad, trials);
}

/* Pieces that reach the drive one after another: while the previous one
 * transfers, or within MODEL_MERGE_NS after it ended, they join it;
 * later than that, they are new commands. */
static void test_merge_back_to_back(void)
{
	struct model m;
	load(&m, "wd-red", no_readahead);
	uint64_t pos = 3ull << 30;
	int64_t t = warm_up(&m, 100ull << 30);
	struct model_req first = { pos, MIB, t };
	int64_t t_free = t + model_serve(&m, t, &first).total;
	/* Arrived during the first one's transfer. */
	struct model_req q[1] = { { pos + MIB, MIB, t + 1000000 } };
	int positioned, joined;
	t_free = serve_queue(&m, t_free, q, 1, &positioned, &joined);
	CHECK(joined == 1 && positioned == 0, "piece during the transfer: joined %d positioned %d", joined, positioned);
	/* Arrived 100 us after the end. */
	q[0] = (struct model_req){ pos + 2 * MIB, MIB, t_free + 100000 };
	int64_t end = serve_queue(&m, t_free, q, 1, &positioned, &joined);
	CHECK(joined == 1 && end == t_free + model_xfer_ns(&m, pos + 2 * MIB, pos + 3 * MIB),
	      "piece 100 us late: joined %d", joined);
	/* Arrived 2 ms after the end: the sector has passed, the platter must
	 * come round again. */
	q[0] = (struct model_req){ pos + 3 * MIB, MIB, end + 2000000 };
	struct model_cost c = model_serve(&m, q[0].arrival, &q[0]);
	CHECK(c.hit != 3 && c.rot > m.trev / 2, "piece 2 ms late: kind %d rotation %lld", c.hit, (long long)c.rot);
	/* Not contiguous: a 64 KiB gap between 1 MiB pieces queued together. */
	load(&m, "wd-red", no_readahead);
	t = warm_up(&m, 100ull << 30);
	struct model_req gap[4];
	for (int k = 0; k < 4; k++)
		gap[k] = (struct model_req){ pos + (uint64_t)k * (MIB + 65536), MIB, t };
	serve_queue(&m, t, gap, 4, &positioned, &joined);
	CHECK(joined == 0 && positioned == 4, "gapped pieces: joined %d positioned %d", joined, positioned);

	/* A joining piece goes before an older command, under either policy,
	 * but not before one past the age limit. */
	for (int pol = 0; pol < 2; pol++) {
		load(&m, "wd-red", pol ? fifo : NULL);
		t = warm_up(&m, 100ull << 30);
		struct model_req a = { pos, MIB, t };
		int64_t end1 = t + model_serve(&m, t, &a).total;
		struct model_req mix[2] = { { 200ull << 30, 4096, end1 - 1000000 }, { pos + MIB, MIB, end1 - 500000 } };
		CHECK(model_pick(&m, end1, mix, 2) == 1, "policy %d: the joining piece waits", pol);
		mix[0].arrival = end1 - (int64_t)((m.d.age_limit + 1) * 1e6);
		CHECK(model_pick(&m, end1, mix, 2) == 0, "policy %d: age limit ignored for a join", pol);
	}
}

static void test_bad_drive(void)
{
	struct drive d;
	struct model m;
	char err[256];
	drives_load(conf, "wd-red", &d, err, sizeof err);
	d.access_full = 5;
	CHECK(model_init(&m, &d, err, sizeof err) == -1, "accepts full stroke faster than quarter");
	CHECK(drives_load(conf, "no-such-drive", &d, err, sizeof err) == -1, "unknown preset accepted");
}

int main(int argc, char **argv)
{
	conf = argc > 1 ? argv[1] : "drives.conf";
	const char *presets[] = { "wd-red", "hp-10k-sas", "seagate-7200" };
	for (int i = 0; i < 3; i++) {
		test_access(presets[i]);
		test_zones(presets[i]);
	}
	test_rotation();
	test_readahead();
	test_segments();
	test_queue();
	test_merge_split_command("sptf", NULL);
	test_merge_split_command("fifo", fifo);
	test_merge_split_command("sptf, no read-ahead", no_readahead);
	test_merge_back_to_back();
	test_bad_drive();
	printf("test_model: %s\n", failures ? "FAILED" : "all passed");
	return failures ? 1 : 0;
}
