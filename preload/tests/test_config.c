/*
 * test_config - unit tests of config.c: sizes, modes and the fallbacks
 * for bad values.  Exit 0 when all pass.  Build alone:
 *   cc -std=gnu11 -I../../common -I.. -o test_config test_config.c ../config.c
 */
#include <stdio.h>
#include <string.h>

#include "shim.h"

#define CHECK_PROGRAM "test_config"
#include "check.h"

static const char *const *envp;
static const char *get(const char *name)
{
	for (const char *const *e = envp; *e; e += 2)
		if (!strcmp(e[0], name))
			return e[1];
	return NULL;
}

static void parse(struct shim_config *c, const char *const *env, unsigned uid)
{
	envp = env;
	shim_config_parse(c, get, uid);
}

int main(void)
{
	uint64_t v;
	CHECK(shim_parse_size("0", &v) == 0 && v == 0);
	CHECK(shim_parse_size("4096", &v) == 0 && v == 4096);
	CHECK(shim_parse_size("2M", &v) == 0 && v == 2u << 20);
	CHECK(shim_parse_size("2MiB", &v) == 0 && v == 2u << 20);
	CHECK(shim_parse_size("512k", &v) == 0 && v == 512u << 10);
	CHECK(shim_parse_size("1G", &v) == 0 && v == 1u << 30);
	CHECK(shim_parse_size("", &v) < 0);
	CHECK(shim_parse_size("-1", &v) < 0);
	CHECK(shim_parse_size("2X", &v) < 0);
	CHECK(shim_parse_size("2 M", &v) < 0);
	CHECK(shim_parse_size("99999999999999999999999", &v) < 0);
	CHECK(shim_parse_size("2000G", &v) < 0);

	struct shim_config c;
	parse(&c, (const char *[]){ NULL }, 0);
	CHECK(c.mode == SHIM_MODE_PREFETCH_SERIALIZE);
	CHECK(c.prefetch == LC_DEFAULT_PREFETCH && !c.prefetch_set);
	CHECK(c.timeout_ms == LC_DEFAULT_TIMEOUT_MS);
	CHECK(!strcmp(c.socket, LC_DEFAULT_SOCKET_ROOT));
	CHECK(!c.bad[0] && !c.debug[0]);

	parse(&c, (const char *[]){ NULL }, 1000);
	CHECK(!strcmp(c.socket, "/tmp/libception-1000/receptiond.sock"));

	parse(&c, (const char *[]){ "LIBCEPTION_MODE", "serialize", "LIBCEPTION_PREFETCH", "4M",
				    "LIBCEPTION_SOCKET", "/x/s", "LIBCEPTION_TIMEOUT_MS", "250", NULL }, 0);
	CHECK(c.mode == SHIM_MODE_SERIALIZE && c.prefetch == 0);
	CHECK(!strcmp(c.socket, "/x/s") && c.timeout_ms == 250 && !c.bad[0]);

	parse(&c, (const char *[]){ "LIBCEPTION_MODE", "prefetch", "LIBCEPTION_PREFETCH", "8M", NULL }, 0);
	CHECK(c.mode == SHIM_MODE_PREFETCH && c.prefetch == 8u << 20 && c.prefetch_set);

	parse(&c, (const char *[]){ "LIBCEPTION_MODE", "fast", NULL }, 0);
	CHECK(c.mode == SHIM_MODE_OFF && strstr(c.bad, "LIBCEPTION_MODE"));

	parse(&c, (const char *[]){ "LIBCEPTION_PREFETCH", "lots", NULL }, 0);
	CHECK(c.mode == SHIM_MODE_PREFETCH_SERIALIZE && c.prefetch == LC_DEFAULT_PREFETCH);
	CHECK(strstr(c.bad, "LIBCEPTION_PREFETCH"));

	parse(&c, (const char *[]){ "LIBCEPTION_TIMEOUT_MS", "0", NULL }, 0);
	CHECK(c.timeout_ms == LC_DEFAULT_TIMEOUT_MS && c.bad[0]);
	parse(&c, (const char *[]){ "LIBCEPTION_TIMEOUT_MS", "5k", NULL }, 0);
	CHECK(c.timeout_ms == LC_DEFAULT_TIMEOUT_MS && c.bad[0]);

	char longpath[200];
	memset(longpath, 'a', sizeof longpath - 1);
	longpath[sizeof longpath - 1] = '\0';
	parse(&c, (const char *[]){ "LIBCEPTION_SOCKET", longpath, NULL }, 0);
	CHECK(c.mode == SHIM_MODE_OFF && c.bad[0]);

	parse(&c, (const char *[]){ "LIBCEPTION_DEBUG", "/tmp/x.log", NULL }, 0);
	CHECK(!strcmp(c.debug, "/tmp/x.log"));

	/* look-ahead: off unless "1", and only in prefetch+serialize mode */
	CHECK(!c.lookahead);
	parse(&c, (const char *[]){ "LIBCEPTION_LOOKAHEAD", "1", NULL }, 0);
	CHECK(c.lookahead && !c.bad[0]);
	parse(&c, (const char *[]){ "LIBCEPTION_LOOKAHEAD", "0", NULL }, 0);
	CHECK(!c.lookahead && !c.bad[0]);
	parse(&c, (const char *[]){ "LIBCEPTION_LOOKAHEAD", "yes", NULL }, 0);
	CHECK(!c.lookahead && strstr(c.bad, "LIBCEPTION_LOOKAHEAD"));
	parse(&c, (const char *[]){ "LIBCEPTION_LOOKAHEAD", "1", "LIBCEPTION_MODE", "serialize", NULL }, 0);
	CHECK(!c.lookahead);

	return check_done();
}
