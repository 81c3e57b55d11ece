/* SPDX-License-Identifier: MIT */
/*
 * The table of every GPUSPY_ variable, and the one parser of their values
 * (see options.h). Pure: no library state, so that the tool links it too.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "options.h"

const struct gs_opt_def gs_opt_defs[GS_OPT_N] = {
	[GS_OPT_QUIET] = { "GPUSPY_QUIET", GS_OPT_BOOL, GS_BY_LIB, 0, "0", 0, 0, NULL, "1 or 0 (on or off)",
			   "`1`: gpuspy's messages go to no log (`GPUSPY_LOG`), and `gpuspy run` repeats none; "
			   "the trace still keeps them as its notes" },
	[GS_OPT_LOG] = { "GPUSPY_LOG", GS_OPT_STRING, GS_BY_LIB, 0, "(none)", 0, 0, NULL, NULL,
			 "where gpuspy's own messages go besides its trace, which keeps them as notes (the "
			 "report shows them): unset or empty, nowhere else (the program's stderr is left "
			 "alone); `stderr`: the program's stderr, a `gpuspy: ...` line each; a file's path: "
			 "each message appended to it as one `gpuspy[PID]: ...` line (a single write, so "
			 "the lines of several processes never mix), the file made with mode 0600 by the first message (a "
			 "relative path is taken from the directory the process started in); a path "
			 "that is a symbolic link or cannot be opened gives no log. `gpuspy run` sets it to a "
			 "file of its run directory and prints the lines after the program's output" },
	[GS_OPT_DISABLE] = { "GPUSPY_DISABLE", GS_OPT_BOOL, GS_BY_LIB, 0, "0", 0, 0, NULL, "1 or 0 (on or off)",
			     "`1`: pass every call through, record nothing" },
	[GS_OPT_DIR] = { "GPUSPY_DIR", GS_OPT_STRING, GS_BY_LIB, 0, ".", 0, 0, NULL, NULL,
			 "directory of the trace files; it must exist (gpuspy makes none: without it there is no trace, "
			 "and the reason goes only to `GPUSPY_LOG`, which `gpuspy run` sets and prints)" },
	[GS_OPT_BUFFER_MB] = { "GPUSPY_BUFFER_MB", GS_OPT_UINT, GS_BY_LIB, 256, "256", 1, 1048576, NULL,
			       "a size in MiB (1..1048576)",
			       "size of each process's event buffer (a packed record is 10-20 B: about 15-25 M "
			       "events)" },
	[GS_OPT_MODE] = { "GPUSPY_MODE", GS_OPT_CHOICE, GS_BY_LIB, 0, "drop", 0, 0, "drop|ring", "drop or ring",
			  "`drop`: when the buffer is full, count new events as dropped; `ring`: flight "
			  "recorder, keep the newest events and count the overwritten ones" },
	[GS_OPT_START] = { "GPUSPY_START", GS_OPT_CHOICE, GS_BY_LIB, 0, "on", 0, 0, "on|paused", "on or paused",
			   "`paused`: preloaded, but record nothing (nor start CUPTI) until `gpuspy start PID` "
			   "or `gpuspy record PID --for 30s` (see `commands.md`); the trace file is made at the "
			   "first CUDA call, where those find the process" },
	[GS_OPT_CLOCK] = { "GPUSPY_CLOCK", GS_OPT_CHOICE, GS_BY_LIB, 0, "auto", 0, 0, "auto|mono", "auto or mono",
			   "`auto`: the TSC where the kernel trusts it as its clock source; `mono` forces "
			   "`clock_gettime`" },
	[GS_OPT_CUPTI] = { "GPUSPY_CUPTI", GS_OPT_CHOICE, GS_BY_LIB, 0, "auto", 0, 0, "auto|on|off|events",
			   "auto, on, off or events",
			   "`on`, `off`, or `auto`: GPU timing through CUPTI when an NVIDIA driver is present; "
			   "`events`: no CUPTI, GPU time per phase from CUDA events at phase boundaries (see "
			   "`gpu-timing.md`)" },
	[GS_OPT_CUPTI_FLUSH] = { "GPUSPY_CUPTI_FLUSH", GS_OPT_UINT, GS_BY_LIB, 5, "5", 1, 3600, NULL,
				 "a number of seconds (1..3600)",
				 "with CUPTI, seconds between asking CUPTI for its completed records while the "
				 "program keeps launching; a second after it goes quiet they are asked for at "
				 "once. Fewer seconds lose less of a killed busy process, at a cost (see "
				 "`limitations.md`)" },
	[GS_OPT_DEBUG] = { "GPUSPY_DEBUG", GS_OPT_BOOL, GS_BY_LIB, 0, "0", 0, 0, NULL, "1 or 0 (on or off)",
			   "`1`: at exit, say how many entry points were handed out unwrapped (a note in the "
			   "trace, and a line of `GPUSPY_LOG`'s log)" },
	[GS_OPT_TORCH] = { "GPUSPY_TORCH", GS_OPT_BOOL, GS_BY_LIB, 1, "1", 0, 0, NULL, "1 or 0 (on or off)",
			   "`0`: no PyTorch phase hooks" },
	[GS_OPT_TORCH_LEARN_STEPS] = { "GPUSPY_TORCH_LEARN_STEPS", GS_OPT_UINT, GS_BY_PYTHON, 3, "3", 0,
				       UINT32_MAX, NULL, "a number (0 or more)",
				       "from each new pass over a DataLoader, the optimizer steps during which a "
				       "global module hook finds the modules that begin `forward`; after them "
				       "only those modules carry a hook (the global one costs 3% of the MLP "
				       "loop); `0`: keep the global hook. Once the program calls `torch.compile`: "
				       "no global hook and no more learning" },
	[GS_OPT_NVTX] = { "GPUSPY_NVTX", GS_OPT_BOOL, GS_BY_LIB, 1, "1", 0, 0, NULL, "1 or 0 (on or off)",
			  "`0`: NVTX ranges are not phases (and `NVTX_INJECTION64_PATH` is left alone)" },
	[GS_OPT_NVTX_DOMAINS] = { "GPUSPY_NVTX_DOMAINS", GS_OPT_STRING, GS_BY_LIB, 0, "all", 0, 0, NULL, NULL,
				  "comma-separated NVTX domains whose ranges become phases; `default` is the "
				  "default domain" },
	[GS_OPT_NVTX_RANGES] = { "GPUSPY_NVTX_RANGES", GS_OPT_STRING, GS_BY_LIB, 0, "all", 0, 0, NULL, NULL,
				 "comma-separated globs of range names that become phases" },
	[GS_OPT_NVTX_NESTING] = { "GPUSPY_NVTX_NESTING", GS_OPT_CHOICE, GS_BY_LIB, 0, "innermost", 0, 0,
				  "innermost|outermost", "innermost or outermost",
				  "`outermost`: only ranges opened at nesting depth 0 of their thread" },
	[GS_OPT_NVTX_LIBRARY] = { "GPUSPY_NVTX_LIBRARY", GS_OPT_CHOICE, GS_BY_LIB, 0, "outermost", 0, 0,
				  "outermost|all", "outermost or all",
				  "a library's own range (XLA's, cuDNN's, NCCL's, ...: the report counts them "
				  "apart) opened inside another library range is not recorded: XLA opens one "
				  "per thunk inside each module it runs, and recording them took the cost of "
				  "recording a JAX step from 1.7% to 4.7%; `all`: record them too" },
	[GS_OPT_STACKS] = { "GPUSPY_STACKS", GS_OPT_FLAGS, GS_BY_LIB, 1, "on", 0, 0, "on|all|glibc",
			    "off, nor a list of on, all and glibc",
			    "a comma-separated list: `on` (allocations, frees, pageable copies and waits carry "
			    "their call stack: what the report's call sites use); `all`: memsets and every "
			    "other copy too; `glibc`: unwind with glibc's `backtrace()` only; or `off`/`0` "
			    "alone: no call stacks. See `commands.md`, Call stacks" },
	[GS_OPT_STACK_DEPTH] = { "GPUSPY_STACK_DEPTH", GS_OPT_UINT, GS_BY_LIB, 32, "32", 1, 64, NULL,
				 "a number (1..64)", "native frames kept per stack" },
	[GS_OPT_STACK_LAUNCHES] = { "GPUSPY_STACK_LAUNCHES", GS_OPT_UINT, GS_BY_LIB, 0, "unset", 0, 1000000000, NULL,
				    "a number (0..1000000000)",
				    "`N`: one kernel launch in N (per thread) gets a stack, the first included, in place of "
				    "`GPUSPY_STACK_LAUNCH_PERIOD`'s sampling by time (unset); `0`: none" },
	[GS_OPT_STACK_LAUNCH_PERIOD] = { "GPUSPY_STACK_LAUNCH_PERIOD", GS_OPT_DURATION, GS_BY_LIB, 10000000, "10ms",
					 0, 0, NULL, "a duration (e.g. 10ms)",
					 "with `GPUSPY_STACK_LAUNCHES` unset: a thread's kernel launch gets a stack "
					 "when about this long (half to one and a half times it, at random) has passed "
					 "since its last one that got one, its first included: the line a launch-bound "
					 "step's diagnosis names, at a bounded cost (a stack through PyTorch or XLA "
					 "took 36-64 us on an H100: 0.2-0.5% of a launching thread's time); `0`: none" },
	[GS_OPT_STACK_MIN] = { "GPUSPY_STACK_MIN", GS_OPT_DURATION, GS_BY_LIB, 0, "waits: 10us", 0, 0, NULL,
			       "a duration (e.g. 20us)",
			       "a duration (`250` ns, or `20us`, `1ms`, `1s`): waits, memsets, copies that are "
			       "not pageable and sampled launches shorter than it keep no stack (nsys's "
			       "backtrace threshold); allocations, frees, pageable copies and calls that fail "
			       "after a kernel faulted always do; `0`: every call. Unset, waits shorter than "
			       "10 us keep none (the GPU was done) and the rest all do" },
	[GS_OPT_PYTHON_FRAMES] = { "GPUSPY_PYTHON_FRAMES", GS_OPT_BOOL, GS_BY_LIB, 1, "1", 0, 0, NULL,
				   "1 or 0 (on or off)",
				   "`0`: no Python frames in call stacks. On, a Python process's stacks carry its "
				   "Python functions and lines, also where a binding released the GIL (PyTorch's "
				   "do around each operation; CPython 3.11 and later, see `commands.md`)" },
	[GS_OPT_NVML_MS] = { "GPUSPY_NVML_MS", GS_OPT_UINT, GS_BY_LIB, 100, "100", 0, 60000, NULL,
			     "a number of milliseconds (0..60000)",
			     "milliseconds between NVML samples of each device the process uses "
			     "(utilization, memory, power, clocks and their throttle reasons, temperature, "
			     "PCIe); one process per device samples; `0`: off (see `telemetry.md`)" },
	[GS_OPT_HOST_ALLOC_MIN] = { "GPUSPY_HOST_ALLOC_MIN", GS_OPT_BYTES, GS_BY_LIB, 0, "off", 1, 1ull << 40, NULL,
				    "a size in bytes (suffix K, M or G)",
				    "record host allocations (`malloc`, `calloc`, `realloc`, `posix_memalign`, "
				    "`aligned_alloc`, `mmap`) of at least this size, e.g. `1M`, and their frees; "
				    "needs `libgpuspy-host.so` preloaded after `libgpuspy.so` (`gpuspy run` adds "
				    "it; without it gpuspy warns once and records none); blocks allocated before "
				    "the first CUDA call are written when it comes, if still live" },
	[GS_OPT_LIB] = { "GPUSPY_LIB", GS_OPT_STRING, GS_BY_TOOL, 0, "beside gpuspy", 0, 0, NULL, NULL,
			 "the library `gpuspy run` preloads, instead of the one next to it" },
	[GS_OPT_PYTHONPATH_ADDED] = { "GPUSPY_PYTHONPATH_ADDED", GS_OPT_STRING, GS_BY_INTERNAL, 0, "(internal)", 0, 0,
				      NULL, NULL,
				      "set by libgpuspy in a Python process: the directory it put on "
				      "`PYTHONPATH` for its `sitecustomize`, which takes it off again" },
	[GS_OPT_PYTHONPATH_OLD] = { "GPUSPY_PYTHONPATH_OLD", GS_OPT_STRING, GS_BY_INTERNAL, 0, "(internal)", 0, 0, NULL,
				    NULL,
				    "set by libgpuspy in a Python process where `PYTHONPATH` was set: its value, "
				    "which the `sitecustomize` puts back byte for byte (unset when it was not)" },
};

/* Which of the '|'-separated words w is (length n); -1 if none. */
static int word_index(const char *words, const char *w, size_t n)
{
	int i = 0;
	for (const char *p = words; *p; i++) {
		size_t k = strcspn(p, "|");
		if (k == n && !strncmp(p, w, n))
			return i;
		p += k + (p[k] == '|');
	}
	return -1;
}

static int parse_bool(const char *v, uint64_t *out)
{
	static const char *const yes[] = { "1", "on", "yes", "true" }, *const no[] = { "0", "off", "no", "false" };
	for (int i = 0; i < 4; i++) {
		if (!strcasecmp(v, yes[i]))
			return *out = 1, 0;
		if (!strcasecmp(v, no[i]))
			return *out = 0, 0;
	}
	return -1;
}

/* Digits, then (after unit) nothing: the number in *x and the unit's
 * multiplier in *mul (units: "" and each of the '|'-separated names, with
 * their multipliers). strtoull alone would take " 5", "+5" and "-5". */
static int parse_number(const char *v, const char *const *units, const uint64_t *muls, size_t nunits, uint64_t *out)
{
	if (*v < '0' || *v > '9')
		return -1;
	char *end;
	int e = errno; /* the library parses too: the program's errno stays */
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	int range = errno == ERANGE; /* past 2^64: not the largest number quietly */
	errno = e;
	if (range)
		return -1;
	for (size_t i = 0; i < nunits; i++)
		if (!strcmp(end, units[i])) {
			if (x > UINT64_MAX / muls[i])
				return -1;
			*out = x * muls[i];
			return 0;
		}
	return -1;
}

static int parse_flags(const char *words, const char *v, uint64_t *out)
{
	if (!strcmp(v, "0") || !strcmp(v, "off"))
		return *out = 0, 0;
	uint64_t bits = 1;
	for (const char *p = v;;) {
		size_t n = strcspn(p, ",");
		int i = n == 0 || (n == 1 && *p == '1') ? 0 : word_index(words, p, n); /* "on,,all" */
		if (i < 0)
			return -1; /* off goes alone: "off,all" is not a list */
		bits |= 1ull << i;
		if (!p[n])
			break;
		p += n + 1;
	}
	*out = bits;
	return 0;
}

struct gs_opt_val gs_opt_parse(const struct gs_opt_def *d, const char *v)
{
	struct gs_opt_val r = { .u = d->dflt };
	if (!v || !*v)
		return r;
	r.set = 1;
	uint64_t x = 0;
	int bad = 0;
	switch (d->type) {
	case GS_OPT_BOOL:
		bad = parse_bool(v, &x);
		break;
	case GS_OPT_UINT: {
		static const char *const none[] = { "" };
		static const uint64_t one[] = { 1 };
		bad = parse_number(v, none, one, 1, &x) || x < d->lo || x > d->hi;
		break;
	}
	case GS_OPT_DURATION: {
		static const char *const units[] = { "", "ns", "us", "ms", "s" };
		static const uint64_t ns[] = { 1, 1, 1000, 1000000, 1000000000 };
		bad = parse_number(v, units, ns, 5, &x);
		break;
	}
	case GS_OPT_BYTES: {
		static const char *const units[] = { "", "K", "k", "M", "m", "G", "g" };
		static const uint64_t b[] = { 1, 1 << 10, 1 << 10, 1 << 20, 1 << 20, 1 << 30, 1 << 30 };
		bad = parse_number(v, units, b, 7, &x) || x < d->lo || x > d->hi;
		break;
	}
	case GS_OPT_CHOICE: {
		int i = word_index(d->words, v, strlen(v));
		bad = i < 0;
		x = (uint64_t)i;
		break;
	}
	case GS_OPT_FLAGS:
		bad = parse_flags(d->words, v, &x);
		break;
	case GS_OPT_STRING:
		r.s = v;
		return r;
	}
	if (bad)
		r.bad = 1;
	else
		r.u = x;
	return r;
}

void gs_opt_why(const struct gs_opt_def *d, const char *v, char *buf, size_t n)
{
	snprintf(buf, n, "%s=%s is not %s; using %s", d->name, v, d->what ? d->what : "valid", d->shown);
}
