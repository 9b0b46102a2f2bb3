/* log.h - receptiond's log: every line starts with "receptiond: ". */
#ifndef RD_LOG_H
#define RD_LOG_H

/* Log to this file (appended) instead of stderr; NULL = stderr. */
int rd_log_open(const char *path);
void rd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Like rd_log but at most a few lines a second (floods); callers in one
 * thread share the budget. */
void rd_log_limited(int *last_sec, unsigned *suppressed, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
