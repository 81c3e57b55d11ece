/* SPDX-License-Identifier: MIT */
/* Text for a terminal from a trace's bytes (term.c). */
#ifndef GS_TERM_H
#define GS_TERM_H
#include <stdio.h>

/* A stream that writes to out with control bytes escaped; color: pass the
 * report's own colour sequences. fclose it to flush (out stays open).
 * NULL when out of memory. */
FILE *gs_term_open(FILE *out, int color);
/* s to out, escaped: for names inside error messages. */
void gs_term_fputs(const char *s, FILE *out);

#endif
