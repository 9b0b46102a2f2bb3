/*
 * access.h - who may use receptiond (docs/libception-security.md "Access model").
 *
 * Connecting: `--access all|owner|group:NAME`.  Root and the daemon's own
 * uid may always connect.  `owner` admits nobody else; `group:NAME`
 * admits members of NAME (primary or supplementary group, as the kernel
 * reports them for the peer with SO_PEERCRED and SO_PEERGROUPS at
 * connect time); `all` admits every local user.  Without --access a root
 * daemon uses group:libception, falling back to `owner` (root only) with
 * one log line if the group does not exist, and any other daemon `owner`.
 *
 * Stopping or reconfiguring is judged per message, on the sender's
 * credentials at the time it sent it (SCM_CREDENTIALS), never on those
 * of whoever opened the connection: rd_access_may_control().
 */
#ifndef RD_ACCESS_H
#define RD_ACCESS_H

#include <stddef.h>
#include <sys/types.h>

enum rd_access_kind { RD_ACCESS_ALL, RD_ACCESS_OWNER, RD_ACCESS_GROUP };

struct rd_access {
	enum rd_access_kind kind;
	gid_t gid;               /* RD_ACCESS_GROUP */
	char group[64];
	uid_t owner;             /* the daemon's uid */
};

#define RD_ACCESS_DEFAULT_GROUP "libception"

/* Parse spec ("all", "owner", "group:NAME"; NULL: the default above) for a
 * daemon running as owner.  0, or -1 with a one-line message in err.  A
 * default that fell back to `owner` leaves a note in note (else ""). */
int rd_access_parse(const char *spec, uid_t owner, struct rd_access *a, char *err, size_t errlen,
                    char *note, size_t notelen);
/* 1 if a peer with these credentials may connect (pure). */
int rd_access_allows(const struct rd_access *a, uid_t uid, gid_t gid, const gid_t *groups,
                     int ngroups);
/* The same for a connected socket, from the kernel's view of the peer;
 * fills *uid and *pid. */
int rd_access_check_peer(const struct rd_access *a, int fd, uid_t *uid, pid_t *pid);
/* 1 if a message sent by uid may stop or reconfigure the daemon (pure). */
int rd_access_may_control(const struct rd_access *a, uid_t uid);
/* "all", "owner" or "group:NAME", for logs and stats. */
const char *rd_access_describe(const struct rd_access *a, char *buf, size_t len);

#endif
