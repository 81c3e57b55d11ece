/* SPDX-License-Identifier: MIT */
/*
 * The report is built from sections: phases, copies, kernels, GPU,
 * telemetry, memory, graphs, failed calls, call sites, collectives, the
 * ranks, and the diagnoses. Each is one file under report/ and one row of
 * gs_sections[] (sections.c), which names its callbacks, every one of
 * them optional (the fault's print is called by the process's header
 * lines, not in the table's order):
 *
 *   event     the pass (pass.c) hands it the events of the classes in
 *             feeds, each with the phase it belongs to;
 *   finish    the pass's events are over: settle what the stream left
 *             open, free the section's scratch;
 *   merge     add one process's numbers into the whole of several;
 *   diagnose  add its diagnoses (diag.h), after every section finished;
 *   print     its part of the text report (render/text.c);
 *   json      its keys in the --json summary (render/json.c);
 *   free      free what it keeps in struct gs_report.
 *
 * The pass calls event, finish and diagnose, and the renderers print, in
 * the table's order, which is the text report's. A section that works on
 * all processes at once (the ranks) has print_procs and json_procs,
 * called once, after the whole of several processes.
 */
#ifndef GPUSPY_SECTION_H
#define GPUSPY_SECTION_H

#include <stddef.h>
#include <stdio.h>

#include <cJSON.h>

#include "report/report.h"

struct gs_pass;

/* How the report is rendered: the text's colours ("" without), and the
 * timing of the traces read (of their whole), which decides the columns. */
struct gs_style {
	const char *bold, *yellow, *reset;
	int gpu_mode;    /* GPU times from CUPTI */
	int events_mode; /* GPU time per phase from CUDA events (GPUSPY_CUPTI=events) */
	int all;         /* --all: every phase and library range */
};

/* The classes of events the pass hands out (a section's feeds). */
enum {
	GS_FEED_EVENT = 1u << 0,    /* every event in the recorded windows, before the phases see it */
	GS_FEED_PHASE = 1u << 1,    /* a user's phase began (the phase: the one begun; gs_pass.phase_depth) */
	GS_FEED_HOST = 1u << 2,     /* a host call that ran (not captured, not failed) */
	GS_FEED_GPU = 1u << 3,      /* a GPU record (CUPTI): the phase of the call that launched it */
	GS_FEED_SPAN = 1u << 4,     /* a GPU span at phase boundaries (CUDA events): the phase it names */
	GS_FEED_NVML = 1u << 5,     /* an NVML sample */
	GS_FEED_GRAPH = 1u << 6,    /* a graph instantiated, its nodes, a graph launched (also GS_FEED_HOST) */
	GS_FEED_CAPTURED = 1u << 7, /* a call captured into a graph: it did not run */
	GS_FEED_FAILED = 1u << 8,   /* a failed allocation, free, mapping or graph call: in no total */
};

struct gs_section {
	const char *name;
	unsigned feeds; /* GS_FEED_*: which events the pass hands it */
	void (*event)(struct gs_pass *p, unsigned feed, const struct gs_ev *ev, size_t phase);
	void (*finish)(struct gs_pass *p);
	void (*merge)(struct gs_report *dst, const struct gs_report *src);
	void (*diagnose)(struct gs_report *r);
	void (*print)(FILE *f, const struct gs_report *r, const struct gs_style *st);
	void (*json)(cJSON *o, const struct gs_report *r, const struct gs_style *st);
	void (*free)(struct gs_report *r);
	int per_process; /* printed for each process only, not for the whole of several */
	void (*print_procs)(FILE *f, struct gs_report *const *procs, size_t n, const struct gs_style *st);
	cJSON *(*json_procs)(struct gs_report *const *procs, size_t n); /* its key: name; JSON null: none */
};

extern const struct gs_section gs_sections[];
extern const size_t gs_nsections;

/* The sections' callbacks, named in the table only (each defined in
 * report/NAME.c), and the few helpers one section lends another. */
void gs_report_diagnose(struct gs_report *r);

void gs_phases_event(struct gs_pass *p, unsigned feed, const struct gs_ev *ev, size_t phase);
void gs_phases_finish(struct gs_pass *p);
void gs_phases_merge(struct gs_report *dst, const struct gs_report *src);
void gs_phases_print(FILE *f, const struct gs_report *r, const struct gs_style *st);
void gs_phases_json(cJSON *o, const struct gs_report *r, const struct gs_style *st);
void gs_phases_free(struct gs_report *r);

void gs_copies_print(FILE *f, const struct gs_report *r, const struct gs_style *st);

void gs_kernels_event(struct gs_pass *p, unsigned feed, const struct gs_ev *ev, size_t phase);
void gs_kernels_merge(struct gs_report *dst, const struct gs_report *src);
void gs_kernels_print(FILE *f, const struct gs_report *r, const struct gs_style *st);
void gs_kernels_json(cJSON *o, const struct gs_report *r, const struct gs_style *st);
void gs_kernels_free(struct gs_report *r);
/* A kernel's name as the kernels table shows it (48 columns at most): the
 * page labels its kernel chart with it. */
void gs_kernel_label(const char *name, char out[64]);

void gs_gpu_event(struct gs_pass *p, unsigned feed, const struct gs_ev *ev, size_t phase);
void gs_gpu_finish(struct gs_pass *p);
void gs_gpu_merge(struct gs_report *dst, const struct gs_report *src);
void gs_gpu_print(FILE *f, const struct gs_report *r, const struct gs_style *st);
void gs_gpu_json(cJSON *o, const struct gs_report *r, const struct gs_style *st);

void gs_tele_event(struct gs_pass *p, unsigned feed, const struct gs_ev *ev, size_t phase);
void gs_tele_merge(struct gs_report *dst, const struct gs_report *src);
void gs_tele_diagnose(struct gs_report *r);
void gs_tele_free(struct gs_report *r);
/* Clocks held back by heat or the power brake during the loop whose step
 * the GPU's work holds: clocks_throttled becomes a diagnosis (made, where
 * the run's samples left no context), its saving bounded by the GPU's
 * work a step at the max clock in the samples held back, where that is
 * floor or more (the step section's diagnose calls it). */
struct gs_steps;
void gs_tele_loop(struct gs_report *r, const struct gs_steps *s, int64_t floor);
void gs_tele_print(FILE *f, const struct gs_report *r, const struct gs_style *st);
void gs_tele_json(cJSON *o, const struct gs_report *r, const struct gs_style *st);

void gs_memory_event(struct gs_pass *p, unsigned feed, const struct gs_ev *ev, size_t phase);
void gs_memory_merge(struct gs_report *dst, const struct gs_report *src);
void gs_memory_print(FILE *f, const struct gs_report *r, const struct gs_style *st);
void gs_memory_json(cJSON *o, const struct gs_report *r, const struct gs_style *st);
void gs_memory_free(struct gs_report *r);

void gs_graphs_event(struct gs_pass *p, unsigned feed, const struct gs_ev *ev, size_t phase);
void gs_graphs_finish(struct gs_pass *p);
void gs_graphs_merge(struct gs_report *dst, const struct gs_report *src);
void gs_graphs_print(FILE *f, const struct gs_report *r, const struct gs_style *st);
void gs_captured_json(cJSON *o, const struct gs_report *r, const struct gs_style *st);
/* The "graphs" of a CATS object (phases.c's JSON): what graphs ran. */
void gs_graphs_json(cJSON *o, const struct gs_cats *c);

void gs_failed_event(struct gs_pass *p, unsigned feed, const struct gs_ev *ev, size_t phase);
void gs_failed_merge(struct gs_report *dst, const struct gs_report *src);
void gs_failed_print(FILE *f, const struct gs_report *r, const struct gs_style *st);
void gs_failed_json(cJSON *o, const struct gs_report *r, const struct gs_style *st);

void gs_sites_event(struct gs_pass *p, unsigned feed, const struct gs_ev *ev, size_t phase);
void gs_sites_finish(struct gs_pass *p);
void gs_sites_merge(struct gs_report *dst, const struct gs_report *src);
void gs_sites_print(FILE *f, const struct gs_report *r, const struct gs_style *st);
void gs_sites_json(cJSON *o, const struct gs_report *r, const struct gs_style *st);
void gs_sites_free(struct gs_report *r);

/* The flame graph's stacks (stacks.c; stacks.h: the sums and the tree). */
void gs_stacks_event(struct gs_pass *p, unsigned feed, const struct gs_ev *ev, size_t phase);
void gs_stacks_finish(struct gs_pass *p);
void gs_stacks_merge(struct gs_report *dst, const struct gs_report *src);
void gs_stacks_free(struct gs_report *r);

void gs_coll_event(struct gs_pass *p, unsigned feed, const struct gs_ev *ev, size_t phase);
void gs_coll_finish(struct gs_pass *p);
void gs_coll_free(struct gs_report *r);
/* 1 when a kernel of this name is NCCL's (a collective). */
int gs_coll_nccl_name(const char *name);

void gs_steps_event(struct gs_pass *p, unsigned feed, const struct gs_ev *ev, size_t phase);
void gs_steps_finish(struct gs_pass *p);
void gs_steps_diagnose(struct gs_report *r);
void gs_steps_print(FILE *f, const struct gs_report *r, const struct gs_style *st);
void gs_steps_json(cJSON *o, const struct gs_report *r, const struct gs_style *st);
void gs_steps_free(struct gs_report *r);

/* The post-mortem's first fact (fault.c): the GPU kernel that faulted,
 * where, what failed after; printed in the process's header lines. */
void gs_fault_event(struct gs_pass *p, unsigned feed, const struct gs_ev *ev, size_t phase);
/* A mark: the library's of the launch before a fault (GSPY_MARK_FAULT_SITE). */
void gs_fault_mark(struct gs_pass *p, const struct gs_ev *ev);
void gs_fault_finish(struct gs_pass *p);
void gs_fault_print(FILE *f, const struct gs_report *r, const struct gs_style *st);
void gs_fault_json(cJSON *o, const struct gs_report *r, const struct gs_style *st); /* --json's `fault` */
void gs_fault_free(struct gs_report *r);

void gs_ranks_print(FILE *f, struct gs_report *const *procs, size_t n, const struct gs_style *st);
cJSON *gs_ranks_json(struct gs_report *const *procs, size_t n);
/* The ranks table for the page (render/html.c): {"head", "columns", "rows"
 * (each cell as the text report prints it), "notes" (the lines below
 * it)}; NULL when procs are no ranks of one job. The caller owns it. */
cJSON *gs_ranks_table(struct gs_report *const *procs, size_t n);

#endif
