/* SPDX-License-Identifier: MIT */
/*
 * gpuspy start PID, gpuspy stop PID, gpuspy record PID [--for DUR]: turn
 * recording on and off in a running traced process (GPUSPY_START=paused,
 * or one recording already), through its trace file's header. The file is
 * found in /proc/PID/maps (the process maps it), so no directory needs
 * naming; the request is written to the header and the futex on ctl_seq
 * woken; the process's control thread answers in ctl_done (lib/control.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <linux/magic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "gpuspy/format.h"
#include "options.h"
#include "util/cli.h"
#include "util/escape.h"
#include "cmd/cmd.h"
#include "read/procs.h"
#include "util/units.h"

#define ANSWER_NS 3000000000ull /* a process that has not answered by then is stopped or stuck */

struct target {
	int pid;
	char path[PATH_MAX];
	struct gspy_header *h;
};

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

static int alive(int pid)
{
	return kill(pid, 0) == 0 || errno == EPERM;
}

/*
 * The header is read and written through a mapping of the file, as the
 * process's control thread reads and writes it (lib/control.c): the
 * request's words are atomics that both sides see at once, and the wake is
 * a futex on ctl_seq, which only a mapping gives. But the file is anyone's
 * who may write it, and one cut while it is mapped (truncate, logrotate's
 * copytruncate, the process's own owner) turns the next load or store into
 * SIGBUS. That fault, in the mapped header only, jumps back to control(),
 * which says so in one line and exits 1; any other is not ours.
 */
static const unsigned char *volatile cut_map; /* the header mapped now, if any */
static sigjmp_buf cut_jump;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	const unsigned char *a = si->si_addr, *m = cut_map;
	if (m && a >= m && a < m + GSPY_HEADER_SIZE)
		siglongjmp(cut_jump, 1);
	signal(sig, SIG_DFL); /* not ours: the fault comes back and kills */
}

/* The header of m's file, if it is pid's trace, mapped to write. */
static struct gspy_header *map_header(const struct gs_mapped *m)
{
	int fd = gs_pid_trace_open(m, 1);
	if (fd < 0)
		return NULL;
	struct stat st;
	void *p = MAP_FAILED;
	if (fstat(fd, &st) == 0 && st.st_size >= GSPY_HEADER_SIZE)
		p = mmap(NULL, GSPY_HEADER_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return NULL;
	struct gspy_header *h = p;
	cut_map = p; /* it may be cut from now on, as it is read below */
	/* Formats 2 and 3 have the same header: only where the string table lies differs. */
	if (memcmp(h->magic, GSPY_MAGIC, 8) || h->version < 2 || h->version > GSPY_FORMAT_VERSION || (int)h->pid != m->pid) {
		cut_map = NULL;
		munmap(p, GSPY_HEADER_SIZE);
		return NULL;
	}
	return h;
}

static int take_target(void *arg, const struct gs_mapped *m)
{
	struct target *t = arg;
	if (strlen(m->path) >= sizeof(t->path))
		return 0;
	snprintf(t->path, sizeof(t->path), "%s", m->path); /* for the message, should it be cut */
	if (!(t->h = map_header(m))) {
		t->path[0] = 0;
		return 0;
	}
	return 1;
}

/* Finds pid's trace file through the mappings of the process. */
static int find_target(const char *cmd, const char *arg, struct target *t)
{
	char *end;
	long pid = strtol(arg, &end, 10);
	if (*arg < '0' || *arg > '9' || *end || pid <= 0 || pid > INT_MAX) {
		fprintf(stderr, "gpuspy: error: %s: '%s' is not a process id\n", cmd, arg);
		return 2;
	}
	t->pid = (int)pid;
	int deleted = 0, rc = gs_pid_traces(t->pid, take_target, t, &deleted);
	if (rc == -ENOENT) {
		fprintf(stderr, "gpuspy: error: %s: no process %ld\n", cmd, pid);
		return 1;
	}
	if (rc < 0) {
		fprintf(stderr, "gpuspy: error: %s: cannot read /proc/%ld/maps: %s (another user's process?)\n", cmd,
			pid, strerror(-rc));
		return 1;
	}
	if (rc)
		return 0;
	if (deleted)
		fprintf(stderr, "gpuspy: error: %s: process %ld's trace file was deleted\n", cmd, pid);
	else
		fprintf(stderr,
			"gpuspy: error: %s: process %ld is not traced by gpuspy (no trace file mapped: start it under "
			"gpuspy run or LD_PRELOAD=libgpuspy.so; the file is made at its first CUDA call)\n",
			cmd, pid);
	return 1;
}

/* Asks the process for want (dur: the window's length, 0 until stopped)
 * and waits for its answer. 0 when it answered. */
static int ask(const char *cmd, struct target *t, unsigned want, uint64_t dur)
{
	struct gspy_header *h = t->h;
	if (__atomic_load_n(&h->state, __ATOMIC_ACQUIRE) != GSPY_STATE_RUNNING) {
		fprintf(stderr, "gpuspy: error: %s: process %d's trace is closed (it is exiting)\n", cmd, t->pid);
		return 1;
	}
	__atomic_store_n(&h->ctl_want, want, __ATOMIC_RELAXED);
	__atomic_store_n(&h->ctl_for_ns, dur, __ATOMIC_RELAXED);
	uint32_t seq = __atomic_add_fetch(&h->ctl_seq, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &h->ctl_seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	for (uint64_t t0 = gs_mono_now(); gs_mono_now() - t0 < ANSWER_NS; nap_ms(2)) {
		if ((int32_t)(__atomic_load_n(&h->ctl_done, __ATOMIC_ACQUIRE) - seq) >= 0)
			return 0;
		if (!alive(t->pid)) {
			fprintf(stderr, "gpuspy: error: %s: process %d exited before it answered\n", cmd, t->pid);
			return 1;
		}
	}
	fprintf(stderr, "gpuspy: error: %s: process %d did not answer within %llu s (stopped, or stuck?)\n", cmd,
		t->pid, ANSWER_NS / 1000000000ull);
	return 1;
}

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static int parse_for(const char *v, uint64_t *ns)
{
	static const struct gs_opt_def dur = { "--for", GS_OPT_DURATION, GS_BY_TOOL, 0, "", 0, 0, NULL, NULL, NULL };
	size_t n = strlen(v);
	struct gs_opt_val x = gs_opt_parse(&dur, v);
	if (!n || v[n - 1] < 'a' || v[n - 1] > 'z' || x.bad || !x.set || !x.u) {
		fprintf(stderr, "gpuspy: error: record: --for %s is not a duration (e.g. 30s, 500ms)\n", v);
		return 2;
	}
	*ns = x.u;
	return 0;
}

/* record: a window that ends after DUR, or when interrupted; what it says
 * to out. */
static int record(struct target *t, uint64_t dur, FILE *out)
{
	char a[32];
	uint64_t t0 = gs_mono_now();
	int rc = ask("record", t, GSPY_CTL_record, dur);
	if (rc)
		return rc;
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	fprintf(out, "gpuspy: recording process %d into %s %s%s\n", t->pid, t->path, dur ? "for " : "until Ctrl-C",
		dur ? gs_fmt_ns(a, dur) : "");
	fflush(out);
	fflush(stdout);
	/* The process ends the window itself at its deadline (so it ends
	 * if this command dies); this one waits for that, or a signal. */
	while (!interrupted && alive(t->pid) && !__atomic_load_n(&t->h->ctl_paused, __ATOMIC_ACQUIRE) &&
	       (!dur || gs_mono_now() - t0 < (dur > UINT64_MAX - ANSWER_NS ? UINT64_MAX : dur + ANSWER_NS)))
		nap_ms(20);
	if (!alive(t->pid)) {
		fprintf(out, "gpuspy: process %d exited while recording; see gpuspy report %s\n", t->pid, t->path);
		return 0;
	}
	if (!__atomic_load_n(&t->h->ctl_paused, __ATOMIC_ACQUIRE) && (rc = ask("record", t, GSPY_CTL_pause, 0)))
		return rc;
	fprintf(out, "gpuspy: process %d recorded for %s; see gpuspy report %s\n", t->pid,
		gs_fmt_ns(a, gs_mono_now() - t0), t->path);
	return 0;
}

/* The command, once its arguments are read: pid's trace found, asked, the
 * answer said (to a terminal's stream: the path is the name its owner
 * chose). Static and volatile: what the jump back from a cut file reads. */
static int control(const char *cmd, const char *pid, uint64_t dur)
{
	static struct target t;
	FILE *volatile out = NULL;
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
	if (sigsetjmp(cut_jump, 1)) {
		if (out && out != stdout)
			fclose(out);
		fflush(stdout);
		fprintf(stderr, "gpuspy: error: %s: the trace was cut (emptied or truncated) while in use: %s (process %d)\n",
			cmd, t.path, t.pid);
		return 1;
	}
	int rc = find_target(cmd, pid, &t);
	if (rc)
		return rc;
	out = gs_term_open(stdout, 0);
	if (!out)
		out = stdout;
	if (!strcmp(cmd, "record")) {
		rc = record(&t, dur, out);
	} else {
		int was = !__atomic_load_n(&t.h->ctl_paused, __ATOMIC_ACQUIRE);
		int start = !strcmp(cmd, "start");
		rc = ask(cmd, &t, start ? GSPY_CTL_record : GSPY_CTL_pause, 0);
		if (!rc && start)
			fprintf(out, "gpuspy: process %d %s recording into %s\n", t.pid, was ? "was already" : "is",
				t.path);
		else if (!rc)
			fprintf(out, "gpuspy: process %d %s; see gpuspy report %s\n", t.pid,
				was ? "stopped recording" : "was not recording", t.path);
	}
	if (out != stdout)
		fclose(out);
	return rc;
}

int gs_cmd_control(const char *cmd, int argc, char **argv)
{
	uint64_t dur = 0;
	const char *pid = NULL;
	int is_record = !strcmp(cmd, "record");
	for (int i = 0; i < argc; i++) {
		if (is_record && !strcmp(argv[i], "--for") && i + 1 < argc) {
			int rc = parse_for(argv[++i], &dur);
			if (rc)
				return rc;
		} else if (argv[i][0] == '-') {
			return gs_bad_option(cmd, argv[i], is_record ? "--for" : "");
		} else if (pid) {
			fprintf(stderr, "gpuspy: error: %s: one process id, not '%s' too\n", cmd, argv[i]);
			return 2;
		} else {
			pid = argv[i];
		}
	}
	if (!pid)
		return gs_missing(cmd, "process id");
	return control(cmd, pid, dur);
}
