/* SPDX-License-Identifier: MIT */
/*
 * `gpuspy run [--dir D] [--buffer-mb N] [--cupti auto|on|off|events]
 *  [--host-alloc SIZE] [--no-report] -- CMD ARGS...`: runs CMD with libgpuspy
 * preloaded (and libgpuspy-host.so when host allocations are recorded), forwards the signals
 * sent to gpuspy, prints the report of every process CMD started, and exits
 * with CMD's exit status (128 + N when CMD died of signal N).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "options.h"
#include "util/cli.h"
#include "util/escape.h"
#include "util/files.h"
#include "gpuspy/format.h"
#include "cmd/cmd.h"
#include "cmd/relay.h"
#include "read/reader.h"

#ifndef GPUSPY_PREFIX
#define GPUSPY_PREFIX "/usr/local"
#endif

static volatile pid_t child;

/* Signals sent to gpuspy by a process are passed on; those the terminal
 * sends to the whole foreground group (Ctrl-C) already reached CMD. */
static void forward(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (child > 0 && si->si_code != SI_KERNEL)
		kill(child, sig);
}

static int exists(const char *p)
{
	return access(p, R_OK) == 0;
}

/* The library next to the command (tools/ in the tree, bin/ when
 * installed), $GPUSPY_LIB, or the install prefix. */
int gs_run_find_lib(char *out, size_t cap)
{
	const char *env = getenv("GPUSPY_LIB");
	if (env && *env) {
		snprintf(out, cap, "%s", env);
		return exists(out) ? 0 : -1;
	}
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		char *slash = strrchr(exe, '/');
		if (slash)
			*slash = 0;
		static const char *const rel[] = { "/../lib/libgpuspy.so.0", "/../lib/libgpuspy.so" };
		for (int i = 0; i < 2; i++) {
			char p[PATH_MAX + 64];
			snprintf(p, sizeof(p), "%s%s", exe, rel[i]);
			if (exists(p) && realpath(p, out))
				return 0;
		}
	}
	snprintf(out, cap, "%s/lib/libgpuspy.so.0", GPUSPY_PREFIX);
	return exists(out) ? 0 : -1;
}

static int mkdir_p(const char *dir)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s", dir);
	for (char *s = p + 1; *s; s++)
		if (*s == '/') {
			*s = 0;
			if (mkdir(p, 0700) != 0 && errno != EEXIST)
				return -1;
			*s = '/';
		}
	return mkdir(p, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

struct names {
	char **v;
	size_t n;
};

static void list_traces(const char *dir, struct names *out)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l < 6 || strcmp(e->d_name + l - 5, ".gspy"))
			continue;
		char **v = realloc(out->v, (out->n + 1) * sizeof(*v));
		if (!v)
			break;
		out->v = v;
		out->v[out->n++] = strdup(e->d_name);
	}
	if (d)
		closedir(d);
}

static int seen(const struct names *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i] && !strcmp(s->v[i], name))
			return 1;
	return 0;
}

/* argv[i], an option, has its value after it (not the "--" before CMD). */
static int has_value(int argc, char **argv, int i)
{
	return i + 1 < argc && strcmp(argv[i + 1], "--") != 0;
}

struct run_opts {
	const char *dir, *buffer, *cupti, *host;
	int no_report;
	int cmd; /* argv's index of CMD */
};

/* The options before CMD, checked: 0, or the exit status of a misuse. */
static int parse_opts(int argc, char **argv, struct run_opts *o)
{
	int i;
	memset(o, 0, sizeof(*o));
	for (i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			i++;
			break;
		}
		if ((!strcmp(argv[i], "--dir") || !strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) &&
		    has_value(argc, argv, i))
			o->dir = argv[++i];
		else if (!strcmp(argv[i], "--buffer-mb") && has_value(argc, argv, i))
			o->buffer = argv[++i];
		else if (!strcmp(argv[i], "--cupti") && has_value(argc, argv, i))
			o->cupti = argv[++i];
		else if (!strcmp(argv[i], "--host-alloc") && has_value(argc, argv, i))
			o->host = argv[++i];
		else if (!strcmp(argv[i], "--no-report"))
			o->no_report = 1;
		else if (argv[i][0] == '-')
			return gs_bad_option("run", argv[i], "--dir -o --output --buffer-mb --cupti --host-alloc");
		else
			break; /* the command starts here */
	}
	o->cmd = i;
	if (i >= argc) {
		fprintf(stderr, "gpuspy: error: run: no command given; usage: gpuspy run [options] -- CMD ARGS...\n");
		return 2;
	}
	const char *cupti = o->cupti, *host = o->host, *buffer = o->buffer;
	if (cupti && strcmp(cupti, "auto") && strcmp(cupti, "on") && strcmp(cupti, "off") &&
	    strcmp(cupti, "events")) {
		fprintf(stderr, "gpuspy: error: run: --cupti %s: use auto, on, off or events\n", cupti);
		return 2;
	}
	char *end;
	if (host) {
		unsigned long long x = strtoull(host, &end, 10);
		if (*end && strchr("KkMmGg", *end))
			end++;
		if (x == 0 || *end || host[0] < '0' || host[0] > '9') {
			fprintf(stderr, "gpuspy: error: run: --host-alloc %s is not a size in bytes (suffix K, M or G)\n",
				host);
			return 2;
		}
	}
	if (buffer) {
		unsigned long long mb = strtoull(buffer, &end, 10);
		if (*end || buffer[0] < '0' || buffer[0] > '9' || mb < 1 || mb > GSPY_BUFFER_MB_MAX) {
			fprintf(stderr, "gpuspy: error: run: --buffer-mb %s is not a size in MiB (1..%u)\n", buffer,
				GSPY_BUFFER_MB_MAX);
			return 2;
		}
	}
	return 0;
}

/* The trace directory made or found, and the user's own: 0, or 1 with the
 * reason said. *made: it was made here (removed again if left empty). */
static int trace_dir(const char *dir, int *made)
{
	struct stat dst;
	*made = lstat(dir, &dst) != 0;
	if (mkdir_p(dir) != 0) {
		if (errno == EEXIST || errno == 0)
			errno = ENOTDIR;
		fprintf(stderr, "gpuspy: error: %s: cannot create the trace directory: %s\n", dir, strerror(errno));
		return 1;
	}
	/* The default name is anybody's to guess and make first, in a shared
	 * directory such as /tmp, and --dir may name one made by someone else:
	 * whoever may write into it could read, swap or plant the traces
	 * (and the report run prints from them). Such a directory is refused,
	 * rather than quietly traced into somewhere else: the user asked for
	 * that name (or the default), and learns why it cannot be used. */
	int own = gs_dir_own(dir, &dst);
	if (!own)
		return 0;
	char why[96];
	if (own == -ELOOP)
		snprintf(why, sizeof(why), "is a symbolic link; give the directory itself");
	else if (own == -EPERM)
		snprintf(why, sizeof(why), "belongs to another user (uid %u); use a directory of your own",
			 (unsigned)dst.st_uid);
	else if (own == -EACCES)
		snprintf(why, sizeof(why), "is writable by others and not sticky; use one only you can write to");
	else
		snprintf(why, sizeof(why), "cannot be used: %s", strerror(-own));
	fprintf(stderr, "gpuspy: error: %s: the trace directory %s (--dir)\n", dir, why);
	return 1;
}

/* CMD run with the environment set, its signals forwarded; its exit status
 * as a shell gives it (128 + signal). */
static int spawn(char **cmd)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = forward;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT };
	struct sigaction saved[8];
	/* Installed before the fork, and held blocked until the child's pid is
	 * known: a signal that arrives in between waits, then is passed on
	 * (unblocked with child still 0, the handler would drop it). */
	sigset_t fwd, old_mask;
	sigemptyset(&fwd);
	for (size_t k = 0; k < 8; k++) {
		sigaction(sigs[k], &sa, &saved[k]);
		sigaddset(&fwd, sigs[k]);
	}
	sigprocmask(SIG_BLOCK, &fwd, &old_mask);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "gpuspy: error: run: fork failed: %s\n", strerror(errno));
		sigprocmask(SIG_SETMASK, &old_mask, NULL);
		return 1;
	}
	if (pid == 0) {
		for (size_t k = 0; k < 8; k++)
			sigaction(sigs[k], &saved[k], NULL);
		sigprocmask(SIG_SETMASK, &old_mask, NULL);
		execvp(cmd[0], cmd);
		fprintf(stderr, "gpuspy: error: %s: cannot run: %s\n", cmd[0], strerror(errno));
		_exit(127);
	}
	child = pid;
	sigprocmask(SIG_SETMASK, &old_mask, NULL);
	/* Wait for the exit without reaping: until the pid is forgotten, a
	 * forwarded signal reaches the zombie, never a process that reused the
	 * pid. */
	siginfo_t info;
	while (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT) < 0 && errno == EINTR)
		;
	child = 0;
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
}

static void names_free(struct names *s)
{
	for (size_t k = 0; k < s->n; k++)
		free(s->v[k]);
	free(s->v);
}

/* Copies n bytes of fd from `from` down to `to`, ranges apart; 0 when all were. */
static int move_down(int fd, uint64_t from, uint64_t to, uint64_t n)
{
	char buf[1 << 16];
	for (uint64_t k = 0; k < n;) {
		size_t m = n - k < sizeof(buf) ? (size_t)(n - k) : sizeof(buf);
		if (pread(fd, buf, m, (off_t)(from + k)) != (ssize_t)m || pwrite(fd, buf, m, (off_t)(to + k)) != (ssize_t)m)
			return -1;
		k += m;
	}
	return 0;
}

/*
 * A trace whose process has ended without trimming it (killed, Ctrl-C, a
 * crash, _exit: marked exited with its status, untrimmed) keeps its whole reserved buffer on disk (GPUSPY_BUFFER_MB) and
 * its whole string table. run saw its children end, so it cuts each such
 * file as the library does at a clean exit: format 3 (the string table
 * last) has the table's used bytes moved down to right after the chunks
 * in use (unless they would overlap where they are), then the header
 * says so (count, claims, table, size), then the file ends there, cut by
 * its own descriptor (never through a link); format 2 (the table first)
 * is cut to its chunks in use and the table's unused tail gives its
 * blocks back. A flight recorder's file reuses its chunks and stays
 * whole; a trace whose process still runs (a daemon the command left
 * behind) is left alone: its library holds a shared lock on the file for
 * as long as it writes it, so a file run cannot lock alone is never cut,
 * whatever its header's pid names (a pid in another pid namespace, or one
 * reused). A header that does not hold together is not used at all.
 */
static void trim_ended(const char *path)
{
	int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return;
	struct stat st;
	struct gspy_header h;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    flock(fd, LOCK_EX | LOCK_NB) != 0 ||
	    pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) || memcmp(h.magic, GSPY_MAGIC, 8) != 0 ||
	    h.ring || (h.state == GSPY_STATE_EXITED && h.exit_code < 0) || (kill((pid_t)h.pid, 0) == 0 || errno != ESRCH) ||
	    !gs_header_sane(&h) || h.strtab_used > h.strtab_size || h.file_size != (uint64_t)st.st_size) {
		close(fd);
		return;
	}
	uint32_t claimed = h.chunks_claimed < h.chunk_count ? h.chunks_claimed : h.chunk_count;
	uint64_t chunks_end = h.chunk_offset + (uint64_t)claimed * h.chunk_size, size = chunks_end;
	uint64_t hole = (h.strtab_offset + h.strtab_used + 4095) & ~4095ull, hole_end = h.chunk_offset;
	if (h.version >= 3) {
		uint64_t at = chunks_end + h.strtab_used <= h.strtab_offset ? chunks_end : h.strtab_offset;
		size = at + h.strtab_used;
		if (size >= (uint64_t)st.st_size ||
		    (at != h.strtab_offset && move_down(fd, h.strtab_offset, at, h.strtab_used) != 0)) {
			close(fd);
			return;
		}
		hole = chunks_end; /* the chunks left before a table that stayed */
		hole_end = at;
		h.strtab_offset = at;
		h.strtab_size = h.strtab_used;
	} else if (size >= (uint64_t)st.st_size) {
		close(fd);
		return;
	}
	/* past the end: anything claimed now is a drop */
	h.chunks_claimed = h.chunks_claimed > UINT32_MAX - h.chunk_count ? UINT32_MAX : h.chunks_claimed + h.chunk_count;
	h.chunk_count = claimed;
	h.file_size = size;
	if (pwrite(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) && ftruncate(fd, (off_t)size) == 0 && hole < hole_end)
		(void)fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)hole, (off_t)(hole_end - hole));
	close(fd);
}

/* After CMD: the traces it wrote into dir (those not in before), said and
 * reported (report NULL: --no-report), gpuspy's messages about them first;
 * a directory made for the run goes again if nothing is in it. */
static void after_run(const char *dir, const struct names *before, int made, const char *cmd,
		      int (*report)(int, char **), struct relay *rl)
{
	struct names after = { 0 };
	list_traces(dir, &after);
	char **paths = calloc(after.n + 1, sizeof(*paths));
	int np = 0;
	for (size_t k = 0; paths && k < after.n; k++)
		if (!seen(before, after.v[k])) {
			/* --dir -x: "./-x/...", so that report takes it for a
			 * trace, not an option. */
			const char *dot = dir[0] == '-' ? "./" : "";
			size_t l = strlen(dot) + strlen(dir) + strlen(after.v[k]) + 2;
			paths[np] = malloc(l);
			if (paths[np]) {
				snprintf(paths[np], l, "%s%s/%s", dot, dir, after.v[k]);
				trim_ended(paths[np]);
				np++;
			}
		}
	fflush(NULL);
	gs_relay(rl, paths, np);
	if (!np) {
		int gone = made && rmdir(dir) == 0;
		/* gpuspy said something: a trace it could not make, say, not
		 * necessarily that CMD made no CUDA call. */
		if (rl->said)
			fprintf(stderr, "gpuspy: %s left no trace%s%s: gpuspy's messages above say why\n", cmd,
				gone ? "" : " in ", gone ? "" : dir);
		else if (gone)
			fprintf(stderr, "gpuspy: %s made no CUDA call that gpuspy saw; no trace written\n", cmd);
		else
			fprintf(stderr, "gpuspy: %s made no CUDA call that gpuspy saw; no trace in %s\n", cmd, dir);
	} else {
		fprintf(stderr, "gpuspy: %d trace file%s in %s\n", np, np == 1 ? "" : "s", dir);
		if (report)
			report(np, paths);
	}
	for (int k = 0; k < np; k++)
		free(paths[k]);
	free(paths);
	names_free(&after);
}

/* ./gpuspy-latest names the newest default run directory: a link made
 * beside it under a fresh name and renamed over the old one, and only
 * over a link (never over a file or directory someone put there). */
static void latest_link(const char *dir)
{
	struct stat st;
	if (lstat("gpuspy-latest", &st) == 0 && !S_ISLNK(st.st_mode)) {
		fprintf(stderr, "gpuspy: ./gpuspy-latest is not a link gpuspy made; left as it is, not pointed at %s\n",
			dir);
		return;
	}
	char tmp[64];
	snprintf(tmp, sizeof(tmp), ".gpuspy-latest.%d", (int)getpid());
	if (symlink(dir, tmp) == 0 && rename(tmp, "gpuspy-latest") != 0)
		unlink(tmp);
}

/* The default trace directory, made here: gpuspy-YYYYMMDD-HHMMSS, or -2
 * and on where that is taken. A directory of this run's own: two runs
 * started in the same second (a launcher's ranks) shared one, and each
 * reported the other's processes as its own. 0, or 1 with the reason said. */
static int new_run_dir(char *out, size_t cap)
{
	char base[64];
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	strftime(base, sizeof(base), "gpuspy-%Y%m%d-%H%M%S", &tm);
	int k = 1, rc;
	snprintf(out, cap, "%s", base);
	while ((rc = mkdir(out, 0700)) != 0 && errno == EEXIST && k < 1000)
		snprintf(out, cap, "%s-%d", base, ++k);
	if (rc != 0)
		fprintf(stderr, "gpuspy: error: %s: cannot create the trace directory: %s\n", out, strerror(errno));
	return rc != 0;
}

/* What run relays (struct relay): nothing with GPUSPY_QUIET=1; not the
 * notes again when the user asked for them live (GPUSPY_LOG=stderr). Where
 * the user chose no log (GPUSPY_LOG unset), the library's goes to a file
 * of run's own in the trace directory (made here, only by run), for the
 * messages that reach no trace. */
static void relay_setup(struct relay *rl, const char *dir, char *path, size_t cap)
{
	const char *q = getenv("GPUSPY_QUIET"), *user = getenv("GPUSPY_LOG");
	if (gs_opt_parse(&gs_opt_defs[GS_OPT_QUIET], q).u)
		return;
	rl->traces = !user || strcmp(user, "stderr") != 0;
	if (user)
		return;
	snprintf(path, cap, "%s/gpuspy-run-%d.log", dir, (int)getpid());
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	close(fd);
	setenv("GPUSPY_LOG", path, 1);
	rl->log = path;
}

int gs_cmd_run(int argc, char **argv, int (*report)(int, char **))
{
	struct run_opts o;
	int bad = parse_opts(argc, argv, &o);
	if (bad)
		return bad;
	const char *dir = o.dir;
	char lib[PATH_MAX];
	if (gs_run_find_lib(lib, sizeof(lib)) != 0) {
		fprintf(stderr, "gpuspy: error: %s: libgpuspy not found; build it (make) or set GPUSPY_LIB\n", lib);
		return 1;
	}
	if (strpbrk(lib, " \t:")) { /* the loader splits LD_PRELOAD there, and traces nothing */
		fprintf(stderr, "gpuspy: error: %s: LD_PRELOAD cannot name a path with a space, tab or colon; set "
			"GPUSPY_LIB to a copy of libgpuspy.so elsewhere\n", lib);
		return 1;
	}
	/* Host allocations need the allocator's names, which only
	 * libgpuspy-host.so (beside libgpuspy) defines. */
	if (o.host)
		setenv("GPUSPY_HOST_ALLOC_MIN", o.host, 1);
	const char *want_host = getenv("GPUSPY_HOST_ALLOC_MIN");
	char hostlib[PATH_MAX + 32] = "";
	if (want_host && *want_host) {
		char *slash = strrchr(lib, '/');
		snprintf(hostlib, sizeof(hostlib), "%.*s%slibgpuspy-host.so", slash ? (int)(slash - lib) : 0,
			 lib, slash ? "/" : "");
		if (!exists(hostlib)) {
			fprintf(stderr, "gpuspy: error: %s: not found (GPUSPY_HOST_ALLOC_MIN needs it beside "
				"libgpuspy); build it (make)\n", hostlib);
			return 1;
		}
	}
	char defdir[80];
	int made = 1;
	if (!dir ? new_run_dir(defdir, sizeof(defdir)) : trace_dir(dir, &made))
		return 1;
	if (!dir)
		dir = defdir;
	struct names before = { 0 };
	list_traces(dir, &before);

	const char *old = getenv("LD_PRELOAD");
	size_t n = strlen(lib) + strlen(hostlib) + (old ? strlen(old) : 0) + 3;
	char *preload = malloc(n);
	if (!preload)
		return 1;
	snprintf(preload, n, "%s%s%s%s%s", lib, *hostlib ? ":" : "", hostlib, old && *old ? ":" : "",
		 old && *old ? old : "");
	setenv("LD_PRELOAD", preload, 1);
	/* Absolute: a traced process that changes directory still writes
	 * where run looks afterwards. */
	char absdir[PATH_MAX];
	setenv("GPUSPY_DIR", realpath(dir, absdir) ? absdir : dir, 1);
	if (o.buffer)
		setenv("GPUSPY_BUFFER_MB", o.buffer, 1);
	if (o.cupti)
		setenv("GPUSPY_CUPTI", o.cupti, 1);
	struct relay rl = { 0 };
	char logpath[PATH_MAX + 64];
	relay_setup(&rl, getenv("GPUSPY_DIR"), logpath, sizeof(logpath));
	fflush(NULL);
	int code = spawn(argv + o.cmd);
	unsetenv("LD_PRELOAD");

	after_run(dir, &before, made, argv[o.cmd], o.no_report ? NULL : report, &rl);
	if (dir == defdir && access(dir, F_OK) == 0)
		latest_link(dir);
	names_free(&before);
	free(preload);
	return code;
}
