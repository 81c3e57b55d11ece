/* SPDX-License-Identifier: MIT */
/*
 * Aggregation for `gpuspy report`: per-phase and total counts, bytes and
 * host time of every kind of call, kernel statistics, reserved device
 * memory and its peak, and the evidence behind each diagnosis.
 *
 * Phases form one process-wide timeline: an event belongs to the innermost
 * phase open when it started. A phase's wall time is the sum of its
 * occurrences (nested phases count inside their parents); "(no phase)" gets
 * the traced span not covered by any phase.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "read/ranges.h"
#include "util/xalloc.h"
#include "report/report.h"
#include "util/units.h"

#define STACK_MAX 64

const char *const gs_alloc_names[GS_ALLOC_KINDS] = { "device", "pinned", "managed", "host" };

static void agg_add(struct gs_agg *a, uint64_t bytes, uint64_t ns)
{
	a->count++;
	a->bytes += bytes;
	a->host_ns += ns;
}

static void gpu_add(struct gs_agg *a, uint64_t bytes, uint64_t ns)
{
	a->gpu_count++;
	a->gpu_bytes += bytes;
	a->gpu_ns += ns;
}

size_t gs_report_phase(struct gs_report *r, const char *name)
{
	for (size_t i = 0; i < r->nphases; i++)
		if (!strcmp(r->phases[i].name, name))
			return i;
	if (r->nphases == r->phases_cap) {
		r->phases_cap = r->phases_cap ? 2 * r->phases_cap : 16;
		r->phases = xrealloc(r->phases, r->phases_cap * sizeof(*r->phases));
	}
	struct gs_phase_stat *p = &r->phases[r->nphases];
	memset(p, 0, sizeof(*p));
	p->name = xstrdup(name);
	return r->nphases++;
}

struct gs_kernel_stat *gs_report_kernel(struct gs_report *r, const char *name)
{
	if (2 * (r->nkernels + 1) > r->kernels_cap) {
		size_t cap = r->kernels_cap ? 2 * r->kernels_cap : 64;
		struct gs_kernel_stat *t = xrealloc(NULL, cap * sizeof(*t));
		memset(t, 0, cap * sizeof(*t));
		for (size_t i = 0; i < r->kernels_cap; i++) {
			if (!r->kernels[i].name)
				continue;
			size_t j = gs_str_hash(r->kernels[i].name) & (cap - 1);
			while (t[j].name)
				j = (j + 1) & (cap - 1);
			t[j] = r->kernels[i];
		}
		free(r->kernels);
		r->kernels = t;
		r->kernels_cap = cap;
	}
	size_t j = gs_str_hash(name) & (r->kernels_cap - 1);
	while (r->kernels[j].name && strcmp(r->kernels[j].name, name))
		j = (j + 1) & (r->kernels_cap - 1);
	if (!r->kernels[j].name) {
		r->kernels[j].name = xstrdup(name);
		r->kernels[j].min_ns = UINT64_MAX;
		r->kernels[j].gpu_min_ns = UINT64_MAX;
		r->nkernels++;
	}
	return &r->kernels[j];
}

static const char *launch_name(const struct gs_ev *ev)
{
	if (gspy_api_host_func(ev->api))
		return "(host function)";
	if (gspy_api_graph_launch(ev->api))
		return "(graph)";
	return ev->name && *ev->name ? ev->name : "(unknown)";
}

static int alloc_kind(unsigned mem)
{
	switch (mem) {
	case GSPY_MEM_pinned: return GS_ALLOC_PINNED;
	case GSPY_MEM_managed: return GS_ALLOC_MANAGED;
	case GSPY_MEM_host: return GS_ALLOC_HOST;
	}
	return GS_ALLOC_DEVICE;
}

/* Device memory reserved by the process: device and managed allocations and
 * VMM physical allocations, less their frees. */
static int counts_as_reserved(const struct gs_ev *ev)
{
	return ev->mem == GSPY_MEM_device || ev->mem == GSPY_MEM_managed;
}

static void add_event(struct gs_cats *c, const struct gs_ev *ev)
{
	uint64_t ns = ev->end_ns - ev->start_ns;
	switch (ev->kind) {
	case GSPY_KIND_launch: {
		agg_add(&c->launch, 0, ns);
		if (gspy_api_host_func(ev->api))
			agg_add(&c->host_fn, 0, ns);
		break;
	}
	case GSPY_KIND_copy: {
		int pinned = ev->mem == GSPY_MEM_pinned;
		unsigned d = ev->dir < GSPY_DIR_COUNT ? ev->dir : 0;
		agg_add(&c->copy[d][pinned], ev->bytes, ns);
		if (!ev->async)
			agg_add(&c->copy_sync[d][pinned], ev->bytes, ns);
		break;
	}
	case GSPY_KIND_memset:
		agg_add(&c->memset, ev->bytes, ns);
		break;
	case GSPY_KIND_alloc:
		agg_add(&c->alloc[alloc_kind(ev->mem)], ev->bytes, ns);
		break;
	case GSPY_KIND_free:
		agg_add(&c->free, ev->bytes, ns);
		break;
	case GSPY_KIND_sync:
		agg_add(&c->sync, 0, ns);
		break;
	default:
		break;
	}
}

/* count failed calls of api with result, the first at t asking for
 * first_bytes, bytes in all. */
void gs_report_failed(struct gs_report *r, const char *api, int result, uint64_t t, uint64_t first_bytes,
		      uint64_t count, uint64_t bytes)
{
	size_t i = 0;
	while (i < r->nfailed && !(r->failed[i].api == api && r->failed[i].result == result))
		i++;
	if (i == r->nfailed) {
		if (i == sizeof(r->failed) / sizeof(r->failed[0])) {
			r->failed_other += count;
			return;
		}
		r->failed[r->nfailed++] = (struct gs_failed){ api, result, 0, t, first_bytes, 0 };
	}
	struct gs_failed *f = &r->failed[i];
	if (t < f->first_ns) {
		f->first_ns = t;
		f->first_bytes = first_bytes;
	}
	f->count += count;
	f->bytes += bytes;
}

static void track_memory(struct gs_report *r, const struct gs_ev *ev)
{
	if (ev->result != 0 || !counts_as_reserved(ev))
		return;
	int is_alloc = ev->kind == GSPY_KIND_alloc;
	if (!is_alloc && ev->kind != GSPY_KIND_free)
		return;
	if (ev->device >= 0 && ev->device < GSPY_DEVICES && r->proc.device_mem[ev->device])
		r->device_total = r->proc.device_mem[ev->device];
	r->reserved += is_alloc ? (int64_t)ev->bytes : -(int64_t)ev->bytes;
	gs_series_reserved(r->series, ev->end_ns, r->reserved);
	if (r->reserved > r->peak_reserved) {
		r->peak_reserved = r->reserved;
		r->peak_t = ev->end_ns;
		gs_sites_snapshot(&r->sites, GS_SNAP_PEAK);
	}
	/* Allocation churn: device allocations and frees after warm-up (both
	 * rules, warm_up). */
	for (int i = 0; i < 2; i++) {
		struct gs_churn *c = &r->churn[i];
		if (!c->warm)
			continue;
		c->allocs += is_alloc;
		c->frees += !is_alloc;
		c->alloc_bytes += is_alloc ? ev->bytes : 0;
		c->host_ns += ev->end_ns > ev->start_ns ? ev->end_ns - ev->start_ns : 0;
	}
}

/* Warm-up ends at t for one of the churn's two rules: [0] a phase's second
 * occurrence begins, [1] the first fifth of the events is past. */
static void warm_up(struct gs_churn *c, uint64_t t)
{
	c->warm = 1;
	c->from_ns = t;
}

struct open_phase {
	size_t idx;
	uint64_t begin;
};

#define CORR_SLOTS (1u << 20)
#define HEAP_MAX (1u << 18)
#define CHANGES (1u << 16)

/* The phase open at time t, from the ring of recent phase changes (the
 * current one when t is older than the ring). */
/* The index of the ring's last phase change at or before t, or UINT64_MAX
 * when t precedes every change the ring still holds. */
static uint64_t change_at(const struct gs_report *r, uint64_t t)
{
	uint64_t lo = r->nchanges > CHANGES ? r->nchanges - CHANGES : 0, hi = r->nchanges;
	if (t < r->changes[lo % CHANGES].t)
		return UINT64_MAX;
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (r->changes[mid % CHANGES].t <= t)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static size_t phase_at(const struct gs_report *r, uint64_t t, size_t cur)
{
	if (!r->nchanges)
		return cur;
	uint64_t k = change_at(r, t);
	if (k == UINT64_MAX)
		return r->nchanges <= CHANGES ? 0 : cur;
	size_t p = r->changes[k % CHANGES].phase;
	return p < r->nphases ? p : cur;
}

static void note_phase_change(struct gs_report *r, uint64_t t, size_t phase)
{
	if (!r->changes) {
		r->changes = calloc(CHANGES, sizeof(*r->changes));
		if (!r->changes)
			return;
	}
	r->changes[r->nchanges % CHANGES] = (struct gs_phase_change){ t, (uint32_t)phase };
	r->nchanges++;
}

/* How much of [s, e) lies inside named phases, from the ring of phase
 * changes (what began before the ring's oldest change takes its phase). */
static uint64_t in_phases_ns(const struct gs_report *r, uint64_t s, uint64_t e)
{
	if (!r->nchanges || e <= s)
		return 0;
	uint64_t lo = r->nchanges > CHANGES ? r->nchanges - CHANGES : 0, k = change_at(r, s);
	size_t ph;
	if (k == UINT64_MAX) { /* before the ring's oldest change: take its phase */
		ph = lo == 0 ? 0 : r->changes[lo % CHANGES].phase;
		k = lo;
	} else {
		ph = r->changes[k % CHANGES].phase;
		k++;
	}
	uint64_t sum = 0, t = s;
	for (; k < r->nchanges && r->changes[k % CHANGES].t < e; k++) {
		uint64_t c = r->changes[k % CHANGES].t;
		if (ph != 0 && c > t)
			sum += c - t;
		if (c > t)
			t = c;
		ph = r->changes[k % CHANGES].phase;
	}
	if (ph != 0)
		sum += e - t;
	return sum;
}

/* A busy stretch of a device ends: to its busy time, and the part of it
 * inside named phases to its time in phases (a stretch that began in a
 * phase can run long past it: a GPU-bound loop, a final sync). */
static void busy_done(struct gs_report *r, struct gs_device_gpu *d)
{
	uint64_t ns = d->cur_end - d->cur_start;
	d->busy_ns += ns;
	gs_series_busy(r->series, d->cur_start, d->cur_end);
	d->phase_busy_ns += in_phases_ns(r, d->cur_start, d->cur_end);
	d->cur_start = d->cur_end = 0;
}

/* The device timeline, in start order: busy time and idle gaps, an idle gap
 * being host-bound when the work after it was launched only after the GPU
 * went idle. */
static void device_step(struct gs_report *r, const struct gs_gpu_item *g)
{
	if (g->device < 0 || g->device >= GSPY_DEVICES)
		return;
	struct gs_device_gpu *d = &r->dev[g->device];
	struct gs_phase_stat *p = g->phase < r->nphases ? &r->phases[g->phase] : NULL;
	d->ops++;
	if (p && g->end > p->last_ns)
		p->last_ns = g->end;
	if (!d->cur_end) {
		d->cur_start = g->start;
		d->cur_end = g->end;
	} else if (g->start > d->cur_end) {
		uint64_t gap = g->start - d->cur_end;
		if (g->host_start > d->cur_end) {
			d->idle_host_ns += gap;
			/* The phase's share: the part after its first run began. */
			uint64_t from = p && p->first_ns > d->cur_end ? p->first_ns : d->cur_end;
			if (p && g->start > from)
				p->idle_host_ns += g->start - from;
		} else
			d->idle_other_ns += gap;
		busy_done(r, d);
		d->cur_start = g->start;
		d->cur_end = g->end;
	} else if (g->end > d->cur_end) {
		d->cur_end = g->end;
	}
}

static void heap_pop(struct gs_report *r)
{
	struct gs_gpu_item *h = r->heap;
	device_step(r, &h[0]);
	h[0] = h[--r->nheap];
	for (size_t i = 0;;) {
		size_t l = 2 * i + 1, m = i;
		if (l < r->nheap && h[l].start < h[m].start)
			m = l;
		if (l + 1 < r->nheap && h[l + 1].start < h[m].start)
			m = l + 1;
		if (m == i)
			break;
		struct gs_gpu_item x = h[i];
		h[i] = h[m];
		h[m] = x;
		i = m;
	}
}

static void heap_push(struct gs_report *r, struct gs_gpu_item g)
{
	if (!r->heap) {
		r->heap = malloc(HEAP_MAX * sizeof(*r->heap));
		if (!r->heap) {
			device_step(r, &g);
			return;
		}
	}
	if (r->nheap == HEAP_MAX)
		heap_pop(r);
	size_t i = r->nheap++;
	r->heap[i] = g;
	while (i && r->heap[(i - 1) / 2].start > r->heap[i].start) {
		struct gs_gpu_item x = r->heap[i];
		r->heap[i] = r->heap[(i - 1) / 2];
		r->heap[(i - 1) / 2] = x;
		i = (i - 1) / 2;
	}
}

static struct gs_corr_slot *corr_slot(struct gs_report *r, uint64_t id)
{
	if (!r->corr) {
		r->corr = calloc(CORR_SLOTS, sizeof(*r->corr));
		if (!r->corr)
			return NULL;
	}
	return &r->corr[(id ^ (id >> 29)) * 0x9E3779B97F4A7C15ull >> 46];
}

/* A GPU-side record: its time goes to the phase that launched it (found
 * through the correlation id; the phase open at its start otherwise), and
 * to the device's busy/idle accounting. */
static void add_gpu(struct gs_report *r, const struct gs_ev *ev, size_t cur)
{
	uint64_t ns = ev->end_ns > ev->start_ns ? ev->end_ns - ev->start_ns : 0;
	size_t ph = cur;
	uint64_t host_start = 0;
	struct gs_corr_slot *s = ev->corr ? corr_slot(r, ev->corr) : NULL;
	r->gpu_records++;
	if (s && s->id == ev->corr) {
		ph = s->phase < r->nphases ? s->phase : cur;
		host_start = s->host_start;
		r->gpu_matched++;
	}
	struct gs_cats *cs[2] = { &r->total, &r->phases[ph].c };
	for (int i = 0; i < 2; i++) {
		if (ev->kind == GSPY_KIND_gpu_kernel)
			gpu_add(&cs[i]->launch, 0, ns);
		else if (ev->kind == GSPY_KIND_gpu_memset)
			gpu_add(&cs[i]->memset, ev->bytes, ns);
		else
			gpu_add(&cs[i]->copy[ev->dir < GSPY_DIR_COUNT ? ev->dir : 0][ev->mem == GSPY_MEM_pinned],
				ev->bytes, ns);
	}
	/* What the GPU did during each phase's wall time: the phase open when
	 * this work started (records arrive late, so look the time up). */
	r->phases[phase_at(r, ev->start_ns, cur)].gpu_busy_ns += ns;
	if (ev->kind == GSPY_KIND_gpu_kernel) {
		gs_coll_gpu(r, ev); /* NCCL's kernels, and the others' intervals for the overlap */
		struct gs_kernel_stat *k = gs_report_kernel(r, ev->name && *ev->name ? ev->name : "(unknown)");
		k->gpu_count++;
		k->gpu_total_ns += ns;
		if (ns < k->gpu_min_ns)
			k->gpu_min_ns = ns;
		if (ns > k->gpu_max_ns)
			k->gpu_max_ns = ns;
		if (ev->graph_id) {
			r->graph_kernels++;
			r->graph_kernel_ns += ns;
		}
	} else if (ev->graph_id && ev->kind == GSPY_KIND_gpu_copy) {
		r->graph_gpu_copies++;
		r->graph_gpu_copy_bytes += ev->bytes;
	} else if (ev->graph_id) {
		r->graph_gpu_memsets++;
	}
	if (ev->kind == GSPY_KIND_gpu_kernel) {
		if (host_start && ev->start_ns > host_start) {
			uint64_t q = ev->start_ns - host_start;
			r->queue_n++;
			r->queue_sum_ns += q;
			if (q > r->queue_max_ns)
				r->queue_max_ns = q;
		}
		/* A graph's kernels share one launch call: a kernel is short
		 * against its own launch only. */
		if (!ev->graph_id) {
			r->own_kernels++;
			r->own_kernel_ns += ns;
			if (r->total.launch.count && ns * r->total.launch.count < r->total.launch.host_ns)
				r->short_kernels++;
		}
	}
	heap_push(r, (struct gs_gpu_item){ ev->start_ns, ev->end_ns, host_start, ev->device, (uint32_t)ph });
}

/* A copy between the host's pageable memory and the device. */
static int pageable_copy(const struct gs_ev *ev)
{
	return ev->kind == GSPY_KIND_copy && ev->mem != GSPY_MEM_pinned &&
	       (ev->dir == GSPY_DIR_h2d || ev->dir == GSPY_DIR_d2h);
}

/* Each thread's last host call: was it a pageable copy? (A wait right
 * after one belongs to the copy: PyTorch waits for each copy from pageable
 * memory.) A small open-addressing table; threads past it are not followed. */
enum { LAST_CAP = 256 };
struct last_call {
	uint32_t tid;
	uint8_t pageable_copy;
};

static struct last_call *last_call(struct last_call *t, uint32_t tid)
{
	for (uint32_t i = 0, k = tid * 2654435761u % LAST_CAP; i < LAST_CAP; i++, k = (k + 1) % LAST_CAP) {
		if (t[k].tid == tid)
			return &t[k];
		if (!t[k].tid) {
			t[k].tid = tid;
			return &t[k];
		}
	}
	return NULL;
}

/*
 * Recording paused and resumed (gpuspy_pause, `gpuspy stop`/`start`): the
 * time between is left out of every figure, as if the windows were one
 * run. Timestamps after a resume move back by all that was paused; what
 * the trace holds from inside a pause (GPU work CUPTI delivered meanwhile;
 * a process started paused starts CUPTI just before its first window) is
 * skipped: its host calls were not recorded. 0: skip the event.
 */
struct window_cut {
	int paused, before_first; /* before_first: started paused, no window yet */
	uint64_t since, total;    /* the open pause's start; the time cut so far */
};

static int window_cut(struct window_cut *c, struct gs_report *r, struct gs_ev *ev)
{
	int mark = ev->kind == GSPY_KIND_mark;
	if (mark && ev->api == GSPY_API_gpuspy_resume) {
		if (c->paused && !c->before_first)
			c->total += ev->start_ns > c->since ? ev->start_ns - c->since : 0;
		c->paused = c->before_first = 0;
		r->windows++;
	} else if (!r->windows && !c->paused && ev->kind < GSPY_KIND_gpu_kernel) {
		r->windows = 1; /* a host call before any pause: recording from the start */
	}
	if (c->before_first)
		return 0;
	if (c->paused) {
		if (ev->start_ns > c->since)
			return 0;
		if (ev->end_ns > c->since)
			ev->end_ns = c->since; /* a call the pause came in the middle of */
	}
	if (mark && ev->api == GSPY_API_gpuspy_pause && !c->paused) {
		c->paused = 1;
		c->since = ev->start_ns;
	}
	ev->start_ns = ev->start_ns > c->total ? ev->start_ns - c->total : 0;
	ev->end_ns = ev->end_ns > c->total ? ev->end_ns - c->total : 0;
	r->paused_ns = c->total;
	return 1;
}

int gs_report_file(const char *path, struct gs_report *r, char *err, size_t errlen)
{
	struct gs_input in;
	memset(r, 0, sizeof(*r));
	int rc = gs_input_open(path, &in, err, errlen);
	if (rc)
		return rc;
	r->path = path;
	r->proc = in.proc;
	r->nprocs = 1;
	r->gpu_timing = in.proc.gpu_timing;
	if (r->proc.rank >= 0)
		snprintf(r->label, sizeof(r->label), "rank %d (pid %u)", r->proc.rank, r->proc.pid);
	else
		snprintf(r->label, sizeof(r->label), "pid %u", r->proc.pid);
	gs_report_phase(r, "(no phase)");
	struct open_phase stack[STACK_MAX], lib[STACK_MAX]; /* the user's phases; libraries' ranges */
	int depth = 0, ldepth = 0;
	uint64_t top_begin = 0, covered = 0;
	struct last_call last[LAST_CAP] = { { 0, 0 } };
	struct gs_ev ev;
	struct window_cut cut = { .paused = in.proc.start_paused, .before_first = in.proc.start_paused };
	int got;
	while ((got = gs_input_next(&in, &ev)) == 1) {
		if (!window_cut(&cut, r, &ev))
			continue;
		if (!r->nevents++) {
			r->t_first = ev.start_ns;
			r->series = gs_series_on ? gs_series_new(ev.start_ns) : NULL;
		}
		if (ev.end_ns > r->t_last)
			r->t_last = ev.end_ns;
		if (!r->churn[1].warm && r->proc.events && r->nevents * 5 >= r->proc.events)
			warm_up(&r->churn[1], ev.start_ns);
		/* XLA's runs and compilations of the user's jitted functions are
		 * the user's phases, under the function's name. */
		char fw_name[128];
		int compile = 0;
		if ((ev.kind == GSPY_KIND_phase_begin || ev.kind == GSPY_KIND_phase_end) && ev.name &&
		    gs_framework_phase(ev.name, fw_name, sizeof(fw_name), &compile)) {
			int compiling = 0;
			for (int k = 0; k < depth && k < STACK_MAX && !compile; k++)
				compiling |= r->phases[stack[k].idx].compile;
			if (!compiling) { /* else a module XLA runs while it compiles: its own range */
				ev.name = fw_name;
				r->fw_seen |= 1u << GS_FW_JAX;
			}
		}
		if (ev.kind == GSPY_KIND_phase_begin && gs_library_range(ev.name && *ev.name ? ev.name : "(unnamed)")) {
			size_t p = gs_report_phase(r, ev.name && *ev.name ? ev.name : "(unnamed)");
			r->phases[p].library = 1;
			r->phases[p].count++;
			if (ldepth < STACK_MAX)
				lib[ldepth++] = (struct open_phase){ p, ev.start_ns };
			continue;
		}
		if (ev.kind == GSPY_KIND_phase_end && ldepth &&
		    gs_library_range(ev.name && *ev.name ? ev.name : "(unnamed)")) {
			int i = ldepth - 1;
			const char *nm = ev.name && *ev.name ? ev.name : "(unnamed)";
			while (i >= 0 && strcmp(r->phases[lib[i].idx].name, nm))
				i--;
			if (i >= 0) {
				r->phases[lib[i].idx].wall_ns += ev.start_ns - lib[i].begin;
				memmove(&lib[i], &lib[i + 1], (size_t)(ldepth - i - 1) * sizeof(lib[0]));
				ldepth--;
			}
			continue;
		}
		if (ev.kind == GSPY_KIND_phase_begin) {
			size_t p = gs_report_phase(r, ev.name && *ev.name ? ev.name : "(unnamed)");
			if (ev.has_step) /* the PyTorch helper's phases */
				r->fw_seen |= 1u << GS_FW_PYTORCH;
			r->phases[p].compile |= compile;
			if (!r->phases[p].count)
				r->phases[p].first_ns = ev.start_ns;
			/* The loop is under way at a phase's second run; a
			 * framework's second compilation is not the loop. */
			if (++r->phases[p].count == 2 && !r->phases_repeat && !r->phases[p].compile) {
				r->phases_repeat = 1;
				warm_up(&r->churn[0], ev.start_ns);
			}
			if (depth == 0)
				top_begin = ev.start_ns;
			if (depth < STACK_MAX)
				stack[depth++] = (struct open_phase){ p, ev.start_ns };
			note_phase_change(r, ev.start_ns, stack[depth - 1].idx);
			gs_mem_phase_begin(r, &ev, p, depth - 1);
			continue;
		}
		if (ev.kind == GSPY_KIND_phase_end) {
			/* Close the innermost open phase of this name (or the
			 * innermost one when the name is unknown). */
			int i = depth - 1;
			while (i >= 0 && ev.name && *ev.name && strcmp(r->phases[stack[i].idx].name, ev.name))
				i--;
			if (i < 0)
				continue;
			r->phases[stack[i].idx].wall_ns += ev.start_ns - stack[i].begin;
			if (ev.start_ns > r->phases[stack[i].idx].last_ns)
				r->phases[stack[i].idx].last_ns = ev.start_ns;
			memmove(&stack[i], &stack[i + 1], (size_t)(depth - i - 1) * sizeof(stack[0]));
			if (--depth == 0) {
				covered += ev.start_ns - top_begin;
				gs_series_top_end(r->series, ev.start_ns);
			}
			note_phase_change(r, ev.start_ns, depth ? stack[depth - 1].idx : 0);
			continue;
		}
		if (ev.kind == GSPY_KIND_mark)
			continue;
		size_t cur = depth ? stack[depth - 1].idx : 0;
		if (ev.kind == GSPY_KIND_nvml) {
			gs_tele_event(r, &ev, cur);
			continue;
		}
		if (ev.kind == GSPY_KIND_gpu_span) {
			/* Named by the phase its interval belonged to. */
			size_t p = ev.name && *ev.name ? gs_report_phase(r, ev.name) : 0;
			r->phases[p].span_ns += ev.gpu_ns;
			r->phases[p].span_n++;
			if (ev.device >= 0 && ev.device < GSPY_DEVICES) {
				r->dev[ev.device].span_ns += ev.gpu_ns;
				r->dev[ev.device].spans++;
				r->dev[ev.device].phase_span_ns += p ? ev.gpu_ns : 0;
				r->dev[ev.device].phase_spans += p != 0;
			}
			continue;
		}
		if (ev.kind >= GSPY_KIND_gpu_kernel && ev.kind <= GSPY_KIND_gpu_memset) {
			add_gpu(r, &ev, cur);
			continue;
		}
		if (ev.corr) {
			struct gs_corr_slot *cs = corr_slot(r, ev.corr);
			if (cs)
				*cs = (struct gs_corr_slot){ ev.corr, ev.start_ns, (uint32_t)cur };
		}
		if (ev.captured && ev.result == 0) {
			r->captured[ev.kind < GSPY_KIND_COUNT ? ev.kind : 0]++;
			continue; /* it did not run: the graph's launches will */
		}
		if (ev.result != 0 && ((ev.kind >= GSPY_KIND_alloc && ev.kind <= GSPY_KIND_unmap) ||
				       ev.kind == GSPY_KIND_graph)) {
			gs_report_failed(r, gs_api_name(ev.api), ev.result, ev.start_ns, ev.bytes, 1, ev.bytes);
			gs_mem_failed(r, &in, &ev, cur);
			continue; /* not done: in no total, bandwidth, site or memory */
		}
		if (gspy_kind_graph(ev.kind)) {
			gs_graph_event(r, &ev, cur);
			continue;
		}
		if (ev.kind == GSPY_KIND_launch && gspy_api_graph_launch(ev.api))
			gs_graph_event(r, &ev, cur);
		add_event(&r->total, &ev);
		add_event(&r->phases[cur].c, &ev);
		gs_coll_host(r, &ev);
		int pc = pageable_copy(&ev);
		struct last_call *lc = ev.tid ? last_call(last, ev.tid) : NULL;
		if (lc) {
			if (ev.kind == GSPY_KIND_sync && lc->pageable_copy) {
				agg_add(&r->total.sync_after_pageable, 0, ev.end_ns - ev.start_ns);
				agg_add(&r->phases[cur].c.sync_after_pageable, 0, ev.end_ns - ev.start_ns);
			}
			lc->pageable_copy = (uint8_t)pc;
		}
		/* A framework's compilation uploads what it autotunes with: not a step's copy. */
		r->pageable_h2d_warm += r->phases_repeat && pc && ev.dir == GSPY_DIR_h2d && !r->phases[cur].compile;
		if (ev.kind == GSPY_KIND_launch) {
			struct gs_kernel_stat *k = gs_report_kernel(r, launch_name(&ev));
			uint64_t ns = ev.end_ns - ev.start_ns;
			k->count++;
			k->total_ns += ns;
			if (ns < k->min_ns)
				k->min_ns = ns;
			if (ns > k->max_ns)
				k->max_ns = ns;
		}
		gs_sites_event(&r->sites, &in, &ev, cur ? r->phases[cur].name : NULL);
		track_memory(r, &ev);
		gs_mem_event(r, &ev);
	}
	/* Sync sites count only inside phases that repeat (per step). */
	for (size_t i = 0; i < r->sites.sync.n; i++) {
		struct gs_site *x = &r->sites.sync.v[i];
		size_t at = gs_report_phase(r, x->phase); /* may move r->phases */
		if (r->phases[at].count < 2)
			x->count = 0;
	}
	gs_series_end(r->series, r, r->t_last);
	gs_coll_finish(r);
	if (got < 0)
		snprintf(r->input_error, sizeof(r->input_error), "%s", in.err);
	/* Phases still open at the end run to the end of the trace. */
	for (int i = 0; i < depth; i++)
		r->phases[stack[i].idx].wall_ns += r->t_last - stack[i].begin;
	for (int i = 0; i < ldepth; i++)
		r->phases[lib[i].idx].wall_ns += r->t_last - lib[i].begin;
	if (depth)
		covered += r->t_last - top_begin;
	uint64_t span = r->t_last - r->t_first;
	r->phases[0].wall_ns = span > covered ? span - covered : 0;
	r->phases[0].count = 1;
	while (r->nheap)
		heap_pop(r);
	for (int d = 0; d < GSPY_DEVICES; d++)
		if (r->dev[d].cur_end)
			busy_done(r, &r->dev[d]);
	free(r->heap);
	free(r->changes);
	r->heap = NULL;
	r->changes = NULL;
	free(r->corr);
	r->corr = NULL;
	gs_input_close(&in);
	gs_framework_detect(r);
	gs_report_diagnose(r);
	gs_tele_diagnose(r);
	return 0;
}

uint64_t gs_own_ns(const struct gs_report *r, uint64_t *host_records)
{
	uint64_t n = r->nevents > r->gpu_records ? r->nevents - r->gpu_records : 0;
	if (host_records)
		*host_records = n;
	return n * GS_RECORD_COST_NS + r->proc.stacks_ns;
}

void gs_report_free(struct gs_report *r)
{
	gs_mem_free(r);
	for (size_t i = 0; i < r->nphases; i++)
		free(r->phases[i].name);
	for (size_t i = 0; i < r->kernels_cap; i++)
		free(r->kernels[i].name);
	for (size_t i = 0; i < r->ndiag; i++) {
		free(r->diag[i].text);
		free(r->diag[i].how);
	}
	free(r->phases);
	free(r->kernels);
	gs_coll_free(r);
	free(r->diag);
	free(r->corr);
	free(r->heap);
	free(r->changes);
	free(r->graphs);
	gs_sites_free(&r->sites);
	gs_series_free(r->series);
	memset(r, 0, sizeof(*r));
}
