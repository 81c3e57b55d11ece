/* SPDX-License-Identifier: MIT */
/*
 * Everything gpuspy writes from a trace (command lines, kernel, phase and
 * NVTX names, device UUIDs, file names) is the trace's to choose, and a
 * trace may come from anyone. So each sink such text reaches has one
 * function here that makes any bytes safe for it, and writers use only
 * these (docs/security.md):
 *
 *   terminal          gs_term_open (a stream), gs_term_fputs; on one line
 *                     (a name in a table or a sentence) gs_term_line,
 *                     gs_term_clean
 *   shell word        gs_shell_word
 *   Prometheus label  gs_prom_label
 *   collapsed stacks  gs_collapsed_frame
 *   JSON              gs_json_print
 *   HTML              gs_html_text, gs_html_script_json
 *
 * They share one UTF-8 decoder, which refuses what RFC 3629 refuses
 * (overlong forms, surrogates, past U+10FFFF, a sequence cut short): a
 * byte it refuses is never passed on as it is, since a terminal may read
 * a lone 0x9b as CSI and Prometheus marks a target whose exposition is not
 * UTF-8 down.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/escape.h"

/* The length (1..4) of the valid UTF-8 character at s[0..n), its code
 * point in *cp; 0 when s is a valid start cut short by n; -1 when s[0]
 * begins no valid character. */
static int utf8_char(const unsigned char *s, size_t n, uint32_t *cp)
{
	unsigned c = s[0], lo = 0x80, hi = 0xbf;
	int len;
	uint32_t v;
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c < 0xc2) /* a continuation byte, or an overlong two-byte lead */
		return -1;
	if (c < 0xe0) {
		len = 2, v = c & 0x1f;
	} else if (c < 0xf0) {
		len = 3, v = c & 0x0f;
		lo = c == 0xe0 ? 0xa0 : 0x80; /* overlong */
		hi = c == 0xed ? 0x9f : 0xbf; /* surrogates */
	} else if (c < 0xf5) {
		len = 4, v = c & 0x07;
		lo = c == 0xf0 ? 0x90 : 0x80; /* overlong */
		hi = c == 0xf4 ? 0x8f : 0xbf; /* past U+10FFFF */
	} else {
		return -1;
	}
	for (int i = 1; i < len; i++) {
		if ((size_t)i >= n)
			return 0;
		unsigned b = s[i];
		if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xbf))
			return -1;
		v = v << 6 | (b & 0x3f);
	}
	*cp = v;
	return len;
}

static const char fffd[] = "\xef\xbf\xbd";

/* The character at s as it is copied: its own bytes (rep, rl), or one
 * U+FFFD for a byte that starts no UTF-8 character (cp 0xfffd); the
 * bytes it takes from s. */
static size_t utf8_next(const unsigned char *s, size_t n, uint32_t *cp, const char **rep, size_t *rl)
{
	int len = utf8_char(s, n, cp);
	if (len <= 0) { /* not UTF-8, or cut inside a character */
		*cp = 0xfffd, *rep = fffd, *rl = 3;
		return 1;
	}
	*rep = (const char *)s, *rl = (size_t)len;
	return (size_t)len;
}

/* ---- terminal ------------------------------------------------------------ */

/* The piece a terminal gets for the character at s[0..n) into out (at most
 * 7 bytes), its length in *olen; returns the bytes of s it stands for, 0
 * when s may be a character cut by n and more may come (not at_end).
 * Passed: printable ASCII, newline and tab (not on one line: line) and
 * valid UTF-8 from U+00A0 on; written as \xNN text: other C0 controls,
 * DEL and bytes that begin no valid character; as \u00NN: the C1
 * controls U+0080..U+009F. */
static size_t term_piece(const unsigned char *s, size_t n, int at_end, int line, char *out, size_t *olen)
{
	unsigned c = s[0];
	if ((c >= 0x20 && c < 0x7f) || (!line && (c == '\n' || c == '\t'))) {
		out[0] = (char)c;
		*olen = 1;
		return 1;
	}
	uint32_t cp = 0;
	int len = c < 0x80 ? -1 : utf8_char(s, n, &cp);
	if (len == 0 && !at_end)
		return 0;
	if (len <= 0) {
		*olen = (size_t)snprintf(out, 8, "\\x%02x", c);
		return 1;
	}
	if (cp < 0xa0) {
		*olen = (size_t)snprintf(out, 8, "\\u%04x", (unsigned)cp);
	} else {
		memcpy(out, s, (size_t)len);
		*olen = (size_t)len;
	}
	return (size_t)len;
}

static const char *const sgr[] = { "\033[1m", "\033[33m", "\033[0m" }; /* report_print.c's */

struct term {
	FILE *out;
	int color;
	unsigned char held[8]; /* a colour sequence or a UTF-8 character not complete yet */
	size_t nheld;
};

/* Whether s[0..n) could still become one of our colour sequences. */
static int sgr_prefix(const unsigned char *s, size_t n, int *whole)
{
	*whole = 0;
	for (size_t i = 0; i < sizeof(sgr) / sizeof(sgr[0]); i++)
		if (n <= strlen(sgr[i]) && !memcmp(sgr[i], s, n)) {
			*whole = n == strlen(sgr[i]);
			return 1;
		}
	return 0;
}

/* Writes what held has that is complete (everything, at_end). */
static void drain(struct term *t, int at_end)
{
	size_t at = 0;
	while (at < t->nheld) {
		const unsigned char *p = t->held + at;
		size_t n = t->nheld - at;
		int whole;
		if (p[0] == 0x1b && t->color && sgr_prefix(p, n, &whole)) {
			if (whole) {
				fwrite(p, 1, n, t->out);
				at += n;
				continue;
			}
			if (!at_end)
				break;
		}
		char o[8];
		size_t ol, used = term_piece(p, n, at_end, 0, o, &ol);
		if (!used)
			break;
		fwrite(o, 1, ol, t->out);
		at += used;
	}
	memmove(t->held, t->held + at, t->nheld - at);
	t->nheld -= at;
}

static ssize_t term_write(void *cookie, const char *buf, size_t len)
{
	struct term *t = cookie;
	const unsigned char *b = (const unsigned char *)buf;
	for (size_t i = 0; i < len;) {
		if (!t->nheld) { /* the common case: a run of printable ASCII at once */
			size_t k = i;
			while (k < len && ((b[k] >= 0x20 && b[k] < 0x7f) || b[k] == '\n'))
				k++;
			fwrite(b + i, 1, k - i, t->out);
			if (k == len)
				break;
			i = k;
		}
		t->held[t->nheld++] = b[i++];
		drain(t, 0);
	}
	return (ssize_t)len;
}

static int term_close(void *cookie)
{
	struct term *t = cookie;
	drain(t, 1);
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

const char *gs_term_line(char *buf, size_t cap, const char *s, size_t max)
{
	if (!cap)
		return "";
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strnlen(s, max), at = 0, k = 0;
	while (at < n) {
		char o[8];
		size_t ol, used = term_piece(p + at, n - at, 1, 1, o, &ol);
		if (k + ol >= cap) /* a piece never split: no half escape, no half character */
			break;
		memcpy(buf + k, o, ol);
		k += ol;
		at += used;
	}
	buf[k] = 0;
	return buf;
}

void gs_term_clean(char *s, size_t cap)
{
	if (!cap)
		return;
	char *buf = malloc(cap);
	if (!buf) {
		s[0] = 0;
		return;
	}
	gs_term_line(buf, cap, s, SIZE_MAX);
	memcpy(s, buf, strlen(buf) + 1);
	free(buf);
}

/* ---- shell word ---------------------------------------------------------- */

void gs_shell_word(FILE *f, const char *s)
{
	/* Inside '...' a POSIX shell takes every byte as it is but ' itself,
	 * which closes the quote: written as '\'' (close, a quoted ', open). */
	fputc('\'', f);
	for (; *s; s++)
		if (*s == '\'')
			fputs("'\\''", f);
		else
			fputc(*s, f);
	fputc('\'', f);
}

/* ---- Prometheus label ---------------------------------------------------- */

void gs_prom_label(FILE *f, const char *name, const char *v, size_t max)
{
	const unsigned char *s = (const unsigned char *)v;
	size_t n = strlen(v), out = 0;
	fprintf(f, "%s=\"", name);
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		const char *rep;
		size_t rl, len = utf8_next(s + i, n - i, &cp, &rep, &rl);
		if (cp == '\\')
			rep = "\\\\", rl = 2;
		else if (cp == '"')
			rep = "\\\"", rl = 2;
		else if (cp == '\n')
			rep = "\\n", rl = 2;
		else if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) /* the format allows them; a dashboard would not */
			rep = fffd, rl = 3;
		if (out + rl > max) /* cut before a character, never inside one or its escape */
			break;
		fwrite(rep, 1, rl, f);
		out += rl;
		i += len;
	}
	fputc('"', f);
}

/* ---- collapsed stacks ---------------------------------------------------- */

void gs_collapsed_frame(char *out, size_t cap, const char *f)
{
	const unsigned char *s = (const unsigned char *)f;
	size_t n = strlen(f), k = 0;
	if (!cap)
		return;
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		const char *rep;
		size_t rl, len = utf8_next(s + i, n - i, &cp, &rep, &rl);
		if (cp == ';') /* between frames */
			rep = ",", rl = 1;
		else if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) /* a line's end, or a terminal's command */
			rep = "?", rl = 1;
		if (k + rl >= cap) /* cut before a character, never inside one */
			break;
		memcpy(out + k, rep, rl);
		k += rl;
		i += len;
	}
	out[k] = 0;
}

/* ---- JSON ---------------------------------------------------------------- */

/* What JSON text writes as \u00NN though cJSON copies it: DEL and the C1
 * controls, valid JSON as they are but commands to a terminal that shows
 * the text. */
static int json_control(uint32_t cp)
{
	return cp >= 0x7f && cp < 0xa0;
}

char *gs_json_print(const cJSON *o, int pretty)
{
	char *s = pretty ? cJSON_Print(o) : cJSON_PrintUnformatted(o);
	if (!s)
		return NULL;
	/* cJSON escapes quotes, backslashes and C0 but copies other bytes,
	 * and JSON must be UTF-8 (RFC 8259): a byte that begins no valid
	 * character can only be inside a string here, where \ufffd stands
	 * for it; DEL and C1 too (JSON's own characters are ASCII), where
	 * \u007f..\u009f stand for them, the same characters to a reader. */
	size_t n = strlen(s), grow = 0;
	uint32_t cp;
	for (size_t i = 0; i < n;) {
		int len = utf8_char((const unsigned char *)s + i, n - i, &cp);
		grow += len <= 0 ? 5 : json_control(cp) ? 6 - (size_t)len : 0;
		i += len <= 0 ? 1 : (size_t)len;
	}
	if (!grow)
		return s;
	char *r = malloc(n + grow + 1);
	if (r) {
		size_t k = 0;
		for (size_t i = 0; i < n;) {
			int len = utf8_char((const unsigned char *)s + i, n - i, &cp);
			if (len <= 0) {
				memcpy(r + k, "\\ufffd", 6);
				k += 6, i++;
			} else if (json_control(cp)) {
				snprintf(r + k, 7, "\\u%04x", (unsigned)cp);
				k += 6, i += (size_t)len;
			} else {
				memcpy(r + k, s + i, (size_t)len);
				k += (size_t)len, i += (size_t)len;
			}
		}
		r[k] = 0;
	}
	cJSON_free(s);
	return r;
}

/* ---- HTML ---------------------------------------------------------------- */

void gs_html_text(FILE *f, const char *s)
{
	for (; *s; s++)
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default: fputc(*s, f);
		}
}

void gs_html_script_json(FILE *f, const char *json)
{
	/* '<' as \u003c: JSON reads it back the same, and no "</script" or
	 * "<!--" can end or change the element. */
	for (; *json; json++)
		if (*json == '<')
			fputs("\\u003c", f);
		else
			fputc(*json, f);
}
