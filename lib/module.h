/* SPDX-License-Identifier: MIT */
/*
 * The library's modules and their moments. Each module that must act at one
 * of these moments declares it once, next to its code:
 *
 *   GS_MODULE(stacks, 30, .setup = stacks_setup, .load = stacks_load, ...);
 *
 * and core.c (the options, the constructor, fork) and writer.c (the file)
 * call every module's hook in the order of their numbers, without naming
 * them. The entries live in the gs_modules section, like the fork locks
 * (gs.h): linking a module in is what registers it.
 *
 * Order: lower first, at every moment. log 5 (the notes go to the file
 * before another module's opened hook may warn), memmap 10, writer 20, strtab 21,
 * devices 30, phase 40, nvtx 50, python 60, stacks 70, signals 80, cupti 90,
 * nvml 95, control 97, events 100, host 110 (last at setup: it arms the
 * host-allocation hooks); symbols 120 (its end says what was handed out,
 * after the file is finished).
 */
#ifndef GPUSPY_MODULE_H
#define GPUSPY_MODULE_H

struct gspy_header;
struct gs_tls;

struct gs_module {
	const char *name;
	unsigned order;
	void (*setup)(void);  /* gs_init, once the options are read: no lock, no dlopen, no thread */
	void (*load)(void);   /* the constructor, after gs_init: may dlopen */
	void (*opened)(struct gspy_header *h); /* the trace file was made, under the writer's lock */
	void (*started)(struct gspy_header *h); /* the file is open, outside the lock: may start threads */
	void (*thread)(void); /* a thread's first record */
	void (*first_chunk)(struct gs_tls *t); /* t's first chunk is open, before its first record goes in */
	void (*exiting)(struct gspy_header *h); /* the process ends (exit, fatal signal): async-signal-safe */
	void (*end)(void);    /* gpuspy's destructor */
	void (*slow)(void);   /* a record that claims a chunk (commit's slow path) */
	void (*fork_prepare)(void);
	void (*fork_parent)(void);
	void (*forked)(void); /* in the child of a fork, on its only thread */
};

#define GS_MODULE(id, ord, ...)                                                                       \
	static const struct gs_module gs_module_##id = { .name = #id, .order = (ord), __VA_ARGS__ }; \
	__attribute__((section("gs_modules"), used)) static const struct gs_module *const gs_module_ptr_##id = \
		&gs_module_##id

/* Every module with that hook, in order (core.c). HOOK names a member. */
#define GS_MODULES_CALL(hook, ...)                                              \
	do {                                                                    \
		for (unsigned gs_i_ = 0; gs_i_ < gs_modules_n(); gs_i_++) {     \
			const struct gs_module *gs_m_ = gs_modules_sorted()[gs_i_]; \
			if (gs_m_->hook)                                        \
				gs_m_->hook(__VA_ARGS__);                       \
		}                                                               \
	} while (0)

unsigned gs_modules_n(void);
const struct gs_module *const *gs_modules_sorted(void);

#endif
