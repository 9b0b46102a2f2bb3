/*
 * model.h - service-time model of one hard disk (one actuator).
 *
 * Pure: no clocks, no threads.  Times are nanoseconds on the model's own
 * timeline, positions are byte offsets on the platter (LBA * 512).  The
 * caller (sched.c) says when a command starts; the model says how long the
 * drive needs and moves its head, platter phase and cache state on.
 *
 * Parts (disk-and-workload.md, Part A):
 *   seek(x)      x = distance / capacity; t_min + B*sqrt(x) below the knee
 *                x0, c + e*x above, tangent-continuous, fitted to the
 *                preset's quarter/full-stroke access times minus half a
 *                revolution and the controller overhead;
 *   rotation     platter phase frac(t / T_rev); a byte's angle is the
 *                number of revolutions needed to transfer everything before
 *                it, so sequential transfer and rotation agree exactly;
 *   zones        media rate piecewise linear in LBA fraction through the
 *                outer (0), middle (0.5) and inner (1) rates;
 *   read-ahead   after a media read the drive keeps reading while idle into
 *                the request's cache segment (LRU over `segments`);
 *   queue        FIFO, or SPTF over the oldest `queue_depth` commands with
 *                an age limit (model_pick); under SPTF a command needing no
 *                positioning is taken from anywhere in the queue.
 *   merging      the host may split one large command into pieces (FUSE
 *                sends at most 1 MiB per request, so a loop device's 4 MiB
 *                command reaches us as four) that arrive together, in any
 *                order, or just after each other.  A piece that starts
 *                exactly where the last media transfer ended and arrived
 *                before that transfer ended, or at most MODEL_MERGE_NS
 *                after, joins it: it goes first under any policy and
 *                starts at that end with no positioning (model_joins,
 *                model_start).  A queued piece whose predecessor piece is
 *                also queued is never picked before it, so the chain is
 *                served as one transfer from its first piece.
 */
#ifndef HDDSIM_MODEL_H
#define HDDSIM_MODEL_H

#include <stddef.h>
#include <stdint.h>

#define MODEL_MAX_SEGMENTS 64
#define MODEL_MERGE_NS 200000  /* a joining piece may arrive this long after the end */

enum model_policy { MODEL_FIFO, MODEL_SPTF };

struct drive {
	char     name[64];
	double   rpm;
	uint64_t capacity;          /* bytes */
	double   rate_outer;        /* MB/s (10^6 B/s) at LBA fraction 0 */
	double   rate_middle;       /* ... at 0.5 */
	double   rate_inner;        /* ... at 1 */
	double   access_quarter;    /* ms, random single-page read, 1/4 stroke */
	double   access_half;       /* ms, 1/2 stroke (checked, not fitted) */
	double   access_full;       /* ms, full stroke */
	double   seek_min;          /* ms, track-to-track seek */
	double   overhead;          /* ms, controller overhead per media command */
	double   host_overhead;     /* ms the host path adds per request (not modelled, fitted out) */
	double   hit_overhead;      /* ms, per command served from the cache */
	double   interface_rate;    /* MB/s, cache to host */
	unsigned segments;          /* read-ahead cache segments */
	uint64_t segment_bytes;     /* bytes one segment holds */
	uint64_t readahead;         /* bytes read past a request while idle */
	enum model_policy policy;
	unsigned queue_depth;       /* SPTF looks at the oldest N commands */
	double   age_limit;         /* ms; an older command goes next */
};

/* Seek curve derived from struct drive by model_fit. */
struct seek_fit {
	double c, e;     /* long seeks: c + e*x ms */
	double x0, B;    /* short seeks: seek_min + B*sqrt(x) ms for x < x0 */
};

struct segment {
	uint64_t start, end;  /* cached bytes [start, end) */
	int64_t  used;        /* last use, for LRU */
};

struct model {
	struct drive d;
	struct seek_fit fit;
	int64_t  trev;         /* ns per revolution */
	uint64_t head;         /* byte under the head */
	int64_t  head_t;       /* when the head got there (end of last media op) */
	int64_t  free_t;       /* end of the last command (media or cache); -1 none */
	int      ra_seg;       /* segment being read ahead into, -1 none */
	uint64_t ra_limit;     /* read-ahead stops here */
	struct segment seg[MODEL_MAX_SEGMENTS];
};

/* One command as the model sees it. */
struct model_req {
	uint64_t pos, len;     /* platter bytes [pos, pos+len) */
	int64_t  arrival;      /* ns, when the command reached the drive */
};

/* What serving one command cost. */
struct model_cost {
	int64_t seek, rot, xfer, overhead;  /* ns */
	int64_t total;                      /* sum of the above */
	int64_t media;                      /* ns the bytes took to pass under the head:
					       xfer, or for a hit the time the drive's
					       read-ahead spent on them while idle */
	uint64_t seek_dist;                 /* bytes the head moved */
	int hit;                            /* 1 all from cache, 2 continued the head's read,
					       3 joined the previous command (MODEL_MERGE_NS) */
};

/* Fit the seek curve and reset the state; -1 with a message if the drive's
 * numbers cannot describe a drive (e.g. full stroke faster than quarter). */
int model_init(struct model *m, const struct drive *d, char *err, size_t errlen);

double model_seek_ms(const struct model *m, uint64_t dist);
double model_rate(const struct model *m, uint64_t pos);             /* bytes per ns */
double model_revs(const struct model *m, uint64_t pos);             /* revolutions to reach pos */
int64_t model_xfer_ns(const struct model *m, uint64_t from, uint64_t to);

/* Positioning time the command would need if started at t (no state change). */
int64_t model_position_cost(const struct model *m, int64_t t, const struct model_req *r);

/* Serve r starting at t: returns its cost and moves the state to t + total. */
struct model_cost model_serve(struct model *m, int64_t t, const struct model_req *r);

/* Which of the queued commands (in arrival order) the drive starts at t. */
size_t model_pick(const struct model *m, int64_t t, const struct model_req *q, size_t n);

/* r is the next piece of the command just served (see "merging" above). */
int model_joins(const struct model *m, const struct model_req *r);

/* When the drive starts r, picked at t: t, or for a joining piece the end
 * of the transfer it continues (which may lie before t). */
int64_t model_start(const struct model *m, int64_t t, const struct model_req *r);

#endif
