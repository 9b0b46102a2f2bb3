/*
 * metrics_http.c - the opt-in /metrics listener (--metrics-listen).
 *
 * One thread of its own, so a slow or hostile scraper can never delay
 * the main thread's clients.  It serves at most RD_HTTP_CONNS connections
 * at once (the rest wait in a small listen backlog), reads at most
 * RD_HTTP_REQUEST bytes of request, and closes a connection that has not
 * been answered and written within RD_HTTP_DEADLINE_MS.  HTTP/1.0 and
 * 1.1, GET and HEAD only, one request per connection.
 */
#include "metrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "policy.h"

#define RD_HTTP_CONNS 8
#define RD_HTTP_REQUEST 2048
#define RD_HTTP_DEADLINE_MS 5000

struct http_conn {
	int fd;                 /* -1: free */
	uint64_t deadline_ns;
	char req[RD_HTTP_REQUEST];
	size_t got;
	char *out;              /* the response being written, malloc'd */
	size_t len, sent;
};

static int http_listen_fd = -1;

int rd_metrics_parse_addr(const char *text, struct rd_metrics_addr *out, char *err, size_t errlen)
{
	char host[64];
	const char *colon = strrchr(text, ':');
	if (!colon || colon == text) {
		snprintf(err, errlen, "expected ADDR:PORT (e.g. 127.0.0.1:9477, [::1]:9477)");
		return -1;
	}
	size_t hl = (size_t)(colon - text);
	if (text[0] == '[') {
		if (hl < 3 || text[hl - 1] != ']') {
			snprintf(err, errlen, "expected [IPV6]:PORT");
			return -1;
		}
		text++;
		hl -= 2;
	}
	if (hl >= sizeof host) {
		snprintf(err, errlen, "address too long");
		return -1;
	}
	memcpy(host, text, hl);
	host[hl] = 0;
	char *end;
	errno = 0;
	unsigned long port = strtoul(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || port < 1 || port > 65535) {
		snprintf(err, errlen, "port \"%s\": expected 1 to 65535", colon + 1);
		return -1;
	}
	struct rd_metrics_addr a;
	memset(&a, 0, sizeof a);
	struct sockaddr_in *v4 = (struct sockaddr_in *)&a.sa;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&a.sa;
	if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons((uint16_t)port);
		a.len = sizeof *v4;
	} else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((uint16_t)port);
		a.len = sizeof *v6;
	} else {
		snprintf(err, errlen, "\"%s\" is not an IPv4 or [IPv6] address (no host names)", host);
		return -1;
	}
	if (out)
		*out = a;
	return 0;
}

static void conn_free(struct http_conn *c)
{
	close(c->fd);
	free(c->out);
	c->fd = -1;
	c->out = NULL;
}

static char *response(int code, const char *reason, const char *type, const char *body, int head)
{
	char *r = NULL;
	size_t blen = strlen(body);
	if (asprintf(&r, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
	             "Connection: close\r\n\r\n%s", code, reason, type, blen, head ? "" : body) < 0)
		return NULL;
	return r;
}

/* The answer to a complete request head in c->req. */
static char *answer(struct http_conn *c)
{
	const char *plain = "text/plain; charset=utf-8";
	int head = !strncmp(c->req, "HEAD ", 5);
	if (!head && strncmp(c->req, "GET ", 4))
		return response(405, "Method Not Allowed", plain, "GET /metrics\n", 0);
	const char *path = c->req + (head ? 5 : 4);
	size_t plen = strcspn(path, " ?\r\n");
	if (plen != 8 || strncmp(path, "/metrics", 8))
		return response(404, "Not Found", plain, "receptiond serves /metrics only\n", head);
	char *text = rd_metrics_text();
	if (!text)
		return response(500, "Internal Server Error", plain, "out of memory\n", head);
	char *r = response(200, "OK", "text/plain; version=0.0.4; charset=utf-8", text, head);
	free(text);
	return r;
}

/* Read what c has; returns -1 to close it. */
static int conn_read(struct http_conn *c)
{
	ssize_t n = recv(c->fd, c->req + c->got, sizeof c->req - 1 - c->got, MSG_DONTWAIT);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	if (n == 0)
		return -1;
	c->got += (size_t)n;
	c->req[c->got] = 0;
	if (strstr(c->req, "\r\n\r\n") || strstr(c->req, "\n\n")) {
		c->out = answer(c);
		c->len = c->out ? strlen(c->out) : 0;
		return c->out ? 0 : -1;
	}
	if (c->got == sizeof c->req - 1) {
		c->out = response(431, "Request Header Fields Too Large", "text/plain", "too long\n", 0);
		c->len = c->out ? strlen(c->out) : 0;
		return c->out ? 0 : -1;
	}
	return 0;
}

/* Write what is left of c's answer; returns -1 to close (also when done). */
static int conn_write(struct http_conn *c)
{
	ssize_t n = send(c->fd, c->out + c->sent, c->len - c->sent, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	c->sent += (size_t)n;
	return c->sent == c->len ? -1 : 0;
}

static void *serve(void *arg)
{
	(void)arg;
	/* Signals belong to the main thread's signalfd. */
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	static struct http_conn conns[RD_HTTP_CONNS];
	for (int i = 0; i < RD_HTTP_CONNS; i++)
		conns[i].fd = -1;
	for (;;) {
		struct pollfd p[RD_HTTP_CONNS + 1];
		int map[RD_HTTP_CONNS + 1], np = 0, nfree = 0;
		uint64_t now = rd_now_ns();
		for (int i = 0; i < RD_HTTP_CONNS; i++) {
			struct http_conn *c = &conns[i];
			if (c->fd >= 0 && now > c->deadline_ns)
				conn_free(c);
			if (c->fd < 0) {
				nfree++;
				continue;
			}
			p[np] = (struct pollfd){ .fd = c->fd, .events = c->out ? POLLOUT : POLLIN };
			map[np++] = i;
		}
		if (nfree) {
			p[np] = (struct pollfd){ .fd = http_listen_fd, .events = POLLIN };
			map[np++] = -1;
		}
		int n = poll(p, (nfds_t)np, 500);
		if (n <= 0)
			continue;
		for (int k = 0; k < np; k++) {
			if (!p[k].revents)
				continue;
			if (map[k] < 0) {
				int fd = accept4(http_listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
				for (int i = 0; fd >= 0 && i < RD_HTTP_CONNS; i++)
					if (conns[i].fd < 0) {
						conns[i] = (struct http_conn){ .fd = fd };
						conns[i].deadline_ns = rd_now_ns() +
						                       RD_HTTP_DEADLINE_MS * 1000000ull;
						fd = -1;
					}
				if (fd >= 0)
					close(fd);
				continue;
			}
			struct http_conn *c = &conns[map[k]];
			int rc = c->out ? conn_write(c) : conn_read(c);
			if (rc == 0 && c->out && !c->sent)
				rc = conn_write(c);    /* most answers go out at once */
			if (rc < 0 || (p[k].revents & (POLLERR | POLLHUP) && !c->out))
				conn_free(c);
		}
	}
	return NULL;
}

int rd_metrics_bind(const char *text, char *err, size_t errlen)
{
	struct rd_metrics_addr a;
	char why[160];
	if (rd_metrics_parse_addr(text, &a, why, sizeof why)) {
		snprintf(err, errlen, "metrics-listen \"%s\": %s", text, why);
		return -1;
	}
	int fd = socket(a.sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
	    bind(fd, (struct sockaddr *)&a.sa, a.len) || listen(fd, RD_HTTP_CONNS)) {
		snprintf(err, errlen, "metrics-listen \"%s\": %s", text, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	http_listen_fd = fd;
	return 0;
}

int rd_metrics_start(char *err, size_t errlen)
{
	if (http_listen_fd < 0)
		return 0;
	pthread_t t;
	int e = pthread_create(&t, NULL, serve, NULL);
	if (e) {
		snprintf(err, errlen, "metrics-listen: cannot start its thread: %s", strerror(e));
		return -1;
	}
	pthread_detach(t);
	return 0;
}
