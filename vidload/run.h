/*
 * run.h - one load run: settings, the event loop that drives the
 * sessions, and its result.
 */
#ifndef VL_RUN_H
#define VL_RUN_H

#include "hist.h"
#include "library.h"
#include "workload.h"

#include <stdint.h>
#include <sys/socket.h>

#define VL_MAX_LINKS 8

enum vl_error {
	VL_ERR_CONNECT,    /* could not connect */
	VL_ERR_CLOSED,     /* server closed or reset with a request outstanding */
	VL_ERR_HTTP,       /* bad status line, headers, range or length */
	VL_ERR_DEADLINE,   /* a segment not received within the deadline */
	VL_ERR_INTEGRITY,  /* a received byte differs from the synthetic content */
	VL_ERR_CLIENT,     /* the client itself ran out of a resource (fds, memory) */
	VL_ERR_KINDS
};

extern const char *const vl_error_names[VL_ERR_KINDS];

struct vl_config {
	/* target */
	const char *url;
	char host[256], port[16], prefix[512];
	struct sockaddr_storage addr;
	socklen_t addrlen;
	const char *library_path;
	struct library lib;
	/* load */
	double rate;           /* sessions per second */
	double duration;       /* seconds of judged arrivals */
	double warmup;         /* seconds of arrivals before them, not judged */
	double past;           /* start as if arrivals had begun this long before (past.h) */
	uint64_t seed;
	struct workload_params wl;
	double deadline;       /* seconds from a segment's scheduled send */
	/* link emulation */
	double links[VL_MAX_LINKS];  /* bits per second, 0 = unlimited; session i gets links[i % n] */
	unsigned nlinks;
	double delay;          /* one-way seconds */
	double tick;           /* seconds of link time per paced read */
	int rcvbuf;            /* SO_RCVBUF bytes, 0 = kernel default */
	int mss;               /* TCP_MAXSEG before connect, 0 = the interface's */
	/* reporting */
	double progress;       /* seconds between progress lines, 0 = none */
	double timeline;       /* seconds between timeline samples, 0 = none */
	double late;           /* a send later than this (seconds) is a late start */
	int quiet;
};

/* Active sessions over time (every cfg->timeline seconds from the start),
 * and the sessions failed so far: of every kind (judged, warm-up, carried
 * on from the past), and of those carried on, so a report can say whether
 * they failed at the start or throughout. */
struct vl_timeline {
	double *t;
	uint64_t *active;
	uint64_t *failed, *past_failed;
	size_t n, cap;
};

/* Counts cover the judged sessions (planned start after the warm-up);
 * bytes, segments and elapsed the judged window. */
struct vl_result {
	double rate, duration, warmup, past, elapsed;
	uint64_t seed;
	uint64_t started, finished, active_at_end, failed;
	uint64_t warmup_started, warmup_failed;
	uint64_t past_running, past_failed;   /* sessions carried on from the past */
	uint64_t errors[VL_ERR_KINDS];
	uint64_t segments, bytes, requests, late_sends, reconnects;
	uint64_t max_active;
	double cpu_seconds;
	struct hist latency;   /* ns, scheduled send -> last byte received */
	struct hist lateness;  /* ns, planned -> actual request write */
	char first_error[256];
	struct vl_timeline timeline;
};

/* Runs one probe at cfg->rate with `seed`; 0 on success, -1 on a setup error (message printed). */
int vl_run(const struct vl_config *cfg, uint64_t seed, struct vl_result *res);

double vl_failed_pct(const struct vl_result *res);

/* Frees what vl_run allocated in res (the timeline). */
void vl_result_free(struct vl_result *res);

#endif
