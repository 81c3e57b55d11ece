/* SPDX-License-Identifier: MIT */
/*
 * The report's sections (section.h), in the order the text report prints
 * them; the pass feeds, finishes and diagnoses them in this order too.
 * Adding a section is adding its file and its row (docs/hacking.md).
 */
#include "report/section.h"

const struct gs_section gs_sections[] = {
	{ "phases", .print = gs_phases_print, .json = gs_phases_json },
	{ "copies", .print = gs_copies_print },
	{ "kernels", .print = gs_kernels_print, .json = gs_kernels_json },
	{ "gpu", .print = gs_gpu_print, .json = gs_gpu_json },
	{ "telemetry", .print = gs_tele_print, .json = gs_tele_json, .per_process = 1 },
	{ "memory", .print = gs_memory_print, .json = gs_memory_json },
	{ "graphs", .print = gs_graphs_print, .json = gs_captured_json },
	{ "failed", .print = gs_failed_print, .json = gs_failed_json },
	{ "sites", .print = gs_sites_print, .json = gs_sites_json, .per_process = 1 },
	{ "ranks", .print_procs = gs_ranks_print, .json_procs = gs_ranks_json },
};

const size_t gs_nsections = sizeof(gs_sections) / sizeof(gs_sections[0]);
