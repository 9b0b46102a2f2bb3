/*
 * policy.h - how receptiond decides the prefetch size, per device.
 *
 * A policy is an ops table (designated initializers, see policy_fixed.c)
 * plus one private state per device.  The daemon creates one struct
 * rd_policy per device when it first sees the device, calls init, and
 * from then on:
 *
 *   size     when a worker takes a miss off the queue: how many bytes to
 *            make resident starting at the request's offset (the daemon
 *            clips at end of file and never goes below what was asked);
 *   observe  after every ENSURE is answered, hit or miss;
 *   tick     every tick_ms milliseconds (if the policy sets it), from a
 *            worker of the device, whether or not there is traffic;
 *   describe when someone asks for statistics: add the policy's own
 *            figures (current size, last decision...) to the device's JSON;
 *   destroy  when the daemon exits.
 *
 * Every hook of one device is called with that device's lock held, so a
 * policy needs no locking of its own; hooks must not block or sleep (the
 * lock also guards the device's queue).  Hooks of different devices run
 * concurrently, so a policy keeps no global mutable state.
 *
 * Registering a policy: add its ops to the table in policy.c; the name is
 * what `--policy` selects.  Nothing else in the daemon needs to change.
 */
#ifndef RD_POLICY_H
#define RD_POLICY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct rd_json;

/* What the daemon knows about a device when the policy starts. */
struct rd_device_info {
	const char *name;      /* "vda", "fuse-0:57" ... (stable for a boot) */
	dev_t fs_dev;          /* st_dev of the first file seen on it */
	dev_t disk;            /* whole-disk dev_t, or fs_dev for anonymous devices */
	int block;             /* 1 if a block device in /sys/dev/block */
	int rotational;        /* /sys/block/<disk>/queue/rotational, -1 unknown */
	uint64_t hint_bytes;   /* most one WILLNEED call reads on the file system:
				  max(max_sectors_kb, read_ahead_kb) of its queue,
				  RD_HINT where it has none (FUSE) */
	uint64_t default_size; /* the daemon's --prefetch (bytes) */
	const char *args;      /* text after "NAME:" in --policy, "" if none */
};

/* One ENSURE as the policy sees it when sizing a miss. */
struct rd_request_info {
	dev_t dev;
	ino_t ino;
	uint64_t file_size;
	uint64_t offset, length;  /* what the library asked for (merged) */
	uint64_t client_size;     /* the library's prefetch size, 0 = daemon's choice */
	pid_t pid;                /* of the first asker (SO_PEERCRED) */
	uid_t uid;
	uint64_t arrival_ns;      /* CLOCK_MONOTONIC */
	uint32_t call;            /* enum lc_call */
};

/* An answered ENSURE. */
struct rd_completion {
	struct rd_request_info req;
	int fd;                   /* valid only during the hook: dup it to keep it */
	int was_resident;         /* 1: answered from the cache, no I/O */
	int status;               /* enum lc_status */
	uint64_t window_offset;   /* what was made (or found) resident */
	uint64_t window_length;
	uint64_t bytes_read;      /* read from the device for this window */
	uint64_t wait_ns;         /* queued time (0 for hits) */
	uint64_t service_ns;      /* time the worker spent reading (0 for hits) */
	unsigned joined;          /* further requests merged into this one */
	uint64_t done_ns;         /* CLOCK_MONOTONIC */
};

struct rd_policy {
	const struct rd_policy_ops *ops;
	const struct rd_device_info *dev;
	void *priv;               /* the policy's own per-device state */
	/*
	 * How many reads the device's workers may run at once.  Set by init
	 * (default 1: strict serialization); the daemon starts that many
	 * workers and never changes it later.  A profile that found parallel
	 * reads faster on this device raises it.
	 */
	unsigned concurrency;
	/*
	 * 1: the daemon has nothing to add on this device, so every ENSURE is
	 * answered LC_ST_DIRECT at once and the library reads on its own.
	 * Set by init (a profile of a device without seeks, where parallel
	 * reads win); never changed later.
	 */
	int direct;
	/* Call tick this often (0 = never). */
	unsigned tick_ms;
};

struct rd_policy_ops {
	const char *name;
	/* Parse dev->args, allocate priv, set concurrency/tick_ms.  Return 0,
	 * or -1 with a one-line reason in err (the daemon refuses to start
	 * for a bad --policy, or falls back to "fixed" for a device seen later). */
	int (*init)(struct rd_policy *p, char *err, size_t errlen);
	uint64_t (*size)(struct rd_policy *p, const struct rd_request_info *req);
	void (*observe)(struct rd_policy *p, const struct rd_completion *c);  /* optional */
	void (*tick)(struct rd_policy *p, uint64_t now_ns);                   /* optional */
	void (*describe)(struct rd_policy *p, struct rd_json *j);             /* optional */
	/* Optional: prefetched bytes since the start that were later asked
	 * for (useful), never asked for before their stream ended (wasted),
	 * evicted before they were asked for (evicted); for the metrics. */
	void (*prefetch_use)(struct rd_policy *p, uint64_t *useful, uint64_t *wasted,
	                     uint64_t *evicted);
	void (*destroy)(struct rd_policy *p);                                 /* optional */
};

/* The registered policies (policy.c). */
const struct rd_policy_ops *rd_policy_find(const char *name);
/* "fixed, competitive, ..." for messages. */
const char *rd_policy_names(void);

/*
 * Policy specs from the command line: `--policy [DEVICE=]NAME[:ARGS]`,
 * repeatable; a spec without DEVICE is the default for every device.
 */
struct rd_policy_spec {
	char device[64];   /* "" = any */
	char name[32];
	char args[192];
};
int rd_policy_spec_parse(const char *text, struct rd_policy_spec *out, char *err, size_t errlen);
/* The spec for a device name among n specs (the last matching wins; the
 * last device-less one is the default), or NULL for the built-in fixed. */
const struct rd_policy_spec *rd_policy_spec_for(const struct rd_policy_spec *specs, unsigned n,
                                                const char *device);

/* Helpers policies may use. */
uint64_t rd_now_ns(void);                          /* CLOCK_MONOTONIC */
void rd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));  /* log.c */
int rd_parse_size(const char *s, uint64_t *out);   /* "2M", "512K", "4096" */

/* rd_json (json.h) in a nutshell, for describe:
 *   rd_json_u64(j, "size", v); rd_json_str(j, "reason", s); rd_json_dbl(j, "score", x);
 *   rd_json_obj_begin(j, "name"); ... rd_json_obj_end(j); */

extern const struct rd_policy_ops rd_policy_fixed;

#endif
