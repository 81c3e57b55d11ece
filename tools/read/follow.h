/* SPDX-License-Identifier: MIT */
/* A trace file followed while its process writes it (follow.c). */
#ifndef GPUSPY_FOLLOW_H
#define GPUSPY_FOLLOW_H

#include <stdint.h>

#include "read/reader.h"

struct gs_follow_chunk {
	uint32_t idx;      /* the chunk's index in the file */
	uint32_t tid, seq; /* the owner the cursor belongs to */
	uint64_t claim;
	uint64_t off, ri;  /* bytes and records decoded */
	struct gspy_record base; /* the last record decoded: the packing base */
	uint64_t base_own;       /* and gpuspy's own time after it (format.h) */
	uint32_t cur_tid;  /* from an owner record on, else 0: tid's */
};

struct gs_follow {
	int fd;
	struct gs_trace tr; /* map: buf, the header; tab: the string table read so far */
	unsigned char *buf; /* the header as of the last poll */
	struct gs_tab tab;  /* the string table's bytes read so far (tab.have) */
	size_t cap;         /* of tab.bytes */
	uint64_t strtab_size, chunk_offset; /* as the file was opened */
	uint32_t chunk_size, chunk_count; /* chunk_count: those the file holds */
	struct gs_follow_chunk *chunks; /* of the chunks that had an owner, by idx */
	uint32_t nchunks, ncap;
	unsigned char *body; /* a window on one chunk's bytes */
	size_t body_cap;
	uint64_t dropped;   /* events the writer dropped, as of the last poll */
};

/* Opens and validates a trace (as gs_trace_open does); 0 or a negative errno. */
int gs_follow_open(struct gs_follow *f, const char *path, char *err, size_t errlen);
/* The same on fd, which it owns from then on (closed on failure too). */
int gs_follow_open_fd(struct gs_follow *f, int fd, const char *path, char *err, size_t errlen);
/* Reads the header (f->tr.h) and the string table's new bytes, no record:
 * 0, or -1 as gs_follow_poll. */
int gs_follow_header(struct gs_follow *f);
/* fn(arg, ev) for every event committed since the last poll, each chunk's
 * in order, chunks one after another (not in time order across threads);
 * f->tr.h is the header as of this poll. 0, or -1 when the file can no
 * longer be read whole (its process exited and cut it). */
int gs_follow_poll(struct gs_follow *f, void (*fn)(void *arg, const struct gs_event *ev), void *arg);
void gs_follow_close(struct gs_follow *f);

#endif
