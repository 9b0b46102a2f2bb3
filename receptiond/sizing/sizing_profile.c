/*
 * sizing_profile.c - read a device profile written by `libception profile`
 * (harness/libception/cmd_profile.py; same directory rule).  Only the
 * top-level numbers are needed, so a small scanner reads them rather than
 * a JSON library.
 */
#include "sizing.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

void sz_profile_dir(char *buf, size_t len)
{
	const char *env = getenv("LIBCEPTION_PROFILES");
	if (env && *env) {
		snprintf(buf, len, "%s", env);
		return;
	}
	if (geteuid() == 0) {
		snprintf(buf, len, "/var/lib/libception/profiles");
		return;
	}
	const char *state = getenv("XDG_STATE_HOME");
	if (state && *state)
		snprintf(buf, len, "%s/libception/profiles", state);
	else
		snprintf(buf, len, "%s/.local/state/libception/profiles",
		         getenv("HOME") ? getenv("HOME") : "/");
}

/* Skip a JSON string starting at the quote; returns the char after it. */
static const char *skip_string(const char *p)
{
	for (p++; *p && *p != '"'; p++)
		if (*p == '\\' && p[1])
			p++;
	return *p ? p + 1 : p;
}

int sz_profile_parse(const char *text, struct sz_profile *out)
{
	memset(out, 0, sizeof *out);
	out->concurrency = 1;
	int depth = 0, have = 0;
	for (const char *p = text; *p;) {
		if (*p == '{' || *p == '[') {
			depth++;
			p++;
		} else if (*p == '}' || *p == ']') {
			depth--;
			p++;
		} else if (*p == '"') {
			const char *key = p + 1;
			p = skip_string(p);
			size_t klen = (size_t)(p - key - 1);
			const char *q = p;
			while (*q == ' ' || *q == '\n' || *q == '\t' || *q == '\r')
				q++;
			if (depth != 1 || *q != ':')
				continue;
			q++;
			char *end;
			double v = strtod(q, &end);
			if (end == q)
				continue;
			p = end;
			if (klen == 4 && !strncmp(key, "rate", 4))
				out->rate = v, have |= 1;
			else if (klen == 8 && !strncmp(key, "switch_s", 8))
				out->switch_s = v, have |= 2;
			else if (klen == 16 && !strncmp(key, "competitive_size", 16))
				out->competitive_size = v;
			else if (klen == 11 && !strncmp(key, "concurrency", 11))
				out->concurrency = v >= 1 && v <= 64 ? (unsigned)v : 1;
		} else {
			p++;
		}
	}
	if (have != 3 || out->rate <= 0 || out->switch_s < 0)
		return -2;
	if (out->competitive_size <= 0)
		out->competitive_size = out->rate * out->switch_s;
	return 0;
}

int sz_profile_load(dev_t disk, const char *path, struct sz_profile *out)
{
	char name[512];
	if (path) {
		snprintf(name, sizeof name, "%s", path);
	} else {
		char dir[400];
		sz_profile_dir(dir, sizeof dir);
		snprintf(name, sizeof name, "%s/%u:%u.json", dir, major(disk), minor(disk));
	}
	FILE *f = fopen(name, "re");
	if (!f)
		return -1;
	char text[16384];
	size_t n = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[n] = 0;
	int rc = sz_profile_parse(text, out);
	snprintf(out->path, sizeof out->path, "%s", name);
	return rc;
}
