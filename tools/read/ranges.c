/* SPDX-License-Identifier: MIT */
/* Whose an NVTX range is: see ranges.h. */
#include <stdio.h>
#include <string.h>

#include "libranges.h"

#include "read/ranges.h"

const char *gs_framework_phase(const char *name, char *buf, size_t cap, int *compile)
{
	*compile = 0;
	if (!strncmp(name, "XlaCompile:", 11)) {
		*compile = 1;
		snprintf(buf, cap, "XLA compile");
		return buf;
	}
	const char *m = strncmp(name, "XlaModule:", 10) ? NULL : strstr(name, "hlo_module=");
	if (!m)
		return NULL;
	m += strlen("hlo_module=");
	size_t n = strcspn(m, ",#");
	if (!n)
		return NULL;
	snprintf(buf, cap, "%.*s", (int)(n < cap ? n : cap - 1), m);
	return buf;
}

int gs_library_range(const char *name)
{
	return gspy_library_range(name); /* common/libranges.h */
}
