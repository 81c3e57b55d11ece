/* SPDX-License-Identifier: MIT */
/*
 * Recording on demand. With GPUSPY_START=paused a process is preloaded but
 * records nothing; `gpuspy start PID`, `gpuspy stop PID` and `gpuspy record
 * PID --for 30s` turn recording on and off in it, through its trace file's
 * header, which the tool maps too (tools/cmd/control.c). The tool writes its
 * request (ctl_want, ctl_for_ns), bumps ctl_seq and wakes the futex on
 * that word; a thread of gpuspy's own, asleep on it, applies the request
 * and answers in ctl_done. No signal: the program's own handlers never see
 * one, and a program that makes no call is still switched.
 *
 * The program's gpuspy_pause()/gpuspy_resume() go through the same switch
 * (gs_recording), so the header always says whether the process records.
 * A process paused when its file opens starts CUPTI only when it first
 * records: until then it pays what the interception alone costs.
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "gs.h"
#include "gpu_timing.h"
#include "module.h"
#include "phase.h"

static struct {
	struct gspy_header *h; /* this process's file, once open */
	int start_paused;      /* GPUSPY_START=paused */
} ctl;

static void header_state(void)
{
	struct gspy_header *h = __atomic_load_n(&ctl.h, __ATOMIC_ACQUIRE);
	if (h)
		__atomic_store_n(&h->ctl_paused, __atomic_load_n(&gs_g.paused, __ATOMIC_RELAXED) != 0,
				 __ATOMIC_RELEASE);
}

/* flush: a window that `gpuspy stop`/`record` ends hands CUPTI's records
 * over at once (on the control thread), not at the next flush seconds
 * later, so that the window's trace is whole when the command returns,
 * even if the process then dies. */
static void recording(int on, int flush)
{
	if (!gs_init())
		return;
	if (on && __atomic_exchange_n(&gs_cupti_deferred, 0, __ATOMIC_ACQ_REL))
		gs_cupti_start_late();
	if (on)
		gs_cupti_callbacks(1);
	if (gs_phase_recording(on)) {
		struct gspy_header *h = __atomic_load_n(&ctl.h, __ATOMIC_ACQUIRE);
		if (on && h)
			__atomic_fetch_add(&h->windows, 1, __ATOMIC_RELAXED);
	}
	if (!on)
		gs_cupti_callbacks(0);
	if (!on && flush)
		gs_cupti_flush();
	header_state();
}

/* gpuspy_pause/resume, GPUSPY_START=paused and `gpuspy start`/`stop`. */
static void gs_recording(int on)
{
	recording(on, 0);
}

/* The public API's pause and resume (include/gpuspy.h declares them as
 * weak references for programs), process-wide; each leaves a mark. */
GS_API void gpuspy_pause(void);
GS_API void gpuspy_resume(void);

GS_API void gpuspy_pause(void)
{
	gs_recording(0);
}

GS_API void gpuspy_resume(void)
{
	gs_recording(1);
}


static long futex_wait(uint32_t *word, uint32_t val, uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
	/* Not private: the tool wakes it through its own mapping of the file. */
	return syscall(SYS_futex, word, FUTEX_WAIT, val, &ts, NULL, 0);
}

static void *control_main(void *arg)
{
	struct gspy_header *h = arg;
	uint64_t until = 0; /* the window's end (gs_mono_ns); 0 none */
	for (;;) {
		uint32_t seq = __atomic_load_n(&h->ctl_seq, __ATOMIC_ACQUIRE);
		if (seq != __atomic_load_n(&h->ctl_done, __ATOMIC_RELAXED)) {
			uint32_t want = __atomic_load_n(&h->ctl_want, __ATOMIC_RELAXED);
			if (want == GSPY_CTL_record) {
				uint64_t dur = __atomic_load_n(&h->ctl_for_ns, __ATOMIC_RELAXED);
				recording(1, 1);
				uint64_t now = gs_mono_ns();
				/* Read from the file, which anyone who may write it may
				 * fill with anything: a length past the clock's range is
				 * a window without end, not one that wrapped to now. */
				until = dur && dur < UINT64_MAX - now ? now + dur : 0;
			} else if (want == GSPY_CTL_pause) {
				until = 0;
				recording(0, 1);
			}
			__atomic_store_n(&h->ctl_done, seq, __ATOMIC_RELEASE);
		}
		uint64_t now = gs_mono_ns(), wait = 1000000000u; /* a second: only a safety net */
		if (until && now >= until) {
			until = 0;
			recording(0, 1);
			continue;
		}
		if (until && until - now < wait)
			wait = until - now;
		futex_wait(&h->ctl_seq, seq, wait);
	}
	return NULL;
}

static void control_setup(void)
{
	ctl.start_paused = (int)gs_optu(GS_OPT_START) == 1;
	if (ctl.start_paused)
		__atomic_store_n(&gs_g.paused, 1, __ATOMIC_RELAXED);
}

static void control_opened(struct gspy_header *h)
{
	h->start_paused = (uint32_t)ctl.start_paused;
	h->ctl_paused = __atomic_load_n(&gs_g.paused, __ATOMIC_RELAXED) != 0;
	__atomic_store_n(&ctl.h, h, __ATOMIC_RELEASE);
}

static void control_started(struct gspy_header *h)
{
	if (gs_start_thread(control_main, h, "gpuspy-control", 64 << 10) != 0)
		gs_warn("cannot start the control thread: `gpuspy start`/`stop` will not reach this process");
}

static void control_forked(void)
{
	__atomic_store_n(&ctl.h, NULL, __ATOMIC_RELEASE);
}

GS_MODULE(control, 97, .setup = control_setup, .opened = control_opened, .started = control_started,
	  .forked = control_forked);
