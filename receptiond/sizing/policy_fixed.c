/*
 * policy_fixed.c - the paper's policy: one prefetch size for every request
 * on the device.  The size is the library's own (LIBCEPTION_PREFETCH,
 * sent with each request) when it gives one, else `fixed:SIZE`, else the
 * daemon's --prefetch.  `fixed:SIZE,parallel=N` (or `fixed:parallel=N`)
 * lets N reads run at once on the device instead of one, for devices
 * where concurrent reads are faster (flash) and for experiments.
 */
#include "json.h"
#include "policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fixed {
	uint64_t size;
	uint64_t last;   /* the size of the last request, for stats */
};

static int fixed_init(struct rd_policy *p, char *err, size_t errlen)
{
	struct fixed *f = calloc(1, sizeof *f);
	if (!f) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	f->size = p->dev->default_size;
	char args[192];
	snprintf(args, sizeof args, "%s", p->dev->args);
	char *save = NULL;
	for (char *tok = strtok_r(args, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned n;
		char extra;
		if (strncmp(tok, "parallel=", 9) == 0) {
			if (sscanf(tok + 9, "%u%c", &n, &extra) != 1 || n < 1 || n > 64) {
				snprintf(err, errlen, "policy fixed: \"%s\": parallel must be 1 to 64", tok);
				free(f);
				return -1;
			}
			p->concurrency = n;
		} else if (rd_parse_size(tok, &f->size)) {
			snprintf(err, errlen, "policy fixed: \"%s\" is not a size or parallel=N", tok);
			free(f);
			return -1;
		}
	}
	f->last = f->size;
	p->priv = f;
	return 0;
}

static uint64_t fixed_size(struct rd_policy *p, const struct rd_request_info *req)
{
	struct fixed *f = p->priv;
	f->last = req->client_size ? req->client_size : f->size;
	return f->last;
}

static void fixed_describe(struct rd_policy *p, struct rd_json *j)
{
	struct fixed *f = p->priv;
	rd_json_u64(j, "size", f->size);
	rd_json_u64(j, "last_size", f->last);
}

static void fixed_destroy(struct rd_policy *p)
{
	free(p->priv);
	p->priv = NULL;
}

const struct rd_policy_ops rd_policy_fixed = {
	.name = "fixed",
	.init = fixed_init,
	.size = fixed_size,
	.describe = fixed_describe,
	.destroy = fixed_destroy,
};
