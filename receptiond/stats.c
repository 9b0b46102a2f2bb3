/* stats.c - counting the libraries' reports and writing the JSON reply. */
#include "stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cfg.h"
#include "closer.h"
#include "device.h"
#include "json.h"
#include "quota.h"
#include "watch.h"

struct rd_stats rd_stats;

static const char *const call_names[LC_CALL_COUNT] = {
	[LC_CALL_READ] = "read",
	[LC_CALL_PREAD] = "pread",
	[LC_CALL_READV] = "readv",
	[LC_CALL_PREADV] = "preadv",
	[LC_CALL_SENDFILE] = "sendfile",
	[LC_CALL_COPY_FILE_RANGE] = "copy_file_range",
	[LC_CALL_SPLICE] = "splice",
};

void rd_stats_client(pid_t pid, uid_t uid, int is_report)
{
	struct rd_client *cl = NULL;
	for (unsigned i = 0; i < rd_stats.nclients; i++)
		if (rd_stats.clients[i].pid == pid && rd_stats.clients[i].uid == uid)
			cl = &rd_stats.clients[i];
	if (!cl) {
		if (rd_stats.nclients == RD_MAX_CLIENTS) {
			/* Forget the client seen longest ago. */
			unsigned old = 0;
			for (unsigned i = 1; i < RD_MAX_CLIENTS; i++)
				if (rd_stats.clients[i].last_ns < rd_stats.clients[old].last_ns)
					old = i;
			cl = &rd_stats.clients[old];
			rd_stats.clients_dropped++;
		} else {
			cl = &rd_stats.clients[rd_stats.nclients++];
		}
		*cl = (struct rd_client){ .pid = pid, .uid = uid };
	}
	if (is_report)
		cl->reports++;
	else
		cl->ensures++;
	cl->last_ns = rd_now_ns();
}

void rd_stats_report(const struct lc_report *r)
{
	for (int c = 0; c < LC_CALL_COUNT; c++) {
		struct rd_call_stats *s = &rd_stats.calls[c];
		s->calls += r->calls[c];
		s->hits += r->hits[c];
		s->bytes += r->bytes[c];
		for (int b = 0; b < LC_HIST_BUCKETS; b++)
			s->hist[b] += r->hist[c][b];
	}
	for (int i = 0; i <= LC_REPORT_DEVS; i++) {
		const struct lc_report_dev *e = i < LC_REPORT_DEVS ? &r->devs[i] : &r->other;
		if (!e->calls && !e->hits && !e->hit_bytes)
			continue;
		if (i < LC_REPORT_DEVS && rd_device_count_library((dev_t)e->dev, e) == 0)
			continue;
		rd_stats.unattributed.calls += e->calls;
		rd_stats.unattributed.hits += e->hits;
		rd_stats.unattributed.hit_bytes += e->hit_bytes;
	}
}

static void hist_json(struct rd_json *j, const char *key, const struct hist *h)
{
	rd_json_obj_begin(j, key);
	rd_json_u64(j, "count", h->total);
	rd_json_dbl(j, "mean", h->total ? (double)h->sum / (double)h->total / 1e3 : 0);
	rd_json_dbl(j, "p50", (double)hist_quantile(h, 0.5) / 1e3);
	rd_json_dbl(j, "p90", (double)hist_quantile(h, 0.9) / 1e3);
	rd_json_dbl(j, "p99", (double)hist_quantile(h, 0.99) / 1e3);
	rd_json_dbl(j, "max", h->total ? (double)h->max / 1e3 : 0);
	/* The non-empty buckets as [top us, count], so that a reader can take
	 * the quantiles of an interval from two snapshots (the benchmark's
	 * per-probe queue wait). */
	rd_json_arr_begin(j, "buckets");
	for (unsigned b = 0; b < HIST_BUCKETS; b++) {
		if (!h->count[b])
			continue;
		rd_json_arr_begin(j, NULL);
		rd_json_dbl(j, NULL, (double)hist_bucket_top(b) / 1e3);
		rd_json_u64(j, NULL, h->count[b]);
		rd_json_arr_end(j);
	}
	rd_json_arr_end(j);
	rd_json_obj_end(j);
}

static void order_json(struct rd_json *j, const struct rd_device *d)
{
	const struct rd_order_stats *o = &d->st.order;
	rd_json_obj_begin(j, "order");
	rd_json_str(j, "mode", d->q.order.mode == RD_ORDER_FIFO ? "fifo" : "position");
	rd_json_u64(j, "deadline_ms", d->q.order.deadline_ns / 1000000u);
	rd_json_obj_begin(j, "picks");
	for (int r = 0; r < RD_PICK_RULES; r++)
		rd_json_u64(j, rd_order_rule_name((enum rd_pick_rule)r), o->picks[r]);
	rd_json_obj_end(j);
	rd_json_u64(j, "user_turns", o->user_turns);
	rd_json_u64(j, "cuts", o->cuts);
	rd_json_u64(j, "deadline_misses", o->deadline_misses);
	rd_json_u64(j, "placed_reads", o->placed);
	rd_json_u64(j, "head_travel_bytes", o->head_travel);
	/* where the last window ended on the disk, -1 if unknown */
	const struct rd_order *q = &d->q.order;
	rd_json_i64(j, "head", q->served_any && q->head != RD_POS_UNKNOWN ? (int64_t)q->head : -1);
	hist_json(j, "wait_demand_us", &o->wait_demand);
	hist_json(j, "wait_lookahead_us", &o->wait_lookahead);
	rd_json_obj_end(j);
}

static void device_json(struct rd_json *j, struct rd_device *d, uint64_t now)
{
	pthread_mutex_lock(&d->lock);
	const struct rd_dev_stats *s = &d->st;
	uint64_t busy = s->busy_ns + (d->inflight ? now - s->busy_since : 0);
	uint64_t life = now - s->created_ns;
	rd_json_obj_begin(j, NULL);
	rd_json_str(j, "name", d->name);
	char disk[32];
	snprintf(disk, sizeof disk, "%u:%u", major(d->info.disk), minor(d->info.disk));
	rd_json_str(j, "disk", disk);
	rd_json_i64(j, "rotational", d->info.rotational);
	rd_json_u64(j, "workers", d->nworkers);
	rd_json_obj_begin(j, "policy");
	rd_json_str(j, "name", d->policy.ops->name);
	rd_json_str(j, "args", d->args);
	rd_json_u64(j, "concurrency", d->policy.concurrency);
	rd_json_bool(j, "direct", d->policy.direct);
	if (d->policy.ops->describe)
		d->policy.ops->describe(&d->policy, j);
	rd_json_obj_end(j);
	rd_json_u64(j, "requests", s->requests);
	rd_json_u64(j, "hits", s->hits);
	rd_json_u64(j, "misses", s->misses);
	rd_json_u64(j, "merged", s->merged);
	rd_json_u64(j, "busy_rejected", s->busy);
	rd_json_u64(j, "direct_answers", s->direct);
	rd_json_u64(j, "lookahead", s->lookahead);
	rd_json_u64(j, "lookahead_dropped", s->lookahead_dropped);
	rd_json_u64(j, "abandoned", s->abandoned);
	rd_json_u64(j, "errors", s->errors);
	rd_json_u64(j, "reads", s->reads);
	rd_json_u64(j, "bytes_asked", s->bytes_asked);
	rd_json_u64(j, "bytes_read", s->bytes_read);
	rd_json_u64(j, "bytes_window", s->bytes_window);
	rd_json_u64(j, "library_calls", s->lib_calls);
	rd_json_u64(j, "library_hits", s->lib_hits);
	rd_json_u64(j, "library_hit_bytes", s->lib_hit_bytes);
	rd_json_u64(j, "queue_now", d->q.len);
	rd_json_u64(j, "queue_max", s->queue_max);
	rd_json_u64(j, "inflight_now", d->inflight);
	rd_json_u64(j, "inflight_max", s->inflight_max);
	rd_json_dbl(j, "busy_fraction", life ? (double)busy / (double)life : 0);
	rd_json_dbl(j, "age_s", (double)life / 1e9);
	hist_json(j, "wait_us", &s->wait);
	hist_json(j, "service_us", &s->service);
	order_json(j, d);
	rd_json_obj_end(j);
	pthread_mutex_unlock(&d->lock);
}

char *rd_stats_json(void)
{
	struct rd_json j;
	uint64_t now = rd_now_ns();
	rd_json_init(&j);
	rd_json_obj_begin(&j, NULL);
	rd_json_str(&j, "daemon", "receptiond");
	rd_json_u64(&j, "protocol", LC_PROTO_VERSION);
	rd_json_u64(&j, "pid", (uint64_t)getpid());
	rd_json_u64(&j, "uid", (uint64_t)getuid());
	rd_json_dbl(&j, "uptime_s", (double)(now - rd_stats.started_ns) / 1e9);
	rd_json_str(&j, "socket", rd_cfg.socket_path);
	rd_json_u64(&j, "prefetch", rd_cfg.prefetch);
	rd_json_u64(&j, "queue_depth", rd_cfg.queue_depth);
	rd_json_obj_begin(&j, "connections");
	rd_json_u64(&j, "now", rd_stats.conns_now);
	rd_json_u64(&j, "max", rd_stats.conns_max);
	rd_json_u64(&j, "total", rd_stats.conns_total);
	rd_json_u64(&j, "refused", rd_stats.conns_refused);
	rd_json_u64(&j, "denied", rd_stats.conns_denied);
	rd_json_u64(&j, "slow_dropped", rd_stats.slow_dropped);
	rd_json_u64(&j, "accept_paused", rd_stats.accept_paused);
	rd_json_u64(&j, "users", rd_quota_users());
	rd_json_u64(&j, "closes_pending", rd_closes_pending());
	rd_json_obj_end(&j);
	rd_json_u64(&j, "direct_fs", rd_stats.direct_fs);
	rd_json_u64(&j, "malformed", rd_stats.malformed);
	rd_json_u64(&j, "bad_requests", rd_stats.bad_requests);
	rd_json_u64(&j, "bad_version", rd_stats.bad_version);
	rd_json_arr_begin(&j, "devices");
	for (struct rd_device *d = rd_device_list(); d; d = d->next)
		device_json(&j, d, now);
	rd_json_arr_end(&j);
	rd_json_obj_begin(&j, "calls");
	for (int c = 0; c < LC_CALL_COUNT; c++) {
		const struct rd_call_stats *s = &rd_stats.calls[c];
		rd_json_obj_begin(&j, call_names[c]);
		rd_json_u64(&j, "calls", s->calls);
		rd_json_u64(&j, "hits", s->hits);
		rd_json_u64(&j, "bytes", s->bytes);
		/* bucket i: calls under 2^i us (see protocol.h) */
		rd_json_arr_begin(&j, "hist");
		for (int b = 0; b < LC_HIST_BUCKETS; b++)
			rd_json_u64(&j, NULL, s->hist[b]);
		rd_json_arr_end(&j);
		rd_json_obj_end(&j);
	}
	rd_json_obj_end(&j);
	rd_json_arr_begin(&j, "library_devices");
	for (struct rd_lib_disk *l = rd_lib_disk_list(); l; l = l->next) {
		char disk[32];
		snprintf(disk, sizeof disk, "%u:%u", major(l->disk), minor(l->disk));
		rd_json_obj_begin(&j, NULL);
		rd_json_str(&j, "name", l->name);
		rd_json_str(&j, "disk", disk);
		rd_json_u64(&j, "library_calls", l->st.calls);
		rd_json_u64(&j, "library_hits", l->st.hits);
		rd_json_u64(&j, "library_hit_bytes", l->st.hit_bytes);
		rd_json_obj_end(&j);
	}
	rd_json_arr_end(&j);
	rd_json_obj_begin(&j, "library_unattributed");
	rd_json_u64(&j, "calls", rd_stats.unattributed.calls);
	rd_json_u64(&j, "hits", rd_stats.unattributed.hits);
	rd_json_u64(&j, "hit_bytes", rd_stats.unattributed.hit_bytes);
	rd_json_obj_end(&j);
	rd_json_arr_begin(&j, "clients");
	for (unsigned i = 0; i < rd_stats.nclients; i++) {
		const struct rd_client *cl = &rd_stats.clients[i];
		rd_json_obj_begin(&j, NULL);
		rd_json_u64(&j, "pid", (uint64_t)cl->pid);
		rd_json_u64(&j, "uid", (uint64_t)cl->uid);
		rd_json_u64(&j, "ensures", cl->ensures);
		rd_json_u64(&j, "reports", cl->reports);
		rd_json_obj_end(&j);
	}
	rd_json_arr_end(&j);
	rd_json_u64(&j, "clients_forgotten", rd_stats.clients_dropped);
	rd_watch_json(&j);
	rd_json_obj_end(&j);
	const char *t = rd_json_text(&j);
	char *out = t ? strdup(t) : NULL;
	rd_json_free(&j);
	return out;
}
