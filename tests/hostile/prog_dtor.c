/* SPDX-License-Identifier: MIT */
/* Makes no CUDA call itself: the library it links (tests/hostile/dtor_lib.c)
 * makes two from its destructor, after libgpuspy's destructor ran. */
#include <stdio.h>

int main(void)
{
	printf("main: no CUDA\n");
	return 0;
}
