/* SPDX-License-Identifier: MIT */
/*
 * What gpuspy writes to a terminal from a trace (command lines, kernel,
 * phase and NVTX names, file names) is the trace's to choose: a trace
 * someone hands you must not clear the screen, set the title or forge
 * lines. Text output goes through this filter, which writes control bytes
 * (below 0x20 but newline and tab, 0x7f, and the C1 controls U+0080..
 * U+009F in UTF-8 or as single bytes) as \xNN text. It passes only the
 * report's own three colour sequences, and those only when colour is on.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/term.h"

static const char *const sgr[] = { "\033[1m", "\033[33m", "\033[0m" }; /* render/text.c's */

struct term {
	FILE *out;
	int color;
	char held[8]; /* an escape sequence or a UTF-8 lead byte not complete yet */
	size_t nheld;
};

static void put_escaped(struct term *t, unsigned char c)
{
	fprintf(t->out, "\\x%02x", c);
}

/* Whether held[0..n) could still become one of our colour sequences. */
static int sgr_prefix(const char *s, size_t n, int *whole)
{
	*whole = 0;
	for (size_t i = 0; i < sizeof(sgr) / sizeof(sgr[0]); i++)
		if (n <= strlen(sgr[i]) && !memcmp(sgr[i], s, n)) {
			if (n == strlen(sgr[i]))
				*whole = 1;
			return 1;
		}
	return 0;
}

static void flush_held(struct term *t)
{
	for (size_t i = 0; i < t->nheld; i++) {
		unsigned char c = (unsigned char)t->held[i];
		if (c < 0x20 || c == 0x7f || (c >= 0x80 && c <= 0x9f) || c == 0xc2)
			put_escaped(t, c);
		else
			fputc(c, t->out);
	}
	t->nheld = 0;
}

static ssize_t term_write(void *cookie, const char *buf, size_t len)
{
	struct term *t = cookie;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)buf[i];
		if (t->nheld && t->held[0] == '\033') {
			t->held[t->nheld++] = (char)c;
			int whole;
			if (t->color && sgr_prefix(t->held, t->nheld, &whole)) {
				if (whole) {
					fwrite(t->held, 1, t->nheld, t->out);
					t->nheld = 0;
				}
				continue;
			}
			/* Not ours: the ESC escaped, the rest read again. */
			char rest[8];
			size_t n = t->nheld - 1;
			memcpy(rest, t->held + 1, n);
			t->nheld = 0;
			put_escaped(t, 0x1b);
			term_write(t, rest, n);
			continue;
		}
		if (t->nheld && (unsigned char)t->held[0] == 0xc2) {
			t->nheld = 0;
			if (c >= 0x80 && c <= 0x9f) { /* U+0080..U+009F: C1 */
				fprintf(t->out, "\\u%04x", c);
				continue;
			}
			fputc(0xc2, t->out);
		}
		if (c == '\033' || c == 0xc2) {
			t->held[t->nheld++] = (char)c;
			continue;
		}
		if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
			put_escaped(t, c);
		else
			fputc(c, t->out);
	}
	return (ssize_t)len;
}

static int term_close(void *cookie)
{
	struct term *t = cookie;
	flush_held(t);
	int rc = fflush(t->out);
	free(t);
	return rc;
}

FILE *gs_term_open(FILE *out, int color)
{
	struct term *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->out = out;
	t->color = color;
	cookie_io_functions_t io = { .write = term_write, .close = term_close };
	FILE *f = fopencookie(t, "w", io);
	if (!f)
		free(t);
	return f;
}

void gs_term_fputs(const char *s, FILE *out)
{
	FILE *f = gs_term_open(out, 0);
	if (!f) {
		fputs("(unprintable)", out);
		return;
	}
	fputs(s, f);
	fclose(f);
}
