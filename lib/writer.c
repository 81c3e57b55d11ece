/* SPDX-License-Identifier: MIT */
/*
 * The per-process trace file: created on the first recorded event, sized
 * once (fixed memory), mapped MAP_SHARED so that every committed record is
 * in the page cache the moment it is committed and survives a SIGKILL.
 * Threads claim fixed-size chunks with one atomic add; when none are left,
 * events are counted as dropped, exactly, and the application never waits.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <linux/futex.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gs.h"
#include "writer.h"
#include "module.h"
#include "self.h"
#include "strtab.h"

#define STRTAB_SIZE (gs_cfg.stacks ? 16u << 20 : 4u << 20) /* names; stacks need more */
#define STRTAB_SLACK (64u << 10) /* kept past the strings at the trim, for later ones */
#define CHUNK_SIZE (64u << 10)
#define PREFAULT_AHEAD 32u /* chunks kept faulted in ahead of the claims */

enum { W_CLOSED = 0, W_OPEN = 1, W_FAILED = 2 };
enum { CUT_NONE, CUT_REMAPPING, CUT_DONE, CUT_FAILED };

static struct {
	int state;
	pthread_mutex_t lock; /* file creation */
	struct gspy_header *hdr;
	char *base;
	size_t size;
	uint32_t populated; /* chunks [0, populated) are faulted in */
	uint32_t kick;      /* futex word: claims wake the prefault thread */
	int prefault_off;
	char path[700];     /* the trace file's name, for messages */
	int fd;             /* the trace file, for the trim at exit (never by name) */
	dev_t dev;          /* and what it is, checked before the trim: the */
	ino_t ino;          /* program may close the fd and reuse its number */
	/* The layout and identity of the file, as this process made it (the
	 * string table's place as the trim left it). The header holds them
	 * too, for readers, but the file's owner may write there while the
	 * program runs (a stray `dd`, an editor): nothing used for an
	 * address, a size or the fork check is read back. */
	pid_t pid;              /* the process that made the file (fork check) */
	uint64_t strtab_off, strtab_size;
	uint64_t chunk_off;
	uint32_t chunk_size;
	uint32_t chunk_count;   /* atomic: cut by the trim at exit */
	uint32_t claimed;       /* atomic: chunk claims (header.chunks_claimed mirrors it) */
	int cut;                /* the file was cut under us (gs_writer_fault): CUT_* */
} w = { .lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1 };
GS_FORK_LOCK(writer, w.lock);

/*
 * Writing into a fresh page of a shared file mapping costs a page fault
 * (zeroing, and on ext4 block allocation): about 25-100 ns per 64-byte
 * record, paid by the traced thread. A background thread keeps the next
 * PREFAULT_AHEAD chunks faulted in with MADV_POPULATE_WRITE, which writes
 * nothing (so it cannot race a writer), and sleeps on a futex otherwise.
 */
/* Cut at a clean exit (gs_writer_trim) while other threads may still read it. */
static inline uint32_t chunk_count(void)
{
	return __atomic_load_n(&w.chunk_count, __ATOMIC_ACQUIRE);
}

static inline char *chunk_at(uint32_t idx)
{
	return w.base + w.chunk_off + (size_t)idx * w.chunk_size;
}

static void *prefault_main(void *arg)
{
	struct gspy_header *h = arg;
	uint32_t last_kick = 0;
	for (;;) {
		if (w.hdr != h)
			return NULL; /* the file changed under us */
		uint32_t claimed = __atomic_load_n(&w.claimed, __ATOMIC_RELAXED);
		uint32_t target = claimed + PREFAULT_AHEAD;
		if (target > chunk_count())
			target = chunk_count();
		uint32_t p = __atomic_load_n(&w.populated, __ATOMIC_RELAXED);
		if (p < claimed)
			p = claimed;
		while (p < target) {
			if (madvise(chunk_at(p), w.chunk_size, MADV_POPULATE_WRITE) != 0) {
				/* Old kernel (or the file was cut at exit): pages fault in on use. */
				__atomic_store_n(&w.prefault_off, 1, __ATOMIC_RELAXED);
				return NULL;
			}
			__atomic_store_n(&w.populated, ++p, __ATOMIC_RELAXED);
		}
		if (p >= chunk_count())
			return NULL;
		struct timespec ts = { 0, 200000000 };
		syscall(SYS_futex, &w.kick, FUTEX_WAIT_PRIVATE, last_kick, &ts, NULL, 0);
		last_kick = __atomic_load_n(&w.kick, __ATOMIC_RELAXED);
	}
}

static void prefault_start(void)
{
	if (gs_start_thread(prefault_main, w.hdr, "gpuspy-prefault", 64 << 10) != 0)
		w.prefault_off = 1;
}

/* Chunk idx was just claimed: wake the prefault thread when it falls
 * behind by half its lead (a system call once per PREFAULT_AHEAD/2 chunks). */
static void prefault_kick(uint32_t idx)
{
	if (__atomic_load_n(&w.prefault_off, __ATOMIC_RELAXED) ||
	    __atomic_load_n(&w.populated, __ATOMIC_RELAXED) > idx + PREFAULT_AHEAD / 2)
		return;
	__atomic_fetch_add(&w.kick, 1, __ATOMIC_RELAXED);
	syscall(SYS_futex, &w.kick, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/*
 * Chunks of threads that exited, handed on: a program that starts
 * thousands of short threads would otherwise claim a 64 KiB chunk for
 * each few calls and run out with the buffer nearly empty. A thread's key
 * destructor puts its chunk here with the state to go on packing; a new
 * thread takes it, writes an owner record with its tid, and appends. Not
 * in flight-recorder mode, whose chunks are reused oldest first.
 */
#define SPARE_MAX 256
static struct {
	pthread_mutex_t lock;
	uint32_t n;
	struct spare {
		struct gspy_chunk *chunk;
		uint32_t used, cap, nrec;
		uint32_t gen;
		uint64_t claim;
		struct gspy_pack_base base;
	} v[SPARE_MAX];
	pthread_key_t key;
	int key_ok;
} spare = { .lock = PTHREAD_MUTEX_INITIALIZER };
GS_FORK_LOCK(spare, spare.lock);

/* Puts t's chunk, if it has room left, where a new thread will take it. */
static void hand_on(struct gs_tls *t)
{
	if (!t->chunk || t->gen != gs_g.gen || gs_g.ring || t->used + 2 * GSPY_PACKED_MAX > t->cap)
		return;
	pthread_mutex_lock(&spare.lock);
	if (spare.n < SPARE_MAX) {
		spare.v[spare.n] = (struct spare){ t->chunk, t->used, t->cap, t->nrec, t->gen, t->claim, t->base };
		__atomic_store_n(&spare.n, spare.n + 1, __ATOMIC_RELAXED); /* read unlocked in take_spare */
	}
	pthread_mutex_unlock(&spare.lock);
	t->chunk = NULL;
	t->used = t->cap = t->nrec = 0;
}

/* The thread's key destructor. Calls from destructors that run after it
 * (another key's, later in the same round or in a later one) each take a
 * chunk and hand it on at once (commit_slow): a chunk the thread kept
 * after its last destructor round would be lost to every later thread,
 * and a program that starts thousands of threads would run out of chunks
 * with the buffer nearly empty. */
static void thread_gone(void *arg)
{
	(void)arg;
	gs_tls.gone = 1;
	hand_on(&gs_tls);
}

static int env_int(const char *name)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return -1;
	char *end;
	long x = strtol(v, &end, 10);
	return (*end || x < 0 || x > 1000000) ? -1 : (int)x;
}

/* A raw reading and the monotonic time it was taken at. The raw read is
 * bracketed by two monotonic ones; of up to 16 tries the tightest bracket
 * wins, so that a thread preempted between the reads (milliseconds on a
 * loaded machine) cannot skew the calibration: over its 2 ms window such a
 * pair would make every threshold in ticks several times too long. */
static void clock_pair(struct gspy_clock_pair *p)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 16 && best > 2000; i++) {
		uint64_t a = gs_mono_ns();
		uint64_t raw = gs_now();
		uint64_t b = gs_mono_ns();
		if (b - a < best) {
			best = b - a;
			p->raw = raw;
			p->mono = a + (b - a) / 2;
		}
	}
}

static double calibrate_tsc(const struct gspy_clock_pair *p0)
{
	struct gspy_clock_pair p1;
	do
		clock_pair(&p1);
	while (p1.mono - p0->mono < 2000000); /* 2 ms */
	return (double)(p1.raw - p0->raw) * 1e9 / (double)(p1.mono - p0->mono);
}

static int create_file(int rank, char *path, size_t cap)
{
	char host[64] = "unknown";
	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = 0;
	for (char *c = host; *c; c++)
		if (*c == '/')
			*c = '_';
	char rk[16] = "";
	if (rank >= 0)
		snprintf(rk, sizeof(rk), "-r%d", rank);
	for (int i = 0; i < 100; i++) {
		char sfx[16] = "";
		if (i)
			snprintf(sfx, sizeof(sfx), "-%d", i);
		int n = snprintf(path, cap, "%s/gpuspy-%s-%d%s%s.gspy", gs_cfg.dir, host,
				 (int)getpid(), rk, sfx);
		if (n < 0 || (size_t)n >= cap)
			return -ENAMETOOLONG;
		int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0) {
			/* `gpuspy run` cuts only files it locks alone. */
			(void)flock(fd, LOCK_SH | LOCK_NB);
			return fd;
		}
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

/* A trace directory others could swap files in is refused: a symbolic
 * link, or one anybody may write to without the sticky bit. */
static int dir_safe(const char *dir)
{
	struct stat st;
	if (lstat(dir, &st) != 0)
		return -errno;
	if (S_ISLNK(st.st_mode)) {
		gs_warn("GPUSPY_DIR %s is a symbolic link; refusing it, tracing off", dir);
		return -ELOOP;
	}
	if (!S_ISDIR(st.st_mode)) {
		gs_warn("GPUSPY_DIR %s is not a directory; tracing off", dir);
		return -ENOTDIR;
	}
	if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) {
		gs_warn("GPUSPY_DIR %s is writable by anyone and not sticky; refusing it, tracing off", dir);
		return -EPERM;
	}
	/* Group-writable is refused too, unless the group is this process's
	 * own (a user-private group, as umask 002 gives). */
	if ((st.st_mode & S_IWGRP) && !(st.st_mode & S_ISVTX) && st.st_gid != getegid()) {
		gs_warn("GPUSPY_DIR %s is writable by its group and not sticky; refusing it, tracing off", dir);
		return -EPERM;
	}
	return 0;
}

/* Long (about 100 lines): the file made in order (name, checks, size,
 * mapping, header), each failure undoing the steps before it in one place. */
static int open_file(void)
{
	char path[700];
	int rank = env_int("RANK");
	int safe = dir_safe(gs_cfg.dir);
	if (safe == -ELOOP || safe == -ENOTDIR || safe == -EPERM)
		return safe;
	int fd = create_file(rank, path, sizeof(path));
	if (fd < 0) {
		gs_warn("cannot create a trace file in %s: %s; tracing off", gs_cfg.dir,
			strerror(-fd));
		return fd;
	}
	uint64_t chunks = gs_cfg.buffer_bytes / CHUNK_SIZE;
	if (chunks < 1)
		chunks = 1;
	size_t size = GSPY_HEADER_SIZE + STRTAB_SIZE + (size_t)chunks * CHUNK_SIZE;
	/* Reserve the blocks now: a sparse file on a full disk would turn the
	 * first store into a page into SIGBUS inside the application. */
	int rc = fallocate(fd, 0, 0, (off_t)size);
	if (rc != 0 && (errno == EOPNOTSUPP || errno == ENOSYS))
		rc = ftruncate(fd, (off_t)size);
	if (rc != 0) {
		int e = errno;
		gs_warn("cannot size %s to %zu bytes: %s; tracing off", path, size, strerror(e));
		unlink(path);
		close(fd);
		return -e;
	}
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	struct stat fst;
	if (p == MAP_FAILED || fstat(fd, &fst) != 0) {
		int e = errno;
		gs_warn("cannot map %s: %s; tracing off", path, strerror(e));
		unlink(path);
		close(fd);
		if (p != MAP_FAILED)
			munmap(p, size);
		return -e;
	}
	/* Above the numbers a program expects to be free (0-2, and what it
	 * opens next): the fd stays for the trim at exit. */
	int high = fcntl(fd, F_DUPFD_CLOEXEC, 100);
	if (high >= 0) {
		close(fd);
		fd = high;
	}
	w.fd = fd;
	w.dev = fst.st_dev;
	w.ino = fst.st_ino;
	w.pid = getpid();
	__atomic_store_n(&gs_file_pid, w.pid, __ATOMIC_RELAXED);
	/* The string table after the chunks: the trim at exit moves it down. */
	w.chunk_off = GSPY_HEADER_SIZE;
	w.strtab_off = GSPY_HEADER_SIZE + (uint64_t)chunks * CHUNK_SIZE;
	w.strtab_size = STRTAB_SIZE;
	w.chunk_size = CHUNK_SIZE;
	w.chunk_count = (uint32_t)chunks;
	w.claimed = 0;
	struct gspy_header *h = p;
	h->version = GSPY_FORMAT_VERSION;
	h->header_size = GSPY_HEADER_SIZE;
	h->record_size = GSPY_RECORD_SIZE;
	h->clock = (uint32_t)gs_g.clock;
	h->file_size = size;
	h->strtab_offset = w.strtab_off;
	h->strtab_size = w.strtab_size;
	gs_strtab_attach((char *)p + w.strtab_off, w.strtab_size, h);
	h->stacks = gs_cfg.stacks;
	h->stack_launch_every = gs_cfg.stack_launch_every;
	h->host_alloc_min = gs_cfg.host_alloc_min;
	h->cpus = gs_self_cpus();
	h->chunk_offset = w.chunk_off;
	h->chunk_size = w.chunk_size;
	h->chunk_count = w.chunk_count;
	h->buffer_bytes = (uint64_t)chunks * CHUNK_SIZE;
	h->pid = (uint32_t)w.pid;
	h->ppid = (uint32_t)getppid();
	h->rank = rank;
	h->local_rank = env_int("LOCAL_RANK");
	struct timespec rt;
	clock_gettime(CLOCK_REALTIME, &rt);
	h->real_start_ns = (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec;
	clock_pair(&h->clock_start);
	h->tsc_hz = gs_g.clock == GSPY_CLOCK_TSC ? calibrate_tsc(&h->clock_start) : 1e9;
	h->stack_min_ns = gs_cfg.stack_min_ns;
	h->wait_stack_min_ns = gs_cfg.wait_stack_min_ns;
	GS_MODULES_CALL(opened, h);
	clock_pair(&h->clock_last);
	h->state = GSPY_STATE_RUNNING;
	h->ring = (uint32_t)gs_g.ring;
	gethostname(h->host, sizeof(h->host) - 1);
	gs_self_cmdline(h->command, sizeof(h->command));
	/* Readers accept the file once the magic is there. */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	memcpy(h->magic, GSPY_MAGIC, 8);
	w.hdr = h;
	w.base = p;
	w.size = size;
	memcpy(w.path, path, sizeof(w.path));
	return 0;
}

/*
 * A child forked without fork handlers (syscall(SYS_fork), a raw clone)
 * inherits the thread's chunk, in the parent's shared file: it must never
 * write there. The word gs_g.alive points at lives on a page of its own
 * marked MADV_WIPEONFORK: it reads 1 here and 0 in any child, which takes
 * every record to the slow path, where the child starts its own file.
 */
static const uint64_t always_alive_w = 1;

static void alive_page(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return;
	if (madvise(p, 4096, MADV_WIPEONFORK) != 0) { /* before Linux 4.14: pid checks only */
		munmap(p, 4096);
		return;
	}
	*(uint64_t *)p = 1;
	/* The 1 is in place before a thread reads through the pointer. */
	__atomic_store_n(&gs_g.alive, (const volatile uint64_t *)p, __ATOMIC_RELEASE);
}

static int open_slow(void)
{
	int s, e = errno, opened = 0;
	if (!gs_init())
		return -1; /* options not read yet (a re-entry): pass through */
	/* Making the file (open, fallocate, read, write) under the lock, and
	 * the modules' start (threads, dlopen) after it. */
	int cancel = gs_cancel_off();
	pthread_mutex_lock(&w.lock);
	if (w.state == W_CLOSED) {
		int rc = __atomic_load_n(&gs_g.disabled, __ATOMIC_RELAXED) ? -1 : open_file();
		if (rc == 0) { /* before the file is seen open: every record may use them */
			alive_page();
			spare.key_ok = pthread_key_create(&spare.key, thread_gone) == 0;
		}
		/* Pairs with gs_writer_ready's acquire: the mapping is set up before. */
		__atomic_store_n(&w.state, rc == 0 ? W_OPEN : W_FAILED, __ATOMIC_RELEASE);
		/* What gs_writer_open reads (after the state: the mapping is
		 * set up before either says open). */
		__atomic_store_n(&gs_g.file_open, rc == 0 ? GS_FILE_STARTING : GS_FILE_CLOSED, __ATOMIC_RELEASE);
		if (rc != 0)
			gs_g.disabled = 1;
		opened = rc == 0;
	}
	s = w.state;
	pthread_mutex_unlock(&w.lock);
	if (opened) {
		prefault_start();
		/* Outside the lock: CUPTI's own threads write records too. */
		gs_tls.opening = 1;
		GS_MODULES_CALL(started, w.hdr);
		gs_tls.opening = 0;
		/* Threads that came meanwhile go on: CUPTI collects (or never will). */
		int starting = GS_FILE_STARTING;
		if (__atomic_compare_exchange_n(&gs_g.file_open, &starting, GS_FILE_OPEN, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			syscall(SYS_futex, &gs_g.file_open, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
	}
	gs_cancel_restore(cancel);
	errno = e;
	return s == W_OPEN ? 0 : -1;
}

int gs_writer_ready(void)
{
	int s = __atomic_load_n(&w.state, __ATOMIC_ACQUIRE);
	if (GS_LIKELY(s == W_OPEN))
		return 0;
	if (s == W_FAILED)
		return -1;
	/* gpuspy's work, even where no hook called (an NVTX range first): its mmap passes through the host hooks. */
	gs_hold();
	int rc = open_slow();
	gs_release();
	return rc;
}

void gs_writer_clock_pair(void)
{
	struct gspy_header *h = w.hdr;
	uint64_t seq = __atomic_load_n(&h->clock_seq, __ATOMIC_RELAXED);
	/* One refresher at a time; losers skip, a pair is only a refinement. */
	if ((seq & 1) || !__atomic_compare_exchange_n(&h->clock_seq, &seq, seq + 1, 0,
						      __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return;
	struct gspy_clock_pair p;
	clock_pair(&p);
	__atomic_store_n(&h->clock_last.raw, p.raw, __ATOMIC_RELAXED);
	__atomic_store_n(&h->clock_last.mono, p.mono, __ATOMIC_RELAXED);
	/* Publishes the pair: readers retry while the sequence is odd. */
	__atomic_store_n(&h->clock_seq, seq + 2, __ATOMIC_RELEASE);
}

static void commit_slow(struct gs_tls *t, const struct gspy_record *r, uint64_t own);
static int finished; /* gpuspy's destructor has run (gs_writer_finish) */

/* A spare chunk for t, which has none, about to commit r: 1 when t now
 * writes into it. Only a chunk whose last record began no later than r
 * (r's call may have begun before the other thread's last one did: a
 * chunk's records must stay in time order), and none while t's own host
 * allocations from before the file wait to go first into its first chunk
 * (only t's: a thread that kept some and ended without a CUDA call used
 * to stop every later thread from taking one, and the buffer ran out of
 * chunks with little in them). */
static int take_spare(struct gs_tls *t, const struct gspy_record *r)
{
	if (!__atomic_load_n(&spare.n, __ATOMIC_RELAXED) || gs_g.ring || t->host_kept)
		return 0;
	struct spare e = { 0 };
	pthread_mutex_lock(&spare.lock);
	for (uint32_t i = spare.n; i-- > 0 && !e.chunk;) {
		int stale = spare.v[i].gen != gs_g.gen; /* another file's (fork) */
		if (!stale && spare.v[i].base.f[4] > r->start) /* f[4]: the last record's start */
			continue;
		if (!stale)
			e = spare.v[i];
		spare.v[i] = spare.v[spare.n - 1];
		__atomic_store_n(&spare.n, spare.n - 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&spare.lock);
	if (!e.chunk)
		return 0;
	t->chunk = e.chunk;
	t->used = e.used;
	t->cap = e.cap;
	t->nrec = e.nrec;
	t->claim = e.claim;
	t->base = e.base;
	struct gspy_record o;
	memset(&o, 0, sizeof(o));
	o.kind = GSPY_KIND_owner;
	o.device = -1;
	o.start = o.end = r->start; /* between the two threads' records */
	o.u.mem.bytes = t->tid;
	gs_commit(t, &o);
	__atomic_fetch_add(&w.hdr->chunks_reused, 1, __ATOMIC_RELAXED);
	return 1;
}

void gs_commit_own(struct gs_tls *t, const struct gspy_record *r, uint64_t own)
{
	/* In flight-recorder mode another thread may have recycled our chunk. */
	if (GS_LIKELY(t->gen == gs_g.gen && *gs_g.alive && t->used + GSPY_PACKED_MAX <= t->cap &&
		      (!gs_g.ring || __atomic_load_n(&t->chunk->claim, __ATOMIC_RELAXED) == t->claim))) {
		t->used += (uint32_t)gspy_pack((uint8_t *)t->chunk + GSPY_CHUNK_HEADER_SIZE + t->used, r, own, &t->base);
		t->nrec++;
		/* Orders the record's bytes before the count readers trust. */
		__atomic_store_n(&t->chunk->committed, (uint64_t)t->nrec << 32 | t->used, __ATOMIC_RELEASE);
		return;
	}
	/* The slow path makes system calls: the traced call's errno stays. */
	int e = errno;
	commit_slow(t, r, own);
	errno = e;
}

/* Long (about 100 lines): a chunk claimed in the order the cases must be
 * tried (fork child, cut file, new thread, spare chunk, fresh chunk, full
 * buffer); each is a few lines and reads best in that order. */
static void commit_slow(struct gs_tls *t, const struct gspy_record *r, uint64_t own)
{
	struct gspy_header *h = w.hdr;
	if (GS_UNLIKELY(w.pid != getpid())) {
		/* A child the fork handlers never saw: its own file from here. */
		gs_forked_child();
		if (gs_writer_ready() != 0)
			return;
		h = w.hdr;
	}
	/* Recording stopped with the file cut: no more chunks of the
	 * anonymous stand-in (memory) for the threads still writing. */
	if (GS_UNLIKELY(__atomic_load_n(&w.cut, __ATOMIC_RELAXED)))
		return;
	GS_MODULES_CALL(slow);
	if (t->gen != gs_g.gen) {
		t->gen = gs_g.gen;
		t->chunk = NULL;
		t->used = t->cap = t->nrec = 0;
		t->seq = 0;
	}
	if (!t->chunk) {
		if (!t->tid) {
			t->tid = (uint32_t)syscall(SYS_gettid);
			__atomic_fetch_add(&h->threads_seen, 1, __ATOMIC_RELAXED);
			GS_MODULES_CALL(thread);
		}
		/* The key's destructor hands the chunk on when the thread ends. */
		if (spare.key_ok && !t->gone && !pthread_getspecific(spare.key))
			pthread_setspecific(spare.key, (void *)1);
		if (take_spare(t, r)) {
			gs_commit_own(t, r, own);
			if (t->gone)
				hand_on(t);
			return;
		}
	}
	uint32_t count = chunk_count();
	if (gs_g.ring || __atomic_load_n(&w.claimed, __ATOMIC_RELAXED) < count) {
		uint32_t claim = __atomic_fetch_add(&w.claimed, 1, __ATOMIC_RELAXED);
		/* For readers: how many chunks to look at. */
		__atomic_fetch_add(&h->chunks_claimed, 1, __ATOMIC_RELAXED);
		/* Flight recorder: the claim counter wraps over the chunks, the
		 * oldest is reused, and what it held is counted as overwritten. */
		uint32_t idx = gs_g.ring ? claim % count : claim;
		if (idx < chunk_count()) { /* re-read: a trim at exit may have cut it */
			struct gspy_chunk *c = (struct gspy_chunk *)chunk_at(idx);
			if (claim >= count) {
				/* Readers skip it while it is being reset. */
				__atomic_store_n(&c->tid, 0, __ATOMIC_RELEASE);
				__atomic_fetch_add(&h->overwritten,
						   __atomic_load_n(&c->committed, __ATOMIC_ACQUIRE) >> 32, __ATOMIC_RELAXED);
			}
			c->claim = claim;
			t->claim = claim;
			if (!t->tid) {
				t->tid = (uint32_t)syscall(SYS_gettid);
				__atomic_fetch_add(&h->threads_seen, 1, __ATOMIC_RELAXED);
				GS_MODULES_CALL(thread);
			}
			prefault_kick(idx);
			c->seq = t->seq++;
			c->committed = 0;
			c->dropped = 0;
			/* The chunk is initialised before readers see its owner. */
			__atomic_store_n(&c->tid, t->tid, __ATOMIC_RELEASE);
			t->chunk = c;
			t->used = t->nrec = 0;
			t->cap = w.chunk_size - GSPY_CHUNK_HEADER_SIZE;
			memset(&t->base, 0, sizeof(t->base)); /* each chunk decodes on its own */
			gs_writer_clock_pair();
			/* The thread's first chunk: its host allocations made before
			 * the file existed go first, in their own time order. */
			if (c->seq == 0)
				GS_MODULES_CALL(first_chunk, t);
			gs_commit_own(t, r, own);
			if (t->gone)
				hand_on(t);
			/* A file first written after gpuspy's destructor (a linked
			 * library's destructor made the process's first CUDA call)
			 * is marked and trimmed now: no later moment comes. */
			if (__atomic_load_n(&finished, __ATOMIC_ACQUIRE) &&
			    __atomic_load_n(&h->state, __ATOMIC_ACQUIRE) == GSPY_STATE_RUNNING) {
				gs_writer_exit(GSPY_STATE_EXITED, -1, 0);
				gs_writer_trim();
			}
			return;
		}
	}
	if (__atomic_load_n(&finished, __ATOMIC_ACQUIRE))
		__atomic_fetch_add(&h->dropped_after_exit, 1, __ATOMIC_RELAXED); /* the file was cut */
	else if (t->chunk)
		__atomic_store_n(&t->chunk->dropped, t->chunk->dropped + 1, __ATOMIC_RELAXED);
	else
		__atomic_fetch_add(&h->dropped_nochunk, 1, __ATOMIC_RELAXED);
}

/*
 * At a clean exit, the file is cut to what it holds: the buffer was
 * reserved whole (GPUSPY_BUFFER_MB) so that a full disk could not turn a
 * store into SIGBUS, and the string table sized for the most a run may
 * need. The chunks claimed stay; claims made from here on count as
 * dropped, so a thread still writing is unaffected. The string table's
 * used bytes move down to right after them (strtab.c), with a little room
 * for strings interned later, and the file ends there. The flight
 * recorder reuses its chunks and is left whole.
 */
void gs_writer_trim(void)
{
	if (!gs_writer_open() || gs_g.ring)
		return;
	struct gspy_header *h = w.hdr;
	/* By our own fd, never by name: the name may now be a symbolic link
	 * someone put in the directory, or relative to another directory;
	 * and never a file cut under us (a store there would fault). */
	struct stat st;
	if (w.fd < 0 || fstat(w.fd, &st) != 0 || st.st_dev != w.dev || st.st_ino != w.ino ||
	    (uint64_t)st.st_size != w.size)
		return;
	uint32_t count = chunk_count();
	uint32_t claimed = __atomic_fetch_add(&w.claimed, count, __ATOMIC_ACQ_REL);
	if (claimed < count) {
		/* The count first: a reader takes the fewer of the two, and
		 * never one chunk past those claimed, where the strings move. */
		__atomic_store_n(&w.chunk_count, claimed, __ATOMIC_RELEASE);
		__atomic_store_n(&h->chunk_count, claimed, __ATOMIC_RELEASE);
		__atomic_fetch_add(&h->chunks_claimed, count, __ATOMIC_ACQ_REL);
		count = claimed;
	}
	uint64_t chunks_end = w.chunk_off + (uint64_t)count * w.chunk_size, at = chunks_end;
	uint64_t size = gs_strtab_move(w.base, w.strtab_off, &at, STRTAB_SLACK);
	if (!size || __atomic_load_n(&w.cut, __ATOMIC_ACQUIRE) != CUT_NONE)
		return; /* cut under us while it moved: the file is left as it is */
	w.strtab_off = at;
	w.strtab_size = size;
	uint64_t end = at + size;
	h->file_size = end;
	if (ftruncate(w.fd, (off_t)end) != 0)
		return; /* the file is longer than its header says: still read whole */
	/* A table that stayed where it was (the chunks nearly all claimed)
	 * leaves the unclaimed ones before it: their blocks go back. */
	if (w.strtab_off > chunks_end)
		(void)fallocate(w.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)chunks_end,
				(off_t)(w.strtab_off - chunks_end));
}

void gs_writer_exit(int state, int code, int sig)
{
	/* Not a child's that inherited this file (a raw fork, a vfork): its
	 * end is not this file's process's. */
	if (!gs_writer_open() || w.pid != (pid_t)syscall(SYS_getpid))
		return;
	struct gspy_header *h = w.hdr;
	GS_MODULES_CALL(exiting, h);
	gs_writer_clock_pair();
	h->exit_code = code;
	if (sig) /* else a signal seen before stays said */
		h->exit_signal = sig;
	__atomic_store_n(&h->state, (uint32_t)state, __ATOMIC_RELEASE);
}

/*
 * The file cut under the program (`: > trace.gspy`, logrotate's
 * copytruncate): a store into, or a load from, a page of the mapping now
 * past the file's end raises SIGBUS in whichever thread makes it, the
 * program's or gpuspy's own. The signal handler (signals.c) brings such a
 * fault here. The whole mapping is replaced in place by anonymous memory,
 * so that the instruction, run again, lands there harmlessly, and
 * recording stops: the file is left as the other process made it. Runs
 * in a signal handler: system calls and atomics only.
 */
int gs_writer_fault(const void *addr)
{
	char *base = __atomic_load_n(&w.base, __ATOMIC_ACQUIRE);
	size_t size = __atomic_load_n(&w.size, __ATOMIC_RELAXED);
	if (!base || (const char *)addr < base || (const char *)addr >= base + size)
		return 0; /* not gpuspy's: the program's own fault */
	int s = CUT_NONE;
	if (!__atomic_compare_exchange_n(&w.cut, &s, CUT_REMAPPING, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		/* Another thread replaces the mapping (this one faults again
		 * until it has) or has replaced it. */
		return s != CUT_FAILED;
	/* Calls pass through from now on. Atomic: other threads read it as
	 * they make calls, while this handler runs. */
	__atomic_store_n(&gs_g.disabled, 1, __ATOMIC_RELAXED);
	void *p = mmap(base, size, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		/* The fault stays: the program's action for it decides, as before. */
		__atomic_store_n(&w.cut, CUT_FAILED, __ATOMIC_RELEASE);
		return 0;
	}
	/* Exit, trim and the modules no longer touch the file. */
	__atomic_store_n(&w.state, W_FAILED, __ATOMIC_RELEASE);
	__atomic_store_n(&gs_g.file_open, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&w.cut, CUT_DONE, __ATOMIC_RELEASE);
	gs_warn_raw("the trace file ", w.path,
		    " was cut while the program ran (emptied or truncated by another process); recording stopped");
	return 1;
}

void gs_writer_finish(void)
{
	/* A file cut while no store touched it since is found here, not by a
	 * fault in the exit's own stores (the program may have put its own
	 * SIGBUS handler in front of gpuspy's), and the trim never grows it
	 * back. */
	struct stat st;
	if (gs_writer_open() && w.fd >= 0 && fstat(w.fd, &st) == 0 && st.st_dev == w.dev && st.st_ino == w.ino &&
	    (uint64_t)st.st_size < w.size)
		gs_writer_fault(w.base);
	gs_writer_exit(GSPY_STATE_EXITED, -1, 0);
	gs_writer_trim();
	__atomic_store_n(&finished, 1, __ATOMIC_RELEASE);
}

void gs_writer_signal_seen(int sig)
{
	if (gs_writer_open() && w.pid == (pid_t)syscall(SYS_getpid))
		__atomic_store_n(&w.hdr->exit_signal, sig, __ATOMIC_RELAXED);
}

void gs_writer_device_mem(int device, uint64_t bytes)
{
	if (device >= 0 && device < GSPY_DEVICES && gs_writer_open())
		__atomic_store_n(&w.hdr->device_mem[device], bytes, __ATOMIC_RELAXED);
}

void gs_writer_stack_cost(uint64_t time)
{
	if (gs_writer_open()) {
		__atomic_fetch_add(&w.hdr->stacks_taken, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&w.hdr->stacks_time, time, __ATOMIC_RELAXED);
	}
}

static void writer_forked(void)
{
	if (w.state == W_OPEN)
		munmap(w.base, w.size);
	struct stat st;
	if (w.fd >= 0 && fstat(w.fd, &st) == 0 && st.st_dev == w.dev && st.st_ino == w.ino)
		close(w.fd); /* the parent's file, if the number still is it */
	w.fd = -1;
	w.hdr = NULL;
	w.base = NULL;
	w.populated = 0;
	w.prefault_off = 0;
	w.state = gs_g.disabled ? W_FAILED : W_CLOSED;
	gs_g.file_open = 0;
	pthread_mutex_init(&w.lock, NULL);
	gs_g.alive = &always_alive_w; /* the parent's page reads 0 here */
	gs_g.gen++;
}

GS_MODULE(writer, 20, .forked = writer_forked, .end = gs_writer_finish);
