/* SPDX-License-Identifier: MIT */
/* Shared by the scenario programs: per-thread-stream naming (S for _ptsz,
 * D for _ptds when built with -DPTDS) and CALL, which prints each call's
 * return code and errno so that traced and untraced runs can be compared. */
#ifndef PROG_COMMON_H
#define PROG_COMMON_H

#include <errno.h>
#include <stdio.h>

#ifdef PTDS
#define S(x) x##_ptsz
#define D(x) x##_ptds
#else
#define S(x) x
#define D(x) x
#endif

#define CALL(expr)                                                                        \
	do {                                                                              \
		errno = 1234;                                                             \
		int rc_ = (int)(expr);                                                    \
		printf("%-40.40s rc=%d errno=%d\n", #expr, rc_, errno);                    \
	} while (0)

#endif
