/* SPDX-License-Identifier: MIT */
/*
 * gpuspy's own messages. The traced program's stderr is the program's: a
 * line gpuspy added there changed the output of real programs (cuBLAS's
 * "cannot start the control thread" on the H200), so by default nothing
 * goes there. Each message becomes a note in the trace's header
 * (format.h: notes), kept in a small buffer until the file exists, and,
 * when GPUSPY_LOG asks, a line of a log: the program's stderr as it was at
 * start-up ("gpuspy: ..."), or a file every process appends whole lines to
 * ("gpuspy[PID]: ..."). GPUSPY_QUIET=1: no log, the notes still.
 *
 * Async-signal-safe throughout (gs_warn_raw runs in signal handlers): no
 * allocation, no stdio, no lock; space for a note is claimed with a
 * compare-and-swap, so threads and a handler on top of one of them each
 * get their own bytes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gs.h"
#include "module.h"

enum { LOG_NONE, LOG_STDERR, LOG_FILE };

/* The log's descriptor: a copy of the stderr the process started with, or
 * the GPUSPY_LOG file, at 100 or above (the numbers a program's next open()
 * returns stay free). Checked by device and inode before each write: the
 * program may close it and get its number back for a file of its own. The
 * file is opened at the first message (file: FILE_*), never before: a
 * process with nothing to say (most of those a preloaded shell or make
 * starts) makes no file, where its directory is the program's to list. */
enum { FILE_PENDING, FILE_PUBLISHING, FILE_READY, FILE_FAILED };
static struct {
	int mode;
	int fd;
	dev_t dev;
	ino_t ino;
	int file;            /* LOG_FILE: FILE_*, atomic */
	char path[PATH_MAX]; /* LOG_FILE: GPUSPY_LOG, made absolute at start-up */
} lg = { .fd = -1 };

/* early.used: the bytes of buf claimed, the lines that did not fit, and
 * whether the trace took them, in one word, so that the trace's taking
 * them sees every line counted lost before it (a count of its own could
 * be raised just after the trace read it). */
#define EARLY_BYTES 0xffffu
#define EARLY_LOST_ONE 0x10000u
#define EARLY_LOST_MAX 0x7fffu
#define EARLY_CLOSED 0x80000000u /* copied into the trace, take no more */

/* The notes: the trace's header once it is made (and the process that made
 * it: a child forked without handlers must not write into its parent's),
 * and until then the early buffer. */
static struct {
	struct gspy_header *h;
	pid_t pid;
	uint32_t used; /* EARLY_* */
	char buf[GSPY_NOTES_SIZE];
} early;

/* fd moved to 100 or above, and what it is; the descriptor, or -1 (fd
 * closed unless it is 2). Async-signal-safe. */
static int keep_fd(int fd, struct stat *st)
{
	int high = fcntl(fd, F_DUPFD_CLOEXEC, 100);
	if (high >= 0) {
		if (fd != 2)
			close(fd);
		fd = high;
	}
	if (fstat(fd, st) != 0) {
		if (fd != 2)
			close(fd);
		return -1;
	}
	return fd;
}

static void publish(int fd, const struct stat *st)
{
	lg.dev = st->st_dev;
	lg.ino = st->st_ino;
	lg.fd = fd;
}

/* GPUSPY_LOG, read once by gs_init (after the options are parsed, before
 * any warning about them). A file's path is taken relative to the
 * directory the process started in (the file itself is made at the first
 * message), and never in a set-user-ID program (its path is the invoking
 * user's to choose, its permissions would be the program's). Quiet: no
 * log at all. */
void gs_log_setup(void)
{
	const char *v = gs_opt[GS_OPT_LOG].s;
	struct stat st;
	if (!v || !*v || gs_cfg.quiet)
		return;
	if (!strcmp(v, "stderr")) {
		int fd = keep_fd(2, &st);
		if (fd >= 0) {
			publish(fd, &st);
			lg.mode = LOG_STDERR;
		}
		return;
	}
	if (getauxval(AT_SECURE))
		return;
	size_t n = 0;
	if (*v != '/') {
		if (!getcwd(lg.path, sizeof(lg.path)))
			return;
		n = strlen(lg.path);
		lg.path[n++] = '/';
	}
	if (strlen(v) >= sizeof(lg.path) - n)
		return;
	strcpy(lg.path + n, v);
	lg.mode = LOG_FILE;
}

/*
 * The log file's descriptor for one line: the one opened first, or, while
 * another thread (or the code a signal handler interrupted) is still
 * publishing it, one of the caller's own, which it closes after its line
 * (*own = 1); -1 when there is no log. O_NOFOLLOW: a symbolic link planted
 * under the name is refused, and so is anything but a regular file of this
 * user's; the log is then off, never sent to stderr instead. O_NONBLOCK: a
 * FIFO planted there does not block the open. Async-signal-safe.
 */
static int log_file(int *own)
{
	struct stat st;
	int s = __atomic_load_n(&lg.file, __ATOMIC_ACQUIRE);
	*own = 0;
	if (s == FILE_READY)
		return lg.fd;
	if (s == FILE_FAILED)
		return -1;
	int fd = open(lg.path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0600);
	if (fd >= 0)
		fd = keep_fd(fd, &st);
	/* A file someone else made under the name (another user's, a device,
	 * a FIFO) is not written to: only a regular file of this user's. */
	if (fd >= 0 && (!S_ISREG(st.st_mode) || st.st_uid != geteuid())) {
		close(fd);
		fd = -1;
	}
	if (s == FILE_PENDING &&
	    __atomic_compare_exchange_n(&lg.file, &s, FILE_PUBLISHING, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		if (fd >= 0)
			publish(fd, &st);
		/* The descriptor and what it is, before anyone reads them. */
		__atomic_store_n(&lg.file, fd >= 0 ? FILE_READY : FILE_FAILED, __ATOMIC_RELEASE);
		return fd;
	}
	if (s == FILE_READY) { /* published meanwhile: that one */
		if (fd >= 0)
			close(fd);
		return lg.fd;
	}
	*own = fd >= 0;
	return fd;
}

static void log_line(const char *msg, size_t n)
{
	char buf[GSPY_NOTES_SIZE + 48];
	struct stat st;
	size_t k = 0;
	int own = 0, fd = lg.mode == LOG_FILE ? log_file(&own) : lg.fd;
	if (gs_cfg.quiet || lg.mode == LOG_NONE || fd < 0 ||
	    (!own && (fstat(fd, &st) != 0 || st.st_dev != lg.dev || st.st_ino != lg.ino)))
		return;
	if (lg.mode == LOG_STDERR) {
		memcpy(buf, "gpuspy: ", 8);
		k = 8;
	} else {
		char digits[16];
		int nd = 0;
		for (unsigned p = (unsigned)getpid(); nd == 0 || p; p /= 10)
			digits[nd++] = (char)('0' + p % 10);
		memcpy(buf, "gpuspy[", 7);
		k = 7;
		while (nd > 0)
			buf[k++] = digits[--nd];
		memcpy(buf + k, "]: ", 3);
		k += 3;
	}
	if (n > sizeof(buf) - k - 1)
		n = sizeof(buf) - k - 1;
	memcpy(buf + k, msg, n);
	k += n;
	buf[k++] = '\n';
	/* One write: lines of several processes appended to one file stay whole. */
	ssize_t w = write(fd, buf, k);
	(void)w;
	if (own)
		close(fd);
}

/* n bytes of an area of cap bytes whose count of bytes claimed is *used:
 * the offset where they go, or -1 when they do not fit or the area is
 * closed. The count may come from a file anybody who owns it could write:
 * one past the area claims nothing. */
static int64_t claim(uint32_t *used, uint32_t cap, uint32_t n)
{
	uint32_t u = __atomic_load_n(used, __ATOMIC_RELAXED);
	do {
		if (u > cap || n > cap - u)
			return -1;
	} while (!__atomic_compare_exchange_n(used, &u, u + n, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	return u;
}

/* n bytes of the early buffer: their offset; EARLY_FULL, the line counted
 * lost; or EARLY_TAKEN, the trace took the buffer (its header is there). */
enum { EARLY_FULL = -1, EARLY_TAKEN = -2 };
static int64_t early_claim(uint32_t n)
{
	uint32_t u = __atomic_load_n(&early.used, __ATOMIC_ACQUIRE), to;
	int64_t off;
	do {
		if (u & EARLY_CLOSED)
			return EARLY_TAKEN;
		uint32_t bytes = u & EARLY_BYTES;
		if (n <= GSPY_NOTES_SIZE - bytes) {
			to = u + n;
			off = bytes;
		} else {
			to = ((u >> 16) & EARLY_LOST_MAX) < EARLY_LOST_MAX ? u + EARLY_LOST_ONE : u;
			off = EARLY_FULL;
		}
	} while (!__atomic_compare_exchange_n(&early.used, &u, to, 1, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
	return off;
}

/* msg (n bytes, no newline) as a line of the trace's notes, or of the early
 * buffer while there is no trace. The early buffer closed under us (the
 * file was just made): the header takes it. */
static void note_line(const char *msg, size_t n)
{
	char line[GSPY_NOTES_SIZE];
	if (n > sizeof(line) - 1)
		n = sizeof(line) - 1;
	memcpy(line, msg, n);
	line[n++] = '\n';
	for (int tries = 0; tries < 2; tries++) {
		struct gspy_header *h = __atomic_load_n(&early.h, __ATOMIC_ACQUIRE);
		if (h) {
			if (early.pid != getpid())
				return; /* the parent's file: this child makes its own */
			int64_t off = claim(&h->notes_used, GSPY_NOTES_SIZE, (uint32_t)n);
			if (off >= 0)
				memcpy(h->notes + off, line, n);
			else
				__atomic_fetch_add(&h->notes_lost, 1, __ATOMIC_RELAXED);
			return;
		}
		int64_t off = early_claim((uint32_t)n);
		if (off >= 0)
			memcpy(early.buf + off, line, n);
		if (off != EARLY_TAKEN)
			return;
	}
}

/* A message: a newline in it (a path may hold one) would make two notes
 * and two log lines, so it becomes a space. errno is the program's. */
static void message(char *msg, size_t n)
{
	int e = errno;
	for (size_t i = 0; i < n; i++)
		if (msg[i] == '\n')
			msg[i] = ' ';
	note_line(msg, n);
	log_line(msg, n);
	errno = e;
}

void gs_warn(const char *fmt, ...)
{
	char buf[512];
	int e = errno;
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	errno = e;
	if (k > 0)
		message(buf, (size_t)k < sizeof(buf) ? (size_t)k : sizeof(buf) - 1);
}

void gs_warn_raw(const char *a, const char *b, const char *c)
{
	char buf[GSPY_NOTES_SIZE - 1];
	const char *part[] = { a, b, c };
	size_t n = 0;
	for (size_t i = 0; i < 3; i++)
		for (const char *s = part[i]; s && *s && n < sizeof(buf); s++)
			buf[n++] = *s;
	message(buf, n);
}

/* The file is made (before readers accept it): notes go to its header from
 * now on, after what the early buffer holds. A note claimed in the early
 * buffer but not yet written when it closes reads as zeros there, which
 * readers skip. */
static void log_opened(struct gspy_header *h)
{
	early.pid = getpid();
	__atomic_store_n(&early.h, h, __ATOMIC_RELEASE);
	uint32_t u = __atomic_fetch_or(&early.used, EARLY_CLOSED, __ATOMIC_ACQ_REL);
	uint32_t n = u & EARLY_BYTES, lost = (u >> 16) & EARLY_LOST_MAX;
	int64_t off = claim(&h->notes_used, GSPY_NOTES_SIZE, n);
	if (off >= 0)
		memcpy(h->notes + off, early.buf, n);
	else /* the area was filled by the file's owner: the early lines are lost */
		for (uint32_t i = 0; i < n; i++)
			lost += early.buf[i] == '\n';
	if (lost)
		__atomic_fetch_add(&h->notes_lost, lost, __ATOMIC_RELAXED);
}

/* In a fork child: its own file comes with its first event. Notes made
 * before the parent had a file are the child's too (the same options, the
 * same libraries) and stay for it; once the parent's file took them, the
 * child starts with none. */
static void log_forked(void)
{
	/* The thread that was publishing the log's descriptor is not here. */
	int publishing = FILE_PUBLISHING;
	__atomic_compare_exchange_n(&lg.file, &publishing, FILE_PENDING, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	if (__atomic_load_n(&early.h, __ATOMIC_RELAXED)) {
		__atomic_store_n(&early.h, NULL, __ATOMIC_RELAXED);
		early.used = 0;
	}
}

GS_MODULE(log, 5, .opened = log_opened, .forked = log_forked);
