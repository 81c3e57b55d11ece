/* SPDX-License-Identifier: MIT */
/* Timeline export for standard viewers. */
#ifndef GPUSPY_EXPORT_H
#define GPUSPY_EXPORT_H

#include <stddef.h>
#include <stdio.h>

#include "util/paths.h"

/* Chrome Trace Event Format of the traces in paths. On a bad input returns
 * -1 with err set and *bad its index (the output is still valid JSON). */
int gs_export_chrome(FILE *f, const struct gs_paths *paths, char *err, size_t errlen, size_t *bad);

#endif
