/*
 * check.h - the CHECK macro of the C unit tests (make check).  Define
 * CHECK_PROGRAM ("test_x") before including it.  A false condition prints
 * "test_x: FILE:LINE: failed: COND" and the test goes on; check_done()
 * prints the verdict and returns main's exit status.
 */
#ifndef LC_CHECK_H
#define LC_CHECK_H

#include <stdio.h>

static int check_failures;

#define CHECK(cond) do { if (!(cond)) { check_failures++; \
	fprintf(stderr, "%s: %s:%d: failed: %s\n", CHECK_PROGRAM, __FILE__, __LINE__, #cond); } } while (0)

static inline int check_done(void)
{
	if (check_failures) {
		fprintf(stderr, "%s: %d check(s) failed\n", CHECK_PROGRAM, check_failures);
		return 1;
	}
	printf("%s: all passed\n", CHECK_PROGRAM);
	return 0;
}

#endif
