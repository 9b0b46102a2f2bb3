/*
 * model.c - a model server for the adaptive policy's tests: viewers read
 * windows of the policy's size from a model disk on a synthetic clock
 * (struct model in test_sizing.h); the runs and the A/A check on it.
 */
#include "test_sizing.h"

static double model_random(unsigned *rnd)
{
	*rnd = *rnd * 1103515245u + 12345u;
	return ((*rnd >> 8) & 0xffff) / 65535.0;
}

/* One viewer of the model: where it has got, how far its file is
 * resident, which file, and where its session ends. */
struct viewer {
	uint64_t pos, resident_end, stop;
	ino_t ino;
};

/* With follow=, where viewer 0 starts, in follow= steps (past every
 * follower's start). */
enum { FOLLOWED_FROM = 64 };

static void viewer_start(struct viewer *v, const struct model *m, unsigned i, unsigned *sessions,
                         unsigned *rnd)
{
	v->ino = 1000 + i + 64 * (*sessions)++;
	v->pos = v->resident_end = (uint64_t)i << 36;   /* far apart */
	v->stop = m->session > 0 ? v->pos + (uint64_t)(m->session * (1 + 4 * model_random(rnd)) / 3)
	                         : UINT64_MAX;
	if (m->follow && i % 8 == 7) {
		v->ino = v[-(int)i].ino;
		v->pos = v->resident_end = FOLLOWED_FROM * m->follow - (1 + i / 8) * 2 * MiB;
		v->stop = v->pos + (uint64_t)(m->session * (1 + 4 * model_random(rnd)) / 3);
	}
	if (m->follow && i == 0) {
		v->pos = v->resident_end = FOLLOWED_FROM * m->follow;
		v->stop = UINT64_MAX;
	}
}

/* The disk time per MiB the viewers consumed over the second half of the
 * last run_model() (what the sizes cost, trial groups included). */
double model_disk_ms_per_mib;

/* Returns the mean window size over the second half of the run. */
static double run_model(struct rd_policy *p, const struct model *m, uint64_t *now, unsigned seconds)
{
	double sum = 0, disk_s = 0, consumed = 0;
	unsigned n = 0, sessions = 0;
	uint64_t disk_free = *now;   /* the model disk serves one read at a time */
	unsigned rnd = m->seed, vrnd = m->seed + 7;
	double load = 1;
	struct viewer v[512];
	CHECK(m->n <= sizeof v / sizeof *v);
	if (m->n > sizeof v / sizeof *v)
		return 0;   /* no run past the viewers' array */
	for (unsigned i = 0; i < m->n; i++)
		viewer_start(&v[i], m, i, &sessions, &vrnd);
	for (unsigned s = 0; s < seconds; s++) {
		if (m->noise > 0 && s % 20 == 0)
			load = 1 + m->noise * (2 * model_random(&rnd) - 1);
		for (unsigned i = 0; i < m->n; i++) {
			int slow = i < m->slow;
			v[i].pos += (uint64_t)(slow ? m->slow_bitrate : m->bitrate);
			if (s >= seconds / 2)
				consumed += slow ? m->slow_bitrate : m->bitrate;
			if (v[i].pos >= v[i].stop)
				viewer_start(&v[i], m, i, &sessions, &vrnd);
			while (v[i].pos >= v[i].resident_end) {
				struct rd_request_info r = { .dev = makedev(0, 99), .ino = v[i].ino,
				                             .file_size = 1ull << 40,
				                             .offset = v[i].resident_end,
				                             .length = 65536, .arrival_ns = *now };
				const struct viewer *lead = m->follow && i % 8 == 7 ? &v[0] : NULL;
				if (lead && r.offset >= FOLLOWED_FROM * m->follow &&
				    r.offset < lead->resident_end) {
					/* what viewer 0 read: resident, a hit */
					struct rd_completion c = completion(r.ino, r.offset, 65536,
					                                    lead->resident_end - r.offset, 0, 0,
					                                    *now);
					c.req = r;
					p->ops->observe(p, &c);
					v[i].resident_end = lead->resident_end;
					continue;
				}
				uint64_t w = p->ops->size(p, &r);
				if (s >= seconds / 2) {
					sum += (double)w;
					n++;
				}
				double e = 1 - m->mem / (m->n * (double)w);
				if (e < 0)
					e = 0;
				double bytes = (double)w * (1 + e);
				double service = (m->switch_s + bytes / m->rate) * m->busy_scale * load;
				if (w >= m->bump_lo && w <= m->bump_hi)
					service *= 1 + m->bump;
				if (slow)
					service *= m->slow_cost;
				if (m->window_noise > 0)
					service *= 1 + m->window_noise * (2 * model_random(&rnd) - 1);
				if (s >= seconds / 2)
					disk_s += service;
				if (disk_free < *now)
					disk_free = *now;
				disk_free += (uint64_t)(service * 1e9);
				struct rd_completion c = completion(r.ino, r.offset, 65536, w, (uint64_t)bytes,
				                                    (uint64_t)(service * 1e9), disk_free);
				c.req = r;
				p->ops->observe(p, &c);
				v[i].resident_end = r.offset + w;
			}
		}
		*now += SEC;
		p->ops->tick(p, *now);
	}
	model_disk_ms_per_mib = consumed > 0 ? disk_s * 1e3 / (consumed / MiB) : 0;
	return n ? sum / n : 0;
}

/* compare=aa's decisions: how many, and the sum of each trial group's
 * distance from the current group, in standard errors. */
static unsigned aa_decisions;
static double aa_z_sum[2];

static double aa_least_read_per_used;

static void aa_collect(const char *line)
{
	const char *at = strstr(line, "A/A side by side");
	if (!at)
		return;
	aa_decisions++;
	for (const char *u = at; (u = strstr(u, "read/used ")); u++)
		if (strtod(u + 10, NULL) < aa_least_read_per_used)
			aa_least_read_per_used = strtod(u + 10, NULL);
	for (int i = 0; i < 2 && (at = strstr(at, "x current (")); i++, at++)
		aa_z_sum[i] += strtod(at + 11, NULL);
}

/* Side-by-side decisions that left a group unscored. */
unsigned too_few;

void count_too_few(const char *line)
{
	too_few += strstr(line, "side by side over") &&
	           (strstr(line, "smaller -") || strstr(line, "larger -") ||
	            strstr(line, "- smaller") || strstr(line, "- larger"));
}

/* How many sizes the last adaptive_run() scored. */
unsigned model_sizes_scored;

/* The mean window over the second half of the run; the number of size
 * changes in *changes. */
double adaptive_run(const char *args, const struct model *m, unsigned seconds,
                    uint64_t *changes)
{
	struct rd_device_info d = dev_info(args);
	struct rd_policy p = { .ops = &rd_policy_adaptive, .dev = &d, .concurrency = 1 };
	char err[256] = "";
	CHECK(p.ops->init(&p, err, sizeof err) == 0);
	if (err[0])
		fprintf(stderr, "test_sizing: %s\n", err);
	uint64_t now = rd_now_ns();
	double mean = run_model(&p, m, &now, seconds);
	struct rd_json j;
	rd_json_init(&j);
	rd_json_obj_begin(&j, NULL);
	p.ops->describe(&p, &j);
	rd_json_obj_end(&j);
	const char *text = rd_json_text(&j);
	const char *at = text ? strstr(text, "\"changes\":") : NULL;
	*changes = at ? strtoull(at + 10, NULL, 10) : 0;
	model_sizes_scored = 0;
	for (const char *c = text ? strstr(text, "\"scores\":{") : NULL; c && *c != '}'; c++)
		model_sizes_scored += *c == ':';
	model_sizes_scored -= model_sizes_scored > 0;   /* "scores": itself */
	rd_json_free(&j);
	p.ops->destroy(&p);
	return mean;
}

/* compare=aa on a model: no move, and on average over the decisions each
 * trial group within a standard error of the current group. */
void check_aa(const char *what, const char *args, const struct model *m, unsigned seconds)
{
	uint64_t changes;
	aa_decisions = 0;
	aa_z_sum[0] = aa_z_sum[1] = 0;
	aa_least_read_per_used = 1e9;
	sz_test_log_hook = aa_collect;
	adaptive_run(args, m, seconds, &changes);
	sz_test_log_hook = NULL;
	if (getenv("SIZING_VERBOSE"))
		fprintf(stderr, "A/A, %s: %u decisions, mean z smaller's group %+.2f, larger's %+.2f, "
		        "least read/used %.2f\n", what, aa_decisions, aa_z_sum[0] / aa_decisions,
		        aa_z_sum[1] / aa_decisions, aa_least_read_per_used);
	CHECK(changes == 0 && aa_decisions >= 20);
	CHECK(fabs(aa_z_sum[0] / aa_decisions) < 1 && fabs(aa_z_sum[1] / aa_decisions) < 1);
	CHECK(strstr(sz_test_last_log, "A/A side by side over"));
	/* A window is credited only with what it made resident, so no group
	 * uses more than it reads (credit()); with what viewers found past
	 * their windows credited too, the popular video's group "used" 1.2
	 * bytes per byte read. */
	CHECK(aa_least_read_per_used >= 0.995);
}
