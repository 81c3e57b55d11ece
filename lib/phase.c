/* SPDX-License-Identifier: MIT */
/*
 * Phases: named intervals on one process-wide timeline. Backward kernels are
 * launched from autograd's own threads, so a phase is not per thread: a push
 * from any thread opens a phase for the whole process and a pop closes the
 * innermost open one. Each push or pop is one record (phase_begin /
 * phase_end with the phase's name); the reader rebuilds the timeline.
 * Names are interned once each (a content-keyed cache), so a phase pushed
 * every step costs no string-table space after the first time.
 *
 * While recording is paused (gpuspy_pause, GPUSPY_START=paused, `gpuspy
 * stop`), phase events are not recorded but kept as what changed: the
 * phases that began and are still open, and those that ended, having begun
 * before the pause. When recording resumes (gs_recording), those are
 * written after the "(resumed)" mark (GSPY_FLAG_WINDOW), so that a window
 * starts inside the phases really open: the first window of a process
 * started paused is labelled right.
 */
#define _GNU_SOURCE
#include <pthread.h>

#include "gs.h"
#include "gpu_timing.h"
#include "phase.h"
#include "writer.h"
#include "module.h"

#define NAME_CACHE 1024
#define STACK_MAX 64

/* A phase event while paused: its entry point, name and step. */
struct paused_phase {
	uint16_t api;
	uint16_t has_step;
	uint32_t id;
	uint64_t step;
};

static struct {
	pthread_mutex_t lock;
	struct { uint64_t hash; uint32_t id; char name[64]; } cache[NAME_CACHE];
	uint32_t stack[STACK_MAX];
	int depth;
	/* Under the lock, while paused: phases begun and still open, in
	 * order; phases ended that began before the pause. */
	struct paused_phase opened[STACK_MAX], ended[STACK_MAX];
	int nopened, nended;
} ph = { .lock = PTHREAD_MUTEX_INITIALIZER };
GS_FORK_LOCK(phase, ph.lock);

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h | 1;
}

/* Called with ph.lock held. Names too long for the cache are looked up
 * in the string table's own index (gs_intern) every time. */
static uint32_t name_id(const char *name)
{
	uint64_t h = hash(name);
	size_t len = strlen(name);
	for (uint32_t i = (uint32_t)h & (NAME_CACHE - 1), n = 0; n < 16; n++, i = (i + 1) & (NAME_CACHE - 1)) {
		if (ph.cache[i].hash == h && !strcmp(ph.cache[i].name, name))
			return ph.cache[i].id;
		if (!ph.cache[i].hash) {
			uint32_t id = gs_intern(name);
			if (id && len < sizeof(ph.cache[i].name)) {
				memcpy(ph.cache[i].name, name, len + 1);
				ph.cache[i].id = id;
				ph.cache[i].hash = h;
			}
			return id;
		}
	}
	return gs_intern(name);
}

uint32_t gs_phase_name(const char *name)
{
	pthread_mutex_lock(&ph.lock);
	uint32_t id = name_id(name && *name ? name : "(unnamed)");
	pthread_mutex_unlock(&ph.lock);
	return id;
}

static int paused(void)
{
	return __atomic_load_n(&gs_g.paused, __ATOMIC_RELAXED);
}

/* One phase record; even_paused for those gs_recording writes. */
static void phase_record(unsigned api, unsigned kind, uint32_t id, const struct paused_phase *p, int even_paused,
			 uint8_t flags)
{
	struct gspy_record *r = gs_begin_(api, kind, even_paused);
	if (r) {
		r->name_id = id;
		r->device = -1;
		r->end = r->start;
		r->flags |= flags;
		if (p && p->has_step) {
			r->u.mem.bytes = p->step;
			r->flags |= GSPY_FLAG_STEP;
		}
	}
	gs_end(r, 0);
}

/* Called with ph.lock held, while paused: the phase event p changes the
 * set of open phases that resuming writes. */
static void note_paused(unsigned kind, const struct paused_phase *p)
{
	if (!p->id)
		return;
	if (kind == GSPY_KIND_phase_begin) {
		if (ph.nopened < STACK_MAX)
			ph.opened[ph.nopened++] = *p;
		return;
	}
	for (int i = ph.nopened - 1; i >= 0; i--)
		if (ph.opened[i].id == p->id) { /* began while paused: nothing to write */
			memmove(&ph.opened[i], &ph.opened[i + 1], (size_t)(ph.nopened - i - 1) * sizeof(ph.opened[0]));
			ph.nopened--;
			return;
		}
	if (ph.nended < STACK_MAX)
		ph.ended[ph.nended++] = *p;
}

/* A phase event the hooks did not record: while paused it is noted; if
 * recording resumed meanwhile, it is recorded after all. */
static void phase_not_recorded(unsigned api, unsigned kind, struct paused_phase p)
{
	if (kind == GSPY_KIND_mark || !paused())
		return;
	pthread_mutex_lock(&ph.lock);
	int still = paused();
	if (still)
		note_paused(kind, &p);
	pthread_mutex_unlock(&ph.lock);
	if (!still)
		phase_record(api, kind, p.id, &p, 0, 0);
}

uint32_t gs_phase_id(unsigned api, unsigned kind, uint32_t name_id_)
{
	struct gspy_record *r = gs_begin(api, kind);
	if (r) {
		r->name_id = name_id_;
		r->device = -1;
		r->end = r->start;
	}
	gs_end(r, 0);
	if (!r)
		phase_not_recorded(api, kind, (struct paused_phase){ .api = (uint16_t)api, .id = name_id_ });
	if (GS_UNLIKELY(gs_g.events) && kind != GSPY_KIND_mark)
		gs_events_phase(kind, name_id_);
	return name_id_;
}

/*
 * Pauses (on 0) or resumes (on 1) recording, process-wide; 1 when it
 * changed. Under ph.lock, so that no phase event falls between the notes
 * and the flag: pausing writes the "(paused)" mark, then stops; resuming
 * writes the "(resumed)" mark and what the phases did meanwhile, then
 * records again.
 */
int gs_phase_recording(int on)
{
	pthread_mutex_lock(&ph.lock);
	int was_on = !paused();
	if (was_on == !!on) {
		pthread_mutex_unlock(&ph.lock);
		return 0;
	}
	if (!gs_writer_open()) {
		/* No CUDA call yet, no file: nothing to mark, nothing was noted. */
		__atomic_store_n(&gs_g.paused, !on, __ATOMIC_RELAXED);
	} else if (!on) {
		phase_record(GSPY_API_gpuspy_pause, GSPY_KIND_mark, name_id("(paused)"), NULL, 1, 0);
		__atomic_store_n(&gs_g.paused, 1, __ATOMIC_RELAXED);
		ph.nopened = ph.nended = 0;
	} else {
		phase_record(GSPY_API_gpuspy_resume, GSPY_KIND_mark, name_id("(resumed)"), NULL, 1, 0);
		for (int i = ph.nended - 1; i >= 0; i--)
			phase_record(ph.ended[i].api, GSPY_KIND_phase_end, ph.ended[i].id, &ph.ended[i], 1,
				     GSPY_FLAG_WINDOW);
		for (int i = 0; i < ph.nopened; i++)
			phase_record(ph.opened[i].api, GSPY_KIND_phase_begin, ph.opened[i].id, &ph.opened[i], 1,
				     GSPY_FLAG_WINDOW);
		ph.nopened = ph.nended = 0;
		__atomic_store_n(&gs_g.paused, 0, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&ph.lock);
	return 1;
}

static void phase_forked(void)
{
	memset(ph.cache, 0, sizeof(ph.cache)); /* ids belonged to the parent's file */
	ph.nopened = ph.nended = 0;
	pthread_mutex_init(&ph.lock, NULL);
}

/* Record one phase event; `name` NULL pops the innermost open phase. */
void gs_phase(unsigned api, unsigned kind, const char *name)
{
	struct gspy_record *r = gs_begin(api, kind);
	uint32_t id = 0;
	if (r || (kind != GSPY_KIND_mark && paused())) {
		/* Recorded or not (paused), the stack of open phases stays true. */
		pthread_mutex_lock(&ph.lock);
		if (kind == GSPY_KIND_phase_end) {
			id = ph.depth > 0 ? ph.stack[--ph.depth] : 0;
		} else {
			id = name_id(name && *name ? name : "(unnamed)");
			if (kind == GSPY_KIND_phase_begin && ph.depth < STACK_MAX)
				ph.stack[ph.depth++] = id;
		}
		if (!r && paused())
			note_paused(kind, &(struct paused_phase){ .api = (uint16_t)api, .id = id });
		pthread_mutex_unlock(&ph.lock);
	}
	if (r) {
		r->name_id = id;
		r->device = -1;
		r->end = r->start;
	}
	gs_end(r, 0);
	if (GS_UNLIKELY(gs_g.events) && kind != GSPY_KIND_mark)
		gs_events_phase(kind, id);
}

/* For python/gpuspy_torch.py (exported, not public API): a PyTorch phase
 * with its step number, closed by name. */
GS_API void gpuspy_torch_phase(const char *name, unsigned long long step, int begin)
{
	unsigned api = begin ? GSPY_API_torch_phase_begin : GSPY_API_torch_phase_end;
	struct gspy_record *r = gs_begin(api, begin ? GSPY_KIND_phase_begin : GSPY_KIND_phase_end);
	if (r) {
		r->name_id = gs_phase_name(name);
		r->u.mem.bytes = step;
		r->flags |= GSPY_FLAG_STEP;
		r->device = -1;
		r->end = r->start;
	}
	uint32_t id = r ? r->name_id : 0;
	gs_end(r, 0);
	if (!r && paused()) {
		id = gs_phase_name(name);
		phase_not_recorded(api, begin ? GSPY_KIND_phase_begin : GSPY_KIND_phase_end,
				   (struct paused_phase){ .api = (uint16_t)api, .has_step = 1, .id = id, .step = step });
	}
	if (GS_UNLIKELY(gs_g.events))
		gs_events_phase(begin ? GSPY_KIND_phase_begin : GSPY_KIND_phase_end,
				id ? id : gs_phase_name(name));
}

/* The public API (include/gpuspy.h declares these as weak references for
 * programs; here they are plain definitions). */
GS_API void gpuspy_phase_push(const char *name);
GS_API void gpuspy_phase_pop(void);
GS_API void gpuspy_mark(const char *name);

GS_API void gpuspy_phase_push(const char *name)
{
	gs_phase(GSPY_API_gpuspy_phase_push, GSPY_KIND_phase_begin, name);
}

GS_API void gpuspy_phase_pop(void)
{
	gs_phase(GSPY_API_gpuspy_phase_pop, GSPY_KIND_phase_end, NULL);
}

GS_API void gpuspy_mark(const char *name)
{
	gs_phase(GSPY_API_gpuspy_mark, GSPY_KIND_mark, name);
}

GS_MODULE(phase, 40, .forked = phase_forked);
