/*
 * socket_path.h - where receptiond listens when nobody says otherwise;
 * one rule for the daemon, the library (and harness/libception/daemon.py).
 *
 * Root: LC_DEFAULT_SOCKET_ROOT.  Another user: $XDG_RUNTIME_DIR/
 * libception.sock when that directory is the user's own and private
 * (systemd makes it so at login), else LC_DEFAULT_SOCKET_USER in /tmp,
 * whose directory the daemon creates 0700 and refuses if anyone else made
 * it.  Whatever the path, the library talks only to a listener run by
 * root or by its own user (SO_PEERCRED), so a squatter never sees an fd.
 */
#ifndef LC_SOCKET_PATH_H
#define LC_SOCKET_PATH_H

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "protocol.h"

#define LC_XDG_SOCKET_NAME "libception.sock"

/* xdg: the value of $XDG_RUNTIME_DIR, or NULL. */
static inline void lc_default_socket(uid_t uid, const char *xdg, char *buf, size_t len)
{
	struct stat st;
	if (uid == 0)
		snprintf(buf, len, "%s", LC_DEFAULT_SOCKET_ROOT);
	else if (xdg && xdg[0] == '/' && strlen(xdg) + sizeof "/" LC_XDG_SOCKET_NAME <= len &&
	         strlen(xdg) + sizeof "/" LC_XDG_SOCKET_NAME <= 108 && stat(xdg, &st) == 0 &&
	         S_ISDIR(st.st_mode) && st.st_uid == uid && (st.st_mode & 077) == 0)
		snprintf(buf, len, "%s/" LC_XDG_SOCKET_NAME, xdg);
	else
		snprintf(buf, len, LC_DEFAULT_SOCKET_USER, (unsigned)uid);
}

#endif
