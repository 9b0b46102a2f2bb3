/* closer.c - see closer.h. */
#include "closer.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "quota.h"

/* An idle closer exits after this long. */
#define IDLE_S 5

struct job {
	struct job *next;
	int fd;
	uid_t uid;
};

/* uids with a close running and how many, to cap each user's share. */
struct running {
	uid_t uid;
	unsigned n;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static struct job *head, **tail = &head;
static unsigned queued, threads, idle;
static struct running running[RD_MAX_CLOSERS];

static unsigned *running_slot(uid_t uid, int make)
{
	struct running *free_slot = NULL;
	for (int i = 0; i < RD_MAX_CLOSERS; i++) {
		if (running[i].n && running[i].uid == uid)
			return &running[i].n;
		if (!running[i].n && !free_slot)
			free_slot = &running[i];
	}
	if (!make || !free_slot)
		return NULL;
	free_slot->uid = uid;
	return &free_slot->n;
}

/* The oldest job whose user has fewer than RD_USER_CLOSERS closes
 * running, unlinked; lock held. */
static struct job *take(void)
{
	for (struct job **p = &head; *p; p = &(*p)->next) {
		unsigned *n = running_slot((*p)->uid, 0);
		if (n && *n >= RD_USER_CLOSERS)
			continue;
		struct job *j = *p;
		*p = j->next;
		if (tail == &j->next)
			tail = p;
		queued--;
		return j;
	}
	return NULL;
}

static void *closer_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	for (;;) {
		struct job *j = take();
		if (!j) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += IDLE_S;
			idle++;
			int rc = pthread_cond_timedwait(&cond, &lock, &ts);
			idle--;
			if (rc && !head)
				break;
			continue;
		}
		unsigned *n = running_slot(j->uid, 1);
		if (n)
			++*n;
		pthread_mutex_unlock(&lock);
		close(j->fd);
		rd_quota_give(j->uid, RD_Q_CLOSES, 1);
		pthread_mutex_lock(&lock);
		if (n)
			--*n;
		free(j);
		/* A job that waited for this user's share may go now. */
		if (head)
			pthread_cond_signal(&cond);
	}
	threads--;
	pthread_mutex_unlock(&lock);
	return NULL;
}

int rd_close_later(int fd, uid_t uid)
{
	struct job *j = malloc(sizeof *j);
	if (!j) {
		close(fd);   /* no memory: better a stall than a leak */
		return 1;
	}
	*j = (struct job){ .fd = fd, .uid = uid };
	rd_quota_take(uid, RD_Q_CLOSES, 1, 1);
	pthread_mutex_lock(&lock);
	*tail = j;
	tail = &j->next;
	queued++;
	if (idle) {
		pthread_cond_signal(&cond);
	} else if (threads < RD_MAX_CLOSERS) {
		pthread_t t;
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&attr, 64 << 10);
		if (pthread_create(&t, &attr, closer_main, NULL) == 0)
			threads++;
		pthread_attr_destroy(&attr);
	}
	pthread_mutex_unlock(&lock);
	return rd_quota_full(uid, RD_Q_CLOSES);
}

unsigned rd_closes_pending(void)
{
	pthread_mutex_lock(&lock);
	unsigned n = queued + threads - idle;
	pthread_mutex_unlock(&lock);
	return n;
}
