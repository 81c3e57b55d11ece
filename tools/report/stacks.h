/* SPDX-License-Identifier: MIT */
/*
 * Where the CUDA calls come from, by call stack (stacks.c): the calls
 * summed by the stack they were made from, and those sums as a tree of
 * frames, outermost first, for the flame graph of `report --html`. One
 * rule of which calls count and how a frame is named, shared with `export
 * --format collapsed|speedscope` (render/flame.c): every call that
 * returned success (captured ones too: their host time was spent), its
 * host time; device and pinned allocations, their bytes.
 */
#ifndef GPUSPY_STACKS_H
#define GPUSPY_STACKS_H

#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "read/input.h"

#define GS_FLAME_FRAME 512 /* bytes of a frame's name, its end included */
#define GS_FLAME_NODES 2000 /* frames the page's JSON keeps of a tree, the largest */

/* What a flame graph holds: the calls (not failed), and of those the ones
 * with a call stack, the only ones in it; their host time. */
struct gs_flame_cover {
	uint64_t calls, host_ns;
	uint64_t stacked, stacked_ns;
};

/* The calls of one trace summed by stack id (open addressing, cap a power
 * of two; id 0 marks an empty slot). */
struct gs_stack_sum {
	uint32_t id;
	uint64_t calls, host_ns, bytes;
};

struct gs_stack_sums {
	struct gs_stack_sum *v;
	size_t n, cap;
};

/* A call counted in c, and into s when it has a stack; other events are
 * left out. */
void gs_stack_sums_add(struct gs_stack_sums *s, const struct gs_ev *ev, struct gs_flame_cover *c);
void gs_stack_sums_free(struct gs_stack_sums *s);

/* Names, each once, numbered from 0 in the order first given. */
struct gs_names {
	char **v;
	uint32_t *tab; /* index + 1, by hash */
	size_t n, cap;
};

/* name's number; *added (may be NULL) 1 when it is new. */
uint32_t gs_names_add(struct gs_names *t, const char *name, int *added);
void gs_names_free(struct gs_names *t);

/* A frame of the tree: its totals hold its callees'. A node's parent
 * comes before it (node 0, the root, has none). */
struct gs_flame_node {
	uint32_t name, parent;
	uint64_t calls, ns, bytes;
};

struct gs_flame {
	struct gs_flame_node *v;
	size_t n, cap;
	uint32_t *tab; /* node + 1, by (parent, name) */
	size_t tcap;
	struct gs_names names;
	struct gs_flame_cover cover;
};

/* The trace's stacks in s added to f under its root (made, named root,
 * when f is empty); the calls with a stack counted in f's cover. The
 * caller owns f (gs_flame_free). */
void gs_flame_add_sums(struct gs_flame *f, const char *root, const struct gs_stack_sums *s, struct gs_input *in);
/* src's tree added to dst's under a frame of src's root's name (dst's
 * root made, named root, when dst is empty); the covers added. */
void gs_flame_merge(struct gs_flame *dst, const char *root, const struct gs_flame *src);
/* {"names", "name", "parent", "calls", "ns", "bytes", "cover", "pruned"}:
 * the largest max_nodes frames (by their share of the time or of the
 * bytes, whichever is larger), the rest left in their callers' totals.
 * The caller owns the returned object. */
cJSON *gs_flame_json(const struct gs_flame *f, size_t max_nodes);
void gs_flame_free(struct gs_flame *f);

/* The report's section (sections.c): the flame graph of each process and
 * of the whole, in struct gs_report's flame, when gs_flame_on. */
extern int gs_flame_on;

#endif
