/* SPDX-License-Identifier: MIT */
/*
 * `gpuspy report` output: the human report (fits 100 columns, units scaled,
 * colour only on a terminal); the --json summary is report_json.c.
 */
#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "escape.h"
#include "report.h"
#include "cuda_errors.h"
#include "units.h"
#include "xalloc.h"

enum { PHASE_ROWS = 20 }; /* rows of the phase table, without --all */

const char *const gs_alloc_names[GS_ALLOC_KINDS] = { "device", "pinned", "managed", "host" };
static const char *bold = "", *yellow = "", *reset = "";

static uint64_t alloc_count(const struct gs_cats *c)
{
	uint64_t n = c->free.count;
	for (int i = 0; i < GS_ALLOC_KINDS; i++)
		n += c->alloc[i].count;
	return n;
}

static uint64_t alloc_ns(const struct gs_cats *c)
{
	uint64_t n = c->free.host_ns;
	for (int i = 0; i < GS_ALLOC_KINDS; i++)
		n += c->alloc[i].host_ns;
	return n;
}

static uint64_t alloc_bytes(const struct gs_cats *c)
{
	uint64_t n = 0;
	for (int i = 0; i < GS_ALLOC_KINDS; i++)
		n += c->alloc[i].bytes;
	return n;
}

static int gpu_mode;    /* GPU times from CUPTI */
static int events_mode; /* GPU time per phase from CUDA events (GPUSPY_CUPTI=events) */

/* Kernels run: with CUPTI, the GPU's kernel records; else the launch calls
 * less host functions, a graph's launch counting as the kernels of its
 * nodes where they were seen. */
static uint64_t kernels_run(const struct gs_cats *c)
{
	if (gpu_mode && c->launch.gpu_count)
		return c->launch.gpu_count;
	return c->launch.count - c->host_fn.count - c->graph_launch.count + c->graph_kernel.count;
}

static void phase_row(FILE *f, const char *name, uint64_t count, uint64_t wall, uint64_t busy,
		      uint64_t span, const struct gs_cats *c)
{
	char a[32], b[32], d[32], e[32], g[32], h[32], k[32], m[32], n[32], q[32];
	if (gpu_mode)
		fprintf(f, "  %-16.16s %5s %9s %7s %9s %9s %6s %9s %9s %8s\n", name,
			count ? gs_fmt_count(a, count) : "-", gs_fmt_ns(b, wall),
			gs_fmt_count(d, kernels_run(c)), gs_fmt_ns(e, c->launch.gpu_ns),
			gs_fmt_ns(g, c->launch.host_ns), gs_fmt_count(h, alloc_count(c)),
			gs_fmt_ns(m, alloc_ns(c)), gs_fmt_ns(n, c->sync.host_ns),
			gs_fmt_ns(k, wall > busy ? wall - busy : 0));
	else
		fprintf(f, "  %-16.16s %5s %9s %7s %9s %6s %9s %9s %9s %8s\n", name,
			count ? gs_fmt_count(a, count) : "-", gs_fmt_ns(b, wall),
			gs_fmt_count(d, kernels_run(c)), gs_fmt_ns(e, c->launch.host_ns),
			gs_fmt_count(h, alloc_count(c)), gs_fmt_bytes(k, alloc_bytes(c)),
			gs_fmt_ns(m, alloc_ns(c)), gs_fmt_ns(n, c->sync.host_ns),
			events_mode ? gs_fmt_ns(q, span) : "n/a");
}

static uint64_t total_busy(const struct gs_report *r)
{
	uint64_t b = 0;
	for (int d = 0; d < GSPY_DEVICES; d++)
		b += r->dev[d].busy_ns;
	return b;
}

static uint64_t total_span(const struct gs_report *r)
{
	uint64_t n = 0;
	for (size_t i = 0; i < r->nphases; i++)
		n += r->phases[i].span_ns;
	return n;
}

int gs_report_all; /* --all: every phase and library range */

static int cmp_u64_desc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? 1 : x > y ? -1 : 0;
}

static void phases_table(FILE *f, const struct gs_report *r)
{
	if (gpu_mode)
		fprintf(f, "\n  %sPhases%s           %5s %9s %7s %9s %9s %6s %9s %9s %8s\n", bold, reset,
			"count", "wall", "kernels", "GPU time", "launch", "alloc", "alloc t", "sync",
			"GPU idle");
	else
		fprintf(f, "\n  %sPhases%s           %5s %9s %7s %9s %6s %9s %9s %9s %8s\n", bold, reset,
			"count", "wall", "kernels", "launch", "alloc", "allocated", "alloc t", "sync",
			events_mode ? "GPU span" : "GPU idle");
	/* At most PHASE_ROWS rows of the user's phases, in their order: the
	 * longest by wall time; the rest in one line (all with --all). */
	size_t users = 0, shown = 0;
	uint64_t cut = 0; /* the wall time a phase needs to be shown */
	for (size_t i = 1; i < r->nphases; i++) /* "(no phase)" aside */
		users += !r->phases[i].library;
	if (users > PHASE_ROWS && !gs_report_all) {
		uint64_t *w = xcalloc(users, sizeof(*w));
		size_t k = 0;
		for (size_t i = 1; i < r->nphases; i++)
			if (!r->phases[i].library)
				w[k++] = r->phases[i].wall_ns;
		qsort(w, k, sizeof(*w), cmp_u64_desc);
		cut = w[PHASE_ROWS - 2];
		free(w);
	}
	uint64_t rest_n = 0, rest_wall = 0;
	for (size_t i = 0; i < r->nphases; i++) {
		const struct gs_phase_stat *p = &r->phases[i];
		if (p->library)
			continue; /* a library's range: below */
		if (i == 0 && !p->wall_ns && !p->c.launch.count && !alloc_count(&p->c) &&
		    !p->c.sync.count && r->nphases > 1)
			continue; /* an empty "(no phase)" row says nothing */
		if (cut && i && (p->wall_ns < cut || shown >= PHASE_ROWS - 1)) {
			rest_n++;
			rest_wall += p->wall_ns;
			continue;
		}
		shown += i > 0; /* "(no phase)" is always shown */
		phase_row(f, p->name, p->count, p->wall_ns, p->gpu_busy_ns, p->span_ns, &p->c);
	}
	phase_row(f, "total", 0, r->t_last - r->t_first, total_busy(r), total_span(r), &r->total);
	char w[32];
	if (rest_n)
		fprintf(f, "  ... and %llu more phases, %s of wall time in all (gpuspy report --all lists them)\n",
			(unsigned long long)rest_n, gs_fmt_ns(w, rest_wall));
	gs_library_ranges_print(f, r);
}

static void copies_table(FILE *f, const struct gs_report *r)
{
	int header = 0;
	for (size_t i = 0; i <= r->nphases; i++) {
		const struct gs_cats *c = i < r->nphases ? &r->phases[i].c : &r->total;
		const char *name = i < r->nphases ? r->phases[i].name : "total";
		if (i == r->nphases && r->nphases == 1)
			break; /* only "(no phase)": its rows are the totals */
		for (int d = 1; d <= GSPY_DIR_COUNT; d++)
			for (int p = 0; p < 2; p++) {
				/* d == GSPY_DIR_COUNT is the memset row */
				int ms = d == GSPY_DIR_COUNT;
				if (ms && p)
					continue;
				const struct gs_agg *a = ms ? &c->memset : &c->copy[d][p];
				const struct gs_agg *s = ms ? &c->memset : &c->copy_sync[d][p];
				if (!a->count && !a->gpu_count)
					continue;
				if (!header++)
					fprintf(f, "\n  %sCopies and memsets%s %9s %7s %10s %10s %10s %9s\n", bold,
						reset, "", "count", "bytes", gpu_mode ? "GPU time" : "time",
						gpu_mode ? "GPU GB/s" : "sync GB/s", "async");
				char kind[32], b1[32], b2[32], b3[32], b4[32];
				int host = d == GSPY_DIR_h2d || d == GSPY_DIR_d2h || d == GSPY_DIR_h2h;
				snprintf(kind, sizeof(kind), "%s %s", ms ? "memset" : gs_dir_name((unsigned)d),
					 host ? (p ? "pinned" : "pageable") : "");
				if (gpu_mode)
					fprintf(f, "  %-14.14s %-14s %7s %10s %10s %10s %9s\n", name, kind,
						gs_fmt_count(b1, a->count ? a->count : a->gpu_count),
						gs_fmt_bytes(b2, a->bytes ? a->bytes : a->gpu_bytes),
						gs_fmt_ns(b3, a->gpu_ns), gs_fmt_rate(b4, a->gpu_bytes, a->gpu_ns),
						ms ? "-" : gs_fmt_count((char[32]){ 0 }, a->count - s->count));
				else
					fprintf(f, "  %-14.14s %-14s %7s %10s %10s %10s %9s\n", name, kind,
						gs_fmt_count(b1, a->count), gs_fmt_bytes(b2, a->bytes),
						gs_fmt_ns(b3, a->host_ns),
						ms ? "-" : gs_fmt_rate(b4, s->bytes, s->host_ns),
						ms ? "-" : gs_fmt_count((char[32]){ 0 }, a->count - s->count));
			}
	}
	if (header && !gpu_mode)
		fprintf(f, "  (GB/s over synchronous copies only: an asynchronous copy returns before it is done)\n");
}

static int cmp_kernel(const void *a, const void *b)
{
	const struct gs_kernel_stat *x = *(const struct gs_kernel_stat *const *)a;
	const struct gs_kernel_stat *y = *(const struct gs_kernel_stat *const *)b;
	if (x->gpu_total_ns != y->gpu_total_ns)
		return x->gpu_total_ns < y->gpu_total_ns ? 1 : -1;
	if (x->total_ns != y->total_ns)
		return x->total_ns < y->total_ns ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* Kernels sorted by total time; the caller frees the array. */
const struct gs_kernel_stat **gs_sorted_kernels(const struct gs_report *r)
{
	const struct gs_kernel_stat **v = calloc(r->nkernels + 1, sizeof(*v));
	size_t n = 0;
	for (size_t i = 0; v && i < r->kernels_cap; i++)
		if (r->kernels[i].name)
			v[n++] = &r->kernels[i];
	if (v)
		qsort(v, n, sizeof(*v), cmp_kernel);
	return v;
}

/* A kernel's name in the 48 columns of the kernels table: the demangled
 * name without its return type, parameter list and the function's own
 * namespaces, and without the at::native::, std:: and anonymous namespaces
 * inside its template arguments; cut at the end ("...") if still longer.
 * What tells two kernels apart is usually near the front (the function,
 * then its first template arguments); --json keeps the whole name. */
static void kernel_label(const char *n, char out[64])
{
	static const char *const drop[] = { "(anonymous namespace)::", "at::native::", "std::" };
	char buf[512];
	size_t k = 0;
	if (!strncmp(n, "void ", 5))
		n += 5;
	while (*n && k < sizeof(buf) - 1) {
		size_t i = 0;
		while (i < 3 && strncmp(n, drop[i], strlen(drop[i])))
			i++;
		if (i < 3)
			n += strlen(drop[i]);
		else
			buf[k++] = *n++;
	}
	buf[k] = 0;
	/* The parameter list: the first '(' outside template arguments, unless
	 * the name begins with it ("(host function)"). */
	int depth = 0;
	for (size_t i = 1; i < k; i++) {
		depth += buf[i] == '<' ? 1 : buf[i] == '>' ? -1 : 0;
		if (buf[i] == '(' && depth == 0) {
			buf[k = i] = 0;
			break;
		}
	}
	/* The function's own namespaces: up to its last "::" before any '<'. */
	const char *s = buf, *lt = strchr(buf, '<');
	for (const char *c = buf; (c = strstr(c, "::")) && (!lt || c < lt); c += 2)
		s = c + 2;
	if (strlen(s) > 48)
		snprintf(out, 64, "%.45s...", s);
	else
		snprintf(out, 64, "%s", s);
}

/* The next tool: for the top three kernels, the Nsight Compute command
 * that profiles the middle run of each (-s skips that many launches of
 * the kernels -k matches, -c 1 profiles one). -k is a regex on the mangled
 * name (exact for a plain name), from its start, as much of it as fits.
 * The name is the trace's: the regex is one shell word (escape.c), and a
 * byte that is not printable ASCII is '.' in it (ncu's regex matches bytes;
 * a newline would cut the line, other bytes the terminal escapes). */
static void ncu_commands(FILE *f, const struct gs_report *r, const struct gs_kernel_stat **v)
{
	int header = 0;
	for (size_t i = 0, n = 0; i < r->nkernels && n < 3; i++) {
		uint64_t runs = gpu_mode ? v[i]->gpu_count : v[i]->count;
		if (!runs || (gpu_mode && !v[i]->gpu_count))
			continue;
		n++;
		if (!header++)
			fprintf(f, "  Profile the middle run of each with Nsight Compute (CMD: the command above):\n");
		char re[47] = "regex:^"; /* 38 bytes of the name at most, as before */
		size_t k = strlen(re);
		const char *p = v[i]->name;
		for (; *p && k + 2 < sizeof(re); p++) {
			unsigned char c = (unsigned char)*p;
			if (strchr(".$^*+?()[]{}|\\", c)) {
				if (k + 3 >= sizeof(re))
					break;
				re[k++] = '\\';
			}
			re[k++] = c < 0x20 || c >= 0x7f ? '.' : (char)c;
		}
		if (!*p)
			re[k++] = '$';
		re[k] = 0;
		fputs("    ncu --kernel-name-base mangled -k ", f);
		gs_shell_word(f, re);
		fprintf(f, " -s %llu -c 1 CMD\n", (unsigned long long)(runs / 2));
	}
}

static void kernels_table(FILE *f, const struct gs_report *r)
{
	if (!r->nkernels)
		return;
	const struct gs_kernel_stat **v = gs_sorted_kernels(r);
	if (!v)
		return;
	fprintf(f, "\n  %sTop kernels%s (%s) %*s %8s %9s %9s %9s %9s\n", bold, reset,
		gpu_mode ? "GPU time" : "launch time", gpu_mode ? 24 : 21, "", gpu_mode ? "runs" : "count",
		"total", "mean", "min", "max");
	size_t shown_n = 0;
	for (size_t i = 0; i < r->nkernels && shown_n < 10; i++) {
		char a[32], b[32], c[32], d[32], e[32];
		if (gpu_mode && !v[i]->gpu_count)
			continue; /* host functions and graph launches are not kernels */
		shown_n++;
		char shown[64];
		kernel_label(gs_demangle(v[i]->name), shown);
		if (gpu_mode && v[i]->gpu_count)
			fprintf(f, "  %-48s %8s %9s %9s %9s %9s\n", shown, gs_fmt_count(a, v[i]->gpu_count),
				gs_fmt_ns(b, v[i]->gpu_total_ns), gs_fmt_ns(c, v[i]->gpu_total_ns / v[i]->gpu_count),
				gs_fmt_ns(d, v[i]->gpu_min_ns), gs_fmt_ns(e, v[i]->gpu_max_ns));
		else
			fprintf(f, "  %-48s %8s %9s %9s %9s %9s\n", shown, gs_fmt_count(a, v[i]->count),
				gs_fmt_ns(b, v[i]->total_ns),
				gs_fmt_ns(c, v[i]->count ? v[i]->total_ns / v[i]->count : 0),
				gs_fmt_ns(d, v[i]->count ? v[i]->min_ns : 0), gs_fmt_ns(e, v[i]->max_ns));
	}
	if (r->nkernels > shown_n && shown_n == 10)
		fprintf(f, "  ... and more (gpuspy report --json lists all)\n");
	ncu_commands(f, r, v);
	free(v);
}

/* Calls that returned an error, apart: no total above counts them. */
static void failed_calls(FILE *f, const struct gs_report *r)
{
	if (!r->nfailed && !r->failed_other)
		return;
	uint64_t n = r->failed_other;
	for (size_t i = 0; i < r->nfailed; i++)
		n += r->failed[i].count;
	fprintf(f, "\n  %s%llu failed %s%s (in no total above)\n", bold, (unsigned long long)n,
		gs_pl(n, "call", "calls"), reset);
	for (size_t i = 0; i < r->nfailed; i++) {
		const struct gs_failed *x = &r->failed[i];
		char e[32], a[32], b[32];
		fprintf(f, "  %-26s %s (%d): %llu %s, the first at %s", x->api, gs_cuda_error(x->api, x->result, e, sizeof(e)),
			x->result, (unsigned long long)x->count, gs_pl(x->count, "time", "times"),
			gs_fmt_ns(a, x->first_ns - r->t_first));
		if (x->first_bytes)
			fprintf(f, " for %s", gs_fmt_bytes(b, x->first_bytes));
		fprintf(f, "\n");
	}
	if (r->failed_other)
		fprintf(f, "  and %llu more of other kinds\n", (unsigned long long)r->failed_other);
}

static void memory(FILE *f, const struct gs_report *r)
{
	char a[32], b[32];
	fprintf(f, "\n  %sMemory%s\n  allocations:", bold, reset);
	for (int i = 0; i < GS_ALLOC_KINDS; i++)
		if (r->total.alloc[i].count || i < 3)
			fprintf(f, " %s %llu (%s)%s", gs_alloc_names[i],
				(unsigned long long)r->total.alloc[i].count,
				gs_fmt_bytes(a, r->total.alloc[i].bytes),
				i + 1 < GS_ALLOC_KINDS && (r->total.alloc[i + 1].count || i + 1 < 3) ? "," : "");
	fprintf(f, r->total.alloc[GS_ALLOC_HOST].count ? "\n  frees %llu (%s)\n" : "; frees %llu (%s)\n",
		(unsigned long long)r->total.free.count,
		gs_fmt_bytes(b, r->total.free.bytes));
	fprintf(f, "  peak reserved device memory: %s", gs_fmt_bytes(a, (uint64_t)(r->peak_reserved > 0 ? r->peak_reserved : 0)));
	if (r->device_total)
		fprintf(f, " of %s (%.1f%%)", gs_fmt_bytes(b, r->device_total),
			100.0 * (double)r->peak_reserved / (double)r->device_total);
	if (r->nprocs > 1)
		fprintf(f, " (sum of the processes' peaks)");
	fprintf(f, "\n");
	gs_graphs_print(f, r);
	failed_calls(f, r);
}

/* Walks the frames the report shows of a stack, innermost first: none of
 * the C runtime's start-up frames (none past main); with Python frames, the
 * two innermost native frames, then only the Python ones (the line in the
 * user's script). Returns the next frame's length, its text at *at, and in
 * *gap whether frames were passed over before it; 0 at the end. */
struct frame_walk {
	const char *p;
	int shown, py, done;
};

static void frame_walk_init(struct frame_walk *w, const char *frames)
{
	*w = (struct frame_walk){ .p = frames, .py = strstr(frames, ".py:") != NULL };
}

static int frame_next(struct frame_walk *w, const char **at, int *gap)
{
	*gap = 0;
	while (!w->done && *w->p) {
		const char *p = w->p, *e = strchr(p, '\n');
		int n = e ? (int)(e - p) : (int)strlen(p);
		if (!strncmp(p, "__libc_start", 12) || !strncmp(p, "_start+", 7)) {
			w->done = 1;
			break;
		}
		w->p = p + n + (e ? 1 : 0);
		if (w->py && w->shown >= 2 && !memmem(p, (size_t)n, ".py:", 4)) {
			*gap = 1;
			continue;
		}
		w->shown++;
		/* what is outside main is the C runtime's start-up */
		w->done = !strncmp(p, "main (", 6) || !strncmp(p, "main+0x", 7);
		*at = p;
		return n;
	}
	return 0;
}

/* A stack, one frame a line, innermost first: the first `max` of the frames
 * frame_next shows, and the one at index `also` if that is further in (-1:
 * none); "..." where frames were passed over or more follow. */
static void stack_line(FILE *f, const char *indent, const char *frames, int max, int also)
{
	struct frame_walk w;
	const char *p;
	int n, gap, passed = 0, last = also > max - 1 ? also : max - 1;
	frame_walk_init(&w, frames);
	for (int k = 0; k <= last && (n = frame_next(&w, &p, &gap)); k++) {
		if (k >= max && k != also) {
			passed = 1;
			continue;
		}
		if (gap || passed)
			fprintf(f, "%s...\n", indent);
		passed = 0;
		fprintf(f, "%s%s%.*s%s\n", indent, k ? "from " : "at ", n > 86 ? 83 : n, p, n > 86 ? "..." : "");
	}
	if (passed || (!w.done && *w.p && strncmp(w.p, "__libc_start", 12)))
		fprintf(f, "%s...\n", indent);
}

/* How many leading shown frames two stacks have in common. */
static int frames_in_common(const char *a, const char *b)
{
	struct frame_walk wa, wb;
	const char *pa, *pb;
	int na, nb, ga, gb, k = 0;
	frame_walk_init(&wa, a);
	frame_walk_init(&wb, b);
	while ((na = frame_next(&wa, &pa, &ga)) && (nb = frame_next(&wb, &pb, &gb)) && na == nb &&
	       !memcmp(pa, pb, (size_t)na))
		k++;
	return k;
}

static const char *site_kind(const struct gs_site *x, int is_copy)
{
	if (is_copy)
		return x->mem == GSPY_DIR_d2h ? "d2h" : "h2d";
	return x->mem == GSPY_MEM_pinned ? "pinned" : x->mem == GSPY_MEM_managed ? "managed" : "device";
}

enum { SITE_FRAMES = 5 }; /* innermost frames a call site shows */

static void site_list(FILE *f, const char *title, const struct gs_siteset *set, int by, int top,
		      int is_copy)
{
	const struct gs_site **v;
	size_t n = gs_sites_sorted(set, by, &v);
	if (n) {
		fprintf(f, "  %s\n", title);
		size_t shown = n < (size_t)top ? n : (size_t)top;
		for (size_t i = 0; i < shown; i++) {
			char a[32], b[32], c[32];
			const struct gs_site *x = v[i];
			if (by == GS_BY_TIME)
				fprintf(f, "    %s wait%s, %s in phase '%s':\n", gs_fmt_count(a, x->count),
					gs_pl(x->count, "", "s"), gs_fmt_ns(b, x->host_ns),
					x->phase ? x->phase : "?");
			else if (by == GS_BY_PEAK)
				fprintf(f, "    %s in %s block%s at the peak:\n", gs_fmt_bytes(a, x->peak_bytes),
					gs_fmt_count(b, x->peak_count), gs_pl(x->peak_count, "", "s"));
			else
				fprintf(f, "    %s %s, %s, %s in the calls:\n", gs_fmt_count(a, x->count),
					site_kind(x, is_copy), gs_fmt_bytes(b, x->bytes), gs_fmt_ns(c, x->host_ns));
			/* Five frames, and where it shares more with another site
			 * listed (inside a library's allocator several do), the
			 * first frame that tells them apart. */
			int common = 0;
			for (size_t j = 0; j < shown; j++) {
				int k = j == i ? 0 : frames_in_common(x->frames, v[j]->frames);
				common = k > common ? k : common;
			}
			stack_line(f, "      ", x->frames, SITE_FRAMES, common >= SITE_FRAMES ? common : -1);
			if (x->host_alloc) {
				fprintf(f, "      host buffer (%s) allocated at:\n", gs_fmt_bytes(a, x->host_alloc_bytes));
				stack_line(f, "        ", x->host_alloc, SITE_FRAMES, -1);
			}
		}
	}
	free(v);
}

static void sites_section(FILE *f, const struct gs_report *r)
{
	if (!r->sites.any)
		return;
	fprintf(f, "\n  %sCall sites%s (innermost frame first)\n", bold, reset);
	site_list(f, "Allocation sites by bytes", &r->sites.alloc, GS_BY_BYTES, 5, 0);
	const struct gs_site **by_bytes, **by_count;
	size_t nb = gs_sites_sorted(&r->sites.alloc, GS_BY_BYTES, &by_bytes);
	size_t nc = gs_sites_sorted(&r->sites.alloc, GS_BY_COUNT, &by_count);
	if (nb && nc && by_bytes[0] != by_count[0]) /* only when it says something new */
		site_list(f, "Allocation sites by count", &r->sites.alloc, GS_BY_COUNT, 3, 0);
	free(by_bytes);
	free(by_count);
	site_list(f, "Holding device memory at its peak", &r->sites.alloc, GS_BY_PEAK, 5, 0);
	site_list(f, "Pageable copy sites", &r->sites.copy, GS_BY_BYTES, 5, 1);
	site_list(f, "Waits inside repeated phases", &r->sites.sync, GS_BY_TIME, 5, 0);
	uint64_t un, uns;
	gs_sites_unsited(&r->sites.sync, &un, &uns);
	if (un && r->sites.any && r->proc.wait_stack_min_ns) {
		char a[32], b[32];
		fprintf(f, "    (%llu %s inside repeated phases, %s in all, %s shorter than %s and carry no "
			   "stack: GPUSPY_STACK_MIN)\n",
			(unsigned long long)un, gs_pl(un, "wait", "waits"), gs_fmt_ns(b, uns), un == 1 ? "was" : "were",
			gs_fmt_ns(a, r->proc.wait_stack_min_ns));
	}
	if (r->proc.stack_min_ns) {
		char a[32];
		fprintf(f, "    (memsets and copies that are not pageable carry a stack only when they "
			   "took %s or more: GPUSPY_STACK_MIN)\n", gs_fmt_ns(a, r->proc.stack_min_ns));
	}
}

static void gpu_section(FILE *f, const struct gs_report *r)
{
	char a[32], b[32], c[32], d[32];
	uint64_t span = r->t_last - r->t_first;
	if (events_mode) {
		/* Spans include their gaps and may overlap across streams: their
		 * sum bounds the GPU's work from above. */
		fprintf(f, "\n  %sGPU%s (CUDA events at phase boundaries)\n", bold, reset);
		for (int i = 0; i < GSPY_DEVICES; i++) {
			const struct gs_device_gpu *g = &r->dev[i];
			if (!g->spans)
				continue;
			/* With phases, of the time in them: the intervals outside
			 * (start-up) span their idle time too. */
			uint64_t in = span, ns = g->span_ns, n = g->spans;
			int phased = gs_loop_span(r, &in);
			if (phased) {
				ns = g->phase_span_ns;
				n = g->phase_spans;
			}
			double pct = in ? 100.0 * (double)ns / (double)in : 0.0;
			fprintf(f, "  device %d: GPU spans %s of %s%s (%s interval%s): busy at most %.1f%%\n", i,
				gs_fmt_ns(a, ns), gs_fmt_ns(b, in), phased ? " in phases" : "", gs_fmt_count(c, n),
				gs_pl(n, "", "s"), pct < 100.0 ? pct : 100.0);
			uint64_t out = g->spans - g->phase_spans;
			if (phased && out)
				fprintf(f, "    outside phases: %s (%s interval%s)\n",
					gs_fmt_ns(a, g->span_ns - g->phase_span_ns), gs_fmt_count(c, out),
					gs_pl(out, "", "s"));
		}
		return;
	}
	if (!gpu_mode)
		return;
	fprintf(f, "\n  %sGPU%s\n", bold, reset);
	for (int i = 0; i < GSPY_DEVICES; i++) {
		const struct gs_device_gpu *g = &r->dev[i];
		if (!g->ops)
			continue;
		fprintf(f, "  device %d: busy %s of %s (%.1f%%); idle gaps: %s host-bound, %s other\n", i,
			gs_fmt_ns(a, g->busy_ns), gs_fmt_ns(b, span),
			span ? 100.0 * (double)g->busy_ns / (double)span : 0.0, gs_fmt_ns(c, g->idle_host_ns),
			gs_fmt_ns(d, g->idle_other_ns));
		/* The loop's own share: start-up outside phases dilutes the run's. */
		uint64_t in = span;
		if (gs_loop_span(r, &in))
			fprintf(f, "    in phases: busy %s of %s (%.1f%%)\n", gs_fmt_ns(a, g->phase_busy_ns),
				gs_fmt_ns(b, in), in ? 100.0 * (double)g->phase_busy_ns / (double)in : 0.0);
		fprintf(f, "    (host-bound: the work after the gap was launched only after the GPU went idle)\n");
	}
	if (r->queue_n)
		fprintf(f, "  queue delay (launch call to kernel start): mean %s, max %s over %s kernel%s\n",
			gs_fmt_ns(a, r->queue_sum_ns / r->queue_n), gs_fmt_ns(b, r->queue_max_ns),
			gs_fmt_count(c, r->queue_n), gs_pl(r->queue_n, "", "s"));
	if (r->graph_kernels)
		fprintf(f, "  CUDA graphs ran %s kernel%s (%s GPU time)\n", gs_fmt_count(a, r->graph_kernels),
			gs_pl(r->graph_kernels, "", "s"), gs_fmt_ns(b, r->graph_kernel_ns));
	if (r->gpu_records)
		fprintf(f, "  GPU records matched to the call that launched them: %.1f%% of %s\n",
			100.0 * (double)r->gpu_matched / (double)r->gpu_records, gs_fmt_count(a, r->gpu_records));
}

static const char *state_text(const struct gs_proc *p)
{
	switch (p->state) {
	case GSPY_STATE_EXITED: return "exited cleanly";
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

static void process_section(FILE *f, const struct gs_report *r)
{
	char a[32], b[32], c[32];
	fprintf(f, "\n%s== %s%s: %s\n", bold, r->label, reset, r->proc.command);
	fprintf(f, "   host %s, %s%s%s, %s traced, %s %s, %s dropped\n",
		*r->proc.host ? r->proc.host : "(unknown)", state_text(&r->proc),
		r->framework != GS_FW_CUDA ? ", " : "", r->framework != GS_FW_CUDA ? gs_framework_names[r->framework] : "",
		gs_fmt_ns(a, r->t_last - r->t_first), gs_fmt_count(b, r->nevents), gs_pl(r->nevents, "event", "events"),
		gs_fmt_count(c, r->proc.dropped));
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
	if (r->proc.state != GSPY_STATE_EXITED || r->proc.truncated || r->input_error[0])
		fprintf(f, "   %strace incomplete%s: every complete event is included%s%s\n", yellow, reset,
			r->input_error[0] ? "; input stopped at " : "", r->input_error);
	if (r->proc.state != GSPY_STATE_EXITED && r->gpu_timing == GSPY_GPU_TIMING_cupti)
		fprintf(f, "   GPU records of its last seconds may be missing: CUPTI hands them over a "
			   "second after the program goes quiet, every GPUSPY_CUPTI_FLUSH seconds (default "
			   "5) while it launches\n");
	uint64_t late = r->proc.dropped_after_exit < r->proc.dropped ? r->proc.dropped_after_exit : r->proc.dropped;
	if (r->proc.dropped > late)
		fprintf(f, "   %s%llu %s dropped%s: the buffer was full; raise GPUSPY_BUFFER_MB\n", yellow,
			(unsigned long long)(r->proc.dropped - late), gs_pl(r->proc.dropped - late, "event was", "events were"),
			reset);
	if (late)
		fprintf(f, "   %llu %s not recorded: %s after gpuspy's exit handler had closed the trace "
			   "(other threads, or later destructors, still calling CUDA)\n",
			(unsigned long long)late, gs_pl(late, "event was", "events were"), gs_pl(late, "it came", "they came"));
	if (r->proc.overwritten)
		fprintf(f, "   flight recorder: the %llu oldest events were overwritten; this is the newest part\n",
			(unsigned long long)r->proc.overwritten);
	own_time(f, r);
	phases_table(f, r);
	copies_table(f, r);
	kernels_table(f, r);
	gpu_section(f, r);
	gs_tele_print(f, r, bold, reset);
	memory(f, r);
	sites_section(f, r);
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

static void diagnoses(FILE *f, struct gs_report *const *procs, size_t n)
{
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += procs[i]->ndiag;
	fprintf(f, "\n%sDiagnoses%s\n", bold, reset);
	if (!total)
		fprintf(f, "  none: nothing in this trace matches a known problem\n");
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < procs[i]->ndiag; j++) {
			const char *t = procs[i]->diag[j].text;
			const char *nl = strchr(t, '\n');
			char first[96];
			snprintf(first, sizeof(first), "  %s*%s %s%s", yellow, reset,
				 n > 1 ? procs[i]->label : "", n > 1 ? ": " : "");
			wrap(f, first, 4, t, nl ? (size_t)(nl - t) : strlen(t));
			if (nl)
				wrap(f, "    -> ", 7, nl + 1, strlen(nl + 1));
			char save[700];
			if (gs_diag_saving(&procs[i]->diag[j], save, sizeof(save)))
				wrap(f, "       ", 7, save, strlen(save));
		}
}

void gs_report_print(FILE *f, struct gs_report *const *procs, size_t n,
		     const struct gs_report *whole, int color)
{
	bold = color ? "\033[1m" : "";
	yellow = color ? "\033[33m" : "";
	reset = color ? "\033[0m" : "";
	char a[32], b[32];
	fprintf(f, "%sgpuspy report%s: %zu process%s, %s %s, %s dropped\n", bold, reset, n,
		gs_pl(n, "", "es"), gs_fmt_count(a, whole->nevents), gs_pl(whole->nevents, "event", "events"),
		gs_fmt_count(b, whole->proc.dropped));
	gpu_mode = whole->gpu_timing == GSPY_GPU_TIMING_cupti;
	events_mode = whole->gpu_timing == GSPY_GPU_TIMING_events;
	if (events_mode)
		fprintf(f, "GPU time per phase comes from CUDA events at phase boundaries (GPUSPY_CUPTI=events):\n"
			   "a phase's GPU span on a stream runs from when the stream reached the phase's first GPU\n"
			   "call to when it finished the phase's work, gaps inside included. Other times are host-side.\n");
	else if (gpu_mode)
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
		process_section(f, procs[i]);
	if (n > 1) {
		fprintf(f, "\n%s== all %zu processes%s\n", bold, n, reset);
		phases_table(f, whole);
		copies_table(f, whole);
		kernels_table(f, whole);
		gpu_section(f, whole);
		memory(f, whole);
		gs_ranks_print(f, procs, n, bold, reset);
	}
	diagnoses(f, procs, n);
}
