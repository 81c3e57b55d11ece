/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for everything that parses a trace: the .gspy reader,
 * the JSON Lines reader, the report's aggregation and diagnoses, and dump.
 * The input goes through a memfd so the real entry points (which take a
 * path) are the ones fuzzed.
 * Build and run: make fuzz FUZZ_SECONDS=600   (corpus: tests/fuzz/corpus)
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "render/jsonl.h"
#include "read/reader.h"
#include "report/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *devnull;
	if (!devnull)
		devnull = fopen("/dev/null", "w");
	int fd = memfd_create("trace", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	char path[64], err[300];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	struct gs_report r;
	if (gs_report_file(path, 0, &r, err, sizeof(err)) == 0)
		gs_report_free(&r);
	struct gs_trace t;
	if (gs_trace_open(path, &t, err, sizeof(err)) == 0) {
		gs_dump(&t, devnull);
		gs_trace_close(&t);
	}
	close(fd);
	return 0;
}
