/* SPDX-License-Identifier: MIT */
/*
 * Diagnoses: each is the numbers from the trace plus the concrete change to
 * make, in one or two lines. Until GPU timings are in the trace, the ones
 * that need the GPU's side (starvation, launch-bound) are host-side
 * estimates and say so.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "report/diag.h"
#include "report/report.h"
#include "report/section.h"
#include "report/steps.h"
#include "util/units.h"
#include "util/xalloc.h"
#include "util/escape.h"

#define add gs_diag_add

/* What the change in the diagnosis just added would save: save_ns in all,
 * an upper bound (about = 0) or an estimate (about = 1), and how it was
 * computed from the timeline, as a clause ("the host's waits in them"). */
static void saving(struct gs_report *r, uint64_t save_ns, int about, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void saving(struct gs_report *r, uint64_t save_ns, int about, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	struct gs_diag *d = &r->diag[r->ndiag - 1];
	d->save_ns = save_ns;
	d->steps = gs_mem_steps(r);
	d->about = about;
	d->how = xstrdup(buf);
}

/* The last diagnosis's saving is a one-time cost: over no steps. */
static void once(struct gs_report *r)
{
	r->diag[r->ndiag - 1].steps = 0;
	r->diag[r->ndiag - 1].once = 1;
}

/* What pinning the pageable copies of one direction saves: their host
 * time less the same bytes at the pinned bandwidth this run measured on
 * the GPU (CUPTI), an estimate; without a pinned copy to measure, their
 * whole host time, an upper bound (an asynchronous copy from pinned
 * memory returns at once). */
static void pin_saving(struct gs_report *r, int dir)
{
	const struct gs_agg *pg = &r->total.copy[dir][GS_PAGEABLE];
	const struct gs_agg *pin = &r->total.copy[dir][GS_PINNED];
	char t[32], bw[32];
	if (pin->gpu_ns && pin->gpu_bytes >= GS_PIN_BYTES) {
		double at_pinned = (double)pg->bytes * (double)pin->gpu_ns / (double)pin->gpu_bytes;
		uint64_t save = (double)pg->host_ns > at_pinned ? pg->host_ns - (uint64_t)at_pinned : 0;
		saving(r, save, 1,
		       "the copies' host time, %s, less the same bytes at the pinned bandwidth measured here, %s GB/s "
		       "(more where they then overlap compute)",
		       gs_fmt_ns(t, pg->host_ns), gs_fmt_rate(bw, pin->gpu_bytes, pin->gpu_ns));
		return;
	}
	saving(r, pg->host_ns, 0,
	       "the copies' host time, as a copy from pinned memory returns at once (no pinned copy here "
	       "measured the bandwidth)");
}

/* What to change, in the terms of the process's framework (gs_framework:
 * CUDA, PyTorch, JAX, CuPy): a JAX program is not told about DataLoader. */
enum { ADV_PIN, ADV_PIN_D2H, ADV_STARVE, ADV_SYNC, ADV_SYNC_PAGEABLE, ADV_LAUNCH, ADV_CHURN, ADV_OOM, ADV_LEAK,
       ADV_OOM_RISK, ADV_COMPILE, ADV_HOST, ADV_COUNT };
static const char *const advice_text[ADV_COUNT][GS_FW_COUNT] = {
	[ADV_PIN] = {
		"Pin the source: allocate it with cudaHostAlloc/cudaMallocHost (or register it with "
		"cudaHostRegister), then copy with cudaMemcpyAsync.",
		"Pin the source: DataLoader(pin_memory=True) or tensor.pin_memory() (cudaHostAlloc in C), then copy "
		"with non_blocking=True.",
		"Feed the step ahead of time: jax.device_put the next batch while this step runs (or prefetch it to "
		"the device, as flax.jax_utils.prefetch_to_device does).",
		"Copy from pinned memory: make the host array with cupyx.empty_pinned() (or "
		"cupy.cuda.alloc_pinned_memory), then copy on a stream of your own.",
	},
	[ADV_PIN_D2H] = {
		"copy into a pinned buffer (cudaHostAlloc), which the GPU writes without staging",
		"copy into a pinned buffer (torch.empty(..., pin_memory=True)), which the GPU writes without staging",
		"fetch results every " GS_STR(GS_WAIT_EVERY) " steps rather than each step (jax.device_get of a batch "
		"of them)",
		"copy into a pinned buffer (cupyx.empty_pinned()), which the GPU writes without staging",
	},
	[ADV_STARVE] = {
		"Load ahead: prepare the next batch on another thread while the GPU runs, and copy it asynchronously "
		"from pinned memory.",
		"Load ahead: raise DataLoader num_workers, set prefetch_factor and persistent_workers=True, or move "
		"decoding/augmentation to the GPU.",
		"Load ahead: prefetch batches on another thread (tf.data's prefetch, grain) and device_put the next "
		"one while the step runs.",
		"Load ahead: prepare the next batch on another thread while the GPU runs, and copy it from pinned "
		"memory on a stream of your own.",
	},
	[ADV_SYNC] = {
		"Remove per-step cudaDeviceSynchronize/cudaStreamSynchronize and synchronous cudaMemcpy; order work "
		"with events (cudaEventRecord, cudaStreamWaitEvent).",
		"Remove per-step .item(), .cpu(), print(tensor) and torch.cuda.synchronize(); copy with "
		"non_blocking=True from pinned memory.",
		"Remove per-step block_until_ready(), jax.device_get(), float(x) and print(x) of device arrays: keep "
		"values on the device and fetch them every " GS_STR(GS_WAIT_EVERY) " steps.",
		"Remove per-step .get(), cupy.asnumpy(), float(x) and stream synchronize calls; fetch results every "
		GS_STR(GS_WAIT_EVERY) " steps.",
	},
	[ADV_SYNC_PAGEABLE] = {
		"Copy from pinned memory (cudaHostAlloc) with cudaMemcpyAsync: a copy from pageable memory makes the "
		"host wait for it.",
		"Copy from pinned memory (DataLoader(pin_memory=True), tensor.pin_memory()) with non_blocking=True: a "
		"copy from pageable memory makes the host wait for it.",
		"Put batches on the device ahead of the step (jax.device_put while the previous step runs): a copy "
		"from pageable memory makes the host wait for it.",
		"Copy from pinned memory (cupyx.empty_pinned()) on a stream of your own: a copy from pageable memory "
		"makes the host wait for it.",
	},
	[ADV_LAUNCH] = {
		"Launch less often: capture the step in a CUDA graph (cudaStreamBeginCapture, cudaGraphLaunch); fuse "
		"small kernels.",
		"Launch less often: capture the step in a CUDA graph, or use torch.compile(mode=\"reduce-overhead\"); "
		"fuse small operations.",
		"Launch less often: jit the whole step rather than its parts, and turn Python loops inside it into "
		"lax.scan or lax.fori_loop.",
		"Launch less often: fuse element-wise operations (cupy.fuse, ElementwiseKernel), or capture the step "
		"in a CUDA graph through stream capture.",
	},
	[ADV_CHURN] = {
		"Allocate once and reuse, or allocate from a stream-ordered pool (cudaMallocAsync, cudaFreeAsync).",
		"Allocate once and reuse: keep buffers across steps, avoid torch.cuda.empty_cache() in the loop, keep "
		"shapes stable, or use a stream-ordered pool (cudaMallocAsync).",
		"Allocate once and reuse: keep shapes stable across steps (each new shape compiles and allocates "
		"anew), and leave XLA's preallocation on (XLA_PYTHON_CLIENT_PREALLOCATE).",
		"Allocate once and reuse: keep CuPy's memory pool (no free_all_blocks() in the loop) and keep shapes "
		"stable.",
	},
	[ADV_OOM] = {
		"Hold less at that point: free buffers no longer needed, or work in smaller chunks.",
		"Hold less at that point: a smaller batch, activation checkpointing, mixed precision; free what the "
		"loop keeps (tensors kept across steps); or set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True if "
		"the memory is fragmented.",
		"Hold less at that point: a smaller batch, jax.checkpoint (rematerialization), bfloat16; or lower "
		"XLA_PYTHON_CLIENT_MEM_FRACTION if another process shares the GPU.",
		"Hold less at that point: free what the loop keeps, release the pool's cached blocks "
		"(cupy.get_default_memory_pool().free_all_blocks()), or work in smaller chunks.",
	},
	[ADV_LEAK] = {
		"Find what the loop keeps: buffers allocated each step and never freed.",
		"Find what the loop keeps: tensors stored across steps (a loss kept for logging without .item() or "
		".detach() keeps its whole graph), caches that only grow, lists of outputs.",
		"Find what the loop keeps: device arrays stored across steps (lists of outputs or metrics kept "
		"without jax.device_get), caches that only grow.",
		"Find what the loop keeps: arrays stored across steps (lists of outputs), caches that only grow.",
	},
	[ADV_OOM_RISK] = {
		"Hold less: smaller batches or chunks, fewer buffers alive at once.",
		"Lower the batch size, use activation checkpointing or mixed precision, or set "
		"PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True against fragmentation.",
		"Hold less: a smaller batch, jax.checkpoint, bfloat16.",
		"Hold less: smaller batches or chunks; the memory pool keeps freed blocks "
		"(free_all_blocks() releases them).",
	},
	[ADV_HOST] = {
		"Give the GPU more per launch (larger batches, fused kernels), and keep the host ahead: prepare the "
		"next step's work while this one runs, with no host work between a step's launches.",
		"Give the GPU more per step (a larger batch), take Python out of the step (torch.compile, CUDA graphs "
		"with mode=\"reduce-overhead\"), and move per-step host work (logging, metrics, data preparation) "
		"off the step's path.",
		"Give the GPU more per dispatch: a larger batch, or several steps in one jitted call (lax.scan or "
		"lax.fori_loop over the steps); keep per-step Python (logging, metrics, jax.device_get) off the "
		"step's path.",
		"Give the GPU more per launch: larger arrays per call, fused kernels (cupy.fuse, ElementwiseKernel), "
		"fewer Python-level operations a step.",
	},
	[ADV_COMPILE] = { /* only XLA's compilations are seen (XlaCompile ranges) */
		"Compile less: keep input shapes and types the same from step to step.",
		"Compile less: keep input shapes and types the same from step to step.",
		"Compile less: keep shapes, dtypes and static arguments the same from step to step (each new one "
		"compiles anew; pad to a few fixed sizes), and keep compiled programs across runs with the "
		"persistent cache (jax.config.update(\"jax_compilation_cache_dir\", DIR)).",
		"Compile less: keep input shapes and types the same from step to step.",
	},
};

static const char *advice(const struct gs_report *r, int what)
{
	return advice_text[what][r->framework < GS_FW_COUNT ? r->framework : GS_FW_CUDA];
}

/* Where a site is, for a sentence: "PREP F" with F the innermost frame it
 * shows; when even that frame is a library's (the stack has no frame of
 * the program's own), "in OWNER (F)". */
/* A site's innermost frame, into f, and whose code it is (NULL: the
 * program's own). */
static const char *first_owner(const char *frames, char *f, size_t cap)
{
	size_t k = strcspn(frames, "\n");
	snprintf(f, cap, "%.*s", (int)(k < cap - 1 ? k : cap - 1), frames);
	return gs_frame_owner(f);
}

/* A phase's name in a diagnosis: the trace's bytes, on one line (a
 * newline in them would end the diagnosis's first line early, and what
 * follows would pass for the change to make); as long as a diagnosis may
 * be (diag.c). */
static const char *pn(char buf[1024], const char *name)
{
	return gs_term_line(buf, 1024, name, SIZE_MAX);
}

static const char *place(const char *frames, const char *prep, char *buf, size_t cap)
{
	char f[200];
	const char *owner = first_owner(frames, f, sizeof(f));
	if (owner)
		snprintf(buf, cap, "in %s (%.180s)", owner, f);
	else
		snprintf(buf, cap, "%s %.180s", prep, f);
	return buf;
}

static void pageable(struct gs_report *r, uint64_t span)
{
	const struct gs_agg *h = &r->total.copy[GSPY_DIR_h2d][GS_PAGEABLE];
	const struct gs_agg *d = &r->total.copy[GSPY_DIR_d2h][GS_PAGEABLE];
	char b[32], t[32], w[32];
	/* With call stacks: the biggest pageable copy site, and where its
	 * buffer was allocated when host allocations were recorded. */
	char where[700] = "";
	const struct gs_site **v;
	size_t n = gs_sites_sorted(&r->sites.copy, GS_BY_BYTES, &v);
	/* The largest host-to-device site: this diagnosis is about those
	 * (copy sites hold both directions; mem is the direction). */
	size_t first = 0;
	while (first < n && v[first]->mem != GSPY_DIR_h2d)
		first++;
	if (first < n) {
		const struct gs_site *x = v[first];
		/* "All" when this site copied every pageable host-to-device byte. */
		const char *which = x->bytes == h->bytes ? "All" : "The largest:";
		char at[240], from[240];
		place(x->frames, "in", at, sizeof(at));
		if (x->host_alloc) {
			snprintf(where, sizeof(where),
				 " %s %s copied %s from a %s pageable buffer allocated %s; "
				 "pin it there.", which, gs_fmt_bytes(w, x->bytes), at,
				 gs_fmt_bytes(t, x->host_alloc_bytes), place(x->host_alloc, "in", from, sizeof(from)));
		} else {
			snprintf(where, sizeof(where), " %s %s copied %s.", which, gs_fmt_bytes(w, x->bytes), at);
		}
	}
	free(v);
	/* Copies made only before a loop's warm-up (a model's weights uploaded
	 * once) that took under 1% of the run are not worth pinning. */
	int one_off = r->phases_repeat && !r->pageable_h2d_warm && h->host_ns * 100 < span;
	if (h->count && !one_off)
		add(r, "pageable_copies",
		    "%llu host-to-device cop%s (%s, %s on the host) read pageable memory: the driver stages "
		    "%s through a bounce buffer and %s cannot overlap compute.%s\n%s",
		    (unsigned long long)h->count, gs_pl(h->count, "y", "ies"), gs_fmt_bytes(b, h->bytes),
		    gs_fmt_ns(t, h->host_ns), gs_pl(h->count, "it", "them"), gs_pl(h->count, "it", "they"),
		    where, advice(r, ADV_PIN));
	if (h->count && !one_off) {
		pin_saving(r, GSPY_DIR_h2d);
		if (r->phases_repeat && !r->pageable_h2d_warm)
			once(r); /* copies made once, before the loop: not a step's */
	}
	/* A copy back under 1 MiB costs its wait for the work before it, not
	 * its bytes: a wait (step_waits, sync_stalls), not pinning's. */
	if (r->pageable_d2h_big >= 10) {
		add(r, "pageable_copies_d2h",
		    "%llu device-to-host copies (%s) land in pageable memory; %s.",
		    (unsigned long long)d->count, gs_fmt_bytes(b, d->bytes), advice(r, ADV_PIN_D2H));
		pin_saving(r, GSPY_DIR_d2h);
	}
}

/* Loading ahead overlaps a data phase with the rest of the loop: it saves
 * at most the shorter of the two. */
static void overlap_saving(struct gs_report *r, const struct gs_phase_stat *p, uint64_t loop)
{
	uint64_t rest = loop > p->wall_ns ? loop - p->wall_ns : 0;
	char a[32], b[32], nm[1024];
	saving(r, p->wall_ns < rest ? p->wall_ns : rest, 0,
	       "loading ahead overlaps '%s' (%s) with the rest of the loop (%s): at most the shorter of the two",
	       pn(nm, p->name), gs_fmt_ns(a, p->wall_ns), gs_fmt_ns(b, rest));
}

static uint64_t sync_copies(const struct gs_cats *c)
{
	uint64_t n = 0;
	for (int d = 0; d < GSPY_DIR_COUNT; d++)
		n += c->copy_sync[d][0].count + c->copy_sync[d][1].count;
	return n;
}

/* A share as a person reads it: whole percent, one decimal under 1%. */
static int pct_digits(double share)
{
	return share > 0 && share < 0.01 ? 1 : 0;
}

/* pre + "FUNC (FILE:LINE)" where the PyTorch helper marked where the loop's
 * DataLoader was made, else "". */
static const char *loader_made(const struct gs_report *r, const char *pre, char *buf, size_t cap)
{
	const struct gs_loader *l = gs_loader_at(r, r->steps && r->steps->found ? r->steps->steady_from : UINT64_MAX);
	snprintf(buf, cap, "%s%s", l ? pre : "", l ? l->at : "");
	return buf;
}

/* A DataLoader that already loads in worker processes (the helper's
 * mark): the data phase is the step waiting for them, and more of them,
 * or cheaper samples, is the change. How much that gives back depends on
 * the workers' own time, which the trace does not hold (other processes,
 * no CUDA calls): no replay, an upper bound. */
static void behind(struct gs_report *r, const struct gs_phase_stat *p, double share, double busy)
{
	char w[32], most[96] = "", nm[1024], made[300];
	if (r->proc.cpus > r->loader_workers + 1)
		snprintf(most, sizeof(most), " (this process may use %u CPUs: up to %u workers beside the step)",
			 r->proc.cpus, r->proc.cpus - 1);
	add(r, "loader_behind",
	    "Phase '%s' takes %.0f%% of the time in phases (%s over %llu occurrences) waiting for the "
	    "%u worker processes of the DataLoader%s, and the GPU is busy only %.*f%% of it: the workers do "
	    "not keep up.\n"
	    "Give the loader more workers%s, or make each sample cheaper (decode or augment on the GPU, "
	    "cache what repeats).",
	    pn(nm, p->name), 100 * share, gs_fmt_ns(w, p->wall_ns), (unsigned long long)p->count, r->loader_workers,
	    loader_made(r, " made at ", made, sizeof(made)), pct_digits(busy), 100 * busy, most);
	char a[32];
	saving(r, p->wall_ns, 0, "the wait in '%s' (%s), were the workers always a batch ahead: at most all of it",
	       pn(nm, p->name), gs_fmt_ns(a, p->wall_ns));
}

static void starvation(struct gs_report *r, uint64_t span)
{
	/* Share of the time spent inside phases (the loop), not of the whole
	 * run: start-up and teardown outside phases would dilute it. */
	gs_loop_span(r, &span);
	for (size_t i = 1; i < r->nphases; i++) {
		const struct gs_phase_stat *p = &r->phases[i];
		if (!gs_data_phase(p->name) || p->count < 2 || !span)
			continue;
		double share = (double)p->wall_ns / (double)span;
		if (share < 0.2)
			continue;
		char w[32], nm[1024], made[300];
		if (r->gpu_timing == GSPY_GPU_TIMING_cupti) {
			double busy = p->wall_ns ? (double)p->gpu_busy_ns / (double)p->wall_ns : 0;
			if (busy >= 0.2)
				continue;
			char idle[32];
			if (r->loader_workers) {
				behind(r, p, share, busy);
				continue;
			}
			add(r, "data_starvation",
			    "Phase '%s' takes %.0f%% of the time in phases (%s over %llu occurrences) and the GPU is "
			    "busy only %.*f%% of it (%s idle): the GPU waits for data%s.\n%s",
			    pn(nm, p->name), 100 * share, gs_fmt_ns(w, p->wall_ns), (unsigned long long)p->count,
			    pct_digits(busy), 100 * busy, gs_fmt_ns(idle, p->wall_ns - p->gpu_busy_ns),
			    loader_made(r, ", from the DataLoader made at ", made, sizeof(made)), advice(r, ADV_STARVE));
			overlap_saving(r, p, span);
			continue;
		}
		if (p->c.launch.count > p->count)
			continue;
		/* With CUDA events: the phases' GPU spans bound how long the
		 * GPU worked (spans include gaps; streams may overlap). */
		char bound[96] = "";
		uint64_t spans = 0;
		for (size_t k = 1; k < r->nphases; k++)
			spans += r->phases[k].span_ns;
		if (r->gpu_timing == GSPY_GPU_TIMING_events && spans < span)
			snprintf(bound, sizeof(bound), "; CUDA events: the GPU worked at most %.0f%% of that time",
				 100.0 * (double)spans / (double)span);
		add(r, "data_starvation",
		    "Phase '%s' takes %.0f%% of the time in phases (%s over %llu occurrences) and launches no "
		    "GPU work: "
		    "the GPU waits for data (host-side estimate%s)%s.\n%s",
		    pn(nm, p->name), 100 * share, gs_fmt_ns(w, p->wall_ns), (unsigned long long)p->count, bound,
		    loader_made(r, ", from the DataLoader made at ", made, sizeof(made)), advice(r, ADV_STARVE));
		overlap_saving(r, p, span);
	}
}

static void stalls(struct gs_report *r)
{
	for (size_t i = 1; i < r->nphases; i++) {
		const struct gs_phase_stat *p = &r->phases[i];
		uint64_t sc = sync_copies(&p->c);
		if (p->compile || p->count < 2 || p->c.sync.count + sc < p->count)
			continue; /* (a compiler's waits are not the loop's) */
		char t[32], waits[160] = "", copies[64] = "", after[64] = "", nm[1024];
		uint64_t na = p->c.sync_after_pageable.count;
		if (na == p->c.sync.count && na)
			snprintf(after, sizeof(after), "; each right after a pageable copy");
		else if (na)
			snprintf(after, sizeof(after), "; %llu right after a pageable copy", (unsigned long long)na);
		if (p->c.sync.count)
			snprintf(waits, sizeof(waits), "synchronizes %llu time%s (%s waiting%s)",
				 (unsigned long long)p->c.sync.count, gs_pl(p->c.sync.count, "", "s"),
				 gs_fmt_ns(t, p->c.sync.host_ns), after);
		if (sc)
			snprintf(copies, sizeof(copies), "makes %llu synchronous cop%s",
				 (unsigned long long)sc, gs_pl(sc, "y", "ies"));
		/* Waits that each follow a pageable copy are the copies' own
		 * (PyTorch waits for every copy from pageable memory). */
		add(r, "sync_stalls",
		    "Phase '%s' (%llu occurrences) %s%s%s: each one stops the host until the GPU drains "
		    "its queue.\n%s",
		    pn(nm, p->name), (unsigned long long)p->count, waits, *waits && *copies ? " and " : "", copies,
		    advice(r, na && na == p->c.sync.count ? ADV_SYNC_PAGEABLE : ADV_SYNC));
		uint64_t wait = p->c.sync.host_ns;
		for (int d = 0; d < GSPY_DIR_COUNT; d++)
			wait += p->c.copy_sync[d][0].host_ns + p->c.copy_sync[d][1].host_ns;
		saving(r, wait, 0, "the host's time in those waits and synchronous copies (the GPU's work stays)");
		r->diag[r->ndiag - 1].phase = i;
	}
}

/* The steps a bound is over in the end (advice.c's over_the_steps and
 * cut_bound): PyTorch's or the phases', or the step's where they are more
 * (a run with no phases: theirs alone). */
static uint64_t bound_steps(const struct gs_report *r)
{
	uint64_t steps = gs_mem_steps(r);
	if (r->steps && r->steps->found && r->steps->steps > steps)
		steps = r->steps->steps;
	return steps;
}

/* Folding a step's launches into one graph launch: the launch calls' host
 * time less one launch (at their mean) per step. */
static uint64_t fold_saving(struct gs_report *r, uint64_t launch_n, uint64_t launch_ns)
{
	uint64_t steps = bound_steps(r), left = steps ? steps : 1;
	if (!launch_n)
		return 0;
	double mean = (double)launch_ns / (double)launch_n;
	return launch_ns - (uint64_t)(mean * (double)(left < launch_n ? left : launch_n));
}

static void graph_saving(struct gs_report *r, uint64_t launch_n, uint64_t launch_ns)
{
	uint64_t steps = bound_steps(r);
	char a[32], m[32];
	saving(r, fold_saving(r, launch_n, launch_ns), 0,
	       "the %llu launch calls' host time, %s, less one launch (%s) per %s", (unsigned long long)launch_n,
	       gs_fmt_ns(a, launch_ns), gs_fmt_ns(m, launch_ns / launch_n), steps ? "step" : "run");
}

static void launch_bound(struct gs_report *r, uint64_t span)
{
	const struct gs_agg *l = &r->total.launch;
	if (l->count < 1000 || !span)
		return;
	/* The loop's shares: with phases, of the time in them, as the
	 * starvation check does; the start-up outside them (imports, the
	 * first context, compilation) would dilute GPU busy and launch time
	 * alike. GPU busy there sums the work that started in each phase. */
	uint64_t window = span, busy = 0, launch_ns = l->host_ns, sync_ns = r->total.sync.host_ns;
	uint64_t launch_n = l->count;
	const char *of = "of the time";
	for (int d = 0; d < GSPY_DEVICES; d++)
		busy += r->dev[d].busy_ns;
	int in_phases = gs_loop_span(r, &window);
	if (in_phases) {
		busy = launch_ns = sync_ns = launch_n = 0;
		for (size_t i = 1; i < r->nphases; i++) {
			busy += r->phases[i].gpu_busy_ns;
			launch_n += r->phases[i].c.launch.count;
			launch_ns += r->phases[i].c.launch.host_ns;
			sync_ns += r->phases[i].c.sync.host_ns;
		}
		of = "of the time in phases";
	}
	/* Steps that launch about once each (a JAX step is one graph launch)
	 * have no launches to fold: what is short there is the work itself. */
	if (!launch_n || fold_saving(r, launch_n, launch_ns) * 100 < window)
		return;
	/* Launch calls that take under a quarter of the host's time do not set
	 * its pace, however short the kernels (the host-bound check names
	 * the wait then). */
	double launch_share = (double)launch_ns / (double)window;
	if (launch_share < 0.25)
		return;
	if (r->gpu_timing == GSPY_GPU_TIMING_cupti && l->gpu_count) {
		/* Kernels that graphs ran share their launch: not counted. */
		if (!r->own_kernels)
			return;
		double short_share = (double)r->short_kernels / (double)r->own_kernels;
		double busy_share = (double)busy / (double)window;
		if (short_share < 0.5 || busy_share > 0.6)
			return;
		char k[32], m[32];
		add(r, "launch_bound",
		    "%.0f%% of %llu kernels ran shorter than their launch call takes (kernel mean %s, launch "
		    "mean %s) and the GPU is busy only %.*f%% %s: the run is launch-bound.\n%s",
		    100 * short_share, (unsigned long long)r->own_kernels, gs_fmt_ns(k, r->own_kernel_ns / r->own_kernels),
		    gs_fmt_ns(m, l->host_ns / l->count), pct_digits(busy_share), 100 * busy_share, of,
		    advice(r, ADV_LAUNCH));
		graph_saving(r, launch_n, launch_ns);
		return;
	}
	double sync_share = (double)sync_ns / (double)window;
	if (sync_share > 0.10)
		return;
	char m[32];
	add(r, "launch_bound",
	    "%llu kernel launches take %.0f%% of the host's time%s (mean %s each) while it waits for the "
	    "GPU only %.*f%%: the GPU finishes work faster than it is launched (host-side estimate).\n%s",
	    (unsigned long long)launch_n, 100 * launch_share, in_phases ? " in phases" : "",
	    gs_fmt_ns(m, launch_ns / launch_n), pct_digits(sync_share), 100 * sync_share, advice(r, ADV_LAUNCH));
	graph_saving(r, launch_n, launch_ns);
}

static int diagnosed(const struct gs_report *r, const char *id)
{
	for (size_t i = 0; i < r->ndiag; i++)
		if (!strcmp(r->diag[i].id, id))
			return 1;
	return 0;
}

/* What a host-bound step should change. A PyTorch step that already
 * replays a CUDA graph (torch.compile's reduce-overhead, torch.cuda.graphs)
 * is told of no graph: what is left is the host's work around it. */
static const char *host_advice(const struct gs_report *r)
{
	const struct gs_steps *s = r->steps;
	if (r->framework == GS_FW_PYTORCH && s && s->found && s->graph_launches)
		return "The step already replays a CUDA graph: what is left is the host's work around it. Give the "
		       "GPU more per step (a larger batch), bring more of the step into the graph (the optimizer's "
		       "step too: torch.compile of the whole training step), and move per-step host work (logging, "
		       "metrics) off the step's path.";
	return advice(r, ADV_HOST);
}

/* The GPU waits for the host: in the loop (the phases that repeat at least
 * 10 times, from the first one's first run to their last end), a quarter
 * of the time or more the GPU sat idle before work launched only after it
 * went idle (CUPTI), and no host-side cause was named already (launches,
 * a data phase or its workers, waits). */
static void host_bound(struct gs_report *r)
{
	if (r->gpu_timing != GSPY_GPU_TIMING_cupti || diagnosed(r, "launch_bound") ||
	    diagnosed(r, "data_starvation") || diagnosed(r, "loader_behind") || diagnosed(r, "sync_stalls"))
		return;
	uint64_t idle = 0, last = 0;
	const struct gs_phase_stat *first = NULL; /* of the repeated phases, the first to run */
	for (size_t i = 1; i < r->nphases; i++) {
		const struct gs_phase_stat *p = &r->phases[i];
		if (p->library || p->compile || p->count < 10)
			continue;
		idle += p->idle_host_ns;
		if (!first || p->first_ns < first->first_ns)
			first = p;
		if (p->last_ns > last)
			last = p->last_ns;
	}
	/* The loop: from the first run of its phases to their last end, or
	 * the end of the GPU work they launched (not the exit after it). */
	if (!first || first->first_ns >= last || idle * 4 < last - first->first_ns)
		return;
	uint64_t window = last - first->first_ns;
	char a[32], b[32], nm[1024];
	/* Where a JAX step is dispatched, where its launches keep stacks (steps.c). */
	const char *at = r->framework == GS_FW_JAX && r->steps ? r->steps->launch_where : "";
	add(r, "host_bound",
	    "In the loop (%s, from the first '%s' on), the GPU sat idle %s (%.0f%%) waiting for the host: the "
	    "work after each of those gaps was launched only after the GPU had gone idle. The host sets the "
	    "pace.%s%s%s\n%s",
	    gs_fmt_ns(b, window), pn(nm, first->name), gs_fmt_ns(a, idle), 100.0 * (double)idle / (double)window,
	    *at ? " Its steps are dispatched at " : "", at, *at ? "." : "", host_advice(r));
	saving(r, idle, 0, "the GPU's idle time waiting for the host, which it would spend working were the "
	       "host ahead");
}

/* "136 GiB in 17 blocks at F; 2.0 GiB in 1 block at G" for the top three
 * sites by what they held at the failure (GS_BY_OOM) or grew by (GS_BY_GROWTH). */
static void holders(const struct gs_siteset *set, int by, char *out, size_t cap)
{
	const struct gs_site **v;
	size_t n = gs_sites_sorted(set, by, &v), len = 0;
	out[0] = 0;
	for (size_t i = 0; i < n && i < 3 && len + 2 < cap; i++) {
		char b[32], f[240], blocks[48] = "";
		uint64_t bytes = by == GS_BY_OOM ? v[i]->oom_bytes : v[i]->last_bytes - v[i]->base_bytes;
		if (by == GS_BY_OOM)
			snprintf(blocks, sizeof(blocks), " in %llu block%s", (unsigned long long)v[i]->oom_count,
				 v[i]->oom_count == 1 ? "" : "s");
		/* A site with no frame of the program's own says the phase it
		 * allocated in, when that was one. */
		char in[4 * 64 + 16] = "", first[200], nm[4 * 64 + 1];
		if (first_owner(v[i]->frames, first, sizeof(first)) && v[i]->alloc_phase && !v[i]->phases_mixed)
			snprintf(in, sizeof(in), ", all in '%s'", gs_term_line(nm, sizeof(nm), v[i]->alloc_phase, 64));
		int k = snprintf(out + len, cap - len, "%s%s%s %s%s", i ? "; " : "", gs_fmt_bytes(b, bytes), blocks,
				 place(v[i]->frames, "at", f, sizeof(f)), in);
		if (k < 0 || (size_t)k >= cap - len)
			break;
		len += (size_t)k;
	}
	free(v);
}

/* An allocation failed for lack of device memory: the fact, first. */
static void out_of_memory(struct gs_report *r)
{
	const struct gs_oom *o = &r->oom;
	if (!o->n)
		return;
	char t[32], b[32], held[32], dev[32], fr[32], where[64] = "", site[240] = "", tops[700], step[96] = "",
		f[240], nm[1024];
	if (o->phase)
		snprintf(step, sizeof(step), " in %s (its occurrence %llu)", pn(nm, o->phase),
			 (unsigned long long)o->phase_n);
	if (r->device_total)
		snprintf(where, sizeof(where), " of the device's %s", gs_fmt_bytes(dev, r->device_total));
	if (o->frames)
		snprintf(site, sizeof(site), " Asked %s.", place(o->frames, "at", f, sizeof(f)));
	holders(&r->sites.alloc, GS_BY_OOM, tops, sizeof(tops));
	char retry[200] = "";
	if (o->retry)
		snprintf(retry, sizeof(retry), " The caching allocator then freed %llu cached block%s (%s) and retried: %s.",
			 (unsigned long long)o->freed_n, o->freed_n == 1 ? "" : "s", gs_fmt_bytes(fr, o->freed_bytes),
			 o->retry > 0 ? "the retry succeeded" : "it failed again");
	add(r, "out_of_memory",
	    "Out of device memory at %s%s: %s asked for %s while %s was held%s (%llu allocation%s failed "
	    "for lack of memory).%s%s%s%s.\n%s",
	    gs_fmt_ns(t, o->t_ns > r->t_first ? o->t_ns - r->t_first : 0), step, o->api, gs_fmt_bytes(b, o->bytes),
	    gs_fmt_bytes(held, (uint64_t)(o->reserved > 0 ? o->reserved : 0)), where, (unsigned long long)o->n,
	    o->n == 1 ? "" : "s", retry, site, tops[0] ? " Held then: " : "", tops, advice(r, ADV_OOM));
}

/* Device memory that grows every step and never comes back: a leak. */
static int growth(struct gs_report *r)
{
	double per;
	size_t steps;
	if (!gs_mem_leak(r, &per, &steps))
		return 0;
	const struct gs_growth *g = &r->growth;
	char p[32], now[32], full[120] = "", tops[700];
	int64_t last = g->at[g->n - 1];
	if (r->device_total && (double)r->device_total > (double)last && per > 0)
		snprintf(full, sizeof(full), "; at that rate the device's %s is full in %.0f more steps",
			 gs_fmt_bytes(now, r->device_total), ((double)r->device_total - (double)last) / per);
	holders(&r->sites.alloc, GS_BY_GROWTH, tops, sizeof(tops));
	char unit[80], nm[1024];
	if (g->by_step)
		snprintf(unit, sizeof(unit), "step");
	else
		snprintf(unit, sizeof(unit), "%s phase", pn(nm, r->phases[g->phase].name));
	add(r, "memory_growth",
	    "Device memory grows every %s and is never returned: %s more per %s over %zu %ss, %s held at the "
	    "end%s: a leak.%s%s%s\n%s",
	    unit, gs_fmt_bytes(p, (uint64_t)per), unit, steps, unit, gs_fmt_bytes(now, (uint64_t)(last > 0 ? last : 0)),
	    full, tops[0] ? " Grew the most: " : "", tops, tops[0] ? "." : "", advice(r, ADV_LEAK));
	return 1;
}

#define CHURN_TURNS 3 /* frees followed by an allocation: a loop's, not a setup's then a teardown's */

static void churn(struct gs_report *r)
{
	const struct gs_churn *c = &r->churn[r->phases_repeat ? 0 : 1];
	/* Churn is allocations that are freed again: growth with few frees is
	 * a leak (growth) or a cache filling up, not churn; a program's setup
	 * that runs past the first fifth of its events, then its teardown's
	 * frees, turn from freeing to allocating no more than once (the zoo's
	 * um_streams_cublas: 67 and 135 of them). */
	if (c->allocs + c->frees < 10 || c->frees * 2 < c->allocs || c->turns < CHURN_TURNS)
		return;
	char b[32], t[32];
	/* Of the time after warm-up: the first calls (a context's creation
	 * inside the first cudaMalloc) would hide a loop's churn. */
	uint64_t after = r->t_last > c->from_ns ? r->t_last - c->from_ns : 0;
	double share = after ? (double)c->host_ns / (double)after : 0;
	if (share < 0.01)
		return; /* under 1% of the time: not worth changing the code for */
	/* With call stacks: where the most of those frees were made (a cache
	 * emptied every step, torch.cuda.empty_cache(), is a line of the
	 * program's). */
	char where[300] = "", at[240];
	const struct gs_site **v;
	size_t n = gs_sites_sorted(&r->sites.frees[r->phases_repeat ? 0 : 1], GS_BY_COUNT, &v);
	if (n)
		place(v[0]->frames, "at", at, sizeof(at));
	if (n && at[strlen(at) - 1] != ' ') /* a first frame that renders empty: "at " */
		snprintf(where, sizeof(where), " The most of those frees from one place, %llu, were %s.",
			 (unsigned long long)v[0]->count, at);
	free(v);
	add(r, "allocation_churn",
	    "%llu device allocations (%s) and %llu frees after warm-up (%s) took %s in the calls, %.*f%% "
	    "of the time after it: each cudaMalloc/cudaFree synchronizes the device.%s\n%s",
	    (unsigned long long)c->allocs, gs_fmt_bytes(b, c->alloc_bytes), (unsigned long long)c->frees,
	    r->phases_repeat ? "after the first occurrence of a repeated phase"
			     : "after the first fifth of the events",
	    gs_fmt_ns(t, c->host_ns), pct_digits(share), 100 * share, where, advice(r, ADV_CHURN));
	saving(r, c->host_ns, 0, "the time in those calls, which a buffer reused or taken from a pool does not make");
}

static void oom(struct gs_report *r)
{
	if (!r->device_total || r->peak_reserved <= 0 || r->oom.n) /* a real one is said first */
		return;
	double share = (double)r->peak_reserved / (double)r->device_total;
	if (share < 0.9)
		return;
	char p[32], t[32];
	add(r, "oom_risk",
	    "Peak reserved device memory %s is %.0f%% of the device's %s: close to out-of-memory.\n%s",
	    gs_fmt_bytes(p, (uint64_t)r->peak_reserved), 100 * share, gs_fmt_bytes(t, r->device_total),
	    advice(r, ADV_OOM_RISK));
}

/* XLA's compilations (the "XLA compile" phase) took a large share of the
 * run: compile against execute, and the jitted step's runs. */
static void compilation(struct gs_report *r, uint64_t span)
{
	const struct gs_phase_stat *c = NULL;
	for (size_t i = 1; i < r->nphases; i++)
		if (r->phases[i].compile)
			c = &r->phases[i];
	if (!c || !span || c->wall_ns * 5 < span)
		return;
	char t[32], s[32], w[32], nm[1024], runs[sizeof(nm) + 160] = "";
	if (r->growth.phase && !r->growth.by_step) {
		/* From its first run to its last, the host's work between them
		 * and any compilation among them too (its ranges alone had read
		 * as the loop's time). */
		const struct gs_phase_stat *p = &r->phases[r->growth.phase];
		snprintf(runs, sizeof(runs), "; the step, %s, then ran %llu times in the %s from its first run to its "
			 "last, %s of it inside its ranges", pn(nm, p->name), (unsigned long long)p->count,
			 gs_fmt_ns(s, p->last_ns > p->first_ns ? p->last_ns - p->first_ns : 0), gs_fmt_ns(w, p->wall_ns));
	}
	add(r, "xla_compile", "XLA compiled %llu time%s for %s, %.0f%% of the run%s.\n%s",
	    (unsigned long long)c->count, gs_pl(c->count, "", "s"), gs_fmt_ns(t, c->wall_ns),
	    100.0 * (double)c->wall_ns / (double)span, runs, advice(r, ADV_COMPILE));
	saving(r, c->wall_ns, 0, "the compilations' time, which a run that finds its programs in the persistent "
	       "cache does not spend");
	once(r); /* once a run, not a step */
}

void gs_report_diagnose(struct gs_report *r)
{
	uint64_t span = r->t_last - r->t_first;
	out_of_memory(r);
	int leak = growth(r);
	pageable(r, span);
	starvation(r, span);
	stalls(r);
	launch_bound(r, span);
	host_bound(r);
	compilation(r, span);
	if (!leak && !r->oom.n) /* the leak or the failure is the story */
		churn(r);
	oom(r);
}
