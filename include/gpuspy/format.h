/* SPDX-License-Identifier: MIT */
/*
 * gpuspy on-disk trace format (.gspy), shared by the preload library (the
 * writer) and the gpuspy command (the reader). This header is the single
 * description of the format: the event kinds, the intercepted APIs and the
 * record layout are each listed once here and every table in lib/ and tools/
 * is generated from these lists.
 *
 * File layout (all little-endian, offsets from the start of the file),
 * format 3:
 *
 *   [gspy_header, 4096 bytes]
 *   [chunk 0][chunk 1]...[chunk n-1]       at chunk_offset, each chunk_size bytes
 *   [string table, strtab_size bytes]      at strtab_offset, past the chunks;
 *                                          entries: u32 length, bytes, NUL,
 *                                          padded to 4; id = offset + 1
 *
 * The string table comes last so that a clean exit can cut the file to
 * what it holds: the chunks claimed, then the table's used bytes, moved
 * down to right after them (ids are offsets within the table: they do not
 * change), and a little room for strings interned after that. The header's
 * strtab_offset, strtab_size, chunk_count and file_size then say so
 * (file_size = strtab_offset + strtab_size; a process killed while the
 * trim writes them may leave the table ending before file_size). Format 2
 * had the table first:
 * [header][string table][chunks], file_size = the chunks' end; readers
 * read both.
 *
 * The string table holds names (kernels, phases) and two kinds of binary
 * entry, told apart by their first byte (a name never starts with 1 or 2):
 *
 *   stack   (GSPY_ENTRY_STACK):  struct gspy_stack_entry, then `native`
 *           u64 return addresses (innermost first), then `python` pairs of
 *           u32 (string id of "function (file)", line), innermost first.
 *           Stored once per distinct stack; records refer to it by id.
 *   module  (GSPY_ENTRY_MODULE): struct gspy_module_entry, then the path
 *           (NUL-terminated). A loaded object whose code a stack touched;
 *           an address maps to the latest module entry covering it. Its
 *           build id lets the reader refuse a file that changed since.
 *
 * A chunk belongs to one thread: a gspy_chunk header followed by packed
 * records (gspy_pack below: each record coded against the previous one of
 * the same chunk, 10-20 bytes for a launch or a GPU kernel instead of the
 * 64 of struct gspy_record). Writers append a record, then store-release
 * the chunk's `committed` word (records << 32 | bytes); readers load-acquire
 * it and decode only the bytes below it. Every chunk decodes on its own. A
 * chunk whose `tid` is still 0 was claimed but never initialised and is
 * skipped.
 */
#ifndef GPUSPY_FORMAT_H
#define GPUSPY_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h> /* gspy_pack compares two fields at a time */
#endif

#define GSPY_MAGIC "GPUSPY\x01\x00" /* 8 bytes, NUL-terminated by C */
#define GSPY_FORMAT_VERSION 3u /* 2: the string table before the chunks */
#define GSPY_HEADER_SIZE 4096u
#define GSPY_RECORD_SIZE 64u
#define GSPY_CHUNK_HEADER_SIZE 64u
/* Devices a trace describes one by one (ordinals 0..7): header.device_mem
 * and the report's per-device tables; work on a higher ordinal is counted
 * but not given a row. */
#define GSPY_DEVICES 8
#define GSPY_BUFFER_MB_MAX (1u << 20) /* the most GPUSPY_BUFFER_MB may reserve: 1 TiB */
#define GSPY_NOTES_SIZE 1024u /* header.notes: gpuspy's own messages, bytes */

/* Event kinds: X(name). The names are what `gpuspy dump` writes. */
#define GSPY_KIND_LIST(X)                                                    \
	X(none)   /* internal, never written */                              \
	X(alloc)                                                             \
	X(free)                                                              \
	X(copy)                                                              \
	X(memset)                                                            \
	X(launch)                                                            \
	X(sync)                                                              \
	X(map)    /* VMM: physical memory mapped at an address */            \
	X(unmap)                                                             \
	X(phase_begin) /* a named phase starts (name_id), process-wide */   \
	X(phase_end)   /* the innermost open phase of that name ends */     \
	X(mark)        /* an instant with a name */                        \
	X(gpu_kernel)  /* GPU side (CUPTI): a kernel ran from start to end */ \
	X(gpu_copy)    /* GPU side: a copy */                                \
	X(gpu_memset)  /* GPU side: a memset */                              \
	X(gpu_span)    /* GPU side without CUPTI (GPUSPY_CUPTI=events): one  \
			* phase interval on one stream, u.span.gpu_ns */  \
	X(owner)       /* never an event: a chunk left by a thread that      \
			* exited goes on for thread u.mem.bytes from here */ \
	X(graph)       /* a CUDA graph instantiated, or an executable graph  \
			* updated: stream = the executable graph, u.mem.addr \
			* = the graph, u.mem.bytes = the node records that   \
			* follow it on this thread (what each launch runs) */ \
	X(node_kernel) /* a kernel node of that graph (name, dims) */       \
	X(node_copy)   /* a copy node (bytes, dir, host side's mem) */      \
	X(node_memset) /* a memset node (bytes) */                          \
	X(node_alloc)  /* a memory allocation node (bytes, address) */      \
	X(node_free)   /* a memory free node (address; bytes of the graph's \
			* allocation node there, else 0) */               \
	X(nvml)        /* a device's telemetry, sampled through NVML (NVML  \
			* sample below): start = when, end = read done */

enum gspy_kind {
#define GSPY_X(n) GSPY_KIND_##n,
	GSPY_KIND_LIST(GSPY_X)
#undef GSPY_X
	GSPY_KIND_COUNT
};

/* Memory kinds: allocations (`mem`) and the host side of copies
 * (`host_mem`). */
#define GSPY_MEM_LIST(X) X(unknown) X(device) X(pinned) X(managed) X(host) X(pageable)
enum gspy_mem {
#define GSPY_X(n) GSPY_MEM_##n,
	GSPY_MEM_LIST(GSPY_X)
#undef GSPY_X
	GSPY_MEM_COUNT
};

/* Copy directions. */
#define GSPY_DIR_LIST(X) X(unknown) X(h2d) X(d2h) X(d2d) X(p2p) X(h2h)
enum gspy_dir {
#define GSPY_X(n) GSPY_DIR_##n,
	GSPY_DIR_LIST(GSPY_X)
#undef GSPY_X
	GSPY_DIR_COUNT
};

/* Every intercepted entry point (GSPY_API_LIST): the api ids of records. */
#include "apis.h"

enum gspy_api {
#define GSPY_X(sym, kind, ver) GSPY_API_##sym,
	GSPY_API_LIST(GSPY_X)
#undef GSPY_X
	GSPY_API_COUNT
};

/* Launches that run no kernel of their own: a record of one keeps the
 * graph exec or host function in u.mem.addr (grid 0). */
static inline int gspy_api_graph_launch(unsigned api)
{
	return api == GSPY_API_cuGraphLaunch || api == GSPY_API_cuGraphLaunch_ptsz ||
	       api == GSPY_API_cudaGraphLaunch || api == GSPY_API_cudaGraphLaunch_ptsz;
}

static inline int gspy_api_host_func(unsigned api)
{
	return api == GSPY_API_cuLaunchHostFunc || api == GSPY_API_cuLaunchHostFunc_ptsz ||
	       api == GSPY_API_cudaLaunchHostFunc || api == GSPY_API_cudaLaunchHostFunc_ptsz;
}

/* A mark gpuspy writes at a thread's first call that failed with a
 * sticky error: at the start of the thread's last launch before it, with
 * that launch's Python frames as its stack (the launch line of a kernel
 * that faulted, which no launch keeps by default). */
#define GSPY_MARK_FAULT_SITE "gpuspy: the launch before the fault"

/* Clock of the raw timestamps in records. */
enum gspy_clock {
	GSPY_CLOCK_MONOTONIC = 0, /* raw value is CLOCK_MONOTONIC ns */
	GSPY_CLOCK_TSC = 1        /* raw value is rdtsc ticks, see header pairs */
};

/* Process state, header.state. */
enum gspy_state {
	GSPY_STATE_RUNNING = 0, /* still running, or killed without warning */
	GSPY_STATE_EXITED = 1,  /* ran its exit handlers */
	GSPY_STATE_SIGNALED = 2 /* died of header.exit_signal */
};

/* A GPU record's result: it started and never ended (a kernel that
 * tripped a device-side assert, or still running at exit); its end is its
 * start. Other GPU records' result is 0. */
#define GSPY_GPU_UNFINISHED 1

/* A host call's result that leaves its context's error sticky: a kernel
 * faulted (a device-side assert, an illegal address, ...) and every later
 * call fails with it. The driver's and the runtime's numbers are the same:
 * 700, 702 and 710, 714 to 719. */
static inline int gspy_result_sticky(int32_t result)
{
	return result == 700 || result == 702 || result == 710 || (result >= 714 && result <= 719);
}

/* Where GPU-side times come from, header.gpu_timing. */
#define GSPY_GPU_TIMING_LIST(X) X(none) X(cupti) X(unavailable) X(in_use) X(failed) X(events)
enum gspy_gpu_timing {
#define GSPY_X(n) GSPY_GPU_TIMING_##n,
	GSPY_GPU_TIMING_LIST(GSPY_X)
#undef GSPY_X
	GSPY_GPU_TIMING_COUNT
};

/* header.nvml_state. */
#define GSPY_NVML_STATE_LIST(X) X(off) X(on) X(unavailable)
enum gspy_nvml_state {
#define GSPY_X(n) GSPY_NVML_##n,
	GSPY_NVML_STATE_LIST(GSPY_X)
#undef GSPY_X
};

/* header.ctl_want: what `gpuspy start`/`record` and `stop` ask for. */
enum gspy_ctl { GSPY_CTL_none, GSPY_CTL_record, GSPY_CTL_pause };

/* header.stacks. */
#define GSPY_STACKS_NATIVE 0x1u /* libunwind call stacks */
#define GSPY_STACKS_PYTHON 0x2u /* Python frames of calls made holding the GIL */
#define GSPY_STACKS_ALL 0x4u    /* memsets and copies that are not pageable too */

/* Record flags. */
#define GSPY_FLAG_RESERVED 0x01u
#define GSPY_FLAG_ASYNC 0x02u  /* stream-ordered call (returns before done) */
#define GSPY_FLAG_ENRICHED 0x04u /* a nested driver call filled in details */
#define GSPY_FLAG_STEP 0x08u   /* phase event: u.mem.bytes holds the step number */
#define GSPY_FLAG_CORR 0x10u   /* host call carries CUPTI's correlation id of the
				* driver call it made (u.launch.cupti_corr or u.mem.aux) */
#define GSPY_FLAG_CAPTURED 0x20u /* made on a stream being captured into a graph:
				  * it did not run (it runs as the graph's node) */
#define GSPY_FLAG_WINDOW 0x40u /* phase event written as recording resumed, after
				* its "(resumed)" mark: the phase began or ended
				* while recording was paused */

/*
 * One event, 64 bytes. Timestamps are raw values of header.clock; readers
 * convert them with gspy_header's clock pairs.
 */
struct gspy_record {
	uint64_t start;  /* raw clock at entry */
	uint64_t end;    /* raw clock at return */
	uint64_t stream; /* CUstream/cudaStream_t handle value, 0 = default;
			  * cuMemMap: the physical allocation handle */
	union {
		struct {
			uint64_t bytes; /* bytes allocated, freed, copied, set */
			uint64_t addr;  /* allocations: the address; copies: the
					 * host-side address of h2d/d2h/h2h (the
					 * source of h2h), else the destination */
			uint32_t aux;   /* copies, memsets: CUPTI correlation id
					 * (GSPY_FLAG_CORR) */
		} __attribute__((packed)) mem;
		struct {
			uint32_t grid_x;
			uint16_t grid_yz[2]; /* CUDA caps gridDim.y and .z at 65535 */
			uint16_t block[3];
			uint16_t pad;
			uint32_t cupti_corr; /* with GSPY_FLAG_CORR */
		} launch;
		struct {
			uint64_t bytes;      /* copies and memsets */
			uint32_t graph_id;   /* kernels launched by a graph, else 0 */
			uint32_t cupti_corr; /* CUPTI's correlation id of the launching call */
			uint32_t pad;
		} __attribute__((packed)) gpu;
		struct {
			uint64_t gpu_ns; /* gpu_span: GPU time between the interval's
					  * start and end events on its stream */
			uint32_t pad[3];
		} __attribute__((packed)) span;
		uint32_t nvml[5]; /* nvml: see struct gspy_nvml */
	} u;
	uint32_t stack_id; /* string table id of the call stack, 0 = none */
	int32_t result;   /* CUresult or cudaError_t as returned */
	uint32_t name_id; /* string table id of the kernel name, 0 = none */
	uint16_t api;     /* enum gspy_api */
	uint8_t kind;     /* enum gspy_kind */
	uint8_t dir;      /* enum gspy_dir (copies) */
	uint8_t mem;      /* enum gspy_mem: allocation kind, or host side of copy */
	uint8_t flags;    /* GSPY_FLAG_* */
	int16_t device;   /* device ordinal, -1 unknown */
};

_Static_assert(sizeof(struct gspy_record) == GSPY_RECORD_SIZE, "a record is 64 bytes");

/*
 * An NVML sample (kind nvml), decoded. The record's device is the CUDA
 * ordinal, name_id the device's UUID ("GPU-..."), and its fields hold:
 *
 *   stream      clock event (throttle) reasons (low 32) | MiB that other
 *               processes hold on the device (high 32)
 *   u.nvml[0]   power draw in 0.1 W (low 16) | enforced limit in W (high 16)
 *   u.nvml[1]   memory used, MiB
 *   u.nvml[2]   SM clock | its max, MHz (16 each)
 *   u.nvml[3]   memory clock | its max, MHz
 *   u.nvml[4]   PCIe TX | RX throughput, MB/s
 *   result      utilization gpu % | memory % << 8 | temperature C << 16 |
 *               PCIe generation << 24 | its max << 28
 *   dir, mem    PCIe link width, its max
 *
 * A value NVML could not give reads GSPY_NVML_NA (all ones in its bits;
 * 0 for clocks, generations and widths, which are never 0).
 */
#define GSPY_NVML_NA 0xffffffffu
/* The sample's fields, by the names `gpuspy dump` gives them. */
#define GSPY_NVML_FIELDS(X)                                                  \
	X(util_gpu) X(util_mem) X(used_mib) X(other_mib) X(power_dw)        \
	X(limit_w) X(sm_mhz) X(sm_max_mhz) X(mem_mhz) X(mem_max_mhz)        \
	X(reasons) X(temp_c) X(tx_mbs) X(rx_mbs) X(gen) X(gen_max) X(width) \
	X(width_max)
struct gspy_nvml {
#define GSPY_X(f) uint32_t f;
	GSPY_NVML_FIELDS(GSPY_X)
#undef GSPY_X
};

/* Clock event reasons (nvmlClocksEventReason*), as NVML numbers them. */
#define GSPY_NVML_REASON_LIST(X)                                             \
	X(0x1, gpu_idle, "GPU idle")                                         \
	X(0x2, app_clocks, "application clocks setting")                     \
	X(0x4, sw_power_cap, "software power cap")                           \
	X(0x8, hw_slowdown, "hardware slowdown")                             \
	X(0x10, sync_boost, "sync boost")                                    \
	X(0x20, sw_thermal, "software thermal slowdown")                     \
	X(0x40, hw_thermal, "hardware thermal slowdown")                     \
	X(0x80, hw_power_brake, "hardware power brake")                      \
	X(0x100, display_clocks, "display clock setting")

static inline uint32_t gspy_nvml_field(uint32_t v, uint32_t bits)
{
	uint32_t na = bits == 32 ? GSPY_NVML_NA : (1u << bits) - 1;
	return v == GSPY_NVML_NA || v > na ? na : v;
}

static inline void gspy_nvml_put(struct gspy_record *r, const struct gspy_nvml *s)
{
#define F gspy_nvml_field
	r->stream = (uint64_t)s->reasons | (uint64_t)s->other_mib << 32;
	r->u.nvml[0] = F(s->power_dw, 16) | F(s->limit_w, 16) << 16;
	r->u.nvml[1] = s->used_mib;
	r->u.nvml[2] = (s->sm_mhz & 0xffff) | (s->sm_max_mhz & 0xffff) << 16;
	r->u.nvml[3] = (s->mem_mhz & 0xffff) | (s->mem_max_mhz & 0xffff) << 16;
	r->u.nvml[4] = F(s->tx_mbs, 16) | F(s->rx_mbs, 16) << 16;
	r->result = (int32_t)(F(s->util_gpu, 8) | F(s->util_mem, 8) << 8 | F(s->temp_c, 8) << 16 |
			      (s->gen & 0xf) << 24 | (s->gen_max & 0xf) << 28);
	r->dir = (uint8_t)s->width;
	r->mem = (uint8_t)s->width_max;
#undef F
}

static inline void gspy_nvml_get(const struct gspy_record *r, struct gspy_nvml *s)
{
#define W(v, bits) (((v) & ((1u << (bits)) - 1)) == (1u << (bits)) - 1 ? GSPY_NVML_NA : (v) & ((1u << (bits)) - 1))
	uint32_t res = (uint32_t)r->result;
	s->reasons = (uint32_t)r->stream;
	s->other_mib = (uint32_t)(r->stream >> 32);
	s->power_dw = W(r->u.nvml[0], 16);
	s->limit_w = W(r->u.nvml[0] >> 16, 16);
	s->used_mib = r->u.nvml[1];
	s->sm_mhz = r->u.nvml[2] & 0xffff;
	s->sm_max_mhz = r->u.nvml[2] >> 16;
	s->mem_mhz = r->u.nvml[3] & 0xffff;
	s->mem_max_mhz = r->u.nvml[3] >> 16;
	s->tx_mbs = W(r->u.nvml[4], 16);
	s->rx_mbs = W(r->u.nvml[4] >> 16, 16);
	s->util_gpu = W(res, 8);
	s->util_mem = W(res >> 8, 8);
	s->temp_c = W(res >> 16, 8);
	s->gen = res >> 24 & 0xf;
	s->gen_max = res >> 28;
	s->width = r->dir;
	s->width_max = r->mem;
#undef W
}

/* A graph's record or one of its nodes' (their stream field is the
 * executable graph). */
static inline int gspy_kind_graph(unsigned kind)
{
	return kind >= GSPY_KIND_graph && kind <= GSPY_KIND_node_free;
}

/* What a record's stream field holds, by kind, as the dump and the
 * timeline name it: a map's physical allocation handle, else the stream. */
static inline const char *gspy_stream_name(unsigned kind)
{
	if (kind == GSPY_KIND_map)
		return "handle";
	return kind >= GSPY_KIND_graph && kind <= GSPY_KIND_node_free ? "graph" : "stream";
}

/* Binary string-table entries (see the file layout above). */
#define GSPY_ENTRY_STACK 1u
#define GSPY_ENTRY_MODULE 2u
#define GSPY_STACK_MAX 64u /* native frames, and Python frames, at most */

struct gspy_stack_entry {
	uint8_t type;   /* GSPY_ENTRY_STACK */
	uint8_t native; /* native frames */
	uint8_t python; /* Python frames */
	uint8_t pad[5];
};

struct gspy_module_entry {
	uint8_t type;  /* GSPY_ENTRY_MODULE */
	uint8_t build_id_len; /* bytes of build_id used, 0 = none */
	uint8_t pad[6];
	uint64_t bias; /* load bias: file virtual address + bias = address */
	uint64_t start, end; /* the executable mapping's address range */
	uint8_t build_id[24]; /* NT_GNU_BUILD_ID: the reader checks the file */
};

/* Per-thread chunk header, 64 bytes, followed by records. */
struct gspy_chunk {
	uint32_t tid;       /* kernel thread id; written last (release) */
	uint32_t seq;       /* this thread's chunk number, 0, 1, ... */
	uint64_t committed; /* records << 32 | bytes of packed records (release-stored) */
	uint64_t dropped;   /* events dropped by this thread after this chunk */
	uint64_t claim;     /* the claim number that handed it out (flight recorder) */
	uint64_t reserved[4];
};

/*
 * Packed records. A record is coded against `prev`, the previous record of
 * the same chunk (all zero at the chunk's start):
 *
 *   u8 kind, varint mask, then for each bit set in mask, in bit order:
 *     0 api                         varint
 *     1 flags | dir << 8 | mem << 16 | own << 24   varint
 *     2 device                      zigzag varint
 *     3 result                      zigzag varint
 *     4 start                       zigzag varint of start - prev.start
 *     5 end - start                 zigzag varint
 *     6 stream                      varint
 *     7..11 the union's five u32 words, each as the zigzag varint of
 *           word - prev.word (mod 2^32)
 *     12 stack_id                   varint
 *     13 name_id                    varint
 *
 * A field whose bit is clear equals prev's (for 5: the same duration). Varints
 * are little-endian base 128; zigzag maps signed to unsigned (0,-1,1,-2...).
 *
 * `own` is gpuspy's own time after the call ended, before it returned to
 * the program: the call stack it walked, in raw clock units (at most
 * GSPY_OWN_MAX; 0: none taken). It is not a field of struct gspy_record
 * (gspy_pack and gspy_unpack take it beside the record); readers that
 * predate it keep the low 24 bits and read the record as before.
 */
#define GSPY_OWN_MAX ((1ull << 40) - 1)
#define GSPY_PACKED_MAX 96u /* bytes one packed record may take, at most */

static inline uint8_t *gspy_put_varint(uint8_t *p, uint64_t v)
{
	if (v < 0x80) { /* most fields: a flag, a small id, a step */
		*p = (uint8_t)v;
		return p + 1;
	}
	do {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	} while (v >= 0x80);
	*p++ = (uint8_t)v;
	return p;
}

static inline uint64_t gspy_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t gspy_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* The packing base: the previous record of the chunk, as the fourteen
 * field values gspy_pack compares (fields 7..11 as raw words, 4 as the raw
 * start, the others coded); all zero at a chunk's start, like a zero
 * record. */
#define GSPY_PACK_FIELDS 14
#define GSPY_PACK_DELTAS (1u << 4 | 0x1fu << 7) /* fields coded as a step from the base's */
struct gspy_pack_base {
	uint64_t f[GSPY_PACK_FIELDS];
};

/* Writes r, with gpuspy's own time after it, at out (GSPY_PACKED_MAX bytes
 * available); returns the bytes used and makes *base r's. The encoder
 * runs on every intercepted call, usually with its code out of the
 * instruction cache, so it is kept small:
 * every field's value first, one loop for the mask (two fields a step
 * with SSE2), one over the fields it names (a varint written inline per
 * field was ~1 KiB of code, and the fourteen compares unrolled took more
 * code lines for fewer instructions than this loop). */
static inline size_t gspy_pack(uint8_t *out, const struct gspy_record *r, uint64_t own, struct gspy_pack_base *base)
{
	uint64_t f[GSPY_PACK_FIELDS];
	uint32_t w[5];
	memcpy(w, &r->u, sizeof(w));
	f[0] = r->api;
	f[1] = r->flags | (uint32_t)r->dir << 8 | (uint32_t)r->mem << 16 | (own < GSPY_OWN_MAX ? own : GSPY_OWN_MAX) << 24;
	f[2] = gspy_zigzag(r->device);
	f[3] = gspy_zigzag(r->result);
	f[4] = r->start;
	f[5] = gspy_zigzag((int64_t)(r->end - r->start));
	f[6] = r->stream;
	for (int i = 0; i < 5; i++)
		f[7 + i] = w[i];
	f[12] = r->stack_id;
	f[13] = r->name_id;
	uint32_t mask = 0;
#ifdef __SSE2__
	/* Two fields a step: a 64-bit lane is equal when both its halves are. */
	for (int i = 0; i < GSPY_PACK_FIELDS; i += 2) {
		__m128i e = _mm_cmpeq_epi32(_mm_loadu_si128((const __m128i *)(const void *)&f[i]),
					    _mm_loadu_si128((const __m128i *)(const void *)&base->f[i]));
		e = _mm_and_si128(e, _mm_shuffle_epi32(e, _MM_SHUFFLE(2, 3, 0, 1)));
		mask |= (uint32_t)_mm_movemask_pd(_mm_castsi128_pd(e)) << i;
	}
	mask ^= (1u << GSPY_PACK_FIELDS) - 1;
#else
	for (int i = 0; i < GSPY_PACK_FIELDS; i++)
		mask |= (uint32_t)(f[i] != base->f[i]) << i;
#endif
	uint8_t *p = out;
	*p++ = r->kind;
	p = gspy_put_varint(p, mask);
	for (uint32_t m = mask; m; m &= m - 1) {
		int i = __builtin_ctz(m);
		uint64_t v = f[i];
		if ((1u << i) & GSPY_PACK_DELTAS) {
			uint64_t d = v - base->f[i];
			v = i == 4 ? gspy_zigzag((int64_t)d) : gspy_zigzag((int32_t)(uint32_t)d);
		}
		base->f[i] = f[i];
		p = gspy_put_varint(p, v);
	}
	return (size_t)(p - out);
}

/* Reads a varint from [*p, end); 0 when cut short or longer than 10 bytes. */
static inline int gspy_get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t x = 0;
	for (int shift = 0; shift < 70 && *p < end; shift += 7) {
		uint8_t b = *(*p)++;
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 1;
		}
	}
	return 0;
}

/* Decodes one record from [p, end) into *r and gpuspy's own time after it
 * into *own, which hold the previous record's on entry (all zero at a
 * chunk's start). Returns the bytes used, 0 when the bytes are malformed,
 * cut short or of kind none (then *r and *own are unspecified). */
static inline size_t gspy_unpack(const uint8_t *p, const uint8_t *end, struct gspy_record *r, uint64_t *own)
{
	const uint8_t *s = p;
	uint64_t mask, v;
	uint32_t w[5];
	/* Kind 0 (none) is never written: zero bytes, a chunk's unwritten
	 * rest or a sparse file's hole, end the records there. */
	if (p >= end || !*p)
		return 0;
	uint64_t dur = r->end - r->start;
	memcpy(w, &r->u, sizeof(w));
	r->kind = *p++;
	if (!gspy_get_varint(&p, end, &mask) || mask >> 14)
		return 0;
#define GSPY_FIELD(bit, expr) \
	if (mask & (1u << (bit))) { \
		if (!gspy_get_varint(&p, end, &v)) \
			return 0; \
		expr; \
	}
	GSPY_FIELD(0, r->api = (uint16_t)v)
	GSPY_FIELD(1, (r->flags = (uint8_t)v, r->dir = (uint8_t)(v >> 8), r->mem = (uint8_t)(v >> 16), *own = v >> 24))
	GSPY_FIELD(2, r->device = (int16_t)gspy_unzigzag(v))
	GSPY_FIELD(3, r->result = (int32_t)gspy_unzigzag(v))
	GSPY_FIELD(4, r->start += (uint64_t)gspy_unzigzag(v))
	GSPY_FIELD(5, dur = (uint64_t)gspy_unzigzag(v))
	GSPY_FIELD(6, r->stream = v)
	for (int i = 0; i < 5; i++)
		GSPY_FIELD(7 + i, w[i] += (uint32_t)gspy_unzigzag(v))
	GSPY_FIELD(12, r->stack_id = (uint32_t)v)
	GSPY_FIELD(13, r->name_id = (uint32_t)v)
#undef GSPY_FIELD
	r->end = r->start + dur;
	memcpy(&r->u, w, sizeof(w));
	return (size_t)(p - s);
}

struct gspy_clock_pair {
	uint64_t raw;  /* raw clock value */
	uint64_t mono; /* CLOCK_MONOTONIC ns at the same instant */
};

/* File header, padded to GSPY_HEADER_SIZE. */
struct gspy_header {
	char magic[8];
	uint32_t version;     /* GSPY_FORMAT_VERSION */
	uint32_t header_size; /* GSPY_HEADER_SIZE */
	uint32_t record_size; /* GSPY_RECORD_SIZE */
	uint32_t clock;       /* enum gspy_clock */
	uint64_t file_size;
	uint64_t strtab_offset;
	uint64_t strtab_size;
	uint64_t chunk_offset;
	uint32_t chunk_size;  /* bytes, header included */
	uint32_t chunk_count; /* chunks available in the file */
	uint32_t pid;
	uint32_t ppid;
	int32_t rank;       /* $RANK, -1 if unset */
	int32_t local_rank; /* $LOCAL_RANK, -1 if unset */
	uint64_t real_start_ns; /* CLOCK_REALTIME at start */
	struct gspy_clock_pair clock_start; /* pair at start */
	double tsc_hz;                      /* calibrated at start (TSC clock) */
	uint64_t clock_seq;                 /* even: clock_last is stable */
	struct gspy_clock_pair clock_last;  /* latest pair, refreshed */
	/* Updated while running (atomically). */
	uint32_t chunks_claimed;  /* may exceed chunk_count: those are drops */
	uint32_t state;           /* enum gspy_state */
	int32_t exit_signal;
	int32_t exit_code;        /* _exit's status (0..255); -1 at exit(), which does not know it */
	uint64_t strtab_used;     /* bytes of string table committed */
	uint64_t dropped_nochunk; /* events dropped by threads with no chunk */
	uint64_t device_mem[GSPY_DEVICES]; /* total memory of devices 0..7 seen, 0 unknown */
	uint32_t gpu_timing;      /* enum gspy_gpu_timing */
	uint32_t ring;            /* 1: flight recorder, chunks are reused oldest first */
	uint64_t overwritten;     /* flight recorder: committed events overwritten */
	uint32_t stacks;          /* GSPY_STACKS_* bits: what carries stacks */
	uint32_t stack_launch_every; /* launches: 1 in N has a stack, 0 none */
	uint64_t host_alloc_min;  /* host allocations recorded from this size, 0 off */
	uint64_t buffer_bytes;    /* chunk bytes reserved at start (GPUSPY_BUFFER_MB);
				   * a clean exit cuts the file to the chunks used */
	char host[64];
	char command[1024]; /* argv joined by spaces, truncated */
	/* gpuspy's own cost, updated while running (atomically). Last, so a
	 * file written before they existed reads 0: not measured. */
	uint64_t stacks_taken; /* call stacks walked */
	uint64_t stacks_time;  /* time spent walking and storing them, in `clock` units */
	/* GPUSPY_STACK_MIN: copies that are not pageable, memsets, waits and
	 * sampled launches shorter than this carry no stack; 0: all do. */
	uint64_t stack_min_ns;
	/* Chunks that threads which exited had left part used, taken over by
	 * new threads (each begins its part with an owner record, which is
	 * not an event); and events not recorded because they came after
	 * gpuspy's destructor cut the file (not the buffer being full). */
	uint64_t chunks_reused;
	uint64_t dropped_after_exit;
	uint32_t threads_seen; /* threads that recorded (chunks are handed on: fewer owners) */
	/* Waits (a host that stops for the GPU) shorter than this carry no
	 * stack: GPUSPY_STACK_MIN, or 10 us by default; 0: all do. */
	uint64_t wait_stack_min_ns;
	/* Telemetry (GPUSPY_NVML_MS): the period, 0 off; how it went (enum
	 * gspy_nvml_state); per device, the pid of the process that samples it
	 * (one per device: this one, or the one that held it first), 0 none. */
	uint32_t nvml_ms;
	uint32_t nvml_state;
	int32_t nvml_sampler[GSPY_DEVICES];
	/* On demand (`gpuspy start`, `stop`, `record PID --for`): the tool
	 * writes ctl_want and ctl_for_ns, then bumps ctl_seq and wakes the
	 * futex on it; the process applies the request, sets ctl_paused
	 * and then ctl_done to that ctl_seq. */
	uint32_t ctl_seq;
	uint32_t ctl_want;       /* enum gspy_ctl */
	uint64_t ctl_for_ns;     /* the window ends this long after it starts; 0 never */
	uint32_t ctl_done;       /* the last ctl_seq applied */
	uint32_t ctl_paused;     /* 1 paused (any of the three ways), 0 recording: as older files read */
	uint32_t start_paused;   /* GPUSPY_START=paused */
	uint32_t windows;        /* times recording resumed */
	/* NVTX push/pop ranges not recorded because they opened deeper than
	 * gpuspy follows a thread's ranges (4096 levels, or fewer when memory
	 * ran out); each range recorded still has its own end. */
	uint64_t nvtx_too_deep;
	/* Host allocations (GPUSPY_HOST_ALLOC_MIN) made before the file
	 * existed and never written: their thread ended before its first
	 * record, or more were live at once than gpuspy keeps (4096). Counted
	 * at exit; not events dropped for want of room (before this field
	 * they were counted in dropped_nochunk). */
	uint64_t host_unwritten;
	/* The CPUs the process could run on when the file was made (its
	 * affinity: taskset, a cgroup's cpuset); 0 in older traces. The
	 * report's replay of loader workers divides the data phase by them. */
	uint32_t cpus;
	/* gpuspy's own messages (what it once wrote on the program's stderr:
	 * an option it could not read, CUPTI missing, a thread it could not
	 * start), one line each ending in '\n', in the order they were made;
	 * those made before the file existed first. A writer claims its
	 * line's bytes by advancing notes_used (compare-and-swap, never past
	 * GSPY_NOTES_SIZE) and then writes them: a reader of a live file may
	 * find claimed bytes still 0, and skips them. A line that does not fit
	 * is counted in notes_lost. Untrusted bytes, like the command line:
	 * readers bound them by notes_used clamped to the area and escape them
	 * for their output. Zero in traces from before the notes. */
	uint32_t notes_used;
	uint32_t notes_lost;
	char notes[GSPY_NOTES_SIZE];
};

_Static_assert(sizeof(struct gspy_chunk) == GSPY_CHUNK_HEADER_SIZE, "a chunk header is 64 bytes");
_Static_assert(sizeof(struct gspy_header) <= GSPY_HEADER_SIZE, "the header fits its page");
/* Where older readers and tests (tests/test_hostile.py) find the notes. */
_Static_assert(offsetof(struct gspy_header, notes_used) == 1508 && offsetof(struct gspy_header, notes) == 1516,
	       "the notes follow cpus");

#endif /* GPUSPY_FORMAT_H */
