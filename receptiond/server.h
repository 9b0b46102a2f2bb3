/* server.h - the listening socket, connections and message handling. */
#ifndef RD_SERVER_H
#define RD_SERVER_H

#include <stddef.h>
#include <sys/types.h>

struct rd_conn {
	int fd;
	int refs;               /* atomic: the server's plus one per waiter */
	unsigned pending;       /* atomic: this connection's queued misses */
	unsigned malformed;     /* main thread only */
	pid_t pid;
	uid_t uid;
};

void rd_conn_get(struct rd_conn *c);
void rd_conn_put(struct rd_conn *c);
/* Send one message without blocking; a client that stopped reading
 * loses the answer (it will have given up on it). */
void rd_conn_send(struct rd_conn *c, const void *msg, size_t len);

/* Create the listening socket (and its directory); 0 or -1 with a message. */
int rd_server_listen(const char *path, char *err, size_t errlen);
/* Take the listening socket systemd passed (socket activation): 1 if it
 * did, 0 if it passed none, -1 with a message if it passed something
 * unusable. */
int rd_server_adopt_systemd(char *err, size_t errlen);
/* Serve until SHUTDOWN, a signal or the idle timeout; returns the exit code. */
int rd_server_run(void);
/* Remove the socket file (at exit). */
void rd_server_cleanup(void);

#endif
