/* SPDX-License-Identifier: MIT */
/*
 * What `gpuspy run` says of gpuspy's messages about CMD's processes,
 * which the library keeps off their stderr (lib/log.c): after CMD's
 * output, never inside it. Each trace's notes, in the order the processes
 * started, then the lines of run's log (GPUSPY_LOG) that no trace showed:
 * messages of processes that made no trace, and notes a full trace lost.
 *
 * A command may start thousands of processes that each say the same
 * thing (every preloaded shell of a build warns of the same bad option):
 * a text is said once, with how many other processes said it, and at most
 * RELAY_LINES texts are said, then a count of the rest and where they
 * all are (run's log, kept then). What is read is bounded too (RELAY_KEEP
 * notes, RELAY_LOG_BYTES of the log, a line at a time), and matched by
 * sorting, so run never stalls after its command ended.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuspy/format.h"
#include "cmd/relay.h"
#include "read/reader.h"
#include "util/escape.h"

#define RELAY_LINES 20
#define RELAY_KEEP 100000
#define RELAY_LOG_BYTES (16u << 20)

struct note {
	uint32_t pid;
	uint32_t order;    /* as read: the traces' notes first, then the log's */
	char *text;
	int from_trace;
	int shown_by_log; /* a trace's note the log repeated: its copy skipped */
	size_t others;    /* say(): other processes that said the same */
	size_t count;     /* say(): notes of this text */
};

static void keep(struct relay *rl, uint32_t pid, const char *text, int from_trace)
{
	char *t = NULL;
	if (rl->n == rl->cap && rl->n < RELAY_KEEP) {
		size_t cap = rl->cap ? rl->cap * 2 : 64;
		struct note *v = realloc(rl->v, cap * sizeof(*v));
		if (v) {
			rl->v = v;
			rl->cap = cap;
		}
	}
	if (rl->n == rl->cap || rl->n == RELAY_KEEP || !(t = strdup(text))) {
		rl->unkept++;
		return;
	}
	rl->v[rl->n] = (struct note){ .pid = pid, .order = (uint32_t)rl->n, .text = t, .from_trace = from_trace };
	rl->n++;
}

/* path's header (the header alone, no link followed): 0, or -1. */
static int read_header(const char *path, struct gspy_header *h)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -1;
	int ok = pread(fd, h, sizeof(*h), 0) == (ssize_t)sizeof(*h) && !memcmp(h->magic, GSPY_MAGIC, 8);
	close(fd);
	return ok ? 0 : -1;
}

static void read_trace(struct relay *rl, const char *path)
{
	struct gspy_header h;
	char notes[GSPY_NOTES_SIZE + 1];
	if (read_header(path, &h) != 0 || !gs_header_notes(&h, notes, sizeof(notes)))
		return;
	for (char *s = notes, *nl; (nl = strchr(s, '\n')); s = nl + 1) {
		*nl = 0;
		keep(rl, h.pid, s, 1);
	}
}

/* The traces in the order their processes started. */
struct started {
	uint64_t ns;
	uint32_t pid;
	int k;
};

static int by_start(const void *a, const void *b)
{
	const struct started *x = a, *y = b;
	if (x->ns != y->ns)
		return x->ns < y->ns ? -1 : 1;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

static void read_traces(struct relay *rl, char **paths, int np)
{
	struct started *v = calloc((size_t)np + 1, sizeof(*v));
	for (int k = 0; v && k < np; k++) {
		struct gspy_header h;
		int ok = read_header(paths[k], &h) == 0;
		v[k] = (struct started){ .ns = ok ? h.real_start_ns : UINT64_MAX, .pid = ok ? h.pid : 0, .k = k };
	}
	if (v)
		qsort(v, (size_t)np, sizeof(*v), by_start);
	for (int k = 0; k < np; k++)
		read_trace(rl, paths[v ? v[k].k : k]);
	free(v);
}

static int by_pid_text(const void *a, const void *b)
{
	const struct note *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	int c = strcmp(x->text, y->text);
	return c ? c : (x->order > y->order) - (x->order < y->order);
}

/* In v[0..n) sorted by_pid_text: a note of (pid, text) the log has not
 * yet repeated, or NULL. */
static struct note *unrepeated(struct note *v, size_t n, uint32_t pid, const char *text)
{
	size_t lo = 0, hi = n;
	while (lo < hi) { /* the first not below (pid, text) */
		size_t mid = lo + (hi - lo) / 2;
		int c = v[mid].pid != pid ? (v[mid].pid < pid ? -1 : 1) : strcmp(v[mid].text, text);
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < n && v[lo].pid == pid && !strcmp(v[lo].text, text); lo++)
		if (!v[lo].shown_by_log)
			return &v[lo];
	return NULL;
}

/* The next line of f into buf (cap bytes, its newline dropped): 1, or 0
 * at the end, or -1 for a line too long or holding a NUL (none gpuspy
 * writes), consumed whole. *read counts the bytes; past max, 0. */
static int log_line(FILE *f, char *buf, size_t cap, size_t *read, size_t max)
{
	size_t n = 0;
	int c, bad = 0;
	while (*read <= max && (c = getc(f)) != EOF) {
		++*read;
		if (c == '\n') {
			buf[n] = 0;
			return bad ? -1 : 1;
		}
		if (c == 0 || n + 1 >= cap)
			bad = 1;
		else
			buf[n++] = (char)c;
	}
	return 0; /* the end, or max read: a last line without its newline is not whole */
}

/* The log's lines ("gpuspy[PID]: text") no trace showed, read a bounded
 * line at a time (the log is a file anybody who can write the trace
 * directory could have grown). */
static void read_log(struct relay *rl)
{
	int fd = rl->log ? open(rl->log, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK) : -1;
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
	if (fd >= 0 && !f)
		close(fd);
	size_t traced = rl->n, read = 0;
	if (traced)
		qsort(rl->v, traced, sizeof(*rl->v), by_pid_text);
	char line[GSPY_NOTES_SIZE + 64];
	int got;
	while (f && (got = log_line(f, line, sizeof(line), &read, RELAY_LOG_BYTES)) != 0) {
		char *end;
		unsigned long pid = got < 0 || strncmp(line, "gpuspy[", 7) ? 0 : strtoul(line + 7, &end, 10);
		if (!pid || pid > UINT32_MAX || strncmp(end, "]: ", 3)) {
			rl->unkept += got < 0; /* a line of someone else's */
			continue;
		}
		struct note *v = unrepeated(rl->v, traced, (uint32_t)pid, end + 3);
		if (v)
			v->shown_by_log = 1;
		else
			keep(rl, (uint32_t)pid, end + 3, 0);
	}
	if (read > RELAY_LOG_BYTES)
		rl->unkept++; /* the rest, unread */
	if (f)
		fclose(f);
}

static int by_text_pid(const void *a, const void *b)
{
	const struct note *x = a, *y = b;
	int c = strcmp(x->text, y->text);
	if (c)
		return c;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->order > y->order) - (x->order < y->order);
}

static int by_order(const void *a, const void *b)
{
	const struct note *x = a, *y = b;
	return (x->order > y->order) - (x->order < y->order);
}

/* Each text once, in the order first read: the pid of the note read
 * first, and how many other processes said it too. */
static void say(struct relay *rl)
{
	size_t n = rl->n, texts = 0, more = rl->unkept;
	if (n > 1) /* rl->v is NULL with no note, which qsort must not be given */
		qsort(rl->v, n, sizeof(*rl->v), by_text_pid);
	for (size_t i = 0, j; i < n; i = j) {
		size_t first = i, pids = 1;
		for (j = i + 1; j < n && !strcmp(rl->v[j].text, rl->v[i].text); j++) {
			pids += rl->v[j].pid != rl->v[j - 1].pid;
			if (rl->v[j].order < rl->v[first].order)
				first = j;
		}
		struct note one = rl->v[first];
		for (size_t k = i; k < j; k++)
			if (k != first)
				free(rl->v[k].text);
		one.others = pids - 1;
		one.count = j - i;
		rl->v[texts++] = one;
	}
	if (texts > 1)
		qsort(rl->v, texts, sizeof(*rl->v), by_order);
	for (size_t k = 0; k < texts; k++) {
		struct note *v = &rl->v[k];
		if (k >= RELAY_LINES) {
			more += v->count;
			continue;
		}
		fprintf(stderr, "gpuspy: pid %u", v->pid);
		if (v->others)
			fprintf(stderr, " and %zu other process%s", v->others, v->others == 1 ? "" : "es");
		fputs(": ", stderr);
		gs_term_fputs(v->text, stderr); /* a trace's bytes, or a log's anybody could append to */
		fputc('\n', stderr);
		rl->said++;
	}
	if (more) {
		/* run's log has every message, those of processes with no
		 * trace too: it is kept and named. */
		fprintf(stderr, "gpuspy: %zu more message%s not shown here; ", more, more == 1 ? "" : "s");
		if (rl->log) {
			fputs("all of them are in ", stderr);
			gs_term_fputs(rl->log, stderr);
			fputc('\n', stderr);
			rl->keep_log = 1;
		} else {
			fputs("`gpuspy report` shows each trace's notes\n", stderr);
		}
		rl->said++;
	}
	for (size_t k = 0; k < texts; k++)
		free(rl->v[k].text);
	rl->n = 0;
}

void gs_relay(struct relay *rl, char **paths, int np)
{
	if (rl->traces)
		read_traces(rl, paths, np);
	read_log(rl);
	say(rl);
	if (rl->log && !rl->keep_log)
		unlink(rl->log); /* it was run's */
	free(rl->v);
	rl->v = NULL;
	rl->n = rl->cap = rl->unkept = 0;
}
