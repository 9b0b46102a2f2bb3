/*
 * listen.c - the listening socket, made where only its owner could have
 * put it.
 *
 * The socket's directory is opened without following a final symlink and
 * vetted through that fd: it must belong to the daemon's user or to root,
 * and nobody else may write to it (a root-owned sticky directory such as
 * /tmp aside).  A per-user default directory (/tmp/libception-UID) is
 * created 0700; one that someone else made first is refused, never
 * adopted or chmod'ed.  The socket is then bound and its stale file
 * removed through the vetted fd (/proc/self/fd/N/NAME), so a directory
 * swapped after the check is not used.  Nothing is chmod'ed by path.
 */
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cfg.h"

int rd_listen_fd = -1;
static int dir_fd = -1;
static char sock_name[NAME_MAX + 1];
static ino_t socket_ino;
static dev_t socket_dev;

static int mkdirs(const char *dir, mode_t last_mode)
{
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof tmp, "%s", dir);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(tmp, 0755) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(tmp, last_mode) && errno != EEXIST)
		return -1;
	return 0;
}

int rd_dir_trusted(const struct stat *st, uid_t owner, char *why, size_t len)
{
	if (!S_ISDIR(st->st_mode))
		snprintf(why, len, "not a directory");
	else if (st->st_uid != owner && st->st_uid != 0)
		snprintf(why, len, "owned by uid %u, not by the daemon's user or root",
		         (unsigned)st->st_uid);
	else if ((st->st_mode & 022) && !(st->st_uid == 0 && (st->st_mode & S_ISVTX)))
		snprintf(why, len, "writable by others (mode %04o)", (unsigned)(st->st_mode & 07777));
	else
		return 1;
	return 0;
}

/* Open and vet the socket's directory (created if missing); fd or -1. */
static int open_dir(const char *dir, char *err, size_t errlen)
{
	/* The per-user default directory is private; others are plain. */
	mode_t mode = strncmp(dir, "/tmp/libception-", 16) == 0 ? 0700 : 0755;
	if (mkdirs(dir, mode)) {
		snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
		return -1;
	}
	int fd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	char why[128];
	if (fd < 0 || fstat(fd, &st)) {
		snprintf(err, errlen, "directory %s: %s", dir,
		         errno == ELOOP || errno == ENOTDIR ? "a symlink or not a directory" : strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!rd_dir_trusted(&st, geteuid(), why, sizeof why)) {
		snprintf(err, errlen, "directory %s is %s; refusing to listen there", dir, why);
		close(fd);
		return -1;
	}
	return fd;
}

int rd_server_listen(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", path);
	char *slash = strrchr(dir, '/');
	const char *name = slash ? slash + 1 : dir;
	if (strlen(path) >= sizeof sa.sun_path || !*name || strlen(name) >= sizeof sock_name) {
		snprintf(err, errlen, "socket \"%s\": expected a file name, the path shorter than %zu",
		         path, sizeof sa.sun_path);
		return -1;
	}
	snprintf(sock_name, sizeof sock_name, "%s", name);
	if (!slash)
		snprintf(dir, sizeof dir, ".");
	else if (slash == dir)
		slash[1] = 0;
	else
		*slash = 0;
	char why[PATH_MAX + 256];
	dir_fd = open_dir(dir, why, sizeof why);
	if (dir_fd < 0) {
		snprintf(err, errlen, "socket \"%s\": %s", path, why);
		return -1;
	}
	/* Through the vetted directory when the name fits, else the path. */
	int n = snprintf(sa.sun_path, sizeof sa.sun_path, "/proc/self/fd/%d/%s", dir_fd, sock_name);
	if (n < 0 || (size_t)n >= sizeof sa.sun_path)
		snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	/* A socket file nobody answers on is left over from a daemon that
	 * died; one that answers means another daemon is running. */
	int probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (probe >= 0) {
		int up = connect(probe, (struct sockaddr *)&sa, sizeof sa) == 0;
		close(probe);
		if (up) {
			snprintf(err, errlen, "socket \"%s\": another receptiond is listening", path);
			close(fd);
			return -1;
		}
	}
	unlinkat(dir_fd, sock_name, 0);
	/* Anyone may reach the socket; who may use it is --access's call
	 * (checked per connection and per message, access.h). */
	mode_t old = umask(0111);
	int rc = bind(fd, (struct sockaddr *)&sa, sizeof sa);
	umask(old);
	int one = 1;
	/* Every message then carries its sender's credentials. */
	if (rc || setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof one) || listen(fd, 512)) {
		snprintf(err, errlen, "socket \"%s\": %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	struct stat st;
	if (fstatat(dir_fd, sock_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		socket_ino = st.st_ino;
		socket_dev = st.st_dev;
	}
	rd_listen_fd = fd;
	return 0;
}

/*
 * systemd's socket activation (sd_listen_fds(3)): LISTEN_PID names this
 * process and LISTEN_FDS the number of sockets passed from fd 3 on.  Read
 * here rather than through libsystemd: the protocol is these two
 * variables, and the daemon keeps no dependency beyond libc.  The socket's
 * file and directory are systemd's (the unit says where and with which
 * mode); who may use it is still --access's call.
 */
#define RD_LISTEN_FDS_START 3

int rd_server_adopt_systemd(char *err, size_t errlen)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	if (!pid || !fds || strtol(pid, NULL, 10) != (long)getpid())
		return 0;
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	if (strcmp(fds, "1")) {
		snprintf(err, errlen, "systemd passed %s sockets (LISTEN_FDS); expected one", fds);
		return -1;
	}
	int fd = RD_LISTEN_FDS_START, type = 0, listening = 0, one = 1;
	socklen_t tl = sizeof type, ll = sizeof listening;
	struct sockaddr_un sa;
	socklen_t sl = sizeof sa;
	memset(&sa, 0, sizeof sa);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) ||
	    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ll) ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) || sa.sun_family != AF_UNIX ||
	    type != SOCK_SEQPACKET || !listening) {
		snprintf(err, errlen, "the socket systemd passed is not a listening Unix "
		         "SOCK_SEQPACKET socket (ListenSequentialPacket=)");
		return -1;
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) || fcntl(fd, F_SETFD, FD_CLOEXEC) ||
	    setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof one)) {
		snprintf(err, errlen, "systemd's socket: %s", strerror(errno));
		return -1;
	}
	/* Its file is systemd's: dir_fd stays closed, so it is never
	 * unlinked here; the name is only shown in the statistics. */
	static char name[sizeof sa.sun_path + 1];
	snprintf(name, sizeof name, "%.*s", (int)sizeof sa.sun_path, sa.sun_path);
	rd_cfg.socket_path = name;
	rd_listen_fd = fd;
	return 1;
}

void rd_server_cleanup(void)
{
	/* Remove the socket only if it is still ours (a successor may have
	 * replaced it). */
	struct stat st;
	if (rd_listen_fd >= 0 && dir_fd >= 0 &&
	    fstatat(dir_fd, sock_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    st.st_ino == socket_ino && st.st_dev == socket_dev)
		unlinkat(dir_fd, sock_name, 0);
}
