/* SPDX-License-Identifier: MIT */
/*
 * Following a trace file while its process writes it (gpuspy top). Each
 * poll reads what was committed since the last: every chunk's header, then
 * its new packed records, decoded from where the last poll stopped (each
 * chunk keeps its own packing base). Through pread, not a mapping: a
 * process that exits cuts its file, and a read past the end returns short
 * where a mapping would fault. The header is copied into a buffer of its
 * own, the string table into another (gs_trace's tab), so that the
 * reader's clock conversion and string lookups run on them unchanged,
 * wherever the table lies in the file: before the chunks (format 2) or
 * after them (3), where the process's exit moves it down to the chunks in
 * use (ids do not change: the bytes already copied stay good).
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "read/follow.h"
#include "util/xalloc.h"

/* The most bytes of a chunk read at once: a header may give chunks of
 * up to 4 GiB (the writer's are 64 KiB), read window by window. */
#define BODY_WINDOW (1u << 20)

/* Reads n bytes at off; 0 when all came. */
static int read_at(int fd, void *buf, size_t n, uint64_t off)
{
	for (size_t got = 0; got < n;) {
		ssize_t k = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		got += (size_t)k;
	}
	return 0;
}

int gs_follow_open(struct gs_follow *f, const char *path, char *err, size_t errlen)
{
	/* O_NOFOLLOW, O_NONBLOCK, O_NOCTTY: a name planted in a directory
	 * read by root (a symlink, a FIFO) is not followed, does not block
	 * and takes no terminal; what it is, fstat tells. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW);
	if (fd < 0) {
		memset(f, 0, sizeof(*f));
		f->fd = -1;
		snprintf(err, errlen, "cannot open: %s", strerror(errno));
		return -errno;
	}
	return gs_follow_open_fd(f, fd, path, err, errlen);
}

int gs_follow_open_fd(struct gs_follow *f, int fd, const char *path, char *err, size_t errlen)
{
	memset(f, 0, sizeof(*f));
	f->fd = -1;
	/* Validated as any trace is, then read through the same descriptor:
	 * the file checked is the file read. */
	struct gs_trace t;
	int rc = gs_trace_open_fd_live(fd, path, &t, err, errlen);
	if (rc) {
		close(fd);
		return rc;
	}
	/* The table never grows past what it was, nor past the file (the
	 * header is not trusted for a size to allocate). */
	f->strtab_size = t.h->strtab_size < t.size ? t.h->strtab_size : t.size;
	if (f->strtab_size > GS_TABLE_MAX)
		f->strtab_size = GS_TABLE_MAX;
	f->chunk_offset = t.h->chunk_offset;
	f->chunk_size = t.h->chunk_size;
	/* Nor are the chunks past the file's end (a live trace never grows:
	 * its writer sizes it at the start), whose headers a poll would
	 * read, one a chunk, for as many as the header claims. */
	uint64_t held = t.size > f->chunk_offset ? (t.size - f->chunk_offset) / f->chunk_size : 0;
	f->chunk_count = t.h->chunk_count < held ? t.h->chunk_count : (uint32_t)held;
	gs_trace_close(&t);
	f->fd = fd;
	f->buf = xrealloc(NULL, GSPY_HEADER_SIZE);
	f->tr.path = path;
	f->tr.map = f->buf;
	f->tr.size = GSPY_HEADER_SIZE;
	f->tr.h = (const struct gspy_header *)f->buf;
	f->body_cap = f->chunk_size - GSPY_CHUNK_HEADER_SIZE < BODY_WINDOW ? f->chunk_size - GSPY_CHUNK_HEADER_SIZE
									    : BODY_WINDOW;
	f->body = xrealloc(NULL, f->body_cap);
	return 0;
}

/* The header and the string table's new bytes, read where the header
 * says the table is. Its exit may move it between the two reads: bytes
 * read at the old place after the header counted strings appended at the
 * new one would be wrong, so the offset is read again after them and, if
 * it changed, they are read again at the new place. */
static int read_header(struct gs_follow *f)
{
	for (int tries = 0;; tries++) {
		if (read_at(f->fd, f->buf, GSPY_HEADER_SIZE, 0))
			return -1;
		const struct gspy_header *h = f->tr.h;
		uint64_t used = h->strtab_used < f->strtab_size ? h->strtab_used : f->strtab_size;
		if (used > h->strtab_size)
			used = h->strtab_size;
		if (used <= f->tab.have)
			break;
		uint64_t at = h->strtab_offset;
		if (used > f->cap) {
			f->cap = (size_t)(used + (1 << 16) < f->strtab_size ? used + (1 << 16) : f->strtab_size);
			f->tab.bytes = xrealloc(f->tab.bytes, f->cap);
		}
		int rc = read_at(f->fd, f->tab.bytes + f->tab.have, (size_t)(used - f->tab.have), at + f->tab.have);
		uint64_t now;
		if (read_at(f->fd, &now, sizeof(now), offsetof(struct gspy_header, strtab_offset)))
			return -1;
		if (now == at) {
			if (rc)
				return -1; /* cut: the process exited */
			f->tab.have = used;
			break;
		}
		if (tries)
			return -1; /* moved twice: not a writer's trim */
	}
	f->tr.tab = &f->tab;
	gs_trace_clock(&f->tr);
	return 0;
}

int gs_follow_header(struct gs_follow *f)
{
	return read_header(f);
}

/* The cursor of chunk i, made if new: cursors are kept for the chunks that
 * had an owner, in the order of their index (the poll walks the chunks in
 * that order, *at its place in the list), so that their memory is that of
 * the chunks written, not of those a header claims. */
static struct gs_follow_chunk *cursor(struct gs_follow *f, uint32_t i, uint32_t *at)
{
	while (*at < f->nchunks && f->chunks[*at].idx < i)
		(*at)++;
	if (*at < f->nchunks && f->chunks[*at].idx == i)
		return &f->chunks[*at];
	if (f->nchunks == f->ncap) {
		f->ncap = f->ncap ? f->ncap * 2 : 64;
		f->chunks = xrealloc(f->chunks, (size_t)f->ncap * sizeof(*f->chunks));
	}
	struct gs_follow_chunk *c = &f->chunks[*at];
	memmove(c + 1, c, (size_t)(f->nchunks - *at) * sizeof(*c)); /* chunks are claimed in order: seldom any */
	f->nchunks++;
	memset(c, 0, sizeof(*c));
	c->idx = i;
	return c;
}

/* Decodes chunk c's committed records past its cursor, read at `at` (its
 * header's offset) through the body window: a record cut by the window's
 * end is decoded again from the next window; one that does not decode
 * ends the chunk there, as the first malformed byte does. -1: cut. */
static int decode(struct gs_follow *f, struct gs_follow_chunk *c, uint64_t at, uint64_t bytes, uint64_t records,
		  void (*fn)(void *arg, const struct gs_event *ev), void *arg)
{
	while (c->off < bytes && c->ri < records) {
		uint64_t left = bytes - c->off;
		size_t len = left < f->body_cap ? (size_t)left : f->body_cap, off = 0, k;
		if (read_at(f->fd, f->body, len, at + GSPY_CHUNK_HEADER_SIZE + c->off))
			return -1;
		struct gspy_record r = c->base; /* a record cut short leaves them unspecified */
		uint64_t own = c->base_own;
		for (; c->ri < records && (k = gspy_unpack(f->body + off, f->body + len, &r, &own)) != 0; off += k) {
			c->base = r;
			c->base_own = own;
			c->ri++;
			if (r.kind == GSPY_KIND_owner) { /* a chunk handed on: not an event */
				c->cur_tid = (uint32_t)r.u.mem.bytes;
				continue;
			}
			struct gs_event ev = { .rec = &c->base, .tid = c->cur_tid ? c->cur_tid : c->tid };
			ev.start_ns = gs_trace_ns(&f->tr, r.start);
			ev.end_ns = gs_trace_ns(&f->tr, r.end);
			ev.own_ns = gs_trace_own_ns(&f->tr, &r, own);
			if (r.kind >= GSPY_KIND_gpu_kernel && r.kind <= GSPY_KIND_gpu_memset)
				ev.corr = r.u.gpu.cupti_corr;
			fn(arg, &ev);
		}
		c->off += off;
		if (len == left || !off)
			break;
	}
	return 0;
}

int gs_follow_poll(struct gs_follow *f, void (*fn)(void *arg, const struct gs_event *ev), void *arg)
{
	if (read_header(f))
		return -1;
	const struct gspy_header *h = f->tr.h;
	/* The chunks claimed, of those there were at the open and those there
	 * are now: the exit's trim lowers the count, and the string table may
	 * now lie where the others were (format 3). */
	uint32_t n = h->chunks_claimed < f->chunk_count ? h->chunks_claimed : f->chunk_count;
	if (n > h->chunk_count)
		n = h->chunk_count;
	uint64_t dropped = h->dropped_nochunk + h->dropped_after_exit, cap = f->chunk_size - GSPY_CHUNK_HEADER_SIZE;
	uint32_t ci = 0, zeros = 0; /* ci: where chunk i's cursor is, or goes, in f->chunks */
	for (uint32_t i = 0; i < n;) {
		struct gspy_chunk ch;
		uint64_t at = f->chunk_offset + (uint64_t)i * f->chunk_size;
		if (read_at(f->fd, &ch, sizeof(ch), at))
			return -1; /* cut: the process exited */
		dropped += ch.dropped;
		if (!ch.tid) { /* not handed out yet, or being reset (flight recorder) */
			/* A run of them: holes, maybe (gs_next_data_chunk). */
			i = ++zeros < GS_ZERO_RUN ? i + 1 : gs_next_data_chunk(f->fd, f->chunk_offset, f->chunk_size, i, n);
			continue;
		}
		zeros = 0;
		struct gs_follow_chunk *c = cursor(f, i++, &ci);
		if (ch.tid != c->tid || ch.seq != c->seq || ch.claim != c->claim) {
			uint32_t idx = c->idx;
			memset(c, 0, sizeof(*c)); /* a new owner: its records start afresh */
			c->idx = idx;
			c->tid = ch.tid;
			c->seq = ch.seq;
			c->claim = ch.claim;
		}
		uint64_t bytes = ch.committed & 0xffffffffu, records = ch.committed >> 32;
		if (bytes > cap)
			bytes = cap;
		if (decode(f, c, at, bytes, records, fn, arg))
			return -1;
	}
	f->dropped = dropped;
	return 0;
}

void gs_follow_close(struct gs_follow *f)
{
	if (f->fd >= 0)
		close(f->fd);
	free(f->buf);
	free(f->tab.bytes);
	free(f->body);
	free(f->chunks);
	memset(f, 0, sizeof(*f));
	f->fd = -1;
}
