/* sizing_stubs.c - the daemon's log for the sizing unit tests: lines are
 * kept (the last one, and a count) so tests can check what was logged,
 * and handed to a test's hook if it set one. */
#include <stdarg.h>
#include <stdio.h>

char sz_test_last_log[1024];
unsigned sz_test_logs;
int sz_test_verbose;
void (*sz_test_log_hook)(const char *line);

void rd_log(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sz_test_last_log, sizeof sz_test_last_log, fmt, ap);
	va_end(ap);
	sz_test_logs++;
	if (sz_test_log_hook)
		sz_test_log_hook(sz_test_last_log);
	if (sz_test_verbose)
		fprintf(stderr, "receptiond: %s\n", sz_test_last_log);
}
