/* SPDX-License-Identifier: MIT */
/*
 * Demangling through the C++ runtime's __cxa_demangle (libstdc++), with a
 * cache: the report asks once per kernel name, the export once per slice.
 */
#include <stdlib.h>
#include <string.h>

#include "read/demangle.h"

char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

#define CACHE 4096
static struct {
	char *mangled, *plain;
} cache[CACHE];

static unsigned hash(const char *s)
{
	unsigned h = 2166136261u;
	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

const char *gs_demangle(const char *name)
{
	if (!name || name[0] != '_' || name[1] != 'Z')
		return name;
	unsigned i = hash(name) & (CACHE - 1);
	for (unsigned n = 0; n < 8; n++, i = (i + 1) & (CACHE - 1)) {
		if (cache[i].mangled && !strcmp(cache[i].mangled, name))
			return cache[i].plain;
		if (!cache[i].mangled) {
			int status = 0;
			char *plain = __cxa_demangle(name, NULL, NULL, &status);
			char *copy = strdup(name);
			if (status != 0 || !plain || !copy) {
				free(plain);
				free(copy);
				return name;
			}
			cache[i].mangled = copy;
			cache[i].plain = plain;
			return plain;
		}
	}
	return name; /* cache full around this slot: leave it mangled */
}

void gs_demangle_free(void)
{
	for (unsigned i = 0; i < CACHE; i++) {
		free(cache[i].mangled);
		free(cache[i].plain);
		cache[i].mangled = cache[i].plain = NULL;
	}
}
