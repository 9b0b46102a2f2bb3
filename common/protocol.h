/*
 * protocol.h - the wire format between libception.so (Deception) and
 * receptiond (Reception).
 *
 * One SOCK_SEQPACKET Unix socket connection per client thread.  Every
 * message is one fixed-size struct, in host byte order (both ends run on
 * the same machine).  A request that concerns a file carries exactly one
 * file descriptor as SCM_RIGHTS ancillary data; the daemon uses it only
 * with positional calls (pread, cachestat, fstat), because a passed fd
 * shares the program's file offset and readahead state.
 *
 * Requests are synchronous: the client sends one, waits (bounded) for the
 * reply with the same id, and drops replies with older ids, which are
 * answers it stopped waiting for.  The one exception is an ENSURE flagged
 * LC_F_LOOKAHEAD: sent without waiting, never answered.
 *
 * Any change to a struct bumps LC_PROTO_VERSION; the daemon answers a
 * request of another version with LC_ST_BADVERSION and the library then
 * passes all calls straight through.
 */
#ifndef LC_PROTOCOL_H
#define LC_PROTOCOL_H

#include <stdint.h>

#define LC_PROTO_MAGIC   0x3150434cu   /* "LCP1" read as little-endian bytes */
#define LC_PROTO_VERSION 2   /* 2: lc_report carries per-device counters */

/* Environment variables read by the library and the wrapper. */
#define LC_ENV_SOCKET   "LIBCEPTION_SOCKET"   /* daemon socket path */
#define LC_ENV_MODE     "LIBCEPTION_MODE"     /* prefetch+serialize|serialize|prefetch|track|off */
#define LC_ENV_SIZE     "LIBCEPTION_PREFETCH" /* prefetch size, bytes or with K/M suffix */
#define LC_ENV_TIMEOUT  "LIBCEPTION_TIMEOUT_MS" /* longest wait for the daemon */
#define LC_ENV_DEBUG    "LIBCEPTION_DEBUG"    /* file to write debug lines to */
#define LC_ENV_LOOKAHEAD "LIBCEPTION_LOOKAHEAD" /* 1: ask for the next window early */

/* Where the daemon listens when nobody says otherwise. */
#define LC_DEFAULT_SOCKET_ROOT "/run/libception/receptiond.sock"
#define LC_DEFAULT_SOCKET_USER "/tmp/libception-%u/receptiond.sock" /* %u: uid */

#define LC_DEFAULT_PREFETCH  (2u << 20)
#define LC_DEFAULT_TIMEOUT_MS 5000

enum lc_msg_type {
	/*
	 * Make [offset, offset+length) of the passed fd resident, prefetching
	 * per the daemon's policy, and answer when it is (or when the daemon
	 * found it already resident).  The reply's resident_* fields name a
	 * range the daemon knows to be resident now, so the library can skip
	 * asking again for reads inside it.
	 */
	LC_MSG_ENSURE = 1,
	/* Statistics from the library (call counts, latency histograms and
	 * per-device hits); no fd, no reply. */
	LC_MSG_REPORT = 2,
	/* Ask for the daemon's statistics; the reply is LC_MSG_STATS_REPLY
	 * followed by the JSON text in further messages (see lc_stats_chunk). */
	LC_MSG_STATS = 3,
	LC_MSG_STATS_REPLY = 4,
	/* Ask the daemon to exit (only from its own uid or root). */
	LC_MSG_SHUTDOWN = 5,
	/* Ask for the daemon's metrics in the Prometheus text format; the
	 * reply is framed like LC_MSG_STATS's (LC_MSG_STATS_REPLY, then the
	 * text in chunks).  A new type, not a struct change, so
	 * LC_PROTO_VERSION stays; a daemon that predates it drops it as
	 * malformed and does not answer. */
	LC_MSG_METRICS = 6,
};

/* The calls the library intercepts, as counted and timed. */
enum lc_call {
	LC_CALL_READ, LC_CALL_PREAD, LC_CALL_READV, LC_CALL_PREADV,
	LC_CALL_SENDFILE, LC_CALL_COPY_FILE_RANGE, LC_CALL_SPLICE,
	LC_CALL_COUNT
};

/* ENSURE flags */
#define LC_F_NO_PREFETCH 0x1u   /* serialize mode: read only what was asked */
/* Look-ahead (LIBCEPTION_LOOKAHEAD=1): the library asks for the window
 * after the one its reader is in and does not wait.  The daemon queues it
 * like any ENSURE (serialized, merged, skipped if cached) but never
 * answers it, so no reply is left on the connection for a later blocking
 * ENSURE to step over.  (A daemon that predates the flag answers anyway;
 * the library drops that answer by its older id.)  A flag, not a struct
 * change, so LC_PROTO_VERSION stays. */
#define LC_F_LOOKAHEAD   0x2u

enum lc_status {
	LC_ST_OK = 0,          /* the range is resident */
	LC_ST_BADVERSION = 1,
	LC_ST_BADREQUEST = 2,  /* malformed, wrong fd, not a regular file */
	LC_ST_BUSY = 3,        /* queue full: go on without prefetch */
	LC_ST_IOERROR = 4,     /* the daemon's read failed; the program's own
	                          call will see (and report) the same error */
	/* The daemon has nothing to add on this file's device (profiled as
	 * not seeking, with parallel reads faster: no window beyond the ask
	 * and no serialization would help).  The library reads on its own
	 * and does not ask for this device again for LC_DIRECT_RECHECK_S.  A
	 * status, not a struct change, so LC_PROTO_VERSION stays: an older
	 * library takes it as "go on without prefetch". */
	LC_ST_DIRECT = 5,
};

/* How long the library trusts an LC_ST_DIRECT before asking again, so a
 * daemon restarted with another policy is heard within this long. */
#define LC_DIRECT_RECHECK_S 10

struct lc_header {
	uint32_t magic;
	uint16_t version;
	uint16_t type;     /* enum lc_msg_type */
	uint64_t id;       /* chosen by the client, echoed in the reply */
};

struct lc_ensure {
	struct lc_header h;
	uint64_t offset;
	uint64_t length;
	uint32_t flags;    /* LC_F_* */
	uint32_t call;     /* enum lc_call, for the daemon's accounting */
	uint64_t prefetch; /* the client's prefetch size, 0 = daemon's choice */
};

struct lc_ensure_reply {
	struct lc_header h;
	int32_t  status;       /* enum lc_status */
	uint32_t was_resident; /* 1 if nothing had to be read */
	uint64_t resident_offset;
	uint64_t resident_length;
	uint64_t bytes_read;   /* what the daemon read from the device */
};

/* Latency histogram buckets: bucket i counts calls that took less than
 * 2^i microseconds (bucket 0: under 1 us), the last bucket the rest. */
#define LC_HIST_BUCKETS 28

/* Per-device counters in a report: the first LC_REPORT_DEVS devices
 * (st_dev of the files read) a process meets get an entry each; calls on
 * any further device are summed in `other`.  An entry whose counters are
 * all zero is unused. */
#define LC_REPORT_DEVS 8

struct lc_report_dev {
	uint64_t dev;        /* st_dev of the files (not mapped to a disk) */
	uint64_t calls;      /* intercepted calls on files of this device */
	uint64_t hits;       /* of them, found resident by the library */
	uint64_t hit_bytes;  /* bytes those hits asked for */
};

struct lc_report {
	struct lc_header h;
	uint32_t pid;
	uint32_t _pad;
	/* deltas since the previous report */
	uint64_t calls[LC_CALL_COUNT];
	uint64_t hits[LC_CALL_COUNT];    /* found resident by the library */
	uint64_t bytes[LC_CALL_COUNT];   /* bytes the program asked for */
	uint64_t hist[LC_CALL_COUNT][LC_HIST_BUCKETS];
	struct lc_report_dev devs[LC_REPORT_DEVS];
	struct lc_report_dev other;      /* dev is 0 */
};

struct lc_stats_reply {
	struct lc_header h;
	uint32_t json_length;  /* total bytes of JSON that follow */
	uint32_t chunks;       /* in this many messages of up to LC_STATS_CHUNK */
};
#define LC_STATS_CHUNK 32768

/* Largest message the daemon accepts; anything longer is malformed. */
#define LC_MAX_MESSAGE sizeof(struct lc_report)
_Static_assert(sizeof(struct lc_report) >= sizeof(struct lc_ensure) &&
	       sizeof(struct lc_report) >= sizeof(struct lc_ensure_reply) &&
	       sizeof(struct lc_report) >= sizeof(struct lc_stats_reply),
	       "LC_MAX_MESSAGE must be the largest message");

#endif
