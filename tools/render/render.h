/* SPDX-License-Identifier: MIT */
/*
 * The report rendered (render/): the text report, the --json summary and
 * the --html page, each of the processes' reports and their whole, each
 * a frame around the sections' own parts (report/section.h).
 */
#ifndef GPUSPY_RENDER_H
#define GPUSPY_RENDER_H

#include <stddef.h>
#include <stdio.h>

#include <cJSON.h>

struct gs_report;

extern int gs_report_all; /* --all: every phase and library range (render/text.c) */
void gs_report_print(FILE *f, struct gs_report *const *procs, size_t n,
		     const struct gs_report *whole, int color);
/* The page of `report --html` (render/html.c): 0, or -1 when writing failed. */
int gs_report_html(FILE *f, struct gs_report *const *procs, size_t n, const struct gs_report *whole);
/* The caller owns the returned object. */
cJSON *gs_report_json(struct gs_report *const *procs, size_t n, const struct gs_report *whole);

#endif
