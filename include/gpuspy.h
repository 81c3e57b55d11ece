/* SPDX-License-Identifier: MIT */
/*
 * gpuspy public header.
 *
 * libgpuspy is used without any change to the traced program:
 *
 *     LD_PRELOAD=libgpuspy.so ./program
 *
 * It writes one trace file per process, gpuspy-<host>-<pid>[-r<RANK>].gspy,
 * whose layout is described by <gpuspy/format.h>; the gpuspy command reads
 * it.
 *
 * Phases. A program may name the parts of its work:
 *
 *     gpuspy_phase_push("forward"); ... gpuspy_phase_pop();
 *
 * Phases are process-wide (a push on one thread and launches on another
 * belong together), nestable, and safe to call from any thread. The
 * functions are weak references: a program built with this header and not
 * linked with libgpuspy runs unchanged when libgpuspy is not preloaded, and
 * the GPUSPY_PHASE_PUSH/POP/MARK macros then cost one test of a null
 * pointer. `name` is copied; the caller keeps ownership.
 */
#ifndef GPUSPY_H
#define GPUSPY_H

#define GPUSPY_VERSION_MAJOR 0
#define GPUSPY_VERSION_MINOR 1
#define GPUSPY_VERSION_PATCH 0
#define GPUSPY_VERSION_STRING "0.1.0"

#ifdef __cplusplus
extern "C" {
#endif

void gpuspy_phase_push(const char *name) __attribute__((weak));
void gpuspy_phase_pop(void) __attribute__((weak));
void gpuspy_mark(const char *name) __attribute__((weak));
/* Stop and restart recording in the whole process (warm-up, a region not
 * worth its cost); each leaves a mark "(paused)" / "(resumed)". Calls made
 * meanwhile pass through unrecorded; CUPTI, when on, keeps collecting. */
void gpuspy_pause(void) __attribute__((weak));
void gpuspy_resume(void) __attribute__((weak));

#ifdef __cplusplus
}
#endif

/* Call f with the parenthesised args when libgpuspy is loaded, else nothing. */
#define GPUSPY_CALL_IF_LOADED_(f, args)                                          \
	do {                                                                     \
		if (f)                                                           \
			f args;                                                  \
	} while (0)
#define GPUSPY_PHASE_PUSH(name) GPUSPY_CALL_IF_LOADED_(gpuspy_phase_push, (name))
#define GPUSPY_PHASE_POP() GPUSPY_CALL_IF_LOADED_(gpuspy_phase_pop, ())
#define GPUSPY_MARK(name) GPUSPY_CALL_IF_LOADED_(gpuspy_mark, (name))
#define GPUSPY_PAUSE() GPUSPY_CALL_IF_LOADED_(gpuspy_pause, ())
#define GPUSPY_RESUME() GPUSPY_CALL_IF_LOADED_(gpuspy_resume, ())

#endif /* GPUSPY_H */
