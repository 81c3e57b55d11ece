/* SPDX-License-Identifier: MIT */
/* A trace's bytes made safe for each sink they reach, one function a sink
 * (escape.c). None fails on any input; invalid UTF-8 never passes. */
#ifndef GS_ESCAPE_H
#define GS_ESCAPE_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

/* Terminal. A stream that writes to out with control bytes (C0 but newline
 * and tab, DEL, C1 in UTF-8 or as a byte) and invalid UTF-8 escaped as
 * text; color: pass the report's own colour sequences. fclose it to flush
 * (out stays open). NULL when out of memory. */
FILE *gs_term_open(FILE *out, int color);
/* s to out, escaped as by gs_term_open: for names inside error messages. */
void gs_term_fputs(const char *s, FILE *out);
/* One line: s's first max bytes (SIZE_MAX: all; what "%.*s" takes) into
 * buf, escaped as by gs_term_open but for newline and tab, which are
 * escaped too (\x0a, \x09: a name must not start a line of its own,
 * which could pass for the tool's), and cut to fit cap bytes with its NUL
 * (never inside an escape or a character; 4 * max + 1 always fits);
 * returns buf. For a name inside a line of text; what it gives passes
 * gs_term_open as it is. */
const char *gs_term_line(char *buf, size_t cap, const char *s, size_t max);
/* The same, in place: for a screen's lines. */
void gs_term_clean(char *s, size_t cap);

/* Shell word: s as one word of a POSIX shell command line, '...' quoted,
 * that the shell hands on byte for byte. */
void gs_shell_word(FILE *f, const char *s);

/* Prometheus label: name="v" with v escaped as the text format wants (\\,
 * \", \n), controls and invalid UTF-8 as U+FFFD, cut at max bytes between
 * characters (never inside one or an escape). name is the caller's, not a
 * trace's. */
void gs_prom_label(FILE *f, const char *name, const char *v, size_t max);

/* Collapsed stacks (flamegraph.pl's and speedscope's input, a line a
 * stack: "outer;...;inner COUNT"): frame f as one name into out, cut to fit
 * cap bytes with its NUL between characters. ';' (which separates frames)
 * becomes ',', controls (C0, DEL, C1) '?', invalid UTF-8 U+FFFD a byte;
 * spaces stay (readers take the line's last space as the count's). */
void gs_collapsed_frame(char *out, size_t cap, const char *f);

/* JSON: o as text (cJSON's, pretty or on one line), valid UTF-8: a byte in
 * a string that begins no valid character becomes \ufffd, and DEL and the
 * C1 controls \u007f..\u009f (the same characters to a reader; no
 * command to a terminal that shows the text). The caller owns
 * the result and frees it with free (gpuspy leaves cJSON on malloc); NULL
 * when out of memory. */
char *gs_json_print(const cJSON *o, int pretty);

/* HTML: s as element text or a quoted attribute's value. */
void gs_html_text(FILE *f, const char *s);
/* HTML: JSON text (gs_json_print's) inside a <script> element. */
void gs_html_script_json(FILE *f, const char *json);

#endif
