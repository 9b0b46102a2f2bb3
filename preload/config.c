/*
 * config.c - the LIBCEPTION_* environment, read once at init.
 *
 * The library must never print nor fail because of its environment (the
 * program it is loaded into is not ours), so a bad value falls back to a
 * safe choice and leaves a note that debug output shows:
 *   bad mode         -> off (pass everything through)
 *   bad size/timeout -> the default
 *   bad look-ahead   -> off
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"
#include "socket_path.h"
#include "size.h"

struct shim_config shim_cfg;

static const char *const mode_names[] = {
	[SHIM_MODE_OFF] = "off",
	[SHIM_MODE_TRACK] = "track",
	[SHIM_MODE_PREFETCH] = "prefetch",
	[SHIM_MODE_SERIALIZE] = "serialize",
	[SHIM_MODE_PREFETCH_SERIALIZE] = "prefetch+serialize",
};

const char *shim_mode_name(enum shim_mode m)
{
	return (unsigned)m < sizeof mode_names / sizeof *mode_names ? mode_names[m] : "?";
}

int shim_parse_mode(const char *s, enum shim_mode *out)
{
	for (unsigned i = 0; i < sizeof mode_names / sizeof *mode_names; i++) {
		if (strcmp(s, mode_names[i]) == 0) {
			*out = (enum shim_mode)i;
			return 0;
		}
	}
	return -1;
}

/* 1 TiB is far beyond any sane prefetch; refusing it catches typos. */
int shim_parse_size(const char *s, uint64_t *out)
{
	return lc_parse_size(s, 1ull << 40, out);
}

static void note(struct shim_config *cfg, const char *var, const char *val, const char *why)
{
	if (!cfg->bad[0])
		snprintf(cfg->bad, sizeof cfg->bad, "%s=\"%.40s\": %s", var, val, why);
}

void shim_config_parse(struct shim_config *cfg, const char *(*get)(const char *), unsigned uid)
{
	const char *v;

	memset(cfg, 0, sizeof *cfg);
	cfg->mode = SHIM_MODE_PREFETCH_SERIALIZE;
	cfg->prefetch = LC_DEFAULT_PREFETCH;
	cfg->timeout_ms = LC_DEFAULT_TIMEOUT_MS;

	/* Debug first, so the other notes have somewhere to go. */
	if ((v = get(LC_ENV_DEBUG)) && v[0])
		snprintf(cfg->debug, sizeof cfg->debug, "%s", v);

	if ((v = get(LC_ENV_MODE)) && v[0] && shim_parse_mode(v, &cfg->mode) < 0) {
		note(cfg, LC_ENV_MODE, v, "unknown mode, passing everything through");
		cfg->mode = SHIM_MODE_OFF;
	}

	if ((v = get(LC_ENV_SIZE)) && v[0] && shim_parse_size(v, &cfg->prefetch) < 0) {
		note(cfg, LC_ENV_SIZE, v, "not a size, using the default");
		cfg->prefetch = LC_DEFAULT_PREFETCH;
	} else if (v && v[0]) {
		cfg->prefetch_set = 1;
	}
	if (cfg->mode == SHIM_MODE_SERIALIZE)
		cfg->prefetch = 0;

	if ((v = get(LC_ENV_TIMEOUT)) && v[0]) {
		uint64_t t;
		/* a plain number of milliseconds; 0 would mean never waiting */
		if (shim_parse_size(v, &t) < 0 || t == 0 || t > 3600u * 1000u || strpbrk(v, "kKmMgG"))
			note(cfg, LC_ENV_TIMEOUT, v, "not a number of milliseconds (1..3600000), using the default");
		else
			cfg->timeout_ms = (int)t;
	}

	if ((v = get(LC_ENV_LOOKAHEAD)) && v[0]) {
		if (strcmp(v, "1") == 0)
			cfg->lookahead = 1;
		else if (strcmp(v, "0") != 0)
			note(cfg, LC_ENV_LOOKAHEAD, v, "not 0 or 1, look-ahead off");
	}
	/* Only the daemon prefetches windows ahead: in the other modes there
	 * is no window to look past. */
	if (cfg->mode != SHIM_MODE_PREFETCH_SERIALIZE)
		cfg->lookahead = 0;

	/* The default socket is chosen here, once, in the process that loaded
	 * us: nginx's master runs as root and its workers (which change uid
	 * after fork) must talk to the same daemon. */
	if ((v = get(LC_ENV_SOCKET)) && v[0]) {
		if (strlen(v) >= sizeof cfg->socket) {
			note(cfg, LC_ENV_SOCKET, v, "path too long for a Unix socket, passing everything through");
			cfg->mode = SHIM_MODE_OFF;
		} else {
			snprintf(cfg->socket, sizeof cfg->socket, "%s", v);
		}
	} else {
		lc_default_socket(uid, get("XDG_RUNTIME_DIR"), cfg->socket, sizeof cfg->socket);
	}
}
