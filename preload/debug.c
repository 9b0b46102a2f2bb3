/*
 * debug.c - LIBCEPTION_DEBUG=FILE: one line per event, appended.
 *
 * The file is opened and closed for every line rather than kept open: a
 * program may close every descriptor it does not know (daemons do) and
 * reuse the number, and a debug line must never land in its data.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "shim.h"

void shim_debug(const char *fmt, ...)
{
	if (!shim_cfg.debug[0])
		return;
	int saved = errno;
	char line[512];
	int n = snprintf(line, sizeof line, "libception[%d]: ", (int)getpid());
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		m = 0;
	if ((size_t)(n + m) > sizeof line - 2)
		m = (int)(sizeof line - 2) - n;
	line[n + m] = '\n';
	int fd = open(shim_cfg.debug, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0) {
		/* O_APPEND and one write per line: lines of concurrent threads
		 * and processes do not interleave. */
		ssize_t w = write(fd, line, (size_t)(n + m + 1));
		(void)w;
		close(fd);
	}
	errno = saved;
}
