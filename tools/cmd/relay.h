/* SPDX-License-Identifier: MIT */
/*
 * gpuspy's messages about `gpuspy run`'s command, said after it (relay.c).
 */
#ifndef GPUSPY_RELAY_H
#define GPUSPY_RELAY_H

#include <stddef.h>

struct relay {
	int traces;      /* say each trace's notes */
	const char *log; /* run's own GPUSPY_LOG file, or NULL */
	unsigned said;   /* lines said */
	int keep_log;    /* messages were left unsaid: the log stays */
	/* relay.c's: */
	struct note *v;
	size_t n, cap, unkept;
};

/* The notes of the traces at paths (when rl->traces), then the log's
 * lines no trace showed; the log is removed, unless some were left
 * unsaid (then it is named). */
void gs_relay(struct relay *rl, char **paths, int np);

#endif
