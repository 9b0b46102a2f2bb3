/* cfg.c - the settings and their defaults (options.c fills them in). */
#include "cfg.h"

#include "protocol.h"

struct rd_cfg rd_cfg = {
	.prefetch = LC_DEFAULT_PREFETCH,
	.queue_depth = 1024,
	.conn_pending = 8,
	.max_conns = 4096,
	.max_window = 64u << 20,
	.user_conns = 256,
	.user_misses = 64,
	.user_bytes = 1ull << 30,
	.user_closes = 256,
	.max_devices = 64,
	.device_idle = 60,
	.watch_deadline_ms = RD_WATCH_DEFAULT_DEADLINE_MS,
	.watch_due = 1,
	.watch_spin_us = RD_WATCH_DEFAULT_SPIN_US,
	.watch_quiet = RD_WATCH_DEFAULT_QUIET,
	.watch_recheck_ms = RD_WATCH_DEFAULT_RECHECK_MS,
	.order = RD_ORDER_POSITION,
	.deadline_ns = 2000ull * 1000000u,
};

struct rd_access rd_access = { .kind = RD_ACCESS_OWNER };
char rd_access_note[160];
