/* SPDX-License-Identifier: MIT */
/*
 * Preloaded into the gpuspy command: each time it maps a .gspy file whole
 * (the reader's open), the file is cut to its header right after, as a
 * traced process's exit cuts its trace (the trim) while top or serve
 * opens it. The first load past the header then faults (SIGBUS): the race
 * made certain. CUT_ON_MAP=1 turns it on.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	static void *(*real)(void *, size_t, int, int, int, off_t);
	if (!real)
		real = (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
	void *m = real(addr, len, prot, flags, fd, off);
	char link[64], path[PATH_MAX];
	ssize_t n;
	if (m != MAP_FAILED && fd >= 0 && len > 4096 && getenv("CUT_ON_MAP")) {
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		n = readlink(link, path, sizeof(path) - 1);
		if (n > 5) {
			path[n] = 0;
			if (!strcmp(path + n - 5, ".gspy") && truncate(path, 4096) != 0)
				perror("cut_on_map: truncate");
		}
	}
	return m;
}
