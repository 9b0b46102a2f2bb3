/*
 * textfile.h - the line format of libception's text files (video
 * libraries, hddsim's disk maps): blank-separated fields, blank lines and
 * lines starting with '#' ignored, decimal numbers.
 */
#ifndef LC_TEXTFILE_H
#define LC_TEXTFILE_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The next line of f that holds fields, split into at most `max` of them
 * (pass one more than a line may have to see a line with too many).
 * Returns their count, 0 at the end of the file, -1 for a line longer
 * than `len`; *lineno counts every line read. */
static inline int text_fields(FILE *f, char *line, size_t len, size_t *lineno, char **tok, int max)
{
	while (fgets(line, (int)len, f)) {
		++*lineno;
		if (!strchr(line, '\n') && !feof(f))
			return -1;
		int n = 0;
		char *save = NULL;
		for (char *s = strtok_r(line, " \t\r\n", &save); s && n < max; s = strtok_r(NULL, " \t\r\n", &save))
			tok[n++] = s;
		if (n > 0 && tok[0][0] != '#')
			return n;
	}
	return 0;
}

/* A decimal number, digits only (no sign, blank or hex); 0 or -1. */
static inline int text_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	if (!*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

#endif
