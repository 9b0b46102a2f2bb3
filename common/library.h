/*
 * library.h - read a video library file (format: docs/library-format.md).
 * Shared by hddsim (which lays the videos out on its modelled platter) and
 * vidload (which picks videos and checks their content).
 */
#ifndef LC_LIBRARY_H
#define LC_LIBRARY_H

#include <stddef.h>
#include <stdint.h>

struct lib_video {
	char    *name;     /* path inside the mount, no leading '/' */
	uint64_t bytes;    /* size of the whole video */
	uint64_t bitrate;  /* bits per second */
	uint64_t chunk;    /* chunk file size, 0 = one file */
	uint64_t seed;     /* content_seed(name) */
};

struct library {
	struct lib_video *videos;  /* in platter order */
	size_t count;
	uint64_t total_bytes;
};

/* 0 on success; -1 with a one-line message naming the file and line in err. */
int library_load(const char *path, struct library *lib, char *err, size_t errlen);
void library_free(struct library *lib);

/* Number of chunk files of a chunked video (0 for an unchunked one). */
uint64_t lib_video_chunks(const struct lib_video *v);

/* A video name as library files allow it: a relative path without
 * spaces, "..", "//", or a trailing '/' (docs/library-format.md). */
int lib_name_ok(const char *name);

/* Name of chunk k of video v: "NAME/NNNNNN" (six digits). */
#define LIB_CHUNK_FMT "%s/%06llu"

#endif
