/* cfg.c - the settings and their defaults (main.c fills them in). */
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
};

struct rd_access rd_access = { .kind = RD_ACCESS_OWNER };
