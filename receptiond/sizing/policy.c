/* policy.c - the table of prefetch-size policies and --policy parsing. */
#include "policy.h"
#include "sizing.h"   /* competitive, adaptive, bitrate (issue 6) */

#include <stdio.h>
#include <string.h>

/* Every selectable policy; add new ones here. */
static const struct rd_policy_ops *const policies[] = {
	&rd_policy_fixed,
	&rd_policy_competitive,
	&rd_policy_adaptive,
	&rd_policy_bitrate,
};

const struct rd_policy_ops *rd_policy_find(const char *name)
{
	for (size_t i = 0; i < sizeof policies / sizeof policies[0]; i++)
		if (strcmp(policies[i]->name, name) == 0)
			return policies[i];
	return NULL;
}

const char *rd_policy_names(void)
{
	static char names[256];
	if (!names[0]) {
		size_t len = 0;
		for (size_t i = 0; i < sizeof policies / sizeof policies[0]; i++) {
			int n = snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "",
			                 policies[i]->name);
			if (n < 0 || (size_t)n >= sizeof names - len)
				break;
			len += (size_t)n;
		}
	}
	return names;
}

static int copy_part(char *dst, size_t cap, const char *src, size_t n)
{
	if (n >= cap)
		return -1;
	memcpy(dst, src, n);
	dst[n] = 0;
	return 0;
}

int rd_policy_spec_parse(const char *text, struct rd_policy_spec *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	const char *name = text;
	const char *eq = strchr(text, '=');
	/* Device names may hold ':' ("fuse-0:57") and arguments may hold
	 * '=' ("adaptive:interval=10"): text before the first '=' is a device
	 * unless it starts with a policy name and ':'. */
	const char *c0 = strchr(text, ':');
	if (eq && c0 && c0 < eq) {
		char first[32];
		if (!copy_part(first, sizeof first, text, (size_t)(c0 - text)) && rd_policy_find(first))
			eq = NULL;
	}
	if (eq) {
		if (eq == text || copy_part(out->device, sizeof out->device, text, (size_t)(eq - text))) {
			snprintf(err, errlen, "policy \"%s\": bad device name", text);
			return -1;
		}
		name = eq + 1;
	}
	const char *colon = strchr(name, ':');
	size_t nlen = colon ? (size_t)(colon - name) : strlen(name);
	if (nlen == 0 || copy_part(out->name, sizeof out->name, name, nlen)) {
		snprintf(err, errlen, "policy \"%s\": expected [DEVICE=]NAME[:ARGS]", text);
		return -1;
	}
	if (colon && copy_part(out->args, sizeof out->args, colon + 1, strlen(colon + 1))) {
		snprintf(err, errlen, "policy \"%s\": arguments too long", text);
		return -1;
	}
	if (!rd_policy_find(out->name)) {
		snprintf(err, errlen, "policy \"%s\": unknown (one of: %s)", out->name, rd_policy_names());
		return -1;
	}
	return 0;
}

const struct rd_policy_spec *rd_policy_spec_for(const struct rd_policy_spec *specs, unsigned n,
                                                const char *device)
{
	const struct rd_policy_spec *dflt = NULL, *exact = NULL;
	for (unsigned i = 0; i < n; i++) {
		if (!specs[i].device[0])
			dflt = &specs[i];
		else if (strcmp(specs[i].device, device) == 0)
			exact = &specs[i];
	}
	return exact ? exact : dflt;
}
