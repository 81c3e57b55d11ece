/* SPDX-License-Identifier: MIT */
/* Build helper: prints libgpuspy's version script (or, with `host`,
 * libgpuspy-host.so's), exporting exactly the
 * intercepted CUDA entry points, the host allocator's hooks, dlsym, dlvsym and the public phase API. The
 * script is anonymous so that the definitions interpose on versioned
 * references (dlsym@GLIBC_2.34) as LD_PRELOAD requires. */
#include <stdio.h>
#include <string.h>

#include "gpuspy/format.h"

/* libgpuspy-host.so's script (`mkmap host`): the allocator's names and the
 * mark libgpuspy looks for, nothing else. */
static int host_map(void)
{
	printf("{\n  global:\n");
#define GSPY_X(sym, k, v) printf("    %s;\n", #sym);
	GSPY_HOST_API_LIST(GSPY_X)
#undef GSPY_X
	printf("    gpuspy_host_shim;\n  local:\n    *;\n};\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "host"))
		return host_map();
	printf("{\n  global:\n    dlsym;\n    dlvsym;\n");
#define GSPY_X(sym, k, v) printf("    %s;\n", #sym);
	GSPY_DRIVER_API_LIST(GSPY_X)
	GSPY_RUNTIME_API_LIST(GSPY_X)
	GSPY_GRAPH_API_LIST(GSPY_X)
	GSPY_CONTEXT_API_LIST(GSPY_X)
	GSPY_STREAM_API_LIST(GSPY_X)
#undef GSPY_X
	/* The host allocator's hooks under their own names: libgpuspy-host.so
	 * defines malloc and the others as jumps to them (lib/host.h). */
#define GSPY_X(sym, k, v) printf("    gpuspy_host_%s;\n", #sym);
	GSPY_HOST_API_LIST(GSPY_X)
#undef GSPY_X
	printf("    gpuspy_phase_push;\n    gpuspy_phase_pop;\n    gpuspy_mark;\n");
	printf("    gpuspy_pause;\n    gpuspy_resume;\n");
	printf("    InitializeInjectionNvtx2;\n    InitializeInjection;\n    gpuspy_torch_phase;\n");
	printf("    gpuspy_torch_fast;\n    gpuspy_python_frames_learn;\n    gpuspy_python_note;\n");
	printf("    _exit;\n    _Exit;\n"); /* hook_exit.c */
	printf("  local:\n    *;\n};\n");
	return 0;
}
