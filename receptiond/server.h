/* server.h - the listening socket, connections and message handling. */
#ifndef RD_SERVER_H
#define RD_SERVER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct rd_conn {
	int fd;
	int refs;               /* atomic: the server's plus one per waiter */
	unsigned pending;       /* atomic: this connection's queued misses */
	unsigned malformed;     /* main thread only */
	int closed;             /* conn_close()d: set by the main thread, read
	                         * atomically by workers (their waiters are gone) */
	pid_t pid;
	uid_t uid;              /* who connected: limits are charged to it */
	int own;                /* from this process: watch mode's listener (worker.c) */
	/* main thread only: a reply the socket had no room for, sent as
	 * the client reads (EPOLLOUT); a client that does not read it
	 * within RD_REPLY_WAIT_MS loses the connection. */
	char *out;
	size_t out_len, out_off, out_first;   /* out_first: the first message's size */
	uint64_t out_deadline;
	struct rd_conn *slow_next;
};

/* How long a client may take to read a buffered reply. */
#define RD_REPLY_WAIT_MS 2000

void rd_conn_get(struct rd_conn *c);
void rd_conn_put(struct rd_conn *c);
/* Send one message without blocking; a client that stopped reading
 * loses the answer (it will have given up on it). */
void rd_conn_send(struct rd_conn *c, const void *msg, size_t len);

/* listen.c: create the listening socket (and its directory, vetted);
 * 0 or -1 with a message. */
int rd_server_listen(const char *path, char *err, size_t errlen);
/* Take the listening socket systemd passed (socket activation): 1 if it
 * did, 0 if it passed none, -1 with a message if it passed something
 * unusable. */
int rd_server_adopt_systemd(char *err, size_t errlen);
/* Serve until SHUTDOWN, a signal or the idle timeout; returns the exit code. */
int rd_server_run(void);
/* Remove the socket file (at exit). */
void rd_server_cleanup(void);
extern int rd_listen_fd;
/* 1 if a directory with this stat may hold the daemon's socket (listen.c;
 * why says what is wrong otherwise). */
struct stat;
int rd_dir_trusted(const struct stat *st, uid_t owner, char *why, size_t len);

#endif
