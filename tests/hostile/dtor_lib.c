/* SPDX-License-Identifier: MIT */
/*
 * A library whose destructor, which runs after libgpuspy's, makes CUDA
 * calls (tests/hostile/prog_dtor.c links it): two of its own, or with
 * HOSTILE_DTOR_THREAD set, two from a thread it starts then. With
 * HOSTILE_DTOR_LATE set (main has made a call: its thread has a chunk),
 * it first says what gpuspy's destructor left of the trace in GPUSPY_DIR
 * (its size and the string-table bytes its header counts), then makes its
 * two calls inside a phase: a name and a call stack new to the string
 * table, interned after the trim.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpuspy.h"
#include "gpuspy/format.h"

int cudaMalloc(void **p, unsigned long n);
int cudaFree(void *p);

static void *two_calls(void *arg)
{
	void *p = 0;
	int a = cudaMalloc(&p, 1 << 20);
	int b = cudaFree(p);
	fprintf(stderr, "%s: %d %d\n", (const char *)arg, a, b);
	return NULL;
}

/* "trimmed SIZE USED" of the one trace in GPUSPY_DIR. */
static void say_trace(void)
{
	const char *dir = getenv("GPUSPY_DIR");
	DIR *d = dir ? opendir(dir) : NULL;
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL) {
		size_t n = strlen(e->d_name);
		if (n < 5 || strcmp(e->d_name + n - 5, ".gspy"))
			continue;
		int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_CLOEXEC);
		struct stat st;
		uint64_t used = 0;
		if (fd >= 0 && fstat(fd, &st) == 0 &&
		    pread(fd, &used, sizeof(used), offsetof(struct gspy_header, strtab_used)) == (ssize_t)sizeof(used))
			fprintf(stderr, "trimmed %lld %llu\n", (long long)st.st_size, (unsigned long long)used);
		if (fd >= 0)
			close(fd);
	}
	if (d)
		closedir(d);
}

__attribute__((destructor)) static void dtor_makes_cuda_calls(void)
{
	if (getenv("HOSTILE_DTOR_LATE")) {
		say_trace();
		GPUSPY_PHASE_PUSH("late_phase");
		two_calls("late");
		GPUSPY_PHASE_POP();
	} else if (getenv("HOSTILE_DTOR_THREAD")) {
		pthread_t th;
		pthread_create(&th, NULL, two_calls, "dtor thread");
		pthread_join(th, NULL);
	} else {
		two_calls("dtor");
	}
}
