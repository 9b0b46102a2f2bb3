/* access.c - see access.h. */
#include "access.h"

#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

int rd_access_parse(const char *spec, uid_t owner, struct rd_access *a, char *err, size_t errlen,
                    char *note, size_t notelen)
{
	memset(a, 0, sizeof *a);
	a->owner = owner;
	note[0] = 0;
	const char *group = NULL;
	if (!spec) {
		if (owner != 0) {
			a->kind = RD_ACCESS_OWNER;
			return 0;
		}
		group = RD_ACCESS_DEFAULT_GROUP;
	} else if (strcmp(spec, "all") == 0) {
		a->kind = RD_ACCESS_ALL;
		return 0;
	} else if (strcmp(spec, "owner") == 0) {
		a->kind = RD_ACCESS_OWNER;
		return 0;
	} else if (strncmp(spec, "group:", 6) == 0 && spec[6]) {
		group = spec + 6;
	} else {
		snprintf(err, errlen, "--access \"%s\": expected all, owner or group:NAME", spec);
		return -1;
	}
	if (strlen(group) >= sizeof a->group) {
		snprintf(err, errlen, "--access: group name too long");
		return -1;
	}
	errno = 0;
	struct group *g = getgrnam(group);
	if (!g) {
		if (spec) {
			snprintf(err, errlen, "--access \"%s\": no group %s", spec, group);
			return -1;
		}
		a->kind = RD_ACCESS_OWNER;
		snprintf(note, notelen, "no group %s: only root may connect (see --access)", group);
		return 0;
	}
	a->kind = RD_ACCESS_GROUP;
	a->gid = g->gr_gid;
	snprintf(a->group, sizeof a->group, "%s", group);
	return 0;
}

int rd_access_allows(const struct rd_access *a, uid_t uid, gid_t gid, const gid_t *groups,
                     int ngroups)
{
	if (uid == 0 || uid == a->owner || a->kind == RD_ACCESS_ALL)
		return 1;
	if (a->kind != RD_ACCESS_GROUP)
		return 0;
	if (gid == a->gid)
		return 1;
	for (int i = 0; i < ngroups; i++)
		if (groups[i] == a->gid)
			return 1;
	return 0;
}

int rd_access_check_peer(const struct rd_access *a, int fd, uid_t *uid, pid_t *pid)
{
	struct ucred cred;
	socklen_t len = sizeof cred;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		return 0;
	*uid = cred.uid;
	*pid = cred.pid;
	gid_t few[64], *groups = few;
	int n = 0;
	if (a->kind == RD_ACCESS_GROUP && cred.uid != 0 && cred.uid != a->owner &&
	    cred.gid != a->gid) {
		socklen_t glen = sizeof few;
		int rc = getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, few, &glen);
		if (rc && errno == ERANGE && (groups = malloc(glen)))  /* glen: the size needed */
			rc = getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &glen);
		if (!groups)
			groups = few;
		else if (rc == 0)
			n = (int)(glen / sizeof(gid_t));
	}
	int ok = rd_access_allows(a, cred.uid, cred.gid, groups, n);
	if (groups != few)
		free(groups);
	return ok;
}

int rd_access_may_control(const struct rd_access *a, uid_t uid)
{
	return uid == 0 || uid == a->owner;
}

const char *rd_access_describe(const struct rd_access *a, char *buf, size_t len)
{
	if (a->kind == RD_ACCESS_GROUP)
		snprintf(buf, len, "group:%s", a->group);
	else
		snprintf(buf, len, "%s", a->kind == RD_ACCESS_ALL ? "all" : "owner");
	return buf;
}
