/* cfg.c - the settings and their defaults (main.c fills them in). */
#include "cfg.h"

#include "protocol.h"

struct rd_cfg rd_cfg = {
	.prefetch = LC_DEFAULT_PREFETCH,
	.queue_depth = 1024,
	.conn_pending = 8,
	.max_conns = 4096,
	.max_window = 64u << 20,
	.order = RD_ORDER_POSITION,
	.deadline_ns = 2000ull * 1000000u,
};
