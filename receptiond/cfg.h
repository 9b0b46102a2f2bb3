/* cfg.h - receptiond's settings, filled from the command line (main.c). */
#ifndef RD_CFG_H
#define RD_CFG_H

#include <stdint.h>

#include "order.h"
#include "policy.h"

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
	unsigned idle_timeout;      /* seconds, 0 = never */
	uint64_t max_window;        /* longest range one ENSURE may make resident */
	enum rd_order_mode order;   /* --order: position or fifo (order.h) */
	uint64_t deadline_ns;       /* --deadline: queue wait the order keeps demand under */
	unsigned inflight;          /* --inflight: windows read at once, 0 = the policy's */
	const char *log_path;
	const char *pidfile;
};

extern struct rd_cfg rd_cfg;

#endif
