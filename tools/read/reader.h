/* SPDX-License-Identifier: MIT */
/*
 * Reader of .gspy trace files: validates the header, finds every thread's
 * chunks and yields committed events merged in start-time order, with raw
 * clock values converted to CLOCK_MONOTONIC ns. Memory is O(threads +
 * chunks), never O(events). Functions return 0 or a negative errno and put
 * a one-line reason in the caller's buffer; they never print.
 */
#ifndef GPUSPY_READER_H
#define GPUSPY_READER_H

#include <stddef.h>
#include <stdint.h>

#include "gpuspy/format.h"

/* The most bytes of a string table a reader takes: four times the
 * writer's (16 MiB), not a forged header's terabytes (of a sparse file);
 * a name past them reads as unknown. */
#define GS_TABLE_MAX (64u << 20)

struct gs_event {
	const struct gspy_record *rec; /* decoded; valid until the next gs_trace_next() */
	uint32_t tid;
	uint64_t start_ns, end_ns;     /* CLOCK_MONOTONIC */
	uint64_t own_ns;               /* gpuspy's own time after the call (its stack walk), 0 none */
	uint64_t corr;                 /* CUPTI correlation id, 0 none */
};

struct gs_thread {
	uint32_t tid;
	uint32_t nchunks;
	uint32_t *chunks;  /* chunk indices in seq order */
	uint32_t ci;       /* current chunk (index into chunks) */
	uint64_t ri;       /* records decoded from the current chunk */
	uint64_t off;      /* byte offset of the next record in the chunk's body */
	uint64_t bytes, records; /* the current chunk's committed extent */
	int bound;         /* bytes and records are read for the current chunk */
	int have;          /* rec is decoded and not yet consumed */
	struct gspy_record rec; /* the last record decoded: the packing base */
	uint64_t own;           /* and gpuspy's own time after it (format.h) */
	uint32_t cur_tid;  /* the current chunk's records are this thread's from an
			    * owner record on (a chunk handed on), else 0: tid's */
	uint64_t events, dropped;
};

/* A trace's string table kept apart from its mapping: follow.c's copy, or
 * the reader's own of a live file of format 3, whose exit moves the table
 * down and cuts the old place (a name handed out must outlive that). Its
 * bytes never move while the trace is open: a live one's are an anonymous
 * mapping of the table's size, filled as entries are asked for. */
struct gs_tab {
	unsigned char *bytes;
	uint64_t have; /* bytes copied */
	uint64_t cap;  /* live: the mapping's size */
	int live;      /* copied from the trace's mapping as the table grows */
};

struct gs_trace {
	const char *path;
	const unsigned char *map;
	size_t size;
	const struct gspy_header *h;
	struct gs_tab *tab; /* NULL: the string table is read in map, where the header says */
	struct gs_thread *threads;
	uint32_t *chunk_idx; /* storage behind threads[].chunks */
	uint32_t nthreads;
	uint64_t events;   /* committed events in the file */
	uint64_t packed_bytes; /* the bytes those events take in their chunks */
	uint64_t dropped;  /* events the writer counted as dropped */
	int truncated;     /* file shorter than its header says */
	double ns_per_raw; /* clock conversion */
	uint64_t raw0, mono0;
};

int gs_trace_open(const char *path, struct gs_trace *t, char *err, size_t errlen);
/* The same on an open descriptor, which stays the caller's (path: the
 * name the trace is known by, kept in t->path). */
int gs_trace_open_fd(int fd, const char *path, struct gs_trace *t, char *err, size_t errlen);
/* The same for a follower (top, serve): a file cut while it is opened (its
 * process exiting) fails the open (-EAGAIN) instead of ending the command. */
int gs_trace_open_fd_live(int fd, const char *path, struct gs_trace *t, char *err, size_t errlen);
/* 1 when the header's sizes and offsets are bounded and consistent:
 * what every reader and writer of a trace checks before using them. */
int gs_header_sane(const struct gspy_header *h);
/* The header's notes (gpuspy's own messages, format.h): its notes_used
 * bytes, clamped to the area, copied into buf (cap bytes with its NUL) as
 * lines each ending in '\n', without NUL bytes or empty lines; the lines'
 * number. Untrusted bytes: escape them for the sink. */
unsigned gs_header_notes(const struct gspy_header *h, char *buf, size_t cap);
/* Next event in start-time order; 1 = got one, 0 = end. */
int gs_trace_next(struct gs_trace *t, struct gs_event *ev);
void gs_trace_rewind(struct gs_trace *t);
/* A string of the string table; "" for 0 or an id out of range. */
const char *gs_trace_string(const struct gs_trace *t, uint32_t id);
void gs_trace_close(struct gs_trace *t);
/* The clock conversion from t->h (gs_trace_open sets it up; follow.c, for
 * a header it copied), and a raw clock value in CLOCK_MONOTONIC ns. */
void gs_trace_clock(struct gs_trace *t);
uint64_t gs_trace_ns(const struct gs_trace *t, uint64_t raw);
/* gpuspy's own time after r (format.h's own, raw clock), in ns. */
uint64_t gs_trace_own_ns(const struct gs_trace *t, const struct gspy_record *r, uint64_t own);
/* gpuspy's own time taking call stacks (header stacks_time), in ns. */
uint64_t gs_trace_stack_ns(const struct gs_trace *t);
/* The bytes of a string-table entry (binary entries: format.h); 0 if the id
 * is out of range. */
int gs_trace_entry(const struct gs_trace *t, uint32_t id, const unsigned char **data, uint32_t *len);
/* Next entry after `id` (0 = the first); 0 at the end. */
uint32_t gs_trace_next_entry(const struct gs_trace *t, uint32_t id);

/* The first chunk past chunk i (of n, chunk_size bytes each from
 * chunk_offset in the file open on fd) whose header is not in a hole of
 * the file (lseek's SEEK_DATA), or n: a chunk in a hole reads as zeros,
 * no thread's. Asked once GS_ZERO_RUN chunks in a row had no thread. */
#define GS_ZERO_RUN 64
uint32_t gs_next_data_chunk(int fd, uint64_t chunk_offset, uint32_t chunk_size, uint32_t i, uint32_t n);

/* Names from format.h's lists; "?" when out of range. */
const char *gs_kind_name(unsigned kind);
const char *gs_api_name(unsigned api);
const char *gs_mem_name(unsigned mem);
const char *gs_dir_name(unsigned dir);
int gs_api_is_ptds(unsigned api);
const char *gs_state_name(unsigned state);
const char *gs_gpu_timing_name(unsigned t);

#endif
