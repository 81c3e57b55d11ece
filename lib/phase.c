/* SPDX-License-Identifier: MIT */
/*
 * Phases: named intervals on one process-wide timeline. Backward kernels are
 * launched from autograd's own threads, so a phase is not per thread: a push
 * from any thread opens a phase for the whole process and a pop closes the
 * innermost open one. Each push or pop is one record (phase_begin /
 * phase_end with the phase's name); the reader rebuilds the timeline.
 * Names are interned once each (a content-keyed cache), so a phase pushed
 * every step costs no string-table space after the first time.
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

static struct {
	pthread_mutex_t lock;
	struct { uint64_t hash; uint32_t id; char name[64]; } cache[NAME_CACHE];
	uint32_t stack[STACK_MAX];
	int depth;
} ph = { .lock = PTHREAD_MUTEX_INITIALIZER };
GS_FORK_LOCK(phase, ph.lock);

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h | 1;
}

/* Called with ph.lock held. Long names are interned every time. */
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

uint32_t gs_phase_id(unsigned api, unsigned kind, uint32_t name_id_)
{
	struct gspy_record *r = gs_begin(api, kind);
	if (r) {
		r->name_id = name_id_;
		r->device = -1;
		r->end = r->start;
	}
	gs_end(r, 0);
	if (GS_UNLIKELY(gs_g.events) && kind != GSPY_KIND_mark)
		gs_events_phase(kind, name_id_);
	return name_id_;
}

static void phase_forked(void)
{
	memset(ph.cache, 0, sizeof(ph.cache)); /* ids belonged to the parent's file */
	pthread_mutex_init(&ph.lock, NULL);
}

/* Record one phase event; `name` NULL pops the innermost open phase. */
void gs_phase(unsigned api, unsigned kind, const char *name)
{
	struct gspy_record *r = gs_begin(api, kind);
	uint32_t id = 0;
	if (r || (kind != GSPY_KIND_mark && __atomic_load_n(&gs_g.paused, __ATOMIC_RELAXED))) {
		/* Recorded or not (paused), the stack of open phases stays true. */
		pthread_mutex_lock(&ph.lock);
		if (kind == GSPY_KIND_phase_end) {
			id = ph.depth > 0 ? ph.stack[--ph.depth] : 0;
		} else {
			id = name_id(name && *name ? name : "(unnamed)");
			if (kind == GSPY_KIND_phase_begin && ph.depth < STACK_MAX)
				ph.stack[ph.depth++] = id;
		}
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
	if (GS_UNLIKELY(gs_g.events))
		gs_events_phase(begin ? GSPY_KIND_phase_begin : GSPY_KIND_phase_end,
				id ? id : gs_phase_name(name));
}

/* The public API (include/gpuspy.h declares these as weak references for
 * programs; here they are plain definitions). */
GS_API void gpuspy_phase_push(const char *name);
GS_API void gpuspy_phase_pop(void);
/* Pause and resume recording, process-wide; each leaves a mark. */
GS_API void gpuspy_pause(void);
GS_API void gpuspy_resume(void);

GS_API void gpuspy_pause(void)
{
	gs_phase(GSPY_API_gpuspy_mark, GSPY_KIND_mark, "(paused)");
	__atomic_store_n(&gs_g.paused, 1, __ATOMIC_RELAXED);
	gs_cupti_callbacks(0);
}

GS_API void gpuspy_resume(void)
{
	gs_cupti_callbacks(1);
	__atomic_store_n(&gs_g.paused, 0, __ATOMIC_RELAXED);
	gs_phase(GSPY_API_gpuspy_mark, GSPY_KIND_mark, "(resumed)");
}

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
