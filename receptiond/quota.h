/*
 * quota.h - what each local user (uid) holds of the daemon, against the
 * per-user limits in rd_cfg: connections, queued misses and the bytes
 * they may read, and passed fds waiting to be closed.  Thread-safe: the
 * main thread takes, workers and closers give back.
 */
#ifndef RD_QUOTA_H
#define RD_QUOTA_H

#include <stdint.h>
#include <sys/types.h>

enum rd_quota_kind { RD_Q_CONNS, RD_Q_MISSES, RD_Q_BYTES, RD_Q_CLOSES, RD_Q_KINDS };

/* Take n of kind for uid if that stays within the limit: 0, else -1
 * (nothing taken).  force: take it anyway (a close must happen). */
int rd_quota_take(uid_t uid, enum rd_quota_kind kind, uint64_t n, int force);
void rd_quota_give(uid_t uid, enum rd_quota_kind kind, uint64_t n);
/* 1 if uid holds at least its limit of kind. */
int rd_quota_full(uid_t uid, enum rd_quota_kind kind);
/* What uid holds of kind (tests, stats). */
uint64_t rd_quota_held(uid_t uid, enum rd_quota_kind kind);
/* Users holding anything. */
unsigned rd_quota_users(void);

#endif
