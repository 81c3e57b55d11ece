/* SPDX-License-Identifier: MIT */
/*
 * Writes a synthetic .gspy trace with the writer's layout (format.h): N
 * events spread over T threads, a repeating mix of phases, launches, copies,
 * memsets, allocations and syncs. Used for the reader speed benchmark
 * (10 M events) and for the fuzzer's seed corpus (a few events, small
 * sizes), and for hostile names (tests/test_serve.py, test_top.py): with
 * PID, the trace is of that process, running, and COMMAND, KERNEL, PHASE
 * and UUID (any bytes) replace the command line, the first kernel's name,
 * the phase's name and device 0's UUID (an NVML sample first; every
 * tenth event a GPU kernel of device 0). The layout is format 3's (the
 * string table after the chunks), or with MKTRACE_FORMAT=2 in the
 * environment format 2's (the table before them), the same bytes else.
 * MKTRACE_RESERVE=N reserves N chunks more than it writes (zeros, as a
 * live process's unused buffer), the first of them claimed, as a thread's
 * next chunk is before its first record.
 * Usage: mktrace OUT EVENTS THREADS [STRTAB_BYTES CHUNK_BYTES [PID COMMAND KERNEL PHASE UUID]]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuspy/format.h"

/* What every chunk's records are made of. */
struct plan {
	unsigned threads;
	uint32_t chunk;
	uint64_t per_thread, chunks_per_thread, base0;
	int hostile;
	const uint32_t *ids; /* the string table's: four names, module, stack, UUID */
};

/* Record i (in the global order) of the repeating mix, at time t0. */
static void fill(struct gspy_record *r, const struct plan *p, uint64_t i, uint64_t t0)
{
	const uint32_t *ids = p->ids;
	memset(r, 0, sizeof(*r));
	r->start = t0;
	r->end = t0 + 400;
	r->device = 0;
	switch (i % 10) {
	case 0: r->kind = GSPY_KIND_phase_begin; r->api = GSPY_API_gpuspy_phase_push; r->name_id = ids[3]; r->end = t0; break;
	case 9: r->kind = GSPY_KIND_phase_end; r->api = GSPY_API_gpuspy_phase_pop; r->name_id = ids[3]; r->end = t0; break;
	case 1: case 2: case 3:
		r->kind = GSPY_KIND_launch; r->api = GSPY_API_cuLaunchKernel;
		r->name_id = ids[i % 2]; r->u.launch.grid_x = 64; r->u.launch.block[0] = 256; break;
	case 4: r->kind = GSPY_KIND_copy; r->api = GSPY_API_cuMemcpyHtoDAsync_v2; r->dir = GSPY_DIR_h2d;
		r->mem = GSPY_MEM_pageable; r->u.mem.bytes = 4096; r->flags = GSPY_FLAG_ASYNC; break;
	case 5: r->kind = GSPY_KIND_memset; r->api = GSPY_API_cuMemsetD8_v2; r->u.mem.bytes = 512; break;
	case 6: r->kind = GSPY_KIND_alloc; r->api = GSPY_API_cuMemAlloc_v2; r->mem = GSPY_MEM_device;
		r->u.mem.bytes = 1 << 20; r->stack_id = ids[5]; break;
	case 7: r->kind = GSPY_KIND_free; r->api = GSPY_API_cuMemFree_v2; r->mem = GSPY_MEM_device; r->u.mem.bytes = 1 << 20; break;
	default: r->kind = GSPY_KIND_sync; r->api = GSPY_API_cuStreamSynchronize; break;
	}
	if (p->hostile && i == 0) {
		r->kind = GSPY_KIND_nvml; r->api = GSPY_API_nvml_sample; r->name_id = ids[6]; r->end = t0;
	} else if (p->hostile && i % 10 == 8) {
		r->kind = GSPY_KIND_gpu_kernel; r->api = GSPY_API_cupti_kernel; r->name_id = ids[0];
	}
}

/* Each thread's chunks in turn, its records packed until the next might
 * not fit. */
static void write_chunks(FILE *f, const struct plan *p, char *buf)
{
	uint32_t chunk = p->chunk;
	unsigned threads = p->threads;
	uint64_t body = chunk - GSPY_CHUNK_HEADER_SIZE;
	for (unsigned t = 0; t < threads; t++) {
		uint64_t done = 0;
		for (uint64_t c = 0; c < p->chunks_per_thread; c++) {
			memset(buf, 0, chunk);
			struct gspy_chunk *ch = (struct gspy_chunk *)buf;
			uint8_t *out = (uint8_t *)buf + GSPY_CHUNK_HEADER_SIZE;
			struct gspy_pack_base base;
			struct gspy_record rec;
			memset(&base, 0, sizeof(base));
			uint64_t k = 0, used = 0;
			for (; used + GSPY_PACKED_MAX <= body && done < p->per_thread; k++, done++) {
				uint64_t i = done * threads + t; /* global order: interleaved threads */
				fill(&rec, p, i, p->base0 + i * 1000);
				used += gspy_pack(out + used, &rec, 0, &base);
			}
			ch->tid = 100 + t;
			ch->seq = (uint32_t)c;
			ch->committed = k << 32 | used;
			fwrite(buf, 1, chunk, f);
		}
	}
}

/* The string table: four names, a module entry (this program, at a
 * made-up address), a stack entry of two frames inside it and the UUID;
 * ids gets each one's id. Returns the bytes used. */
static uint64_t fill_strtab(char *tab, uint64_t strtab, const char *const *names, const char *uuid, uint32_t *ids)
{
	struct {
		struct gspy_module_entry m;
		char path[16];
	} mod = { .m = { .type = GSPY_ENTRY_MODULE, .bias = 0x400000, .start = 0x401000, .end = 0x500000 },
		  .path = "/proc/self/exe" };
	struct {
		struct gspy_stack_entry s;
		uint64_t pc[2];
	} stk = { .s = { .type = GSPY_ENTRY_STACK, .native = 2 }, .pc = { 0x401234, 0x402345 } };
	const void *data[7] = { names[0], names[1], names[2], names[3], &mod, &stk, uuid };
	uint32_t lens[7] = { (uint32_t)strlen(names[0]), (uint32_t)strlen(names[1]), (uint32_t)strlen(names[2]),
			     (uint32_t)strlen(names[3]), (uint32_t)(sizeof(mod.m) + 14), (uint32_t)sizeof(stk),
			     (uint32_t)strlen(uuid) };
	uint64_t used = 0;
	for (int i = 0; i < 7; i++) {
		uint32_t len = lens[i];
		uint64_t need = (4 + len + 1 + 3) & ~3ull;
		if (used + need > strtab)
			break;
		memcpy(tab + used, &len, 4);
		memcpy(tab + used + 4, data[i], len);
		ids[i] = (uint32_t)used + 1;
		used += need;
	}
	return used;
}

int main(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	uint64_t n = strtoull(argv[2], NULL, 10);
	unsigned threads = (unsigned)atoi(argv[3]);
	uint64_t strtab = argc > 4 ? strtoull(argv[4], NULL, 10) : 4096;
	uint32_t chunk = argc > 5 ? (uint32_t)atoi(argv[5]) : 64u << 10;
	int hostile = argc > 10;
	const char *fmt = getenv("MKTRACE_FORMAT");
	int v2 = fmt && !strcmp(fmt, "2");
	uint64_t reserve = getenv("MKTRACE_RESERVE") ? strtoull(getenv("MKTRACE_RESERVE"), NULL, 10) : 0;
	if (!threads || chunk <= GSPY_CHUNK_HEADER_SIZE || chunk % GSPY_RECORD_SIZE)
		return 2;
	/* A running process's events are recent: a live view's window holds them. */
	uint64_t base0 = 2000000000ull;
	struct timespec now;
	if (hostile && clock_gettime(CLOCK_MONOTONIC, &now) == 0)
		base0 = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec - n * 1000 - 1000000;
	uint64_t per_chunk = (chunk - GSPY_CHUNK_HEADER_SIZE) / GSPY_RECORD_SIZE;
	uint64_t per_thread = (n + threads - 1) / threads;
	uint64_t chunks_per_thread = (per_thread + per_chunk - 1) / per_chunk;
	uint64_t nchunks = chunks_per_thread * threads;
	FILE *f = fopen(argv[1], "wb");
	if (!f)
		return 1;
	struct gspy_header h;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, GSPY_MAGIC, 8);
	h.version = v2 ? 2 : GSPY_FORMAT_VERSION;
	h.header_size = GSPY_HEADER_SIZE;
	h.record_size = GSPY_RECORD_SIZE;
	h.clock = GSPY_CLOCK_MONOTONIC;
	h.strtab_size = strtab;
	h.chunk_size = chunk;
	h.chunk_count = (uint32_t)(nchunks + reserve);
	h.chunk_offset = GSPY_HEADER_SIZE + (v2 ? strtab : 0);
	h.strtab_offset = v2 ? GSPY_HEADER_SIZE : h.chunk_offset + (nchunks + reserve) * chunk;
	h.file_size = GSPY_HEADER_SIZE + strtab + (nchunks + reserve) * chunk;
	h.pid = hostile ? (uint32_t)atoi(argv[6]) : 4242;
	h.ppid = 1;
	h.rank = -1;
	h.local_rank = -1;
	h.clock_start.raw = h.clock_start.mono = 1000000000ull;
	h.state = hostile ? GSPY_STATE_RUNNING : GSPY_STATE_EXITED;
	h.exit_code = -1; /* as exit() leaves it: the status is unknown there */
	h.chunks_claimed = (uint32_t)(nchunks + (reserve > 0));
	h.device_mem[0] = 80ull << 30;
	snprintf(h.host, sizeof(h.host), "synthetic");
	snprintf(h.command, sizeof(h.command), "mktrace %s", argv[2]);
	const char *names[] = { "sgemm_128x64_nn", "elementwise_add", "step", "fwd" };
	if (hostile) {
		snprintf(h.command, sizeof(h.command), "%s", argv[7]);
		names[0] = argv[8];
		names[3] = argv[9];
	}
	char *tab = calloc(1, strtab);
	uint32_t ids[7] = { 0 };
	h.strtab_used = fill_strtab(tab, strtab, names, hostile ? argv[10] : "", ids);
	char hdr[GSPY_HEADER_SIZE] = { 0 };
	memcpy(hdr, &h, sizeof(h));
	fwrite(hdr, 1, sizeof(hdr), f);
	if (v2)
		fwrite(tab, 1, strtab, f);
	char *buf = calloc(1, chunk);
	struct plan p = { .threads = threads, .chunk = chunk, .per_thread = per_thread,
			  .chunks_per_thread = chunks_per_thread, .base0 = base0, .hostile = hostile, .ids = ids };
	write_chunks(f, &p, buf);
	memset(buf, 0, chunk);
	for (uint64_t c = 0; c < reserve; c++)
		fwrite(buf, 1, chunk, f);
	if (!v2)
		fwrite(tab, 1, strtab, f);
	free(buf);
	free(tab);
	return fclose(f) ? 1 : 0;
}
