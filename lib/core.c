/* SPDX-License-Identifier: MIT */
/*
 * Life cycle of libgpuspy: configuration from the environment (one table of
 * options), lazy initialisation from any entry point, the clock, fork and
 * exit handling (gpuspy's messages are log.c's).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <linux/futex.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "gs.h"
#include "module.h"

__thread struct gs_tls gs_tls __attribute__((tls_model("initial-exec"))) = { .device = -1 };
static const uint64_t always_alive = 1; /* until the file's own page is set */
struct gs_global gs_g = { .clock = GSPY_CLOCK_MONOTONIC, .alive = &always_alive };
struct gs_config gs_cfg;
pid_t gs_file_pid;
pid_t gs_pid;

enum { INIT_NONE, INIT_BUSY, INIT_DONE }; /* gs_once's states */
static int init_state;
static uint32_t init_tid;

uint64_t gs_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A detached thread of gpuspy's own, named, that never takes the
 * application's signals (it is created with all of them blocked, so not
 * even in its first instruction); stack 0: the default size. All but
 * SIGBUS: these threads read and write the trace file, and the fault of
 * one on a file cut under the program must reach gpuspy's handler
 * (signals.c), not kill the process (a blocked fault is fatal). */
int gs_start_thread(void *(*fn)(void *), void *arg, const char *name, size_t stack)
{
	pthread_t th;
	pthread_attr_t a;
	sigset_t all, old;
	sigfillset(&all);
	sigdelset(&all, SIGBUS);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (stack)
		pthread_attr_setstacksize(&a, stack);
	int rc = pthread_create(&th, &a, fn, arg);
	/* A small stack refused (on the H200, in programs linked with
	 * cuBLAS, cuSPARSE or cuSOLVER: "cannot start the control thread";
	 * older glibc carves the static TLS out of the stack): then the
	 * default size. */
	if (rc != 0 && stack) {
		pthread_attr_destroy(&a);
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		rc = pthread_create(&th, &a, fn, arg);
	}
	if (rc == 0)
		pthread_setname_np(th, name);
	pthread_attr_destroy(&a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

/*
 * Another thread's first calls while the modules start: a kernel launched
 * before CUPTI collects has no GPU record (8 threads launching at once
 * kept 1 of their 8 first kernels' records). They wait for the start as
 * the opening thread does, at most START_WAIT_NS; past that (a start
 * stuck on something) nobody waits again. A child forked without fork
 * handlers mid-start has its parent's "starting" and no start of its
 * own to wait for (its first record makes its own file): it goes on.
 */
#define START_WAIT_NS 3000000000ull
void gs_wait_started(void)
{
	if (gs_tls.opening || __atomic_load_n(&gs_file_pid, __ATOMIC_RELAXED) != (pid_t)syscall(SYS_getpid))
		return; /* the start's own calls, or a child's */
	if (gs_wait_while((const uint32_t *)&gs_g.file_open, GS_FILE_STARTING, gs_mono_ns() + START_WAIT_NS)) {
		int starting = GS_FILE_STARTING;
		__atomic_compare_exchange_n(&gs_g.file_open, &starting, GS_FILE_OPEN, 0, __ATOMIC_ACQ_REL,
					    __ATOMIC_ACQUIRE);
	}
}

int gs_wait_while(const uint32_t *word, uint32_t val, uint64_t until_ns)
{
	int e = errno, rc = 0;
	while (__atomic_load_n(word, __ATOMIC_ACQUIRE) == val) {
		uint64_t now = gs_mono_ns();
		if (now >= until_ns) {
			rc = -1;
			break;
		}
		uint64_t left = until_ns - now;
		struct timespec ts = { (time_t)(left / 1000000000u), (long)(left % 1000000000u) };
		syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, &ts, NULL, 0);
	}
	errno = e;
	return rc;
}

struct gs_opt_val gs_opt[GS_OPT_N];

/* Parses every variable the library reads (one getenv each), then warns
 * about the values it could not read, once GPUSPY_QUIET and GPUSPY_LOG
 * (log.c) say where warnings go: GPUSPY_QUIET's first; in a disabled
 * process only GPUSPY_DISABLE's. */
static void read_options(void)
{
	for (int i = 0; i < GS_OPT_N; i++)
		if (gs_opt_defs[i].by == GS_BY_LIB)
			gs_opt[i] = gs_opt_parse(&gs_opt_defs[i], getenv(gs_opt_defs[i].name));
	gs_cfg.quiet = (int)gs_optu(GS_OPT_QUIET);
	gs_log_setup();
	for (int i = 0; i < GS_OPT_N; i++) {
		if (i > GS_OPT_DISABLE && gs_optu(GS_OPT_DISABLE))
			break;
		if (gs_opt[i].bad) {
			char why[320];
			gs_opt_why(&gs_opt_defs[i], getenv(gs_opt_defs[i].name), why, sizeof(why));
			gs_warn("%s", why);
		}
	}
}

/* The TSC is used only when the kernel itself trusts it as clocksource,
 * which implies it is invariant and synchronised across CPUs. */
static int tsc_usable(void)
{
#if defined(__x86_64__)
	char buf[32] = { 0 };
	int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
		      O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n >= 3 && strncmp(buf, "tsc", 3) == 0;
#else
	return 0;
#endif
}

/*
 * fork() while another thread holds one of gpuspy's locks would leave it
 * held for ever in the child, where that thread does not exist: the fork
 * handlers take them all first (GS_FORK_LOCK lists them), release them in
 * the parent and start them afresh in the child. A lock is waited for a
 * bounded time only (its holders never wait on anything, but a signal
 * handler that forks may run on the holder's own thread): one not taken is
 * still started afresh in the child, whose state under it may then be off.
 */
extern pthread_mutex_t *const __start_gs_fork_locks[] __attribute__((visibility("hidden")));
extern pthread_mutex_t *const __stop_gs_fork_locks[] __attribute__((visibility("hidden")));
static uint64_t fork_held; /* bit i: lock i taken by atfork_prepare */
static int fork_cancel;    /* the forking thread's cancel state, off from prepare to parent/child */

static void atfork_prepare(void)
{
	int e = errno;
	/* Locks are held from here until fork returns, and the waits for
	 * them sleep (a cancellation point). */
	fork_cancel = gs_cancel_off();
	GS_MODULES_CALL(fork_prepare);
	fork_held = 0;
	size_t n = (size_t)(__stop_gs_fork_locks - __start_gs_fork_locks);
	/* Backwards: the writer's lock, innermost (names are interned under
	 * the others), is listed first and taken last. */
	for (size_t i = n < 64 ? n : 64; i-- > 0;) {
		for (int t = 0; t < 2000; t++) { /* at most ~200 ms a lock */
			if (pthread_mutex_trylock(__start_gs_fork_locks[i]) == 0) {
				fork_held |= 1ull << i;
				break;
			}
			struct timespec ts = { 0, 100000 };
			nanosleep(&ts, NULL);
		}
	}
	errno = e;
}

static void atfork_parent(void)
{
	GS_MODULES_CALL(fork_parent);
	size_t n = (size_t)(__stop_gs_fork_locks - __start_gs_fork_locks);
	for (size_t i = 0; i < n && i < 64; i++)
		if (fork_held & 1ull << i)
			pthread_mutex_unlock(__start_gs_fork_locks[i]);
	gs_cancel_restore(fork_cancel);
}

/* Also called by the writer when it finds itself in a child that fork
 * handlers never saw (syscall(SYS_fork), clone). */
void gs_forked_child(void)
{
	__atomic_store_n(&gs_pid, (pid_t)syscall(SYS_getpid), __ATOMIC_RELAXED);
	size_t n = (size_t)(__stop_gs_fork_locks - __start_gs_fork_locks);
	for (size_t i = 0; i < n; i++)
		pthread_mutex_init(__start_gs_fork_locks[i], NULL);
	/* Only the forking thread exists in the child: reset its state and let
	 * the next event open the child's own file. */
	if (gs_g.cuda_seen)
		gs_g.forked = 1;
	GS_MODULES_CALL(forked);
	gs_tls.chunk = NULL;
	gs_tls.used = gs_tls.cap = gs_tls.nrec = 0;
	gs_tls.seq = 0;
	gs_tls.tid = 0;
	gs_tls.cupti_corr = 0;
}

static void atfork_child(void)
{
	gs_forked_child();
	gs_cancel_restore(fork_cancel);
}

/* The modules (module.h), sorted by their order once, in init_real (on one
 * thread, before any hook runs). */
extern const struct gs_module *const __start_gs_modules[] __attribute__((visibility("hidden")));
extern const struct gs_module *const __stop_gs_modules[] __attribute__((visibility("hidden")));
static const struct gs_module *modules[32];
static unsigned modules_n;

static void modules_sort(void)
{
	unsigned n = 0;
	for (const struct gs_module *const *m = __start_gs_modules; m < __stop_gs_modules && n < 32; m++) {
		unsigned i = n++;
		for (; i > 0 && modules[i - 1]->order > (*m)->order; i--)
			modules[i] = modules[i - 1];
		modules[i] = *m;
	}
	__atomic_store_n(&modules_n, n, __ATOMIC_RELEASE);
}

unsigned gs_modules_n(void)
{
	return __atomic_load_n(&modules_n, __ATOMIC_ACQUIRE);
}

const struct gs_module *const *gs_modules_sorted(void)
{
	return modules;
}

static void init_real(void)
{
	modules_sort();
	read_options();
	if (gs_optu(GS_OPT_DISABLE) || getauxval(AT_SECURE)) {
		gs_g.disabled = 1;
		return;
	}
	const char *v = gs_opt[GS_OPT_DIR].s ? gs_opt[GS_OPT_DIR].s : ".";
	if (strlen(v) >= sizeof(gs_cfg.dir)) {
		gs_warn("GPUSPY_DIR is too long; tracing off");
		gs_g.disabled = 1;
		return;
	}
	strcpy(gs_cfg.dir, v);
	gs_cfg.buffer_bytes = gs_optu(GS_OPT_BUFFER_MB) << 20;
	gs_g.ring = gs_optu(GS_OPT_MODE) == 1; /* drop|ring */
	if (gs_optu(GS_OPT_CLOCK) == 1) /* auto|mono */
		gs_g.clock = GSPY_CLOCK_MONOTONIC;
	else
		gs_g.clock = tsc_usable() ? GSPY_CLOCK_TSC : GSPY_CLOCK_MONOTONIC;
	GS_MODULES_CALL(setup);
}

/*
 * Runs fn once, from whichever thread comes first, and never blocks
 * without bound: fn must take no lock and never wait on another thread
 * (no dlopen, dladdr or dlsym: the loader's lock may be held by a thread
 * that waits on this one; no thread started). A second thread that arrives
 * meanwhile waits up to a second for it; the running thread itself,
 * re-entering (a hook inside fn, a signal handler), gets 0 at once, and so
 * does a thread that waited in vain: the caller passes its call through.
 * 1 when fn has run. Unlike pthread_once, whose waiters block as long as
 * it takes, and forever when it is their own thread.
 */
int gs_once(int *state, uint32_t *tid, void (*fn)(void))
{
	int s = __atomic_load_n(state, __ATOMIC_ACQUIRE);
	if (GS_LIKELY(s == INIT_DONE))
		return 1;
	uint32_t me = (uint32_t)syscall(SYS_gettid);
	if (s == INIT_NONE &&
	    __atomic_compare_exchange_n(state, &s, INIT_BUSY, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(tid, me, __ATOMIC_RELAXED);
		int e = errno;
		/* fn reads files (cancellation points): a thread cancelled in
		 * it would leave the state busy, and every later caller would
		 * wait its second. */
		int cancel = gs_cancel_off();
		fn();
		gs_cancel_restore(cancel);
		errno = e;
		/* What fn set up is in place before anyone reads it. */
		__atomic_store_n(state, INIT_DONE, __ATOMIC_RELEASE);
		return 1;
	}
	if (__atomic_load_n(tid, __ATOMIC_RELAXED) == me)
		return 0;
	for (int i = 0; i < 10000; i++) {
		if (__atomic_load_n(state, __ATOMIC_ACQUIRE) == INIT_DONE)
			return 1;
		struct timespec ts = { 0, 100000 };
		nanosleep(&ts, NULL);
	}
	return 0;
}

/* Reads the options, once, from whichever entry point comes first
 * (init_real reads the environment and one sysfs file). */
int gs_init(void)
{
	if (GS_LIKELY(__atomic_load_n(&init_state, __ATOMIC_ACQUIRE) == INIT_DONE))
		return 1;
	return gs_once(&init_state, &init_tid, init_real);
}

/* The constructor runs where the loader lock is this thread's or nobody's
 * (start-up, or dlopen of libgpuspy as an injection library): the one
 * place for what needs the loader (libunwind). */
__attribute__((constructor)) static void gs_ctor(void)
{
	__atomic_store_n(&gs_pid, (pid_t)syscall(SYS_getpid), __ATOMIC_RELAXED);
	gs_init();
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	if (!gs_g.disabled)
		GS_MODULES_CALL(load);
}

__attribute__((destructor)) static void gs_dtor(void)
{
	/* exit() in a child that shares or copies this memory unseen (vfork,
	 * a raw fork that made no call): nothing here is its to end; the
	 * writer's end would trim the parent's file under it. */
	if (__atomic_load_n(&gs_pid, __ATOMIC_RELAXED) != (pid_t)syscall(SYS_getpid))
		return;
	GS_MODULES_CALL(end);
}
