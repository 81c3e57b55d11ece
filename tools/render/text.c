/* SPDX-License-Identifier: MIT */
/*
 * `gpuspy report` output: the human report (fits 100 columns, units scaled,
 * colour only on a terminal); the --json summary is render/json.c. This
 * is the frame: the header, each process's lines, then its sections
 * (report/section.h) in the table's order; with several processes their
 * whole and the sections of all of them (the ranks); the diagnoses.
 */
#include <string.h>

#include "render/render.h"
#include "report/diag.h"
#include "report/report.h"
#include "report/section.h"
#include "util/escape.h"
#include "util/units.h"

int gs_report_all; /* --all: every phase and library range */

static const char *state_text(const struct gs_proc *p)
{
	static char by_exit[48];
	switch (p->state) {
	case GSPY_STATE_EXITED:
		if (p->exit_code < 0)
			return "exited cleanly";
		if (p->exit_code == 0 && !p->exit_signal)
			return "exited cleanly (_exit, status 0)";
		snprintf(by_exit, sizeof(by_exit), "exited by _exit, status %d", p->exit_code);
		return by_exit;
	case GSPY_STATE_SIGNALED: return "died of a signal";
	}
	return "did not exit cleanly (killed, crashed or still running)";
}

/* What gpuspy itself cost the program's threads: its records, estimated
 * at their cost measured in place, and its call stacks, timed. */
static void own_time(FILE *f, const struct gs_report *r)
{
	char a[32], b[32], c[32], d[32];
	uint64_t records, n = r->proc.stacks_taken, span = r->t_last - r->t_first;
	uint64_t own = gs_own_ns(r, &records);
	if (!records && !n)
		return;
	fprintf(f, "   gpuspy's own time: about %s", gs_fmt_ns(a, own));
	if (span && own <= span)
		fprintf(f, " (%.1f%% of the traced time)", 100.0 * (double)own / (double)span);
	else if (span) /* a short run: each thread's first stacks set the unwinder up */
		fprintf(f, " (more than the %s traced: a thread's first stacks set the unwinder up)", gs_fmt_ns(b, span));
	fprintf(f, "%s\n      %s %s at ~%s each (estimated)", r->gpu_records ? ", CUPTI's own cost aside" : "",
		gs_fmt_count(b, records), gs_pl(records, "record", "records"), gs_fmt_ns(c, GS_RECORD_COST_NS));
	if (n)
		fprintf(f, ", %s call %s at %s each", gs_fmt_count(d, n), gs_pl(n, "stack", "stacks"),
			gs_fmt_ns(a, (r->proc.stacks_ns + n / 2) / n));
	fprintf(f, "\n");
}

/* gpuspy's own messages about the process (an option it could not read,
 * CUPTI missing, ...), which it keeps in the trace rather than write on
 * the program's stderr. */
static void notes_print(FILE *f, const struct gs_report *r)
{
	uint64_t lost = r->proc.notes_lost;
	if (!*r->proc.notes && !lost)
		return;
	fprintf(f, "   gpuspy's notes:\n");
	for (const char *s = r->proc.notes, *nl; (nl = strchr(s, '\n')); s = nl + 1)
		fprintf(f, "     %.*s\n", (int)(nl - s), s);
	if (lost)
		fprintf(f, "     %llu more %s lost: the trace keeps %u bytes of notes\n", (unsigned long long)lost,
			gs_pl(lost, "note was", "notes were"), GSPY_NOTES_SIZE);
}

static void process_section(FILE *f, const struct gs_report *r, const struct gs_style *st)
{
	char a[32], b[32], c[32], cmd[4 * sizeof(r->proc.command)], host[4 * sizeof(r->proc.host)];
	/* The trace's bytes, each on its line: a newline in them would
	 * start a line that passes for the report's own. */
	fprintf(f, "\n%s== %s%s: %s\n", st->bold, r->label, st->reset,
		gs_term_line(cmd, sizeof(cmd), r->proc.command, SIZE_MAX));
	fprintf(f, "   host %s, %s%s%s, %s traced, %s %s, %s dropped\n",
		*r->proc.host ? gs_term_line(host, sizeof(host), r->proc.host, SIZE_MAX) : "(unknown)", state_text(&r->proc),
		r->framework != GS_FW_CUDA ? ", " : "", r->framework != GS_FW_CUDA ? gs_framework_names[r->framework] : "",
		gs_fmt_ns(a, r->t_last - r->t_first), gs_fmt_count(b, r->nevents), gs_pl(r->nevents, "event", "events"),
		gs_fmt_count(c, r->proc.dropped));
	gs_fault_print(f, r, st); /* what the user needs first, after a fault */
	if (!r->windows && r->proc.start_paused)
		fprintf(f, "   nothing recorded: it started paused (GPUSPY_START=paused) and was never started "
			   "(gpuspy start PID)\n");
	else if (r->windows > 1 || r->proc.start_paused) {
		fprintf(f, "   recorded in %u %s%s", r->windows, gs_pl(r->windows, "window", "windows"),
			r->proc.start_paused ? ", started paused (GPUSPY_START=paused)" : "");
		if (r->paused_ns)
			fprintf(f, "; the %s between them is left out of every figure", gs_fmt_ns(a, r->paused_ns));
		fprintf(f, "\n");
	}
	if (r->proc.state == GSPY_STATE_SIGNALED)
		fprintf(f, "   signal %d\n", r->proc.exit_signal);
	else if (r->proc.state != GSPY_STATE_EXITED && r->proc.exit_signal)
		fprintf(f, "   fatal signal %d was passed to the program's own handler; it did not exit cleanly\n",
			r->proc.exit_signal);
	else if (r->proc.exit_code >= 0 && r->proc.exit_signal) /* a crash handler that _exits */
		fprintf(f, "   %sfatal signal %d was passed to the program's own handler, which then called "
			   "_exit(%d)%s\n", st->yellow, r->proc.exit_signal, r->proc.exit_code, st->reset);
	if (r->proc.state != GSPY_STATE_EXITED || r->proc.truncated || r->input_error[0])
		fprintf(f, "   %strace incomplete%s: every complete event is included%s%s\n", st->yellow, st->reset,
			r->input_error[0] ? "; input stopped at " : "", r->input_error);
	if (r->proc.state != GSPY_STATE_EXITED && r->gpu_timing == GSPY_GPU_TIMING_cupti)
		fprintf(f, "   GPU records of its last seconds may be missing: CUPTI hands them over a "
			   "second after the program goes quiet, every GPUSPY_CUPTI_FLUSH seconds (default "
			   "5) while it launches\n");
	uint64_t late = r->proc.dropped_after_exit < r->proc.dropped ? r->proc.dropped_after_exit : r->proc.dropped;
	if (r->proc.dropped > late)
		fprintf(f, "   %s%llu %s dropped%s: the buffer was full; raise GPUSPY_BUFFER_MB\n", st->yellow,
			(unsigned long long)(r->proc.dropped - late), gs_pl(r->proc.dropped - late, "event was", "events were"),
			st->reset);
	if (late)
		fprintf(f, "   %llu %s not recorded: %s after gpuspy's exit handler had closed the trace "
			   "(other threads, or later destructors, still calling CUDA)\n",
			(unsigned long long)late, gs_pl(late, "event was", "events were"), gs_pl(late, "it came", "they came"));
	if (r->proc.host_unwritten)
		fprintf(f, "   %llu host %s before the first CUDA call not recorded: %s thread ended before "
			   "making one, or more than 4096 were live at once (not for want of buffer)\n",
			(unsigned long long)r->proc.host_unwritten,
			gs_pl(r->proc.host_unwritten, "allocation made", "allocations made"),
			gs_pl(r->proc.host_unwritten, "its", "their"));
	if (r->proc.nvtx_too_deep)
		fprintf(f, "   %llu NVTX %s not recorded: nested more than 4096 deep on %s thread (each range "
			   "recorded has its own end)\n",
			(unsigned long long)r->proc.nvtx_too_deep, gs_pl(r->proc.nvtx_too_deep, "range was", "ranges were"),
			gs_pl(r->proc.nvtx_too_deep, "its", "their"));
	if (r->proc.overwritten)
		fprintf(f, "   flight recorder: the %llu oldest events were overwritten; this is the newest part\n",
			(unsigned long long)r->proc.overwritten);
	notes_print(f, r);
	own_time(f, r);
	for (size_t i = 0; i < gs_nsections; i++)
		if (gs_sections[i].print)
			gs_sections[i].print(f, r, st);
}

/* Prints text wrapped at 100 columns, the first line after `first`, the
 * others indented by `indent` spaces. */
static void wrap(FILE *f, const char *first, int indent, const char *text, size_t len)
{
	int col = fprintf(f, "%s", first);
	size_t i = 0;
	while (i < len) {
		size_t w = i;
		while (w < len && text[w] != ' ')
			w++;
		int word = (int)(w - i);
		if (col + word + 1 > 100 && col > indent) {
			fprintf(f, "\n%*s", indent, "");
			col = indent;
		} else if (col > indent && i > 0) {
			fputc(' ', f);
			col++;
		}
		col += fprintf(f, "%.*s", word, text + i);
		i = w;
		while (i < len && text[i] == ' ')
			i++;
	}
	fputc('\n', f);
}

static void diagnoses(FILE *f, struct gs_report *const *procs, size_t n, const struct gs_style *st)
{
	size_t total = 0, context = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < procs[i]->ndiag; j++)
			procs[i]->diag[j].context ? context++ : total++;
	for (int ctx = 0; ctx <= (context ? 1 : 0); ctx++) {
	if (ctx)
		fprintf(f, "\n%sContext%s (what the telemetry saw; nothing to change for it)\n", st->bold, st->reset);
	else
		fprintf(f, "\n%sDiagnoses%s\n", st->bold, st->reset);
	if (!ctx && !total)
		fprintf(f, "  none: nothing in this trace matches a known problem\n");
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < procs[i]->ndiag; j++) {
			if (procs[i]->diag[j].context != ctx)
				continue;
			const char *t = procs[i]->diag[j].text;
			const char *nl = strchr(t, '\n');
			char first[96];
			snprintf(first, sizeof(first), "  %s*%s %s%s", st->yellow, st->reset,
				 n > 1 ? procs[i]->label : "", n > 1 ? ": " : "");
			wrap(f, first, 4, t, nl ? (size_t)(nl - t) : strlen(t));
			if (nl && !ctx) { /* the change to make */
				wrap(f, "    -> ", 7, nl + 1, strlen(nl + 1));
			} else if (nl) { /* context: no change to make, its lines go on */
				const char *c = nl + 1;
				while (*c == ' ')
					c++;
				wrap(f, "    ", 4, c, strlen(c));
			}
			char save[700];
			if (gs_diag_saving(&procs[i]->diag[j], save, sizeof(save)))
				wrap(f, "       ", 7, save, strlen(save));
		}
	}
}

void gs_report_print(FILE *f, struct gs_report *const *procs, size_t n,
		     const struct gs_report *whole, int color)
{
	struct gs_style style = {
		.bold = color ? "\033[1m" : "",
		.yellow = color ? "\033[33m" : "",
		.reset = color ? "\033[0m" : "",
		.gpu_mode = whole->gpu_timing == GSPY_GPU_TIMING_cupti,
		.events_mode = whole->gpu_timing == GSPY_GPU_TIMING_events,
		.all = gs_report_all,
	};
	const struct gs_style *st = &style;
	char a[32], b[32];
	fprintf(f, "%sgpuspy report%s: %zu process%s, %s %s, %s dropped\n", st->bold, st->reset, n,
		gs_pl(n, "", "es"), gs_fmt_count(a, whole->nevents), gs_pl(whole->nevents, "event", "events"),
		gs_fmt_count(b, whole->proc.dropped));
	if (st->events_mode)
		fprintf(f, "GPU time per phase comes from CUDA events at phase boundaries (GPUSPY_CUPTI=events):\n"
			   "a phase's GPU span on a stream runs from when the stream reached the phase's first GPU\n"
			   "call to when it finished the phase's work, gaps inside included. Other times are host-side.\n");
	else if (st->gpu_mode)
		fprintf(f, "GPU times come from CUPTI: when kernels, copies and memsets ran on the GPU; GPU work\n"
			   "belongs to the phase that launched it. Host times (launch, alloc, sync) are the calls.\n");
	else
		fprintf(f, "Times are host-side: when each call was made and how long it took to return. This trace\n"
			   "has no GPU timestamps, so kernel time is launch time and GPU idle is unknown (n/a).\n");
	int why = -1;
	for (size_t i = 0; i < n; i++)
		if (procs[i]->gpu_timing >= GSPY_GPU_TIMING_unavailable &&
		    procs[i]->gpu_timing <= GSPY_GPU_TIMING_failed)
			why = (int)procs[i]->gpu_timing;
	if (why == GSPY_GPU_TIMING_in_use)
		fprintf(f, "CUPTI was held by another tool (torch.profiler, Nsight...): it got the GPU data.\n");
	else if (why >= 0)
		fprintf(f, "CUPTI could not be used (%s): host timing only.\n", gs_gpu_timing_name((unsigned)why));
	for (size_t i = 0; i < n; i++)
		process_section(f, procs[i], st);
	if (n > 1) {
		fprintf(f, "\n%s== all %zu processes%s\n", st->bold, n, st->reset);
		for (size_t i = 0; i < gs_nsections; i++)
			if (gs_sections[i].print && !gs_sections[i].per_process)
				gs_sections[i].print(f, whole, st);
		for (size_t i = 0; i < gs_nsections; i++)
			if (gs_sections[i].print_procs)
				gs_sections[i].print_procs(f, procs, n, st);
	}
	diagnoses(f, procs, n, st);
}
