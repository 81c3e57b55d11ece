/* SPDX-License-Identifier: MIT */
/*
 * The live statistics of `gpuspy top` (watch.h). Phases are attributed as
 * the report attributes them: the time between two phase events goes to
 * the innermost open phase, libraries' ranges (CUB, XLA, NCCL...) take
 * nothing, paused time goes nowhere, XLA's modules are named by the jitted
 * function. A step is a new step number of the PyTorch helper's phases,
 * else a begin of the top-level phase begun most often. GPU busy is the
 * union of the GPU records' intervals; CUPTI hands them over in batches
 * (every GPUSPY_CUPTI_FLUSH seconds while the program launches), so it is
 * given over the window that ends at the last GPU record.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "read/procs.h"
#include "read/ranges.h"
#include "read/watch.h"
#include "util/xalloc.h"

static int step_phase(const struct gs_watch *l);

int gs_watch_open(struct gs_watch *l, int fd, const char *path, char *err, size_t errlen)
{
	memset(l, 0, sizeof(*l));
	snprintf(l->path, sizeof(l->path), "%s", path);
	snprintf(l->names[0], sizeof(l->names[0]), "(no phase)");
	snprintf(l->names[LIVE_PHASES + 1], sizeof(l->names[0]), "(other phases)");
	l->nphases = 1;
	struct stat st;
	if (fstat(fd, &st) == 0) {
		l->dev = st.st_dev;
		l->ino = st.st_ino;
	}
	return gs_follow_open_fd(&l->f, fd, l->path, err, errlen);
}

static struct gs_watch_bin *bin_of(struct gs_watch *l, uint64_t sec)
{
	struct gs_watch_bin *b = &l->bin[sec % LIVE_SECONDS];
	if (b->sec == sec)
		return b;
	if (b->sec > sec)
		return NULL; /* older than the bins kept */
	memset(b, 0, sizeof(*b));
	b->sec = sec;
	return b;
}

/* Adds [a, b) to one field of every second it covers: at `off` bytes
 * into a bin, a uint64_t. Only the span's last LIVE_SECONDS seconds can
 * stay in the bins (an earlier second's bin is taken by a later one of the
 * same span), so only those are walked: the work is bounded by the bins,
 * not by the span, which a forged clock makes billions of seconds. */
static void spread(struct gs_watch *l, uint64_t a, uint64_t b, size_t off)
{
	if (a >= b)
		return;
	uint64_t last = (b - 1) / 1000000000u; /* the last second touched */
	if (last >= LIVE_SECONDS && a < (last - LIVE_SECONDS + 1) * 1000000000u)
		a = (last - LIVE_SECONDS + 1) * 1000000000u;
	while (a < b) {
		/* The last second ends at b: (last + 1) s may not fit 64 bits. */
		uint64_t sec = a / 1000000000u, to = sec < last ? (sec + 1) * 1000000000u : b;
		struct gs_watch_bin *bn = bin_of(l, sec);
		if (bn)
			*(uint64_t *)((char *)bn + off) += to - a;
		a = to;
	}
}

/* A phase's name as it is kept (key, LIVE_NAME bytes): whole when it
 * fits; else cut before a character and followed by "~" and a hash of the
 * whole name (FNV-1a, 16 hex digits), so that names alike in their first
 * bytes stay phases of their own (and series of their own in serve's
 * labels), and a phase's end is found by the same key as its begin. */
static void phase_key(char *key, const char *name)
{
	size_t n = strnlen(name, LIVE_NAME);
	if (n < LIVE_NAME) {
		memcpy(key, name, n + 1);
		return;
	}
	uint64_t hash = 14695981039346656037ull;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		hash = (hash ^ *p) * 1099511628211ull;
	size_t cut = LIVE_NAME - 1 - 17;
	while (cut && ((unsigned char)name[cut] & 0xc0) == 0x80)
		cut--; /* a continuation byte: the character began before */
	snprintf(key, LIVE_NAME, "%.*s~%016llx", (int)cut, name, (unsigned long long)hash);
}

/* The phase kept under key; once LIVE_PHASES are kept, any other is
 * LIVE_PHASES + 1 ("(other phases)"); -1 when not kept yet. */
static int phase_find(const struct gs_watch *l, const char *key)
{
	for (int i = 1; i < l->nphases; i++)
		if (!strcmp(l->names[i], key))
			return i;
	return l->nphases > LIVE_PHASES ? LIVE_PHASES + 1 : -1;
}

static int phase_index(struct gs_watch *l, const char *key)
{
	int i = phase_find(l, key);
	if (i == LIVE_PHASES + 1)
		l->phase_used_other = 1;
	if (i >= 0)
		return i;
	snprintf(l->names[l->nphases], sizeof(l->names[0]), "%s", key);
	return l->nphases++;
}

/* The innermost phase's time up to t. */
static void phase_time(struct gs_watch *l, uint64_t t)
{
	if (l->cur >= 0 && t > l->since) {
		spread(l, l->since, t, offsetof(struct gs_watch_bin, phase_ns) + (size_t)l->cur * sizeof(uint64_t));
		l->total.phase_ns[l->cur] += t - l->since;
	}
	if (t > l->since)
		l->since = t;
}

/* Long (about 120 lines): one case per event kind, as the report's pass has
 * them, adding into the live statistics. */
static void add(struct gs_watch *l, const struct gs_ev *ev)
{
	if (!l->first_ns) {
		l->first_ns = l->since = ev->start_ns;
	}
	if (ev->end_ns > l->last_ns)
		l->last_ns = ev->end_ns;
	struct gs_watch_bin *b = bin_of(l, ev->start_ns / 1000000000u);
	if (b)
		b->events++;
	l->total.events++;
	int here = l->cur >= 0 ? l->cur : 0; /* the phase a host call is made in */
	if (ev->result != 0 && ev->kind < GSPY_KIND_phase_begin)
		l->total.failed[here]++;
	const char *name = ev->name && *ev->name ? ev->name : "(unnamed)";
	char fw[128];
	int compile = 0;
	if ((ev->kind == GSPY_KIND_phase_begin || ev->kind == GSPY_KIND_phase_end) &&
	    gs_framework_phase(name, fw, sizeof(fw), &compile))
		name = fw;
	switch (ev->kind) {
	case GSPY_KIND_phase_begin: {
		if (gs_library_range(name))
			return;
		char key[LIVE_NAME];
		phase_key(key, name);
		int p = phase_index(l, key);
		if (ev->has_step && (!l->steps_seen || ev->step != l->step)) {
			if (!l->steps_seen++)
				l->step_first = p;
			l->step = ev->step;
			l->total.steps_helper++;
			if (b)
				b->step_starts++;
		}
		phase_time(l, ev->start_ns);
		if (!l->depth && !compile)
			l->top_level[p] = 1;
		l->begins_total[p]++;
		if (b)
			b->begins[p]++;
		if (l->depth < (int)(sizeof(l->stack) / sizeof(l->stack[0])))
			l->stack[l->depth++] = p;
		if (l->cur >= 0)
			l->cur = p;
		return;
	}
	case GSPY_KIND_phase_end: {
		if (gs_library_range(name))
			return;
		char key[LIVE_NAME];
		phase_key(key, name);
		/* By index, not name: one of "(other phases)" ends the
		 * innermost of them open (its name is not kept). */
		int p = phase_find(l, key), i = l->depth - 1;
		while (i >= 0 && l->stack[i] != p)
			i--;
		if (i < 0)
			return;
		phase_time(l, ev->start_ns);
		memmove(&l->stack[i], &l->stack[i + 1], (size_t)(l->depth - i - 1) * sizeof(l->stack[0]));
		l->depth--;
		if (l->cur >= 0)
			l->cur = l->depth ? l->stack[l->depth - 1] : 0;
		return;
	}
	case GSPY_KIND_mark:
		if (ev->api == GSPY_API_gpuspy_pause) {
			phase_time(l, ev->start_ns);
			l->cur = -1;
		} else if (ev->api == GSPY_API_gpuspy_resume) {
			l->since = ev->start_ns;
			l->cur = l->depth ? l->stack[l->depth - 1] : 0;
		}
		return;
	case GSPY_KIND_gpu_kernel:
	case GSPY_KIND_gpu_copy:
	case GSPY_KIND_gpu_memset: {
		uint64_t s = ev->start_ns > l->gpu_end ? ev->start_ns : l->gpu_end;
		if (ev->end_ns > s)
			spread(l, s, ev->end_ns, offsetof(struct gs_watch_bin, gpu_busy_ns));
		if (ev->end_ns > l->gpu_end)
			l->gpu_end = ev->end_ns;
		l->gpu_seen = 1;
		if (ev->device >= 0 && ev->device < GSPY_DEVICES) { /* the same union, per device */
			uint64_t *e = &l->dev_gpu_end[ev->device], ds = ev->start_ns > *e ? ev->start_ns : *e;
			if (ev->end_ns > ds)
				l->total.gpu_busy_ns[ev->device] += ev->end_ns - ds;
			if (ev->end_ns > *e)
				*e = ev->end_ns;
		}
		return;
	}
	case GSPY_KIND_copy:
		if (ev->result == 0 && (ev->dir == GSPY_DIR_h2d || ev->dir == GSPY_DIR_d2h)) {
			l->total.copy_bytes[here][ev->dir == GSPY_DIR_d2h][ev->mem == GSPY_MEM_pinned] += ev->bytes;
			if (b) {
				b->copy_bytes += ev->bytes;
				if (ev->mem != GSPY_MEM_pinned)
					b->pageable_bytes += ev->bytes;
			}
		}
		return;
	case GSPY_KIND_alloc:
	case GSPY_KIND_free:
		if (ev->mem == GSPY_MEM_device)
			ev->kind == GSPY_KIND_alloc ? l->total.allocs[here]++ : l->total.frees[here]++;
		if (ev->result == 0 && ev->mem == GSPY_MEM_device)
			l->reserved += ev->kind == GSPY_KIND_alloc ? (int64_t)ev->bytes : -(int64_t)ev->bytes;
		return;
	case GSPY_KIND_nvml:
		if (ev->device >= 0 && ev->device < GSPY_DEVICES) {
			l->nvml[ev->device] = ev->nvml;
			l->nvml_at[ev->device] = ev->start_ns;
			snprintf(l->uuid[ev->device], sizeof(l->uuid[0]), "%.47s", ev->name ? ev->name : "");
		}
		return;
	default:
		return;
	}
}

static void collect(void *arg, const struct gs_event *e)
{
	struct gs_watch *l = arg;
	if (l->npend == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 4096;
		l->pend = xrealloc(l->pend, l->cap * sizeof(*l->pend));
	}
	struct gs_watch_pend *p = &l->pend[l->npend++];
	p->rec = *e->rec;
	p->start_ns = e->start_ns;
	p->end_ns = e->end_ns;
	p->corr = e->corr;
	p->tid = e->tid;
}

static int by_start(const void *a, const void *b)
{
	const struct gs_watch_pend *x = a, *y = b;
	return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

int gs_watch_poll(struct gs_watch *l)
{
	l->npend = 0;
	int rc = gs_follow_poll(&l->f, collect, l);
	/* Each thread's events come in order, threads one after another:
	 * in time order, a phase change falls where it happened. */
	if (l->npend)
		qsort(l->pend, l->npend, sizeof(*l->pend), by_start);
	for (size_t i = 0; i < l->npend; i++) {
		const struct gs_watch_pend *p = &l->pend[i];
		struct gs_event e = { .rec = &p->rec, .tid = p->tid, .start_ns = p->start_ns, .end_ns = p->end_ns, .corr = p->corr };
		struct gs_ev ev;
		gs_ev_from_event(&l->f.tr, &e, &ev);
		add(l, &ev);
	}
	l->npend = 0;
	return rc;
}

void gs_watch_view(const struct gs_watch *l, uint64_t now, uint64_t window_ns, struct gs_watch_view *v)
{
	const struct gspy_header *h = l->f.tr.h;
	memset(v, 0, sizeof(*v));
	v->pid = h->pid;
	v->command = h->command;
	v->running = h->state == GSPY_STATE_RUNNING;
	v->paused = h->ctl_paused != 0;
	v->dropped = l->f.dropped;
	v->reserved = l->reserved;
	v->gpu_known = l->gpu_seen;
	uint64_t secs = (window_ns + 999999999u) / 1000000000u, nsec = now / 1000000000u;
	if (secs > LIVE_SECONDS - 1)
		secs = LIVE_SECONDS - 1;
	if (secs < 1)
		secs = 1;
	uint64_t from = nsec + 1 > secs ? nsec + 1 - secs : 0; /* the first second summed */
	uint64_t start = from * 1000000000u;
	if (l->first_ns > start)
		start = l->first_ns;
	v->window_ns = now > start ? now - start : 0;
	for (int i = 0; i < LIVE_PHASES + 2; i++)
		v->phase[i] = l->names[i];
	v->nphases = l->nphases;
	uint64_t begins[LIVE_PHASES + 2] = { 0 }, step_starts = 0;
	for (uint64_t s = from; s <= nsec; s++) {
		const struct gs_watch_bin *b = &l->bin[s % LIVE_SECONDS];
		if (b->sec != s)
			continue;
		v->events += b->events;
		step_starts += b->step_starts;
		v->copy_bytes += b->copy_bytes;
		v->pageable_bytes += b->pageable_bytes;
		for (int i = 0; i < LIVE_PHASES + 2; i++) {
			v->phase_ns[i] += b->phase_ns[i];
			begins[i] += b->begins[i];
		}
	}
	/* The phase open now has run since its last event. */
	uint64_t since = l->since > start ? l->since : start;
	if (l->cur >= 0 && l->first_ns && now > since && h->state == GSPY_STATE_RUNNING)
		v->phase_ns[l->cur] += now - since;
	int step = step_phase(l);
	if (l->steps_seen > 1) { /* the PyTorch helper numbers its steps */
		v->step_phase = l->names[l->step_first];
		v->steps = step_starts;
	} else if (step > 0) {
		v->step_phase = l->names[step];
		v->steps = begins[step];
	}
	/* GPU busy over as many seconds, up to the end of the last GPU
	 * record (not clamped to now: the union in the bins never runs past
	 * it, so the share cannot pass 100%, whatever the clocks' offset). */
	uint64_t gend = l->gpu_end, gsec = gend / 1000000000u;
	uint64_t gfrom = gsec + 1 > secs ? gsec + 1 - secs : 0, gstart = gfrom * 1000000000u;
	if (l->first_ns > gstart)
		gstart = l->first_ns;
	v->gpu_window_ns = gend > gstart ? gend - gstart : 0;
	v->gpu_lag_ns = now > gend ? now - gend : 0;
	for (uint64_t s = gfrom; l->gpu_seen && s <= gsec; s++) {
		const struct gs_watch_bin *b = &l->bin[s % LIVE_SECONDS];
		if (b->sec == s)
			v->gpu_busy_ns += b->gpu_busy_ns;
	}
	v->nvml_device = -1;
	for (int d = 0; d < GSPY_DEVICES; d++)
		if (l->nvml_at[d] && (v->nvml_device < 0 || l->nvml[d].util_gpu > v->nvml.util_gpu)) {
			v->nvml_device = d;
			v->nvml = l->nvml[d];
		}
}

/* The repeated top-level phase: begun most often, more than once. */
static int step_phase(const struct gs_watch *l)
{
	int step = -1;
	for (int i = 1; i < LIVE_PHASES + 1; i++)
		if (l->top_level[i] && l->begins_total[i] > 1 && (step < 0 || l->begins_total[i] > l->begins_total[step]))
			step = i;
	return step;
}

uint64_t gs_watch_steps_total(const struct gs_watch *l)
{
	if (l->steps_seen > 1)
		return l->total.steps_helper;
	int step = step_phase(l);
	return step > 0 ? l->begins_total[step] : 0;
}

void gs_watch_close(struct gs_watch *l)
{
	gs_follow_close(&l->f);
	free(l->pend);
	l->pend = NULL;
}

/* ---- the traced processes running here ---------------------------------- */

static int followed(const struct gs_watch_set *t, dev_t dev, ino_t ino)
{
	for (int i = 0; i < t->n; i++)
		if (t->p[i]->dev == dev && t->p[i]->ino == ino)
			return 1;
	return 0;
}

/* Follows the trace open on fd (owned) if it is the trace of a running
 * process (pid, or any) and that process's user owns it: a file of one
 * user never passes for another's process (a root reader would show it).
 * That is decided on the header alone, before any record is read: the
 * records of a file that is no running process's are never read. */
static int follow(struct gs_watch_set *t, int fd, const char *path, int pid)
{
	struct stat st;
	if (fstat(fd, &st) != 0 || followed(t, st.st_dev, st.st_ino)) {
		close(fd);
		return 0;
	}
	struct gs_watch *l = xcalloc(1, sizeof(*l));
	char err[256];
	uid_t uid;
	if (gs_watch_open(l, fd, path, err, sizeof(err)) == 0 && gs_follow_header(&l->f) == 0) {
		const struct gspy_header *h = l->f.tr.h;
		if (h->state == GSPY_STATE_RUNNING && (pid <= 0 || (int)h->pid == pid) &&
		    (kill((pid_t)h->pid, 0) == 0 || errno == EPERM) && gs_proc_uid((int)h->pid, &uid) == 0 &&
		    uid == st.st_uid && gs_watch_poll(l) == 0) {
			if (t->n == t->cap) {
				t->cap = t->cap ? t->cap * 2 : 64;
				t->p = xrealloc(t->p, (size_t)t->cap * sizeof(*t->p));
			}
			t->p[t->n++] = l;
			return 1;
		}
	}
	gs_watch_close(l);
	free(l);
	return 0;
}

static int take(void *arg, const struct gs_mapped *m)
{
	struct gs_watch_set *t = arg;
	if (followed(t, m->dev, m->ino))
		return 1;
	int fd = gs_pid_trace_open(m, 0);
	return fd >= 0 && follow(t, fd, m->path, m->pid);
}

void gs_watch_scan(struct gs_watch_set *t)
{
	DIR *d = opendir(t->dir ? t->dir : "/proc");
	if (!d)
		return;
	struct dirent *e;
	char path[PATH_MAX];
	while ((e = readdir(d)) != NULL) {
		const char *nm = e->d_name;
		size_t len = strlen(nm);
		if (t->dir) {
			/* Only a regular file is opened, never through a
			 * symlink (the directory may be others' to write). */
			struct stat st;
			if (len > 5 && !strcmp(nm + len - 5, ".gspy") &&
			    snprintf(path, sizeof(path), "%s/%s", t->dir, nm) < (int)sizeof(path) &&
			    fstatat(dirfd(d), nm, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
			    !followed(t, st.st_dev, st.st_ino)) {
				int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW);
				if (fd >= 0)
					follow(t, fd, path, 0);
			}
		} else if (len && strspn(nm, "0123456789") == len) {
			int deleted = 0;
			gs_pid_traces(atoi(nm), take, t, &deleted);
		}
	}
	closedir(d);
}

void gs_watch_poll_all(struct gs_watch_set *t)
{
	for (int i = 0; i < t->n;) {
		struct gs_watch *l = t->p[i];
		int gone = gs_watch_poll(l) != 0 || l->f.tr.h->state != GSPY_STATE_RUNNING ||
			   (kill((pid_t)l->f.tr.h->pid, 0) != 0 && errno == ESRCH);
		if (gone) {
			gs_watch_close(l);
			free(l);
			t->p[i] = t->p[--t->n];
			continue;
		}
		i++;
	}
}

void gs_watch_set_free(struct gs_watch_set *t)
{
	for (int i = 0; i < t->n; i++) {
		gs_watch_close(t->p[i]);
		free(t->p[i]);
	}
	free(t->p);
	t->p = NULL;
	t->n = t->cap = 0;
}
