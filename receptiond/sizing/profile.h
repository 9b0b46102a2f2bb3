/*
 * profile.h - what the parts of receptiond-profile share (profile.c,
 * profile_space.c, profile_probe.c).
 */
#ifndef RD_PROFILE_H
#define RD_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "sizing.h"   /* SZ_MECHANICAL_SWITCH_S */

#define PROG "receptiond-profile"
#define ALIGN 4096u
#define MAX_FILES 200000
#define SEQ_REQ (1u << 20)        /* sequential probe request size */
#define SMALL_READ 4096u          /* switch-cost probe read */
#define STREAMS 8                 /* concurrent-read probe: streams */
#define STREAM_REQS 4             /* requests per stream */

struct pfile {
	char *path;
	uint64_t size;
	uint64_t start;     /* offset of this file in the logical space */
	uint64_t phys;      /* first physical byte (FIEMAP), for ordering */
	int fd;             /* opened lazily */
};

/* ---- the files under PATH as one logical space (profile_space.c) ---- */
extern struct pfile *files;
extern size_t nfiles;
extern uint64_t total_bytes;   /* the logical space's size */
extern int use_direct;         /* O_DIRECT, else drop-behind (--no-direct) */
extern int fiemap_ok;          /* files ordered by their physical place */

/* Add the regular files under path (on device dev) to the space. */
int walk(const char *path, dev_t dev, int depth);
/* Order the files (physically where FIEMAP tells) and give each its start. */
void layout(void);
/* The file holding logical byte pos, and pos's offset in it. */
struct pfile *locate(uint64_t pos, uint64_t *off);
/* The file's descriptor, opened on first use. */
int file_fd(struct pfile *f);
/* One cold read of len bytes at logical pos, clipped at the file's end. */
ssize_t cold_read(uint64_t pos, size_t len, char *buf);
void *aligned_buf(size_t len);

/* ---- the probes (profile_probe.c) ---- */
double now_s(void);
uint64_t rnd(uint64_t *s);

struct seq_result {
	double position, rate, seconds;
	uint64_t bytes;
};

int seq_probe(double position, double max_s, uint64_t max_bytes, char *buf,
              struct seq_result *r);
int switch_probe(unsigned max_reads, double max_s, uint64_t *seed, char *buf,
                 double *mean, double *median, unsigned *count);
/* Seconds for one round of STREAMS streams over threads threads, -1 on error. */
double par_round(unsigned threads, size_t chunk, uint64_t *seed);

#endif
