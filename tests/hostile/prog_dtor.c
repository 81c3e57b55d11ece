/* SPDX-License-Identifier: MIT */
/* The library it links (tests/hostile/dtor_lib.c) makes CUDA calls from
 * its destructor, after libgpuspy's ran; main makes none, or with
 * HOSTILE_DTOR_THREAD or HOSTILE_DTOR_LATE set one allocation. */
#include <stdio.h>
#include <stdlib.h>

int cudaMalloc(void **p, unsigned long n);

int main(void)
{
	void *p = 0;
	if (getenv("HOSTILE_DTOR_THREAD") || getenv("HOSTILE_DTOR_LATE"))
		printf("main: %d\n", cudaMalloc(&p, 4096));
	else
		printf("main: no CUDA\n");
	return 0;
}
