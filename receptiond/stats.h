/*
 * stats.h - what receptiond counts, and the JSON it serves on LC_MSG_STATS.
 *
 * Device counters live in struct rd_device and are guarded by its lock;
 * the global ones (connections, malformed input, the libraries' reports)
 * are touched only by the main thread.
 */
#ifndef RD_STATS_H
#define RD_STATS_H

#include <stdint.h>
#include <sys/types.h>

#include "hist.h"
#include "order.h"
#include "protocol.h"

/* What the queue order (order.h) did on one device. */
struct rd_order_stats {
	uint64_t picks[RD_PICK_RULES];  /* windows taken, by the rule that chose them */
	uint64_t user_turns;    /* picks made among the requests of several users */
	uint64_t deadline_misses; /* demand taken after waiting longer than --deadline */
	uint64_t placed;        /* windows read whose disk position was known */
	uint64_t head_travel;   /* bytes between one placed window's end and the next's start */
	uint64_t cuts;          /* long windows cut after a share for another user */
	struct hist wait_demand;    /* queue wait of requests a program waited for, ns */
	struct hist wait_lookahead; /* of requests only look-aheads asked for, ns */
};

static inline void rd_order_stats_init(struct rd_order_stats *s)
{
	hist_init(&s->wait_demand);
	hist_init(&s->wait_lookahead);
}

struct rd_dev_stats {
	uint64_t requests;      /* ENSUREs for this device */
	uint64_t hits;          /* answered from the cache, nothing read */
	uint64_t misses;        /* queued (or joined) */
	uint64_t merged;        /* joined a queued or in-flight request */
	uint64_t busy;          /* refused with LC_ST_BUSY */
	uint64_t direct;        /* answered LC_ST_DIRECT (policy.direct) */
	uint64_t lookahead;     /* of the requests, look-aheads (LC_F_LOOKAHEAD) */
	uint64_t lookahead_dropped; /* look-aheads refused to keep room for misses */
	uint64_t abandoned;     /* queued requests dropped unread: every waiter had gone */
	uint64_t errors;        /* reads that failed */
	uint64_t bytes_asked;   /* sum of the asked lengths */
	uint64_t bytes_read;    /* bytes the daemon read from the device */
	uint64_t bytes_window;  /* sum of the windows made resident */
	uint64_t reads;         /* windows read (requests after merging) */
	unsigned queue_max;
	unsigned inflight_max;  /* most reads ever running at once */
	uint64_t busy_ns;       /* time at least one read was running */
	uint64_t busy_since;    /* start of the current busy period, 0 if idle */
	uint64_t created_ns;
	/* from the libraries' reports (LC_MSG_REPORT), main thread only */
	uint64_t lib_calls;     /* intercepted calls on files of this device */
	uint64_t lib_hits;      /* found resident by the library, no ENSURE */
	uint64_t lib_hit_bytes; /* bytes those hits asked for */
	struct hist wait;       /* queue wait, ns */
	struct hist service;    /* window read time, ns */
	struct rd_order_stats order;
};

/* Library reports, summed over all clients. */
struct rd_call_stats {
	uint64_t calls, hits, bytes;
	uint64_t hist[LC_HIST_BUCKETS];
};

/* Per-device library counters the daemon cannot put on a device: a
 * library's "other" entry (it met more than LC_REPORT_DEVS devices) and
 * st_dev numbers no mounted file system here has. */
struct rd_lib_dev_stats {
	uint64_t calls, hits, hit_bytes;
};

#define RD_MAX_CLIENTS 256

struct rd_client {
	pid_t pid;
	uid_t uid;
	uint64_t ensures;
	uint64_t reports;
	uint64_t last_ns;
};

struct rd_stats {
	uint64_t started_ns;
	uint64_t conns_total, conns_now, conns_max, conns_refused;
	uint64_t conns_denied;  /* refused by --access */
	uint64_t slow_dropped;  /* dropped for not reading a reply */
	uint64_t accept_paused; /* times accepting paused, out of fds */
	uint64_t direct_fs;     /* ENSUREs on memory-backed or unknown file systems */
	uint64_t malformed;     /* messages dropped as malformed */
	uint64_t bad_requests;  /* well-formed but unusable (bad fd...) */
	uint64_t bad_version;
	struct rd_call_stats calls[LC_CALL_COUNT];
	struct rd_lib_dev_stats unattributed;
	struct rd_client clients[RD_MAX_CLIENTS];
	unsigned nclients;
	uint64_t clients_dropped;
};

extern struct rd_stats rd_stats;

void rd_stats_client(pid_t pid, uid_t uid, int is_report);
void rd_stats_report(const struct lc_report *r);
/* The full JSON text (malloc'd), or NULL. */
char *rd_stats_json(void);

#endif
