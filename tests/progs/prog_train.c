/* SPDX-License-Identifier: MIT */
/*
 * A training loop on the driver double, annotated with the public phase API
 * (include/gpuspy.h, weak symbols: it also runs without libgpuspy). Each of
 * STEPS steps: "data" does host work and two pageable 1 MiB H2D copies,
 * "forward" launches 10 kernels, "backward" 12, "optimizer" allocates and
 * frees a 4 MiB buffer, launches one kernel, synchronizes and reads a loss
 * back (4-byte D2H). With `pause`, the second step runs inside
 * gpuspy_pause()/gpuspy_resume(), with `paused` every step from the second
 * on (never resumed); with `hold`, the program waits to be
 * killed after its output; with `destroy`, it destroys its context before
 * the output; with `signal`, it then blocks SIGUSR1 in its only thread,
 * sends it to itself, and prints whether it was still pending 200 ms later
 * (no other thread took it) and whether its handler then ran on that thread;
 * with `abort`, it ends by abort() after its output (SIGABRT, no handler);
 * with `term`, it sends itself SIGTERM (no handler) as the second step
 * begins and ends by _exit(7) after its output: the signal kills it,
 * unless it is a pid namespace's init (pid 1), where the kernel drops a
 * signal left to its default action and the program runs on; with
 * `_exit2`, a second thread calls _exit(9) 50 ms after the main one
 * calls _exit(7);
 * with `exit_exit`, the main thread calls exit(7) and a second thread
 * _exit(9) 50 ms later.
 * Usage: prog_train [STEPS] [DATA_US] [pause|paused|hold|destroy|signal|_exit|_exit2|exit_exit|abort|term]
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../../lib/cuda_api.h"
#include "../doubles/fakecuda.h"
#include "gpuspy.h"

static void host_work(long us)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
}

static volatile sig_atomic_t usr1_tid;
static void on_usr1(int sig)
{
	(void)sig;
	usr1_tid = (sig_atomic_t)syscall(SYS_gettid);
}

/* `signal`: does any thread but ours take a signal sent to the process? */
static void signal_check(void)
{
	sigset_t u, p;
	sigemptyset(&u);
	sigaddset(&u, SIGUSR1);
	signal(SIGUSR1, on_usr1);
	pthread_sigmask(SIG_BLOCK, &u, NULL);
	kill(getpid(), SIGUSR1);
	struct timespec t = { 0, 200000000 };
	nanosleep(&t, NULL);
	sigpending(&p);
	printf("still pending %d\n", sigismember(&p, SIGUSR1));
	pthread_sigmask(SIG_UNBLOCK, &u, NULL);
	printf("handled by the main thread %d\n", usr1_tid == (sig_atomic_t)syscall(SYS_gettid));
}

static volatile int second_go, second_code = 7;
static void *second_exit(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&second_go, __ATOMIC_ACQUIRE))
		sched_yield();
	struct timespec t = { 0, 50000000 };
	nanosleep(&t, NULL);
	_exit(second_code);
}

/* The ways out after the output: exit_exit, _exit, _exit2, term, abort,
 * hold; any other mode returns (main's return 0). */
static void end_as(const char *mode)
{
	pthread_t second;
	fflush(stdout);
	if (!strcmp(mode, "exit_exit")) {
		second_code = 9;
		if (pthread_create(&second, NULL, second_exit, NULL) == 0)
			__atomic_store_n(&second_go, 1, __ATOMIC_RELEASE);
		exit(7);
	}
	if (!strcmp(mode, "_exit") || !strcmp(mode, "term") || !strcmp(mode, "_exit2")) { /* as os._exit */
		second_code = 9;
		if (!strcmp(mode, "_exit2") && pthread_create(&second, NULL, second_exit, NULL) == 0)
			__atomic_store_n(&second_go, 1, __ATOMIC_RELEASE);
		_exit(7);
	}
	if (!strcmp(mode, "abort"))
		abort();
	if (!strcmp(mode, "hold"))
		for (;;)
			pause();
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 20;
	long data_us = argc > 2 ? atol(argv[2]) : 2000;
	const char *mode = argc > 3 ? argv[3] : "";
	CUcontext ctx;
	cuInit(0);
	cuDevicePrimaryCtxRetain(&ctx, 0);
	cuCtxSetCurrent(ctx);
	CUdeviceptr weights, x;
	cuMemAlloc_v2(&weights, 512 << 10);
	cuMemAlloc_v2(&x, 2 << 20);
	char *batch = malloc(1 << 20);
	float loss = 0;
	CUfunction fwd = fakecuda_function("fwd_gemm", NULL);
	CUfunction bwd = fakecuda_function("bwd_gemm", NULL);
	CUfunction sgd = fakecuda_function("sgd_update", NULL);
	for (int s = 0; s < steps; s++) {
		if ((!strcmp(mode, "pause") || !strcmp(mode, "paused")) && s == 1)
			GPUSPY_PAUSE();
		if (!strcmp(mode, "pause") && s == 2)
			GPUSPY_RESUME();
		if (!strcmp(mode, "term") && s == 1)
			kill(getpid(), SIGTERM);
		GPUSPY_PHASE_PUSH("data");
		host_work(data_us);
		cuMemcpyHtoD_v2(x, batch, 1 << 20);
		cuMemcpyHtoD_v2(x + (1 << 20), batch, 1 << 20);
		GPUSPY_PHASE_POP();

		GPUSPY_PHASE_PUSH("forward");
		for (int i = 0; i < 10; i++)
			cuLaunchKernel(fwd, 64, 1, 1, 256, 1, 1, 0, NULL, NULL, NULL);
		GPUSPY_PHASE_POP();

		GPUSPY_PHASE_PUSH("backward");
		for (int i = 0; i < 12; i++)
			cuLaunchKernel(bwd, 64, 2, 1, 256, 1, 1, 0, NULL, NULL, NULL);
		GPUSPY_PHASE_POP();

		GPUSPY_PHASE_PUSH("optimizer");
		CUdeviceptr tmp;
		cuMemAlloc_v2(&tmp, 4 << 20);
		cuLaunchKernel(sgd, 32, 1, 1, 128, 1, 1, 0, NULL, NULL, NULL);
		cuMemFree_v2(tmp);
		cuStreamSynchronize(NULL);
		cuMemcpyDtoH_v2(&loss, weights, sizeof(loss));
		GPUSPY_PHASE_POP();
		GPUSPY_MARK("step");
	}
	cuMemFree_v2(x);
	cuMemFree_v2(weights);
	free(batch);
	if (!strcmp(mode, "destroy"))
		cuCtxDestroy(ctx);
	printf("trained %d steps\n", steps);
	if (!strcmp(mode, "signal"))
		signal_check();
	end_as(mode);
	return 0;
}
