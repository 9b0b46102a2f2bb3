/*
 * drives.h - read drive presets from a drives.conf file (format in the
 * file's header and docs/hddsim.md).
 */
#ifndef HDDSIM_DRIVES_H
#define HDDSIM_DRIVES_H

#include "model.h"

/* Load preset `name` from `path` into d; -1 with a one-line message naming
 * the file, line or preset in err. */
int drives_load(const char *path, const char *name, struct drive *d, char *err, size_t errlen);

/* Print the names of the presets in path, one per line. */
int drives_list(const char *path, char *err, size_t errlen);

#endif
