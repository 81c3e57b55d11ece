/* SPDX-License-Identifier: MIT */
/*
 * NVTX v3 ranges, header-only from the CUDA toolkit (no libnvToolsExt), as
 * phases: push/pop (nested), a mark, a domain range, a registered string,
 * and a start/end range that ends on another thread. One launch inside each.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <nvtx3/nvToolsExt.h>

#include "../lib/cuda_api.h"
#include "doubles/fakecuda.h"

static CUfunction f;

static void launch(void)
{
	cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
}

static void *ender(void *arg)
{
	nvtxRangeEnd(*(nvtxRangeId_t *)arg);
	return NULL;
}

int main(void)
{
	f = fakecuda_function("nvtx_kernel", NULL);
	int l0 = nvtxRangePushA("outer");
	launch();
	int l1 = nvtxRangePushA("inner");
	launch();
	nvtxRangePop();
	nvtxRangePop();
	nvtxMarkA("checkpoint");

	nvtxDomainHandle_t d = nvtxDomainCreateA("mydomain");
	nvtxEventAttributes_t a;
	memset(&a, 0, sizeof(a));
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	a.message.registered = nvtxDomainRegisterStringA(d, "dom_range");
	nvtxDomainRangePushEx(d, &a);
	launch();
	nvtxDomainRangePop(d);

	nvtxRangeId_t id = nvtxRangeStartA("async_range");
	launch();
	pthread_t t;
	pthread_create(&t, NULL, ender, &id);
	pthread_join(t, NULL);
	launch();
	printf("levels %d %d\n", l0, l1);
	return 0;
}
