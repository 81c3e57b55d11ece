/* SPDX-License-Identifier: MIT */
/*
 * A pthread_create that always fails (EAGAIN), preloaded in front of
 * libgpuspy: how gpuspy's control thread failed to start on the H200 in
 * programs linked with cuBLAS, cuSPARSE or cuSOLVER, which then found
 * "gpuspy: cannot start the control thread" on their own stderr.
 */
#include <errno.h>
#include <pthread.h>

int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	(void)th;
	(void)attr;
	(void)fn;
	(void)arg;
	return EAGAIN;
}
