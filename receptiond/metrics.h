/*
 * metrics.h - the daemon's statistics in the Prometheus text exposition
 * format: served on the daemon's socket (LC_MSG_METRICS, for `libception
 * stats --prometheus`) and, when --metrics-listen is given, over HTTP at
 * /metrics by a thread of its own (metrics_http.c).
 */
#ifndef RD_METRICS_H
#define RD_METRICS_H

#include <stddef.h>
#include <sys/socket.h>

/* The exposition text (malloc'd), or NULL.  Safe from any thread. */
char *rd_metrics_text(void);

struct rd_metrics_addr {
	struct sockaddr_storage sa;
	socklen_t len;
};
/* "ADDR:PORT": an IPv4 address, or an IPv6 one in brackets, and a port
 * (no host names: the daemon does no DNS).  out may be NULL to only
 * check.  0, or -1 with the reason in err. */
int rd_metrics_parse_addr(const char *text, struct rd_metrics_addr *out, char *err, size_t errlen);
/* Bind the address (before detaching, so the caller hears of an error);
 * 0, or -1 with the reason in err. */
int rd_metrics_bind(const char *text, char *err, size_t errlen);
/* Start the thread that serves the bound address (after detaching: a
 * fork keeps no threads); 0 without one, or -1 with the reason in err. */
int rd_metrics_start(char *err, size_t errlen);

#endif
