/* SPDX-License-Identifier: MIT */
/*
 * Every GPUSPY_ environment variable, in one table (common/options.c): its
 * name, type, default, range or words, who reads it, and its one-line doc.
 * The library parses its rows once, at its first CUDA call or its
 * constructor (gs_options_read); a value it cannot read gets one warning
 * and the default. docs/environment.md's table is `gpuspy env --markdown`,
 * and `gpuspy env` shows the table with this environment's values (a test
 * keeps the two equal). Shared by the library and the tool: no library
 * state here.
 */
#ifndef GPUSPY_OPTIONS_H
#define GPUSPY_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

enum gs_opt_id {
	GS_OPT_QUIET, /* first: it and the log decide where the others' warnings go */
	GS_OPT_LOG,
	GS_OPT_DISABLE,
	GS_OPT_DIR,
	GS_OPT_BUFFER_MB,
	GS_OPT_MODE,
	GS_OPT_START,
	GS_OPT_CLOCK,
	GS_OPT_CUPTI,
	GS_OPT_CUPTI_FLUSH,
	GS_OPT_DEBUG,
	GS_OPT_TORCH,
	GS_OPT_TORCH_LEARN_STEPS,
	GS_OPT_NVTX,
	GS_OPT_NVTX_DOMAINS,
	GS_OPT_NVTX_RANGES,
	GS_OPT_NVTX_NESTING,
	GS_OPT_NVTX_LIBRARY,
	GS_OPT_STACKS,
	GS_OPT_STACK_DEPTH,
	GS_OPT_STACK_LAUNCHES,
	GS_OPT_STACK_LAUNCH_PERIOD,
	GS_OPT_STACK_MIN,
	GS_OPT_PYTHON_FRAMES,
	GS_OPT_HOST_ALLOC_MIN,
	GS_OPT_NVML_MS,
	GS_OPT_LIB,
	GS_OPT_PYTHONPATH_ADDED,
	GS_OPT_PYTHONPATH_OLD,
	GS_OPT_N
};

enum gs_opt_type {
	GS_OPT_BOOL,     /* 1, on, yes, true / 0, off, no, false, any case: 1 or 0 */
	GS_OPT_UINT,     /* a whole number in lo..hi */
	GS_OPT_CHOICE,   /* one of words ("a|b|c"): its index */
	GS_OPT_FLAGS,    /* off or 0 alone: 0; else a comma list of words, 1 for
			  * words[0]: bit i for word i, bit 0 always */
	GS_OPT_DURATION, /* ns, or with ns, us, ms, s: nanoseconds */
	GS_OPT_BYTES,    /* bytes, or with K, M, G: bytes, in lo..hi */
	GS_OPT_STRING,   /* as given */
};

enum gs_opt_by { GS_BY_LIB, GS_BY_PYTHON, GS_BY_TOOL, GS_BY_INTERNAL };

struct gs_opt_def {
	const char *name;    /* GPUSPY_... */
	enum gs_opt_type type;
	enum gs_opt_by by;   /* who reads it */
	uint64_t dflt;       /* the parsed default (STRING: none) */
	const char *shown;   /* the default as the docs and warnings write it */
	uint64_t lo, hi;     /* UINT and BYTES */
	const char *words;   /* CHOICE and FLAGS */
	const char *what;    /* the warning: NAME=v is not WHAT; using SHOWN */
	const char *doc;     /* markdown, one paragraph */
};

extern const struct gs_opt_def gs_opt_defs[GS_OPT_N];

/* A parsed value: u for every type but STRING, s (the environment's own
 * string, or NULL when unset or empty) for STRING. */
struct gs_opt_val {
	uint64_t u;
	const char *s;
	unsigned set : 1; /* the variable is set and not empty */
	unsigned bad : 1; /* set, but not a value of its type: u is the default */
};

/* v as a value of d (v NULL or "" is unset: the default). */
struct gs_opt_val gs_opt_parse(const struct gs_opt_def *d, const char *v);

/* The warning for a bad value, "NAME=v is not WHAT; using SHOWN", into buf. */
void gs_opt_why(const struct gs_opt_def *d, const char *v, char *buf, size_t n);

#endif
