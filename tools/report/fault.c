/* SPDX-License-Identifier: MIT */
/*
 * The post-mortem's first fact: the GPU kernel that faulted, where, and
 * the calls that failed after it, in the process's header lines and as
 * --json's `fault` (docs/commands.md).
 *
 * A kernel's fault (a device-side assert, an illegal address) makes its
 * context's error sticky: the next call that waits for the GPU, and every
 * call after it, fail with one code (gspy_result_sticky). The GPU side
 * seldom says which kernel it was: after a fault CUPTI hands the context's
 * records back without times, those of kernels that ended long before too
 * (the H200 did). The host side does: a kernel launched after the last
 * call that synchronized before the first failure, and before it. One
 * launch there: that kernel. Several: one of them, which no trace can
 * tell (docs/limitations.md); the last is named, with their number.
 * A GPU record that started and never ended names it instead, when it is
 * one of those launches. Without a sticky failure such a record is GPU
 * work still running at exit, said without alarm.
 */
#include <stdlib.h>
#include <string.h>

#include "report/pass.h"
#include "report/section.h"
#include "report/sites.h"
#include "util/cuda_errors.h"
#include "util/units.h"
#include "util/xalloc.h"
#include "util/escape.h"

#define SITED 256  /* the latest launches with a stack (GPUSPY_STACK_LAUNCHES samples them) */
#define UNENDED 16 /* the first GPU records that never ended */
#define SITES 16   /* the first threads' marks of their launch before the fault */

struct launch {
	uint64_t corr, start;
	uint32_t stack_id, tid;
	char name[160];
};

enum { FAULT_NONE, FAULT_RUNNING, FAULT_KERNEL };

/* The launches of one stream since it last synchronized. */
struct lane {
	uint64_t stream, n;
	struct launch first, last;
};
#define LANES 64 /* streams followed apart; the rest share the last lane */

struct gs_fault {
	/* The pass: each stream's launches since a call that synchronized it
	 * (a device's synchronize: all of them); at the first sticky failure,
	 * all of them together: the candidates. */
	struct lane lane[LANES];
	unsigned nlanes;
	uint64_t n;
	struct launch first, last;
	struct { uint64_t corr; uint32_t stack_id; } sited[SITED];
	uint64_t nsited;
	/* The library's marks of the last launch of a thread whose call then
	 * failed with a sticky error: its Python frames (GSPY_MARK_FAULT_SITE). */
	struct { uint64_t start; uint32_t tid, stack_id; } site[SITES];
	unsigned nsite;
	int sticky;                 /* a call failed with a sticky error */
	char api[48];               /* the first that did, its code and stack */
	int code;
	uint32_t fail_stack, fail_tid;
	uint64_t fail_start, fail_end;
	char fail_kernel[160];      /* ... and its kernel, when it was a launch */
	uint64_t failed;            /* calls failed from it on, it included */
	uint32_t last_tid;          /* the last failed call: its thread and times */
	uint64_t last_start, last_end;
	/* The first GPU records that started (inside the trace) and never
	 * ended; the calls failed after the first's start. */
	struct unended { uint64_t corr, start; char name[160]; } gpu[UNENDED];
	unsigned ngpu;
	uint64_t gpu_failed;
	const struct unended *named; /* the finish's: the one that names the kernel */
	/* What the finish made of them. */
	int what;                   /* FAULT_* */
	const char *found;          /* how the kernel was found */
	char kernel[160];           /* "" unknown */
	char launched_at[240], surfaced_at[240]; /* "" unknown */
};

static struct gs_fault *state(struct gs_report *r)
{
	if (!r->fault)
		r->fault = xcalloc(1, sizeof(*r->fault));
	return r->fault;
}

static void name_of(char *out, size_t cap, const struct gs_ev *ev)
{
	snprintf(out, cap, "%s", ev->name && *ev->name ? ev->name
				 : gspy_api_graph_launch(ev->api) ? "(a CUDA graph)" : "(unnamed)");
}

/* What a call that returned only once the GPU's earlier work was done
 * waited for: SYNC_DEVICE (a device's synchronize), SYNC_STREAM (a
 * stream's synchronize, or a copy to host memory that is no async one:
 * its stream's work), else SYNC_NONE: a stream's wait on an event is the
 * GPU's, a copy from the host may return before the GPU ran what came
 * before it, and an event's synchronize waits for a stream the trace does
 * not name (kept as not waiting: a candidate too many, never one too
 * few). */
enum { SYNC_NONE, SYNC_STREAM, SYNC_DEVICE };
static int synchronizes(const struct gs_ev *ev)
{
	if (ev->kind == GSPY_KIND_sync && !ev->async) {
		switch (ev->api) {
		case GSPY_API_cuCtxSynchronize:
		case GSPY_API_cuCtxSynchronize_v2:
		case GSPY_API_cudaDeviceSynchronize:
			return SYNC_DEVICE;
		case GSPY_API_cuEventSynchronize:
		case GSPY_API_cudaEventSynchronize:
			return SYNC_NONE;
		}
		return SYNC_STREAM;
	}
	return ev->kind == GSPY_KIND_copy && !ev->async && ev->dir == GSPY_DIR_d2h ? SYNC_STREAM : SYNC_NONE;
}

static struct lane *lane_of(struct gs_fault *f, uint64_t stream)
{
	for (unsigned i = 0; i < f->nlanes; i++)
		if (f->lane[i].stream == stream)
			return &f->lane[i];
	if (f->nlanes == LANES)
		return &f->lane[LANES - 1];
	f->lane[f->nlanes].stream = stream;
	return &f->lane[f->nlanes++];
}

/* At the first sticky failure: every stream's launches since it last
 * synchronized, the first and the last of them all (by launch order). */
static void gather(struct gs_fault *f)
{
	f->n = 0;
	for (unsigned i = 0; i < f->nlanes; i++) {
		const struct lane *l = &f->lane[i];
		if (!l->n)
			continue;
		if (!f->n || l->first.corr < f->first.corr)
			f->first = l->first;
		if (!f->n || l->last.corr > f->last.corr)
			f->last = l->last;
		f->n += l->n;
	}
}

/* The first call that failed with a sticky error; a call of its thread
 * that encloses it (a runtime call around the driver call it made, which
 * ended first) takes its place: it is the one the program made. */
static void first_failure(struct gs_fault *f, const struct gs_ev *ev)
{
	f->fail_tid = ev->tid;
	f->fail_start = ev->start_ns;
	f->fail_end = ev->end_ns;
	snprintf(f->api, sizeof(f->api), "%s", gs_api_name(ev->api));
	f->code = ev->result;
	f->fail_stack = ev->stack_id ? ev->stack_id : f->fail_stack;
	*f->fail_kernel = 0;
	if (ev->kind == GSPY_KIND_launch && !gspy_api_host_func(ev->api))
		name_of(f->fail_kernel, sizeof(f->fail_kernel), ev);
}

static void failed(struct gs_fault *f, const struct gs_ev *ev)
{
	/* A runtime call around the failed driver call it made is the same
	 * failure, not another (it ends after it, so comes after it). */
	int same = ev->tid == f->last_tid && ev->start_ns <= f->last_start && ev->end_ns >= f->last_end;
	f->last_tid = ev->tid;
	f->last_start = ev->start_ns;
	f->last_end = ev->end_ns;
	if (f->ngpu && ev->start_ns >= f->gpu[0].start && !same)
		f->gpu_failed++;
	if (f->sticky) {
		f->failed += !same;
		if (ev->tid == f->fail_tid && ev->start_ns <= f->fail_start && ev->end_ns >= f->fail_end &&
		    gspy_result_sticky(ev->result))
			first_failure(f, ev);
	} else if (gspy_result_sticky(ev->result)) {
		f->sticky = 1;
		f->failed = 1;
		gather(f);
		first_failure(f, ev);
	}
}

void gs_fault_event(struct gs_pass *p, unsigned feed, const struct gs_ev *ev, size_t phase)
{
	(void)phase;
	struct gs_fault *f = state(p->r);
	if (feed == GS_FEED_GPU) {
		/* One that started before the trace did is no fact (the H200's
		 * CUPTI gave one, after a fault, a start from nowhere). */
		if (ev->result == GSPY_GPU_UNFINISHED && f->ngpu < UNENDED && ev->start_ns >= p->r->t_first) {
			struct unended *u = &f->gpu[f->ngpu++];
			u->corr = ev->corr;
			u->start = ev->start_ns;
			name_of(u->name, sizeof(u->name), ev);
		}
		return;
	}
	if (ev->result) {
		failed(f, ev);
		return;
	}
	if (ev->kind == GSPY_KIND_launch && ev->stack_id) {
		__typeof__(f->sited[0]) *s = &f->sited[f->nsited++ % SITED];
		s->corr = ev->corr;
		s->stack_id = ev->stack_id;
	}
	if (f->sticky)
		return;
	int sync = synchronizes(ev);
	if (sync == SYNC_DEVICE) {
		for (unsigned i = 0; i < f->nlanes; i++)
			f->lane[i].n = 0;
	} else if (sync == SYNC_STREAM) {
		struct lane *ln = lane_of(f, ev->stream);
		if (ln->stream == ev->stream) /* not the lane the streams past LANES share */
			ln->n = 0;
	} else if (ev->kind == GSPY_KIND_launch && !gspy_api_host_func(ev->api)) {
		struct lane *ln = lane_of(f, ev->stream);
		struct launch *l = ln->n++ ? &ln->last : &ln->first;
		l->corr = ev->corr;
		l->stack_id = ev->stack_id;
		l->tid = ev->tid;
		l->start = ev->start_ns;
		name_of(l->name, sizeof(l->name), ev);
		if (l == &ln->first)
			ln->last = ln->first;
	}
}

/* The stack of the launch with correlation id corr, among the latest with one. */
static uint32_t launch_stack(const struct gs_fault *f, uint64_t corr)
{
	uint64_t n = f->nsited < SITED ? f->nsited : SITED;
	for (uint64_t i = 0; corr && i < n; i++)
		if (f->sited[i].corr == corr)
			return f->sited[i].stack_id;
	return 0;
}

void gs_fault_mark(struct gs_pass *p, const struct gs_ev *ev)
{
	if (!ev->name || strcmp(ev->name, GSPY_MARK_FAULT_SITE) || !ev->stack_id)
		return;
	struct gs_fault *f = state(p->r);
	if (f->nsite < SITES) {
		f->site[f->nsite].start = ev->start_ns;
		f->site[f->nsite].tid = ev->tid;
		f->site[f->nsite++].stack_id = ev->stack_id;
	}
}

/* Launch l's stack: its own, else the mark of it its thread left. */
static uint32_t site_of(const struct gs_fault *f, const struct launch *l)
{
	for (unsigned i = 0; !l->stack_id && i < f->nsite; i++)
		if (f->site[i].tid == l->tid && f->site[i].start == l->start)
			return f->site[i].stack_id;
	return l->stack_id;
}

/* The GPU record that never ended of one of the candidates' launches
 * (their correlation ids run from the first's to the last's), or NULL. */
static const struct unended *candidate_record(const struct gs_fault *f)
{
	for (unsigned i = 0; f->n && i < f->ngpu; i++)
		if (f->gpu[i].corr && f->gpu[i].corr >= f->first.corr && f->gpu[i].corr <= f->last.corr)
			return &f->gpu[i];
	return NULL;
}

void gs_fault_finish(struct gs_pass *p)
{
	struct gs_fault *f = p->r->fault;
	if (!f)
		return;
	uint32_t launch = 0;
	if (f->sticky) {
		f->what = FAULT_KERNEL;
		gs_sites_own_line(&p->r->sites, p->in, f->fail_stack, f->surfaced_at, sizeof(f->surfaced_at));
		if ((f->named = candidate_record(f))) {
			f->found = "gpu record";
			snprintf(f->kernel, sizeof(f->kernel), "%s", f->named->name);
			launch = launch_stack(f, f->named->corr);
			if (!launch && f->named->corr == f->last.corr)
				launch = site_of(f, &f->last);
		} else if (f->n) {
			f->found = "last launch before the first failed call";
			snprintf(f->kernel, sizeof(f->kernel), "%s", f->last.name);
			launch = site_of(f, &f->last);
		} else if (*f->fail_kernel) { /* CUDA_LAUNCH_BLOCKING=1, most likely */
			f->found = "the first failed call";
			snprintf(f->kernel, sizeof(f->kernel), "%s", f->fail_kernel);
			launch = f->fail_stack;
		} else {
			f->found = "none";
		}
	} else if (f->ngpu) {
		f->what = FAULT_RUNNING;
		f->found = "gpu record";
		f->named = &f->gpu[0];
		snprintf(f->kernel, sizeof(f->kernel), "%s", f->named->name);
		launch = launch_stack(f, f->named->corr);
	}
	gs_sites_own_line(&p->r->sites, p->in, launch, f->launched_at, sizeof(f->launched_at));
}

void gs_fault_free(struct gs_report *r)
{
	free(r->fault);
	r->fault = NULL;
}

/* What a sticky code says the kernel did. */
static const char *cause(int code)
{
	switch (code) {
	case 700: return "an illegal address";
	case 702: return "a launch timeout";
	case 710: return "a device-side assert";
	case 714: return "a hardware stack error";
	case 715: return "an illegal instruction";
	case 716: return "a misaligned address";
	case 717: return "an invalid address space";
	case 718: return "an invalid program counter";
	default: return "a launch failure";
	}
}

/* "error 710 (cudaErrorAssert) from cudaDeviceSynchronize, and 2 calls failed in all" */
static void failure(FILE *out, const struct gs_fault *f)
{
	char e[64];
	const char *name = gs_cuda_error(f->api, f->code, e, sizeof(e));
	fprintf(out, "error %d", f->code);
	if (name != e)
		fprintf(out, " (%s)", name);
	fprintf(out, " from %.40s, and %llu %s failed in all", f->api, (unsigned long long)f->failed,
		gs_pl(f->failed, "call", "calls"));
}

/* A kernel's name in a fault's line: the trace's bytes, on one line (a
 * newline in them would start a line that passes for the report's own),
 * its first 60 bytes. */
static const char *kn(char buf[4 * 60 + 1], const char *name)
{
	return gs_term_line(buf, 4 * 60 + 1, name, 60);
}

/* The fault's lines: the kernel (or the candidates), then where. */
static void print_kernel(FILE *out, const struct gs_fault *f, const struct gs_style *st)
{
	char k1[4 * 60 + 1], k2[4 * 60 + 1];
	int several = f->n > 1 && !f->named, known = *f->kernel && !several && strcmp(f->found, "the first failed call");
	if (*f->kernel)
		fprintf(out, "   %sGPU kernel %s%s faulted (%s): ", st->yellow, kn(k1, f->kernel),
			!several ? "" : f->n == 2 ? ", or the one launched before it," : ", or one launched before it,",
			cause(f->code));
	else
		fprintf(out, "   %sGPU fault (%s): ", st->yellow, cause(f->code));
	failure(out, f);
	fprintf(out, "%s\n", st->reset);
	if (several)
		fprintf(out, "     one of the %llu kernels launched since the last call that synchronized: the first "
			     "%s, the last %s\n", (unsigned long long)f->n, kn(k1, f->first.name), kn(k2, f->last.name));
	else if (!*f->kernel)
		fprintf(out, "     no kernel launch was recorded since the last call that synchronized: which kernel "
			     "faulted is not known\n");
	/* A launch that failed first: under CUDA_LAUNCH_BLOCKING=1 its kernel
	 * is the one; else the error came from an earlier one. */
	const char *hint = "";
	if (*f->fail_kernel && f->n)
		fprintf(out, "     the first failed call launched %s: with CUDA_LAUNCH_BLOCKING=1, that kernel "
			     "faulted\n", kn(k1, f->fail_kernel));
	else if (!*f->fail_kernel)
		hint = known ? "; CUDA_LAUNCH_BLOCKING=1 makes the launch itself fail"
			     : "; CUDA_LAUNCH_BLOCKING=1 makes the failing launch itself fail";
	if (*f->launched_at)
		fprintf(out, "     launched at %s\n", gs_tail_of(f->launched_at, 85));
	else if (*f->surfaced_at)
		fprintf(out, "     the error surfaced at %s%s\n", gs_tail_of(f->surfaced_at, 70), hint);
	else
		fprintf(out, "     no call stack says where%s\n", hint);
}

void gs_fault_print(FILE *out, const struct gs_report *r, const struct gs_style *st)
{
	const struct gs_fault *f = r->fault;
	char a[32], k[4 * 60 + 1];
	if (!f || f->what == FAULT_NONE)
		return;
	if (f->what == FAULT_KERNEL) {
		print_kernel(out, f, st);
		return;
	}
	fprintf(out, "   GPU kernel %s, started at %s, was still running at exit (no end recorded)\n", kn(k, f->kernel),
		gs_fmt_ns(a, f->named->start - r->t_first));
	if (*f->launched_at)
		fprintf(out, "     launched at %s\n", gs_tail_of(f->launched_at, 85));
}

void gs_fault_json(cJSON *o, const struct gs_report *r, const struct gs_style *st)
{
	(void)st;
	const struct gs_fault *f = r->fault;
	if (!f || f->what == FAULT_NONE)
		return;
	cJSON *x = cJSON_AddObjectToObject(o, "fault");
	if (*f->kernel)
		cJSON_AddStringToObject(x, "kernel", f->kernel);
	cJSON_AddStringToObject(x, "what", f->what == FAULT_KERNEL ? "fault" : "running at exit");
	cJSON_AddStringToObject(x, "found", f->found);
	if (f->named)
		cJSON_AddNumberToObject(x, "start_ns", (double)(f->named->start - r->t_first));
	if (*f->launched_at)
		cJSON_AddStringToObject(x, "launched_at", f->launched_at);
	if (f->what == FAULT_RUNNING) {
		cJSON_AddNumberToObject(x, "failed_after", (double)f->gpu_failed);
		return;
	}
	cJSON_AddStringToObject(x, "cause", cause(f->code));
	cJSON_AddNumberToObject(x, "candidates", (double)f->n);
	if (f->n > 1)
		cJSON_AddStringToObject(x, "first_candidate", f->first.name);
	if (*f->surfaced_at)
		cJSON_AddStringToObject(x, "surfaced_at", f->surfaced_at);
	cJSON_AddNumberToObject(x, "failed_after", (double)f->failed);
	cJSON_AddStringToObject(x, "first_failed_api", f->api);
	cJSON_AddNumberToObject(x, "first_failed_code", f->code);
	if (*f->fail_kernel)
		cJSON_AddStringToObject(x, "first_failed_launch", f->fail_kernel);
}
