/* quota.c - see quota.h.  A user's record exists while it holds something. */
#include "quota.h"

#include <pthread.h>
#include <stdlib.h>

#include "cfg.h"

#define BUCKETS 64

struct user {
	struct user *next;
	uid_t uid;
	uint64_t held[RD_Q_KINDS];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct user *table[BUCKETS];
static unsigned nusers;

static uint64_t limit(enum rd_quota_kind kind)
{
	switch (kind) {
	case RD_Q_CONNS: return rd_cfg.user_conns;
	case RD_Q_MISSES: return rd_cfg.user_misses;
	case RD_Q_BYTES: return rd_cfg.user_bytes;
	case RD_Q_CLOSES: return rd_cfg.user_closes;
	default: return 0;
	}
}

/* Where uid's record is (or would be linked); lock held. */
static struct user **find(uid_t uid)
{
	struct user **p = &table[uid % BUCKETS];
	while (*p && (*p)->uid != uid)
		p = &(*p)->next;
	return p;
}

/* Free a record that holds nothing; lock held. */
static void drop_if_empty(struct user **p)
{
	struct user *u = *p;
	if (!u)
		return;
	for (int k = 0; k < RD_Q_KINDS; k++)
		if (u->held[k])
			return;
	*p = u->next;
	free(u);
	nusers--;
}

int rd_quota_take(uid_t uid, enum rd_quota_kind kind, uint64_t n, int force)
{
	int rc = 0;
	pthread_mutex_lock(&lock);
	struct user **p = find(uid);
	if (!*p && (*p = calloc(1, sizeof **p))) {
		(*p)->uid = uid;
		nusers++;
	}
	if (!*p)
		rc = force ? 0 : -1;  /* no memory: refuse what can be refused */
	else if (!force && (*p)->held[kind] + n > limit(kind))
		rc = -1;
	else
		(*p)->held[kind] += n;
	drop_if_empty(p);
	pthread_mutex_unlock(&lock);
	return rc;
}

void rd_quota_give(uid_t uid, enum rd_quota_kind kind, uint64_t n)
{
	pthread_mutex_lock(&lock);
	struct user **p = find(uid);
	if (*p) {
		(*p)->held[kind] = (*p)->held[kind] > n ? (*p)->held[kind] - n : 0;
		drop_if_empty(p);
	}
	pthread_mutex_unlock(&lock);
}

uint64_t rd_quota_held(uid_t uid, enum rd_quota_kind kind)
{
	pthread_mutex_lock(&lock);
	struct user *u = *find(uid);
	uint64_t v = u ? u->held[kind] : 0;
	pthread_mutex_unlock(&lock);
	return v;
}

int rd_quota_full(uid_t uid, enum rd_quota_kind kind)
{
	return rd_quota_held(uid, kind) >= limit(kind);
}

unsigned rd_quota_users(void)
{
	pthread_mutex_lock(&lock);
	unsigned n = nusers;
	pthread_mutex_unlock(&lock);
	return n;
}
