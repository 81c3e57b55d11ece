/* SPDX-License-Identifier: MIT */
/*
 * The report's sections (section.h), in the order the text report prints
 * them; the pass feeds, finishes and diagnoses them in this order too, so
 * the diagnoses of the loop (diagnose.c, which prints nothing itself) come
 * first, and the sites are fed a host call after the memory section (which
 * asks them for the snapshot at a peak). Adding a section is adding its
 * file and its row (docs/hacking.md).
 */
#include "report/section.h"

#define HOST_GPU (GS_FEED_HOST | GS_FEED_GPU)

const struct gs_section gs_sections[] = {
	{ .name = "diagnose", .diagnose = gs_report_diagnose },
	{ .name = "phases", .feeds = HOST_GPU | GS_FEED_SPAN, .event = gs_phases_event,
	  .finish = gs_phases_finish, .merge = gs_phases_merge, .print = gs_phases_print,
	  .json = gs_phases_json, .free = gs_phases_free },
	{ .name = "copies", .print = gs_copies_print },
	{ .name = "kernels", .feeds = HOST_GPU, .event = gs_kernels_event, .merge = gs_kernels_merge,
	  .print = gs_kernels_print, .json = gs_kernels_json, .free = gs_kernels_free },
	{ .name = "gpu", .feeds = GS_FEED_GPU | GS_FEED_SPAN, .event = gs_gpu_event, .finish = gs_gpu_finish,
	  .merge = gs_gpu_merge, .print = gs_gpu_print, .json = gs_gpu_json },
	{ .name = "telemetry", .feeds = GS_FEED_NVML, .event = gs_tele_event, .merge = gs_tele_merge,
	  .diagnose = gs_tele_diagnose, .print = gs_tele_print, .json = gs_tele_json, .free = gs_tele_free,
	  .per_process = 1 },
	{ .name = "memory", .feeds = GS_FEED_EVENT | GS_FEED_PHASE | GS_FEED_HOST | GS_FEED_FAILED,
	  .event = gs_memory_event, .merge = gs_memory_merge, .print = gs_memory_print, .json = gs_memory_json,
	  .free = gs_memory_free },
	{ .name = "graphs", .feeds = GS_FEED_GRAPH | GS_FEED_GPU | GS_FEED_CAPTURED, .event = gs_graphs_event,
	  .finish = gs_graphs_finish, .merge = gs_graphs_merge, .print = gs_graphs_print,
	  .json = gs_captured_json },
	{ .name = "failed", .feeds = GS_FEED_FAILED, .event = gs_failed_event, .merge = gs_failed_merge,
	  .print = gs_failed_print, .json = gs_failed_json },
	{ .name = "sites", .feeds = GS_FEED_HOST, .event = gs_sites_event, .finish = gs_sites_finish,
	  .merge = gs_sites_merge, .print = gs_sites_print, .json = gs_sites_json, .free = gs_sites_free,
	  .per_process = 1 },
	{ .name = "stacks", .feeds = GS_FEED_EVENT, .event = gs_stacks_event, .finish = gs_stacks_finish,
	  .merge = gs_stacks_merge, .free = gs_stacks_free },
	{ .name = "collectives", .feeds = HOST_GPU, .event = gs_coll_event, .finish = gs_coll_finish,
	  .free = gs_coll_free },
	{ .name = "fault", .feeds = HOST_GPU | GS_FEED_FAILED, .event = gs_fault_event, .finish = gs_fault_finish,
	  .json = gs_fault_json, .free = gs_fault_free, .per_process = 1 },
	{ .name = "steps", .feeds = HOST_GPU | GS_FEED_PHASE, .event = gs_steps_event, .finish = gs_steps_finish,
	  .diagnose = gs_steps_diagnose, .print = gs_steps_print, .json = gs_steps_json, .free = gs_steps_free,
	  .per_process = 1 },
	{ .name = "ranks", .print_procs = gs_ranks_print, .json_procs = gs_ranks_json },
};

const size_t gs_nsections = sizeof(gs_sections) / sizeof(gs_sections[0]);
