/* SPDX-License-Identifier: MIT */
/* Command-line errors shared by gpuspy's commands: one line, exit status 2. */
#ifndef GPUSPY_CLI_H
#define GPUSPY_CLI_H

#include <stdio.h>
#include <string.h>

/* GPUSPY_VERSION comes from the VERSION file, through the Makefile. */
#ifndef GPUSPY_VERSION
#error "GPUSPY_VERSION is set by the Makefile from VERSION"
#endif

/* argv's OPT, which CMD's parser did not take: "needs a value" when OPT is
 * one of VALUED (its options that take one, space-separated; OPT came last,
 * or before "--"), else unknown. Returns 2. */
static inline int gs_bad_option(const char *cmd, const char *opt, const char *valued)
{
	size_t n = strlen(opt);
	for (const char *p = valued; (p = strstr(p, opt)) != NULL; p += n)
		if ((p == valued || p[-1] == ' ') && (p[n] == ' ' || !p[n])) {
			fprintf(stderr, "gpuspy: error: %s: %s needs a value, see gpuspy --help\n", cmd, opt);
			return 2;
		}
	fprintf(stderr, "gpuspy: error: %s: unknown option %s, see gpuspy --help\n", cmd, opt);
	return 2;
}

/* CMD was given no ARG (what it needs, e.g. "trace"). Returns 2. */
static inline int gs_missing(const char *cmd, const char *what)
{
	fprintf(stderr, "gpuspy: error: %s: no %s given, see gpuspy --help\n", cmd, what);
	return 2;
}

#endif
