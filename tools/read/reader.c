/* SPDX-License-Identifier: MIT */
/*
 * .gspy reader. A file may belong to a live process, a finished one or one
 * that was killed: only committed records are trusted, every offset and
 * count is checked against the file size, and a file cut short yields the
 * complete records it still holds.
 */
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "read/reader.h"
#include "util/escape.h"

static const char *const kind_names[] = {
#define GSPY_X(n) #n,
	GSPY_KIND_LIST(GSPY_X)
#undef GSPY_X
};
static const char *const mem_names[] = {
#define GSPY_X(n) #n,
	GSPY_MEM_LIST(GSPY_X)
#undef GSPY_X
};
static const char *const dir_names[] = {
#define GSPY_X(n) #n,
	GSPY_DIR_LIST(GSPY_X)
#undef GSPY_X
};
static const char *const api_names[] = {
#define GSPY_X(sym, k, v) #sym,
	GSPY_API_LIST(GSPY_X)
#undef GSPY_X
};

const char *gs_kind_name(unsigned k) { return k < GSPY_KIND_COUNT ? kind_names[k] : "?"; }
const char *gs_mem_name(unsigned m) { return m < GSPY_MEM_COUNT ? mem_names[m] : "?"; }
const char *gs_dir_name(unsigned d) { return d < GSPY_DIR_COUNT ? dir_names[d] : "?"; }
const char *gs_api_name(unsigned a) { return a < GSPY_API_COUNT ? api_names[a] : "?"; }

int gs_api_is_ptds(unsigned a)
{
	const char *n = gs_api_name(a);
	size_t l = strlen(n);
	return l > 5 && (!strcmp(n + l - 5, "_ptds") || !strcmp(n + l - 5, "_ptsz"));
}

static const char *const timing_names[] = {
#define GSPY_X(n) #n,
	GSPY_GPU_TIMING_LIST(GSPY_X)
#undef GSPY_X
};

const char *gs_gpu_timing_name(unsigned t)
{
	return t < GSPY_GPU_TIMING_COUNT ? timing_names[t] : "?";
}

const char *gs_state_name(unsigned s)
{
	switch (s) {
	case GSPY_STATE_RUNNING: return "running or killed";
	case GSPY_STATE_EXITED: return "exited";
	case GSPY_STATE_SIGNALED: return "signaled";
	}
	return "?";
}

static int fail(char *err, size_t n, int code, const char *fmt, const char *a)
{
	snprintf(err, n, fmt, a);
	return code;
}

static const struct gspy_chunk *chunk_at(const struct gs_trace *t, uint32_t i)
{
	return (const struct gspy_chunk *)(t->map + t->h->chunk_offset + (size_t)i * t->h->chunk_size);
}

static const uint8_t *chunk_body(const struct gs_trace *t, uint32_t i)
{
	return t->map + t->h->chunk_offset + (size_t)i * t->h->chunk_size + GSPY_CHUNK_HEADER_SIZE;
}

/* Committed bytes of chunk i that lie inside the file, and its committed
 * record count (each record takes 2 bytes at least); 1 when the committed
 * bytes do not all lie inside the file or the chunk. */
static int chunk_bytes(const struct gs_trace *t, uint32_t i, uint64_t *bytes, uint64_t *records)
{
	uint64_t c = __atomic_load_n(&chunk_at(t, i)->committed, __ATOMIC_ACQUIRE);
	uint64_t n = c & 0xffffffffu, cap = t->h->chunk_size - GSPY_CHUNK_HEADER_SIZE;
	if (n > cap)
		n = cap;
	size_t start = t->h->chunk_offset + (size_t)i * t->h->chunk_size + GSPY_CHUNK_HEADER_SIZE;
	size_t avail = t->size > start ? t->size - start : 0;
	if (n > avail)
		n = avail;
	*bytes = n;
	*records = c >> 32 < n / 2 ? c >> 32 : n / 2;
	return n != (c & 0xffffffffu);
}

/* Complete records of chunk i, and its bytes: the count, or, when the file
 * ends inside the chunk, the records that decode before the end. */
static uint64_t chunk_records(const struct gs_trace *t, uint32_t i, uint64_t *bytes)
{
	uint64_t records;
	if (!chunk_bytes(t, i, bytes, &records))
		return records;
	const uint8_t *b = chunk_body(t, i);
	struct gspy_record r;
	memset(&r, 0, sizeof(r));
	uint64_t n = 0, off = 0, own = 0;
	for (size_t k; n < records && (k = gspy_unpack(b + off, b + *bytes, &r, &own)) != 0; off += k)
		n++;
	return n;
}

uint32_t gs_next_data_chunk(int fd, uint64_t chunk_offset, uint32_t chunk_size, uint32_t i, uint32_t n)
{
	uint64_t at = chunk_offset + (uint64_t)i * chunk_size + GSPY_CHUNK_HEADER_SIZE;
	off_t d = lseek(fd, (off_t)at, SEEK_DATA);
	if (d < 0)
		return errno == ENXIO ? n : i + 1; /* ENXIO: no data past there */
	uint64_t rel = (uint64_t)d - chunk_offset, k = rel / chunk_size;
	if (rel % chunk_size >= GSPY_CHUNK_HEADER_SIZE)
		k++; /* the data begins in chunk k's records: its header is a hole */
	if (k <= i)
		return i + 1;
	return k < n ? (uint32_t)k : n;
}

/* Orders (tid, seq, chunk, ...) tuples. */
static int cmp_tuple(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	for (int i = 0; i < 3; i++)
		if (x[i] != y[i])
			return x[i] < y[i] ? -1 : 1;
	return 0;
}

void gs_trace_clock(struct gs_trace *t)
{
	const struct gspy_header *h = t->h;
	t->raw0 = h->clock_start.raw;
	t->mono0 = h->clock_start.mono;
	t->ns_per_raw = 1.0;
	if (h->clock != GSPY_CLOCK_TSC)
		return;
	int sane = h->tsc_hz > 1e6 && h->tsc_hz < 1e11;
	t->ns_per_raw = sane ? 1e9 / h->tsc_hz : 1.0;
	/* A later pair spanning at least 100 ms beats the start calibration,
	 * if its rate is a clock's: within 10% of the start's (2 ms between
	 * pairs each taken within 2 us: off by 0.1% at most, unless the
	 * thread was preempted throughout) and from 1 MHz to 100 GHz. A forged
	 * pair (a tick of 5e14 ns) would put the events centuries apart; the
	 * start's rate, or 1 ns a tick, is kept instead, by report and top
	 * alike. */
	uint64_t seq = h->clock_seq;
	struct gspy_clock_pair last = h->clock_last;
	if (!(seq & 1) && last.mono > t->mono0 + 100000000ull && last.raw > t->raw0) {
		double ns = (double)(last.mono - t->mono0) / (double)(last.raw - t->raw0), hz = 1e9 / ns;
		if (hz > 1e6 && hz < 1e11 && (!sane || (hz > 0.9 * h->tsc_hz && hz < 1.1 * h->tsc_hz)))
			t->ns_per_raw = ns;
	}
}

uint64_t gs_trace_ns(const struct gs_trace *t, uint64_t raw)
{
	if (t->h->clock != GSPY_CLOCK_TSC)
		return raw;
	double d = ((double)(int64_t)(raw - t->raw0)) * t->ns_per_raw + (double)t->mono0;
	if (!(d > 0))
		return 0;
	return d < 1.8e19 ? (uint64_t)d : UINT64_MAX;
}

uint64_t gs_trace_own_ns(const struct gs_trace *t, const struct gspy_record *r, uint64_t own)
{
	if (!own || r->end + own < r->end)
		return 0; /* none, or a forged time past 2^64 */
	uint64_t a = gs_trace_ns(t, r->end), b = gs_trace_ns(t, r->end + own);
	return b > a ? b - a : 1; /* timed, if under a ns: not "untimed" */
}

/* Gives back the pages of [off, off + len) of the mapping, clamped to it:
 * MADV_DONTNEED past its end would discard whatever is mapped after it. */
static void drop_pages(struct gs_trace *t, uint64_t off, uint64_t len)
{
	uint64_t from = off & ~(uint64_t)4095;
	if (from >= t->size)
		return;
	uint64_t end = off + len;
	if (end > t->size)
		end = t->size;
	madvise((void *)(t->map + from), (size_t)(end - from), MADV_DONTNEED);
}

/*
 * A trace cut while it is read (its writer's process trimmed it, or a user
 * truncated it) turns a load past the new end into SIGBUS: the reader says
 * so in one line and exits 1 instead of dying. The mappings are listed
 * here for the handler, each with its file's name as the terminal gets it
 * (escaped when listed: the handler can only write(2) bytes, and the name
 * is anyone's to choose).
 */
#define MAPS_MAX 64
static struct {
	const unsigned char *map;
	size_t size;
	char *shown; /* the path escaped on one line (gs_term_line); NULL: no memory for it */
} maps[MAPS_MAX];

/* gs_trace_open_fd_live's: a cut file fails the open of a follower (top,
 * serve), which goes on, instead of ending the command. */
static __thread sigjmp_buf *bus_jump;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	const char *path = NULL;
	for (int i = 0; i < MAPS_MAX; i++) {
		const unsigned char *m = __atomic_load_n(&maps[i].map, __ATOMIC_ACQUIRE);
		if (m && (const unsigned char *)si->si_addr - m < (ptrdiff_t)maps[i].size && (const unsigned char *)si->si_addr >= m)
			path = maps[i].shown ? maps[i].shown : "a trace";
	}
	if (path && bus_jump)
		siglongjmp(*bus_jump, 1);
	if (path) {
		static const char a[] = "gpuspy: error: ", b[] = ": the file was cut while it was being read; read it again\n";
		ssize_t w = write(2, a, sizeof(a) - 1);
		w = write(2, path, strlen(path));
		w = write(2, b, sizeof(b) - 1);
		(void)w;
		_exit(1);
	}
	signal(sig, SIG_DFL); /* not ours: the fault comes back and kills */
}

static void map_note(struct gs_trace *t, int add)
{
	/* Traces are opened on several threads (gpuspy report): one at a
	 * time here; the handler only reads, atomically. */
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static int armed;
	pthread_mutex_lock(&lock);
	if (!armed) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_sigbus;
		sa.sa_flags = SA_SIGINFO;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGBUS, &sa, NULL);
		armed = 1;
	}
	for (int i = 0; i < MAPS_MAX; i++) {
		if (add && !maps[i].map) {
			size_t cap = 4 * strlen(t->path) + 1; /* an escape is 4 bytes a byte at most */
			maps[i].size = t->size;
			if ((maps[i].shown = malloc(cap)))
				gs_term_line(maps[i].shown, cap, t->path, SIZE_MAX);
			__atomic_store_n(&maps[i].map, t->map, __ATOMIC_RELEASE);
			break;
		}
		if (!add && maps[i].map == t->map) {
			__atomic_store_n(&maps[i].map, NULL, __ATOMIC_RELEASE);
			free(maps[i].shown);
			maps[i].shown = NULL;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
}

int gs_trace_open(const char *path, struct gs_trace *t, char *err, size_t errlen)
{
	/* O_NONBLOCK: a FIFO named *.gspy must not block the open. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		memset(t, 0, sizeof(*t));
		t->path = path;
		return fail(err, errlen, -errno, "cannot open: %s", strerror(errno));
	}
	int rc = gs_trace_open_fd(fd, path, t, err, errlen);
	close(fd);
	return rc;
}

int gs_header_sane(const struct gspy_header *h)
{
	/* Sizes are bounded first so that no sum below can wrap. */
	const uint64_t lim = 1ull << 48;
	if (h->file_size > lim || h->strtab_offset > lim || h->strtab_size > lim ||
	    h->chunk_offset > lim || h->chunk_count > (1u << 26))
		return 0;
	if (h->version < 2 || h->version > GSPY_FORMAT_VERSION || h->header_size != GSPY_HEADER_SIZE ||
	    h->record_size != GSPY_RECORD_SIZE || h->chunk_size <= GSPY_CHUNK_HEADER_SIZE ||
	    h->chunk_size % GSPY_RECORD_SIZE != 0)
		return 0;
	uint64_t chunks_end = h->chunk_offset + (uint64_t)h->chunk_count * h->chunk_size;
	if (h->version == 2) /* [header][string table][chunks] */
		return h->strtab_offset >= GSPY_HEADER_SIZE && h->chunk_offset >= h->strtab_offset + h->strtab_size &&
		       h->file_size == chunks_end;
	/* 3: [header][chunks][string table], the table last so that the trim
	 * at exit can move it down to the chunks in use. The trim writes the
	 * table's size, then its offset, then the file's size: a process
	 * killed between two of those stores leaves a table that ends before
	 * the file does, which is read as it is. */
	return h->chunk_offset >= GSPY_HEADER_SIZE && h->strtab_offset >= chunks_end &&
	       h->strtab_offset + h->strtab_size <= h->file_size;
}

/* A live trace's string table is read through a copy (struct gs_tab): its
 * process may yet move the table and cut the old place, under names
 * already handed out. Without memory for it, the mapping is read. */
static void tab_copy(struct gs_trace *t)
{
	uint64_t cap = t->h->strtab_size < t->size ? t->h->strtab_size : t->size;
	if (cap > GS_TABLE_MAX)
		cap = GS_TABLE_MAX;
	struct gs_tab *c = calloc(1, sizeof(*c));
	void *m = cap ? mmap(NULL, (size_t)cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
		      : MAP_FAILED;
	if (!c || m == MAP_FAILED) {
		free(c);
		return;
	}
	c->bytes = m;
	c->cap = cap;
	c->live = 1;
	t->tab = c;
}

/* (tid, seq, chunk, records, dropped) of every initialised chunk of t
 * (open on fd), in *owner (to free), *n of them; -1 out of memory. Grown
 * as they are found, not sized by the chunks the file could hold (2^26 of
 * a sparse file that holds none: 2.7 GB). */
static int owners(struct gs_trace *t, int fd, uint64_t (**owner_out)[5], uint32_t *n_out)
{
	const struct gspy_header *h = t->h;
	uint32_t claimed = h->chunks_claimed < h->chunk_count ? h->chunks_claimed : h->chunk_count;
	/* Chunks past the end of a cut file are not read: bound the work by
	 * the file, not by what its header claims. */
	uint64_t present = t->size > h->chunk_offset ? (t->size - h->chunk_offset) / h->chunk_size + 1 : 0;
	if (claimed > present)
		claimed = (uint32_t)present;
	uint64_t (*owner)[5] = NULL;
	size_t cap = 0;
	uint32_t n = 0, kept = 0, zeros = 0; /* kept: chunks from there on may be resident */
	for (uint32_t i = 0; i < claimed; i++) {
		/* Touching a chunk's header maps the whole chunk (fault-around):
		 * drop the scanned ones every 64 chunks so that this scan does not
		 * make the whole file resident. */
		if (i - kept >= 64) {
			drop_pages(t, h->chunk_offset + (uint64_t)kept * h->chunk_size, (uint64_t)(i - kept) * h->chunk_size);
			kept = i;
		}
		if (h->chunk_offset + (uint64_t)i * h->chunk_size + GSPY_CHUNK_HEADER_SIZE > t->size)
			break; /* cut off from here on */
		const struct gspy_chunk *c = chunk_at(t, i);
		uint32_t tid = __atomic_load_n(&c->tid, __ATOMIC_ACQUIRE);
		if (!tid) {
			/* Holes hold no chunk: a file of terabytes that holds
			 * nothing (a sparse one) is not read page by page. Past
			 * 64 chunks of no thread in a row: a writer's claimed
			 * chunks all have one but while being handed out. */
			uint32_t next = ++zeros < GS_ZERO_RUN ? i + 1
							   : gs_next_data_chunk(fd, h->chunk_offset, h->chunk_size, i, claimed);
			if (next > i + 1) {
				zeros = 0;
				drop_pages(t, h->chunk_offset + (uint64_t)kept * h->chunk_size,
					   (uint64_t)(i + 1 - kept) * h->chunk_size);
				kept = next;
				i = next - 1;
			}
			continue;
		}
		zeros = 0;
		if (n == cap) {
			void *more = realloc(owner, (cap = cap ? 2 * cap : 64) * sizeof(*owner));
			if (!more) {
				free(owner);
				return -1;
			}
			owner = more;
		}
		owner[n][0] = tid;
		owner[n][1] = c->seq;
		owner[n][2] = i;
		uint64_t bytes;
		owner[n][3] = chunk_records(t, i, &bytes);
		t->packed_bytes += bytes;
		owner[n][4] = c->dropped;
		n++;
	}
	*owner_out = owner;
	*n_out = n;
	return 0;
}

/* Long (about 95 lines): every check of the header, in the order its fields
 * are laid out, each with its own one-line error; a hostile file must fail
 * the first check it breaks. */
int gs_trace_open_fd(int fd, const char *path, struct gs_trace *t, char *err, size_t errlen)
{
	memset(t, 0, sizeof(*t));
	t->path = path;
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		return fail(err, errlen, -EINVAL, "%s", "not a regular file");
	if ((size_t)st.st_size < sizeof(struct gspy_header)) {
		return fail(err, errlen, -EINVAL, "%s",
			    st.st_size ? "too short to be a gpuspy trace (truncated header)"
				       : "empty file, not a gpuspy trace");
	}
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return fail(err, errlen, -errno, "cannot map: %s", strerror(errno));
	t->map = m;
	t->size = (size_t)st.st_size;
	t->h = m;
	map_note(t, 1);
	const struct gspy_header *h = t->h;
	int rc;
	if (memcmp(h->magic, GSPY_MAGIC, 8) != 0) {
		/* gpuspy sizes the file (zeros) and writes the magic last: a
		 * process that ended in between leaves it all zero. */
		static const char zero[8];
		rc = fail(err, errlen, -EINVAL, "%s",
			  memcmp(h->magic, zero, 8) == 0
				  ? "no header: its process ended (or is still starting) before gpuspy "
				    "finished creating the file; nothing was recorded in it"
				  : "not a gpuspy trace (bad magic)");
		goto bad;
	}
	if (h->version > GSPY_FORMAT_VERSION) {
		char v[64];
		snprintf(v, sizeof(v), "%u", h->version);
		rc = fail(err, errlen, -ENOTSUP,
			  "trace format version %s is newer than this gpuspy reads (2 and 3); upgrade gpuspy", v);
		goto bad;
	}
	if (h->version < 2) {
		char v[64];
		snprintf(v, sizeof(v), "%u", h->version);
		rc = fail(err, errlen, -ENOTSUP,
			  "trace format version %s is older than this gpuspy reads (2 and 3); read it with gpuspy 0.1", v);
		goto bad;
	}
	if (!gs_header_sane(h)) {
		rc = fail(err, errlen, -EINVAL, "%s", "corrupt header (inconsistent sizes)");
		goto bad;
	}
	t->truncated = t->size < h->file_size;
	if (h->version >= 3 && !h->ring && h->state == GSPY_STATE_RUNNING)
		tab_copy(t);
	gs_trace_clock(t);
	t->dropped = h->dropped_nochunk;
	/* Threads: group initialised chunks by tid, ordered by seq. */
	uint64_t (*owner)[5];
	uint32_t n;
	if (owners(t, fd, &owner, &n)) {
		rc = fail(err, errlen, -ENOMEM, "%s", "out of memory");
		goto bad;
	}
	if (n)
		qsort(owner, n, sizeof(*owner), cmp_tuple);
	t->threads = calloc((size_t)n + 1, sizeof(*t->threads));
	uint32_t *idx = t->chunk_idx = calloc((size_t)n + 1, sizeof(uint32_t));
	if (!t->threads || !idx) {
		free(owner);
		rc = fail(err, errlen, -ENOMEM, "%s", "out of memory");
		goto bad;
	}
	for (uint32_t i = 0; i < n; i++) {
		idx[i] = (uint32_t)owner[i][2];
		struct gs_thread *th = t->nthreads ? &t->threads[t->nthreads - 1] : NULL;
		if (!th || th->tid != owner[i][0]) {
			th = &t->threads[t->nthreads++];
			th->tid = (uint32_t)owner[i][0];
			th->chunks = &idx[i];
		}
		th->nchunks++;
		th->events += owner[i][3];
		th->dropped += owner[i][4];
	}
	free(owner);
	for (uint32_t i = 0; i < t->nthreads; i++) {
		t->events += t->threads[i].events;
		t->dropped += t->threads[i].dropped;
	}
	/* Each chunk handed on holds one owner record, which is no event. */
	t->events -= h->chunks_reused < t->events ? h->chunks_reused : t->events;
	t->dropped += h->dropped_after_exit;
	return 0;
bad:
	gs_trace_close(t);
	return rc;
}

static void cursor_reset(struct gs_thread *th)
{
	th->bound = 0;
	th->ri = 0;
	th->off = 0;
	th->have = 0;
	th->cur_tid = 0;
	memset(&th->rec, 0, sizeof(th->rec)); /* each chunk is packed from zero */
	th->own = 0;
}

void gs_trace_rewind(struct gs_trace *t)
{
	for (uint32_t i = 0; i < t->nthreads; i++) {
		t->threads[i].ci = 0;
		cursor_reset(&t->threads[i]);
	}
}

/* The thread's next record, decoded (not consumed). A chunk ends at its
 * committed bytes, its record count or the first malformed byte. */
static const struct gspy_record *peek(struct gs_trace *t, struct gs_thread *th)
{
	while (th->ci < th->nchunks) {
		if (th->have)
			return &th->rec;
		uint32_t c = th->chunks[th->ci];
		if (!th->bound) { /* once per chunk */
			chunk_bytes(t, c, &th->bytes, &th->records);
			th->bound = 1;
		}
		if (th->ri < th->records && th->off < th->bytes) {
			const uint8_t *b = chunk_body(t, c);
			size_t k = gspy_unpack(b + th->off, b + th->bytes, &th->rec, &th->own);
			if (k) {
				th->off += k;
				th->ri++;
				if (th->rec.kind == GSPY_KIND_owner) { /* not an event */
					th->cur_tid = (uint32_t)th->rec.u.mem.bytes;
					continue;
				}
				th->have = 1;
				return &th->rec;
			}
		}
		/* Done with this chunk: drop its pages from our mapping so that
		 * resident memory stays flat however long the trace (they stay in
		 * the page cache and fault back in on a rewind). */
		drop_pages(t, t->h->chunk_offset + (uint64_t)c * t->h->chunk_size, t->h->chunk_size);
		th->ci++;
		cursor_reset(th);
	}
	return NULL;
}

int gs_trace_next(struct gs_trace *t, struct gs_event *ev)
{
	struct gs_thread *best = NULL;
	const struct gspy_record *br = NULL;
	for (uint32_t i = 0; i < t->nthreads; i++) {
		const struct gspy_record *r = peek(t, &t->threads[i]);
		if (r && (!br || r->start < br->start)) {
			br = r;
			best = &t->threads[i];
		}
	}
	if (!br)
		return 0;
	best->have = 0; /* consumed: the next peek decodes after it */
	ev->rec = br;
	ev->tid = best->cur_tid ? best->cur_tid : best->tid;
	ev->start_ns = gs_trace_ns(t, br->start);
	ev->end_ns = gs_trace_ns(t, br->end);
	ev->own_ns = gs_trace_own_ns(t, br, best->own);
	ev->corr = 0;
	if (br->kind >= GSPY_KIND_gpu_kernel && br->kind <= GSPY_KIND_gpu_memset)
		ev->corr = br->u.gpu.cupti_corr;
	else if (br->flags & GSPY_FLAG_CORR)
		ev->corr = br->kind == GSPY_KIND_launch ? br->u.launch.cupti_corr : br->u.mem.aux;
	return 1;
}

/* The string table's bytes as t sees them, and how many are committed.
 * A file's writer moves its table down to the chunks in use when it exits
 * (format 3): the header is read live, its used count first (acquire:
 * an entry counted after the move is at the new place, which the header
 * names before any such entry is counted), and both bounded by the
 * mapping, not trusted. */
static const unsigned char *strtab_of(const struct gs_trace *t, uint64_t *used)
{
	uint64_t u = __atomic_load_n(&t->h->strtab_used, __ATOMIC_ACQUIRE);
	struct gs_tab *c = t->tab;
	if (c && (!c->live || u <= c->have)) {
		*used = u < c->have ? u : c->have;
		return c->bytes;
	}
	uint64_t off = __atomic_load_n(&t->h->strtab_offset, __ATOMIC_ACQUIRE);
	uint64_t size = __atomic_load_n(&t->h->strtab_size, __ATOMIC_RELAXED);
	if (off > t->size)
		off = t->size;
	if (u > size)
		u = size;
	if (u > t->size - off)
		u = t->size - off;
	if (u > GS_TABLE_MAX)
		u = GS_TABLE_MAX;
	if (!c) {
		*used = u;
		return t->map + off;
	}
	if (u > c->cap)
		u = c->cap;
	if (u > c->have) { /* the entries committed since: the bytes below used */
		memcpy(c->bytes + c->have, t->map + off + c->have, (size_t)(u - c->have));
		c->have = u;
	}
	*used = c->have;
	return c->bytes;
}

int gs_trace_entry(const struct gs_trace *t, uint32_t id, const unsigned char **data, uint32_t *len)
{
	if (!id)
		return 0;
	uint64_t used;
	const unsigned char *tab = strtab_of(t, &used);
	uint64_t off = (uint64_t)id - 1;
	if (off + 4 > used)
		return 0;
	const unsigned char *p = tab + off;
	uint32_t l;
	memcpy(&l, p, 4);
	if (off + 4 + (uint64_t)l + 1 > used || p[4 + l] != 0)
		return 0;
	*data = p + 4;
	*len = l;
	return 1;
}

uint32_t gs_trace_next_entry(const struct gs_trace *t, uint32_t id)
{
	const unsigned char *d;
	uint32_t len;
	if (!id)
		return gs_trace_entry(t, 1, &d, &len) ? 1 : 0;
	if (!gs_trace_entry(t, id, &d, &len))
		return 0;
	uint64_t next = (uint64_t)id + ((4 + (uint64_t)len + 1 + 3) & ~3ull);
	if (next > UINT32_MAX || !gs_trace_entry(t, (uint32_t)next, &d, &len))
		return 0;
	return (uint32_t)next;
}

const char *gs_trace_string(const struct gs_trace *t, uint32_t id)
{
	const unsigned char *d;
	uint32_t len;
	/* Binary entries (stacks, modules) are not names. */
	if (!gs_trace_entry(t, id, &d, &len) || (len && (d[0] == GSPY_ENTRY_STACK || d[0] == GSPY_ENTRY_MODULE)))
		return "";
	return (const char *)d;
}

uint64_t gs_trace_stack_ns(const struct gs_trace *t)
{
	double ns = (double)t->h->stacks_time * t->ns_per_raw + 0.5;
	return ns >= 0 && ns < 1.8e19 ? (uint64_t)ns : ns >= 1.8e19 ? UINT64_MAX : 0; /* a forged header */
}

unsigned gs_header_notes(const struct gspy_header *h, char *buf, size_t cap)
{
	/* The count first, once: a live process may still be adding lines. */
	uint32_t used = __atomic_load_n(&h->notes_used, __ATOMIC_ACQUIRE);
	if (used > GSPY_NOTES_SIZE)
		used = GSPY_NOTES_SIZE;
	size_t k = 0;
	unsigned lines = 0;
	int open_line = 0; /* a line has bytes not yet ended */
	if (!cap)
		return 0;
	for (uint32_t i = 0; i < used && k + 2 < cap; i++) {
		char c = h->notes[i];
		if (c == 0)
			continue; /* claimed, not written yet */
		if (c == '\n' && !open_line)
			continue; /* no empty lines */
		buf[k++] = c;
		open_line = c != '\n';
		lines += c == '\n';
	}
	if (open_line) { /* cut by the area's end, or still being written */
		buf[k++] = '\n';
		lines++;
	}
	buf[k] = 0;
	return lines;
}

/* A process that exits while top or serve opens its trace cuts the file
 * under the mapping (its trim at exit): the open fails and the follower
 * tries again later. The memory the interrupted open had allocated in
 * its own frame (a scan's list) is lost: a few bytes, once per race. */
int gs_trace_open_fd_live(int fd, const char *path, struct gs_trace *t, char *err, size_t errlen)
{
	sigjmp_buf jb;
	if (sigsetjmp(jb, 1)) {
		bus_jump = NULL;
		gs_trace_close(t);
		t->path = path;
		return fail(err, errlen, -EAGAIN, "%s", "cut while it was being opened (its process exited)");
	}
	bus_jump = &jb;
	int rc = gs_trace_open_fd(fd, path, t, err, errlen);
	bus_jump = NULL;
	return rc;
}

void gs_trace_close(struct gs_trace *t)
{
	if (t->tab && t->tab->live) {
		munmap(t->tab->bytes, (size_t)t->tab->cap);
		free(t->tab);
	}
	free(t->chunk_idx);
	free(t->threads);
	if (t->map) {
		map_note(t, 0);
		munmap((void *)t->map, t->size);
	}
	memset(t, 0, sizeof(*t));
}
