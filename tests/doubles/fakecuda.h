/* SPDX-License-Identifier: MIT */
/* Extras of the CUDA test doubles that the real libraries do not have. */
#ifndef FAKECUDA_H
#define FAKECUDA_H

typedef void (*fake_kernel_fn)(void **args);

/* The function handle for a kernel name, created on first use; body (may be
 * NULL) runs on the host at each launch. */
CUfunction fakecuda_function(const char *name, fake_kernel_fn body);

/* Runtime double: register a host stub as the kernel `name`, as nvcc's
 * generated __cudaRegisterFunction does. */
void fakecudart_register(const void *stub, const char *name, fake_kernel_fn body);

/* Runtime double: the kernel handle of a registered stub. */
cudaError_t __cudaGetKernel(cudaKernel_t *k, const void *stub);

#endif
