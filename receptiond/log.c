/* log.c - one line per event, prefixed, written with a single write(2) so
 * lines from the worker threads never interleave. */
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RD_LOG_BURST 20

static int log_fd = 2;

int rd_log_open(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	if (log_fd > 2)
		close(log_fd);
	log_fd = fd;
	return 0;
}

static void vlog(const char *fmt, va_list ap)
{
	char line[1024];
	int saved = errno;
	int n = snprintf(line, sizeof line, "receptiond: ");
	int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
	if (m < 0)
		m = 0;
	size_t len = (size_t)n + ((size_t)m < sizeof line - (size_t)n - 1 ? (size_t)m
	                                                               : sizeof line - (size_t)n - 2);
	line[len++] = '\n';
	ssize_t w = write(log_fd, line, len);
	(void)w;
	errno = saved;
}

void rd_log(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
}

void rd_log_limited(struct rd_log_limit *l, const char *fmt, ...)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	if ((int)ts.tv_sec != l->sec) {
		l->sec = (int)ts.tv_sec;
		l->in_sec = 0;
	}
	if (l->in_sec >= RD_LOG_BURST) {
		l->suppressed++;
		return;
	}
	l->in_sec++;
	if (l->suppressed)
		rd_log("(%u similar lines suppressed)", l->suppressed);
	l->suppressed = 0;
	va_list ap;
	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
}
