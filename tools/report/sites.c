/* SPDX-License-Identifier: MIT */
/* Call sites: see sites.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/pass.h"
#include "report/report.h"
#include "report/section.h"
#include "report/sites.h"
#include "read/symbolize.h"
#include "util/units.h"
#include "util/xalloc.h"
#include "util/escape.h"

static uint64_t fnv(const char *s, uint64_t h)
{
	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

static uint64_t key_hash(const char *frames, unsigned mem, const char *phase)
{
	uint64_t h = fnv(frames, 1469598103934665603ull ^ mem);
	return phase ? fnv(phase, h * 31) : h;
}

static int same(const struct gs_site *x, const char *frames, unsigned mem, const char *phase)
{
	return x->mem == mem && !strcmp(x->frames, frames) &&
	       ((!x->phase && !phase) || (x->phase && phase && !strcmp(x->phase, phase)));
}

static void reindex(struct gs_siteset *set)
{
	size_t cap = set->index_cap ? set->index_cap * 2 : 64;
	size_t *ix = xcalloc(cap, sizeof(*ix));
	for (size_t i = 0; i < set->n; i++) {
		size_t k = key_hash(set->v[i].frames, set->v[i].mem, set->v[i].phase) & (cap - 1);
		while (ix[k])
			k = (k + 1) & (cap - 1);
		ix[k] = i + 1;
	}
	free(set->index);
	set->index = ix;
	set->index_cap = cap;
}

/* The site of (frames, mem, phase), created on first use. */
static size_t site(struct gs_siteset *set, const char *frames, unsigned mem, const char *phase)
{
	if ((set->n + 1) * 2 > set->index_cap)
		reindex(set);
	size_t k = key_hash(frames, mem, phase) & (set->index_cap - 1);
	for (; set->index[k]; k = (k + 1) & (set->index_cap - 1))
		if (same(&set->v[set->index[k] - 1], frames, mem, phase))
			return set->index[k] - 1;
	if (set->n == set->cap) {
		set->cap = set->cap ? set->cap * 2 : 64;
		set->v = xrealloc(set->v, set->cap * sizeof(*set->v));
	}
	struct gs_site *x = &set->v[set->n];
	memset(x, 0, sizeof(*x));
	x->frames = xstrdup(frames);
	x->mem = (uint8_t)mem;
	x->phase = phase ? xstrdup(phase) : NULL;
	set->index[k] = ++set->n;
	return set->n - 1;
}

const char *gs_frame_owner(const char *f)
{
	/* Python frames, "function (file.py:line)": packages and the standard
	 * library are not the program's; its own files are. */
	if (strstr(f, ".py:")) {
		/* gpuspy's PyTorch helper, run from a source tree (its wrappers
		 * sit between a phase's caller and PyTorch) */
		if (strstr(f, "/gpuspy_torch.py:") || strstr(f, "/sitecustomize.py:") || strstr(f, "/python/gpuspy/"))
			return "gpuspy";
		if (strstr(f, "/site-packages/") || strstr(f, "/dist-packages/"))
			return "a Python package";
		if (strstr(f, "/lib/python3") || strstr(f, "(<frozen "))
			return "Python's library";
		return NULL;
	}
	const char *owner = gs_module_owner(f); /* symbolize.c's table */
	if (owner)
		return owner;
	/* Symbolized frames without a module ("function (file.c:line)"). */
	static const struct { const char *prefix, *owner; } syms[] = {
		{ "cudart::", "the CUDA runtime" }, { "__cudart", "the CUDA runtime" },
		{ "c10::", "PyTorch" }, { "at::", "PyTorch" }, { "torch::", "PyTorch" }, { "caffe2::", "PyTorch" },
		{ "pybind11::", "PyTorch" }, { "xla::", "XLA" }, { "stream_executor::", "XLA" }, { "tsl::", "XLA" },
		{ "cublas", "cuBLAS" }, { "cudnn", "cuDNN" }, { "_Py", "the Python interpreter" },
		{ "std::", "the C++ library" }, { "_ctypes", "ctypes" }, { "ffi_call", "ctypes" },
	};
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++)
		if (!strncmp(f, syms[i].prefix, strlen(syms[i].prefix)))
			return syms[i].owner;
	/* The runtime linked into the program (nvcc's default, -cudart
	 * static), which has no lines: its API ("cudaMalloc+0x1f2 (app)")
	 * and its internals ("libcudart_static_<hash>+0x8c (app)"). A frame
	 * with a line ("cudaCheck (app.c:12)") is the program's. */
	size_t id = strspn(f, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
	if (f[id] == '+' && (!strncmp(f, "libcudart_static", 16) || (!strncmp(f, "cuda", 4) && f[4] >= 'A' && f[4] <= 'Z')))
		return "the CUDA runtime";
	if (f[0] == 'P' && f[1] == 'y' && f[2] >= 'A' && f[2] <= 'Z')
		return "the Python interpreter"; /* PyObject_Call, PyEval_... */
	return NULL;
}

static void join(const struct gs_stack *st, char *buf, size_t cap)
{
	size_t n = 0;
	uint32_t i = 0;
	/* The site starts at the program's own code: the frames of CUDA, the
	 * frameworks, the interpreter and packages above it say nothing of the
	 * caller (the whole stack if every frame is theirs). */
	uint32_t own = 0;
	while (own < st->n && gs_frame_owner(st->frames[own]))
		own++;
	if (own < st->n)
		i = own;
	buf[0] = 0;
	for (; i < st->n && n + 2 < cap; i++) {
		int k = snprintf(buf + n, cap - n, "%s%s", n ? "\n" : "", st->frames[i]);
		if (k < 0 || (size_t)k >= cap - n)
			break;
		n += (size_t)k;
	}
}

/* The phase an allocation site allocates in, while it is one phase:
 * where a site has no frame of the program's own (PyTorch's autograd
 * thread), it says which part of the step it serves. */
static void note_phase(struct gs_site *x, const char *phase)
{
	if (x->phases_mixed)
		return;
	if (!phase)
		x->phases_mixed = 1;
	else if (!x->alloc_phase && !x->count)
		x->alloc_phase = xstrdup(phase);
	else if (!x->alloc_phase || strcmp(x->alloc_phase, phase))
		x->phases_mixed = 1;
}

static void live_add(struct gs_live **v, size_t *n, size_t *cap, uint64_t addr, uint64_t bytes,
		     size_t site_i)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 64;
		*v = xrealloc(*v, *cap * sizeof(**v));
	}
	(*v)[(*n)++] = (struct gs_live){ addr, bytes, site_i };
}

/* The live entry holding addr (containing = 1: addr anywhere inside). */
static long live_find(const struct gs_live *v, size_t n, uint64_t addr, int containing)
{
	for (size_t i = n; i-- > 0;)
		if (containing ? addr >= v[i].addr && addr - v[i].addr < v[i].bytes : v[i].addr == addr)
			return (long)i;
	return -1;
}

/* A free: its site (a device free with a stack, frames rendered, in
 * each rule's set whose warm-up has ended: bit i of warm), and the live
 * allocation it ends. */
static void free_event(struct gs_sites *s, const struct gs_ev *ev, const char *frames, int device, unsigned warm)
{
	for (int k = 0; device && frames && k < 2; k++)
		if (warm >> k & 1) {
			size_t i = site(&s->frees[k], frames, ev->mem, NULL); /* may move the array */
			s->frees[k].v[i].count++;
		}
	int host = ev->mem == GSPY_MEM_host;
	struct gs_live *v = host ? s->hostlive : s->dev;
	size_t *n = host ? &s->nhost : &s->ndev;
	long j = (host || device) ? live_find(v, *n, ev->addr, 0) : -1;
	if (j < 0)
		return;
	if (!host) {
		struct gs_site *x = &s->alloc.v[v[j].site];
		x->live_bytes -= v[j].bytes;
		x->live_count--;
	}
	v[j] = v[--*n];
}

static void sites_event(struct gs_sites *s, struct gs_input *in, const struct gs_ev *ev, const char *phase,
			unsigned warm)
{
	int alloc = ev->kind == GSPY_KIND_alloc, free_ = ev->kind == GSPY_KIND_free;
	const struct gs_stack *st = ev->stack_id ? gs_input_stack(in, ev->stack_id) : NULL;
	char buf[16384];
	if (st) {
		s->any = 1;
		join(st, buf, sizeof(buf));
	}
	int device = ev->mem == GSPY_MEM_device || ev->mem == GSPY_MEM_managed;
	if (ev->result != 0)
		return;
	if (alloc && st) {
		for (uint32_t k = 0; k < st->n; k++) { /* whose allocator this is */
			const char *o = gs_frame_owner(st->frames[k]);
			if (o)
				s->owners |= !strcmp(o, "PyTorch") ? 1u : !strcmp(o, "XLA") || !strcmp(o, "JAX") ? 2u
					   : !strcmp(o, "CuPy") ? 4u : 0u;
		}
		if (ev->mem == GSPY_MEM_host) {
			size_t i = site(&s->host, buf, GSPY_MEM_host, NULL);
			live_add(&s->hostlive, &s->nhost, &s->hostcap, ev->addr, ev->bytes, i);
			return;
		}
		size_t i = site(&s->alloc, buf, ev->mem, NULL);
		struct gs_site *x = &s->alloc.v[i];
		note_phase(x, phase);
		x->count++;
		x->bytes += ev->bytes;
		x->host_ns += ev->end_ns - ev->start_ns;
		if (device && ev->addr) {
			x->live_bytes += ev->bytes;
			x->live_count++;
			live_add(&s->dev, &s->ndev, &s->devcap, ev->addr, ev->bytes, i);
		}
		return;
	}
	if (free_) {
		free_event(s, ev, st ? buf : NULL, device, warm);
		return;
	}
	if (ev->kind == GSPY_KIND_copy && ev->mem == GSPY_MEM_pageable && st &&
	    (ev->dir == GSPY_DIR_h2d || ev->dir == GSPY_DIR_d2h)) {
		size_t i = site(&s->copy, buf, ev->dir, NULL);
		struct gs_site *x = &s->copy.v[i];
		x->count++;
		x->bytes += ev->bytes;
		x->host_ns += ev->end_ns - ev->start_ns;
		long j = live_find(s->hostlive, s->nhost, ev->addr, 1);
		if (j >= 0 && !x->host_alloc) {
			x->host_alloc = xstrdup(s->host.v[s->hostlive[j].site].frames);
			x->host_alloc_bytes = s->hostlive[j].bytes;
		}
		return;
	}
	if (ev->kind == GSPY_KIND_sync && phase && (st || !ev->async)) {
		/* A host wait with no stack (GPUSPY_STACK_MIN: it was short)
		 * counts in its phase's site of no frames, which the lists leave
		 * out and the report counts apart. */
		size_t i = site(&s->sync, st ? buf : "", 0, phase); /* may move the array */
		struct gs_site *x = &s->sync.v[i];
		x->count++;
		x->host_ns += ev->end_ns - ev->start_ns;
	}
}

void gs_sites_snapshot(struct gs_sites *s, unsigned what)
{
	for (size_t i = 0; i < s->alloc.n; i++) {
		struct gs_site *x = &s->alloc.v[i];
		if (what & GS_SNAP_PEAK) {
			x->peak_bytes = x->live_bytes;
			x->peak_count = x->live_count;
		}
		if (what & GS_SNAP_OOM) {
			x->oom_bytes = x->live_bytes;
			x->oom_count = x->live_count;
		}
		if (what & GS_SNAP_BASE)
			x->base_bytes = x->live_bytes;
		if (what & GS_SNAP_LAST)
			x->last_bytes = x->live_bytes;
	}
}

/* The pass's host calls; once a call is in, the snapshot of the peak
 * that the memory section asked for at it (pass.h). */
void gs_sites_event(struct gs_pass *p, unsigned feed, const struct gs_ev *ev, size_t cur)
{
	struct gs_report *r = p->r;
	(void)feed;
	/* Warm-up has ended by the churn's rules (memory.c saw this event first). */
	unsigned warm = (r->churn[0].warm ? 1u : 0u) | (r->churn[1].warm ? 2u : 0u);
	sites_event(&r->sites, p->in, ev, cur ? r->phases[cur].name : NULL, warm);
	if (p->peak_snapshot)
		gs_sites_snapshot(&r->sites, GS_SNAP_PEAK);
	p->peak_snapshot = 0;
}

void gs_sites_finish(struct gs_pass *p)
{
	struct gs_report *r = p->r;
	/* Sync sites count only inside phases that repeat (per step). */
	for (size_t i = 0; i < r->sites.sync.n; i++) {
		struct gs_site *x = &r->sites.sync.v[i];
		size_t at = gs_report_phase(r, x->phase); /* may move r->phases */
		if (r->phases[at].count < 2)
			x->count = 0;
	}
}


int gs_sites_frames(struct gs_sites *s, struct gs_input *in, const struct gs_ev *ev, char *buf, size_t cap)
{
	(void)s;
	const struct gs_stack *st = ev->stack_id ? gs_input_stack(in, ev->stack_id) : NULL;
	if (!st)
		return 0;
	join(st, buf, cap);
	return 1;
}

void gs_sites_own_line(struct gs_sites *s, struct gs_input *in, uint32_t stack_id, char *out, size_t cap)
{
	char frames[2048];
	struct gs_ev ev = { .stack_id = stack_id };
	*out = 0;
	if (!stack_id || !gs_sites_frames(s, in, &ev, frames, sizeof(frames)))
		return;
	for (char *l = frames; *l;) {
		size_t k = strcspn(l, "\n");
		char f[240];
		snprintf(f, sizeof(f), "%.*s", (int)(k < sizeof(f) - 1 ? k : sizeof(f) - 1), l);
		if (!gs_frame_owner(f)) {
			snprintf(out, cap, "%s", f);
			return;
		}
		l += k + (l[k] == '\n');
	}
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* A frame "f (path:N)" split at its line: the length before ":N)" and N;
 * 0 without a line. */
static size_t frame_line(const char *f, unsigned *line)
{
	size_t k = strlen(f);
	if (k < 4 || f[k - 1] != ')')
		return 0;
	size_t d = k - 1;
	while (d > 0 && f[d - 1] >= '0' && f[d - 1] <= '9')
		d--;
	if (d == k - 1 || d == 0 || f[d - 1] != ':')
		return 0;
	*line = (unsigned)strtoul(f + d, NULL, 10);
	return d - 1;
}

void gs_sites_step_line(struct gs_sites *s, struct gs_input *in, uint32_t *ids, size_t n, char *out, size_t cap)
{
	struct group { char key[240]; size_t len, count; unsigned lo, hi; } *g;
	size_t ng = 0, total = 0, distinct = n ? 1 : 0;
	*out = 0;
	if (n > 1)
		qsort(ids, n, sizeof(*ids), cmp_u32);
	for (size_t i = 1; i < n; i++)
		distinct += ids[i] != ids[i - 1];
	if (!distinct)
		return;
	g = xcalloc(distinct, sizeof(*g)); /* a group a function and file at most */
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i; j < n && ids[j] == ids[i]; j++)
			;
		char f[240];
		unsigned line = 0;
		gs_sites_own_line(s, in, ids[i], f, sizeof(f));
		total += j - i; /* a third of the launches with a stack, own frame or not */
		if (!*f)
			continue;
		size_t len = frame_line(f, &line), k = 0;
		while (k < ng && !(g[k].len == len && !strncmp(g[k].key, f, len ? len : sizeof(f))))
			k++;
		if (k == ng) {
			snprintf(g[ng].key, sizeof(g[ng].key), "%s", f);
			g[ng].len = len, g[ng].count = 0, g[ng].lo = g[ng].hi = line;
			ng++;
		}
		g[k].count += j - i;
		g[k].lo = line < g[k].lo ? line : g[k].lo;
		g[k].hi = line > g[k].hi ? line : g[k].hi;
	}
	size_t best = 0;
	for (size_t k = 1; k < ng; k++)
		if (g[k].count > g[best].count)
			best = k;
	/* One function and file for a third of the launches or more. */
	if (ng && g[best].count * 3 >= total) {
		int w = !g[best].len || g[best].lo == g[best].hi ? -1 :
			snprintf(out, cap, "%.*s:%u-%u)", (int)g[best].len, g[best].key, g[best].lo, g[best].hi);
		if (w < 0 || (size_t)w >= cap) /* one line, or a range too long to say whole: the first frame seen */
			snprintf(out, cap, "%s", g[best].key);
	}
	free(g);
}

static void merge_set(struct gs_siteset *d, const struct gs_siteset *s)
{
	for (size_t i = 0; i < s->n; i++) {
		const struct gs_site *a = &s->v[i];
		size_t k = site(d, a->frames, a->mem, a->phase); /* may move the array */
		struct gs_site *x = &d->v[k];
		x->count += a->count;
		x->bytes += a->bytes;
		x->host_ns += a->host_ns;
		x->peak_bytes += a->peak_bytes; /* an upper bound across processes */
		x->peak_count += a->peak_count;
		if (a->host_alloc && !x->host_alloc) {
			x->host_alloc = xstrdup(a->host_alloc);
			x->host_alloc_bytes = a->host_alloc_bytes;
		}
		if (a->phases_mixed || (a->alloc_phase && x->alloc_phase && strcmp(a->alloc_phase, x->alloc_phase)))
			x->phases_mixed = 1;
		else if (a->alloc_phase && !x->alloc_phase)
			x->alloc_phase = xstrdup(a->alloc_phase);
	}
}

static void sites_merge(struct gs_sites *d, const struct gs_sites *s)
{
	merge_set(&d->alloc, &s->alloc);
	merge_set(&d->copy, &s->copy);
	merge_set(&d->sync, &s->sync);
	merge_set(&d->frees[0], &s->frees[0]);
	merge_set(&d->frees[1], &s->frees[1]);
	d->any |= s->any;
}

static void free_set(struct gs_siteset *set)
{
	for (size_t i = 0; i < set->n; i++) {
		free(set->v[i].frames);
		free(set->v[i].phase);
		free(set->v[i].alloc_phase);
		free(set->v[i].host_alloc);
	}
	free(set->v);
	free(set->index);
}

static void sites_free(struct gs_sites *s)
{
	free_set(&s->alloc);
	free_set(&s->copy);
	free_set(&s->sync);
	free_set(&s->host);
	free_set(&s->frees[0]);
	free_set(&s->frees[1]);
	free(s->dev);
	free(s->hostlive);
	memset(s, 0, sizeof(*s));
}

void gs_sites_merge(struct gs_report *d, const struct gs_report *s)
{
	sites_merge(&d->sites, &s->sites);
}

void gs_sites_free(struct gs_report *r)
{
	sites_free(&r->sites);
}

static __thread int sort_by; /* qsort's comparator reads it: each thread its own (reports are read in parallel) */

static uint64_t metric(const struct gs_site *x)
{
	switch (sort_by) {
	case GS_BY_COUNT: return x->count;
	case GS_BY_PEAK: return x->peak_bytes;
	case GS_BY_TIME: return x->host_ns;
	case GS_BY_OOM: return x->oom_bytes;
	case GS_BY_GROWTH: return x->last_bytes > x->base_bytes ? x->last_bytes - x->base_bytes : 0;
	}
	return x->bytes;
}

static uint64_t metric_of(const struct gs_site *x, int by)
{
	int was = sort_by;
	sort_by = by;
	uint64_t m = metric(x);
	sort_by = was;
	return m;
}

static int cmp_site(const void *a, const void *b)
{
	const struct gs_site *x = *(const struct gs_site *const *)a, *y = *(const struct gs_site *const *)b;
	uint64_t p = metric(x), q = metric(y);
	if (p != q)
		return p > q ? -1 : 1;
	return strcmp(x->frames, y->frames);
}

size_t gs_sites_sorted(const struct gs_siteset *set, int by, const struct gs_site ***out)
{
	const struct gs_site **v = xrealloc(NULL, (set->n + 1) * sizeof(*v));
	size_t n = 0;
	for (size_t i = 0; i < set->n; i++)
		if (set->v[i].count && set->v[i].frames[0] && (by < GS_BY_PEAK || by == GS_BY_TIME || metric_of(&set->v[i], by)))
			v[n++] = &set->v[i];
	sort_by = by;
	qsort(v, n, sizeof(*v), cmp_site);
	*out = v;
	return n;
}

static cJSON *frames_json(const char *frames)
{
	cJSON *a = cJSON_CreateArray();
	const char *p = frames;
	while (*p) {
		const char *e = strchr(p, '\n');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		char *f = strndup(p, n);
		if (f)
			cJSON_AddItemToArray(a, cJSON_CreateString(f));
		free(f);
		p += n + (e ? 1 : 0);
	}
	return a;
}

static void list(cJSON *o, const char *name, const struct gs_siteset *set, int by)
{
	cJSON *a = cJSON_AddArrayToObject(o, name);
	const struct gs_site **v;
	size_t n = gs_sites_sorted(set, by, &v);
	for (size_t i = 0; i < n; i++) {
		const struct gs_site *x = v[i];
		cJSON *e = cJSON_CreateObject();
		cJSON_AddItemToObject(e, "stack", frames_json(x->frames));
		cJSON_AddNumberToObject(e, "count", (double)(by == GS_BY_PEAK ? x->peak_count : x->count));
		cJSON_AddNumberToObject(e, "bytes", (double)(by == GS_BY_PEAK ? x->peak_bytes : x->bytes));
		cJSON_AddNumberToObject(e, "host_ns", (double)x->host_ns);
		if (x->mem && by != GS_BY_TIME && name[0] != 'c')
			cJSON_AddStringToObject(e, "mem", x->mem == GSPY_MEM_pinned ? "pinned"
							  : x->mem == GSPY_MEM_managed ? "managed" : "device");
		if (name[0] == 'c')
			cJSON_AddStringToObject(e, "dir", x->mem == GSPY_DIR_d2h ? "d2h" : "h2d");
		if (x->phase)
			cJSON_AddStringToObject(e, "phase", x->phase);
		if (x->host_alloc) {
			cJSON_AddItemToObject(e, "host_alloc_stack", frames_json(x->host_alloc));
			cJSON_AddNumberToObject(e, "host_alloc_bytes", (double)x->host_alloc_bytes);
		}
		cJSON_AddItemToArray(a, e);
	}
	free(v);
}

void gs_sites_json(cJSON *o, const struct gs_report *r, const struct gs_style *st)
{
	const struct gs_sites *s = &r->sites;
	(void)st;
	list(o, "alloc_sites", &s->alloc, GS_BY_BYTES);
	list(o, "peak_sites", &s->alloc, GS_BY_PEAK);
	list(o, "copy_sites", &s->copy, GS_BY_BYTES);
	list(o, "sync_sites", &s->sync, GS_BY_TIME);
	uint64_t n, ns;
	gs_sites_unsited(&s->sync, &n, &ns);
	cJSON *u = cJSON_AddObjectToObject(o, "sync_unsited");
	cJSON_AddNumberToObject(u, "count", (double)n);
	cJSON_AddNumberToObject(u, "host_ns", (double)ns);
}

void gs_sites_unsited(const struct gs_siteset *set, uint64_t *n, uint64_t *ns)
{
	*n = *ns = 0;
	for (size_t i = 0; i < set->n; i++)
		if (!set->v[i].frames[0]) {
			*n += set->v[i].count;
			*ns += set->v[i].count ? set->v[i].host_ns : 0;
		}
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
			char a[32], b[32], c[32], nm[1024]; /* a phase's name, on one line */
			const struct gs_site *x = v[i];
			if (by == GS_BY_TIME)
				fprintf(f, "    %s wait%s, %s in phase '%s':\n", gs_fmt_count(a, x->count),
					gs_pl(x->count, "", "s"), gs_fmt_ns(b, x->host_ns),
					x->phase ? gs_term_line(nm, sizeof(nm), x->phase, SIZE_MAX) : "?");
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

void gs_sites_print(FILE *f, const struct gs_report *r, const struct gs_style *st)
{
	if (!r->sites.any)
		return;
	fprintf(f, "\n  %sCall sites%s (innermost frame first)\n", st->bold, st->reset);
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
