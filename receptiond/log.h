/* log.h - receptiond's log: every line starts with "receptiond: ". */
#ifndef RD_LOG_H
#define RD_LOG_H

/* Log to this file (appended) instead of stderr; NULL = stderr. */
int rd_log_open(const char *path);
void rd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A budget of lines a second, for one kind of line (one thread's). */
struct rd_log_limit {
	int sec;
	unsigned in_sec;
	unsigned suppressed;
};
/* Like rd_log but at most RD_LOG_BURST lines a second per budget
 * (floods); the rest are counted and summed up in the next line. */
void rd_log_limited(struct rd_log_limit *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
