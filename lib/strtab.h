/* SPDX-License-Identifier: MIT */
/* The trace file's string table (strtab.c); gs_intern and gs_intern_bytes
 * are declared with the writer (writer.h), which callers already include. */
#ifndef GS_STRTAB_H
#define GS_STRTAB_H

#include <stdint.h>

struct gspy_header;

/* The new file's table, its bytes at tab (writer.c, as the file is made). */
void gs_strtab_attach(char *tab, uint64_t size, struct gspy_header *h);
/* The trim at exit (writer.c): the table, `from` bytes into the mapping at
 * base, moves down to *at (or stays, when it would overlap itself there:
 * then *at = from) and keeps its used bytes and `slack` more for strings
 * interned later, within what it had; the header says so. Returns the
 * table's new size, 0 when the table is not at base + from. */
uint64_t gs_strtab_move(char *base, uint64_t from, uint64_t *at, uint64_t slack);

#endif
