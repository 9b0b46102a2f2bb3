/* cfg.h - receptiond's settings, filled from its configuration file and
 * command line (options.c). */
#ifndef RD_CFG_H
#define RD_CFG_H

#include <stdint.h>

#include "access.h"
#include "order.h"
#include "policy.h"
#include "watch.h"

#define RD_MAX_POLICY_SPECS 16

struct rd_cfg {
	const char *socket_path;
	int foreground;
	uint64_t prefetch;          /* default prefetch size, bytes */
	struct rd_policy_spec policies[RD_MAX_POLICY_SPECS];
	unsigned npolicies;
	unsigned queue_depth;       /* queued misses per device before LC_ST_BUSY */
	unsigned conn_pending;      /* queued misses per connection before LC_ST_BUSY */
	unsigned max_conns;
	/* Per user (uid), so one user cannot take what the others need;
	 * docs/receptiond.md "Limits". */
	unsigned user_conns;        /* open connections */
	unsigned user_misses;       /* queued or in-flight misses */
	uint64_t user_bytes;        /* bytes those misses may read */
	unsigned user_closes;       /* passed fds waiting to be closed */
	unsigned max_devices;       /* device entries (each may have a worker) */
	unsigned device_idle;       /* seconds before an idle device's worker exits */
	const char *access;         /* --access, NULL = the default (access.h) */
	unsigned idle_timeout;      /* seconds, 0 = never */
	uint64_t max_window;        /* longest range one ENSURE may make resident */
	enum rd_order_mode order;   /* --order: position or fifo (order.h) */
	uint64_t deadline_ns;       /* --deadline: queue wait the order keeps demand under */
	unsigned inflight;          /* --inflight: windows read at once, 0 = the policy's */
	const char *log_path;
	const char *pidfile;
	const char *metrics_listen; /* ADDR:PORT for /metrics, NULL = none */
	char *watch_paths[RD_WATCH_MAX_PATHS]; /* --watch: mounts to mark */
	unsigned nwatch;
	unsigned watch_deadline_ms;
	int watch_due;              /* --watch-due: a watched miss is due at the deadline */
	unsigned watch_spin_us;
	uint64_t watch_quiet;       /* --watch-quiet: largest file quieted, 0 = none */
	unsigned watch_recheck_ms;  /* --watch-recheck: quieted files heard again */
};

extern struct rd_cfg rd_cfg;
extern struct rd_access rd_access;   /* parsed from rd_cfg.access */
extern char rd_access_note[160];     /* a default that fell back, said once in the log */

#endif
