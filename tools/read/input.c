/* SPDX-License-Identifier: MIT */
/*
 * Event sources for the report and the export: .gspy files and their JSON
 * Lines dumps, decoded into the same struct gs_ev.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "read/input.h"

static int lookup(const char *s, const char *(*name)(unsigned), unsigned n)
{
	if (!s)
		return -1;
	for (unsigned i = 0; i < n; i++)
		if (!strcmp(name(i), s))
			return (int)i;
	return -1;
}

int gs_kind_from_name(const char *s) { return lookup(s, gs_kind_name, GSPY_KIND_COUNT); }
int gs_dir_from_name(const char *s) { return lookup(s, gs_dir_name, GSPY_DIR_COUNT); }
int gs_mem_from_name(const char *s) { return lookup(s, gs_mem_name, GSPY_MEM_COUNT); }

/* API names by hash: JSON Lines inputs look one up per event. */
#define API_HASH 512
static int api_hash[API_HASH];

static unsigned hash(const char *s)
{
	unsigned h = 2166136261u;
	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

static void api_hash_fill(void)
{
	for (unsigned i = 0; i < API_HASH; i++)
		api_hash[i] = -1;
	for (unsigned i = 0; i < GSPY_API_COUNT; i++) {
		unsigned h = hash(gs_api_name(i)) & (API_HASH - 1);
		while (api_hash[h] >= 0)
			h = (h + 1) & (API_HASH - 1);
		api_hash[h] = (int)i;
	}
}

int gs_api_from_name(const char *s)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT; /* reports are read on several threads */
	if (!s)
		return -1;
	pthread_once(&once, api_hash_fill);
	for (unsigned h = hash(s) & (API_HASH - 1); api_hash[h] >= 0; h = (h + 1) & (API_HASH - 1))
		if (!strcmp(gs_api_name((unsigned)api_hash[h]), s))
			return api_hash[h];
	return -1;
}

static void proc_from_trace(struct gs_input *in)
{
	const struct gs_trace *t = &in->trace;
	const struct gspy_header *h = t->h;
	struct gs_proc *p = &in->proc;
	p->pid = h->pid;
	p->ppid = h->ppid;
	p->rank = h->rank;
	p->local_rank = h->local_rank;
	memcpy(p->host, h->host, sizeof(h->host));
	memcpy(p->command, h->command, sizeof(h->command));
	p->events = t->events;
	p->dropped = t->dropped;
	p->overwritten = h->overwritten;
	p->dropped_after_exit = h->dropped_after_exit;
	p->chunks_reused = h->chunks_reused;
	p->nvtx_too_deep = h->nvtx_too_deep;
	p->host_unwritten = h->host_unwritten;
	p->cpus = h->cpus;
	p->stacks_taken = h->stacks_taken;
	p->stacks_ns = gs_trace_stack_ns(t);
	p->stack_min_ns = h->stack_min_ns;
	p->wait_stack_min_ns = h->wait_stack_min_ns;
	p->nvml_ms = h->nvml_ms;
	p->nvml_state = h->nvml_state < 3 ? h->nvml_state : 0;
	for (int d = 0; d < GSPY_DEVICES; d++)
		p->nvml_sampler[d] = h->nvml_sampler[d];
	p->state = h->state;
	p->exit_signal = h->exit_signal;
	/* Format 3 writes -1 at exit(), the status at _exit (0..255). */
	p->exit_code = h->state == GSPY_STATE_EXITED && h->version >= 3 && h->exit_code >= 0 && h->exit_code <= 255
			       ? h->exit_code : -1;
	p->truncated = t->truncated;
	p->start_ns = h->clock_start.mono;
	memcpy(p->device_mem, h->device_mem, sizeof(p->device_mem));
	p->gpu_timing = h->gpu_timing;
	p->start_paused = h->start_paused != 0;
	p->windows = h->windows;
	gs_header_notes(h, p->notes, sizeof(p->notes));
	p->notes_lost = h->notes_lost;
}

/* A dump's "notes" (strings, one a line) into p->notes; those that do not
 * fit count as lost, as in the header they came from. */
static void notes_from_json(const cJSON *o, struct gs_proc *p)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "notes"), *x;
	size_t k = 0;
	if (!cJSON_IsArray(a))
		a = NULL;
	cJSON_ArrayForEach(x, a) {
		const char *s = cJSON_IsString(x) ? x->valuestring : NULL;
		size_t n = s ? strlen(s) : 0;
		if (!n)
			continue;
		if (k + n + 1 >= sizeof(p->notes)) {
			p->notes_lost++;
			continue;
		}
		for (size_t i = 0; i < n; i++)
			p->notes[k++] = s[i] == '\n' ? ' ' : s[i];
		p->notes[k++] = '\n';
	}
	p->notes[k] = 0;
}

/* The longest line read. The longest `gpuspy dump` writes is a stack
 * line: 128 frames (64 native, 64 Python) of at most 4 KiB, each byte at
 * worst escaped as \u00NN, about 3 MiB. A longer one is no dump's, and
 * reading it whole would take memory without bound (a file of one '{' and
 * 8 GB of zeros). */
#define LINE_MAX_BYTES (4u << 20)

static int line_error(struct gs_input *in, const char *why)
{
	snprintf(in->err, sizeof(in->err), "line %llu %s", (unsigned long long)in->lineno + 1, why);
	in->error = 1;
	return -1;
}

/* Reads one line into in->line (NUL-terminated; bytes after a NUL in it
 * are kept but not parsed); 1 = got one, 0 = end of file, -1 = a line too
 * long, a failed read or no memory, said in in->err. */
static int read_line(struct gs_input *in)
{
	size_t n = 0;
	int c;
	/* Unlocked: one thread reads an input. */
	while ((c = getc_unlocked(in->f)) != EOF) {
		if (n == LINE_MAX_BYTES)
			return line_error(in, "is longer than 4 MiB; not a line of a gpuspy JSON Lines trace");
		if (n + 2 > in->cap) {
			size_t cap = in->cap ? 2 * in->cap : 4096;
			if (cap > LINE_MAX_BYTES + 2)
				cap = LINE_MAX_BYTES + 2;
			char *l = realloc(in->line, cap);
			if (!l)
				return line_error(in, "cannot be read: out of memory");
			in->line = l;
			in->cap = cap;
		}
		in->line[n++] = (char)c;
		if (c == '\n')
			break;
	}
	if (ferror(in->f)) {
		char why[96];
		snprintf(why, sizeof(why), "cannot be read: %s", strerror(errno));
		return line_error(in, why);
	}
	if (!n)
		return 0;
	in->line[n] = '\0';
	in->lineno++;
	return 1;
}

static double num(const cJSON *o, const char *k, double dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

/* cJSON reads numbers as doubles: exact up to 2^53, which covers
 * CLOCK_MONOTONIC ns for 104 days of uptime, sizes and addresses. */
static uint64_t u64(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	if (!cJSON_IsNumber(v) || !(v->valuedouble > 0))
		return 0;
	return v->valuedouble < 1.8e19 ? (uint64_t)v->valuedouble : UINT64_MAX;
}

/* An integer field clamped to [lo, hi]; dflt when absent. */
static int64_t int_in(const cJSON *o, const char *k, int64_t lo, int64_t hi, int64_t dflt)
{
	double v = num(o, k, (double)dflt);
	if (!(v >= (double)lo))
		return lo;
	if (v > (double)hi)
		return hi;
	return (int64_t)v;
}

static const char *str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The process line's telemetry settings: period, state, samplers. */
static void nvml_from_json(const cJSON *o, struct gs_proc *p)
{
	p->nvml_ms = (unsigned)int_in(o, "nvml_ms", 0, 60000, 0);
	/* The names `gpuspy dump` writes (GSPY_NVML_STATE_LIST); unknown: off. */
#define GSPY_X(n) #n,
	static const char *const nvml_states[] = { GSPY_NVML_STATE_LIST(GSPY_X) };
#undef GSPY_X
	const char *ns = str(o, "nvml");
	p->nvml_state = 0;
	for (unsigned i = 0; ns && i < sizeof(nvml_states) / sizeof(nvml_states[0]); i++)
		if (!strcmp(ns, nvml_states[i]))
			p->nvml_state = i;
	const cJSON *smp = cJSON_GetObjectItemCaseSensitive(o, "nvml_sampler");
	for (int d = 0; d < GSPY_DEVICES; d++) {
		const cJSON *it = cJSON_GetArrayItem(smp, d);
		p->nvml_sampler[d] = cJSON_IsNumber(it) && it->valuedouble >= 0 && it->valuedouble <= INT32_MAX
					     ? (int)it->valuedouble : 0;
	}
}

static int open_jsonl(struct gs_input *in, char *err, size_t errlen)
{
	int got = read_line(in);
	if (got <= 0) {
		snprintf(err, errlen, "%s", got ? in->err : "empty file, not a gpuspy trace");
		return -EINVAL;
	}
	cJSON *o = cJSON_Parse(in->line);
	const char *type = o ? str(o, "type") : NULL;
	if (!type || strcmp(type, "process") != 0) {
		snprintf(err, errlen, "line 1: not a gpuspy JSON Lines trace (no process line)");
		cJSON_Delete(o);
		return -EINVAL;
	}
	double v = num(o, "format_version", 0);
	if (!(v <= GSPY_FORMAT_VERSION)) {
		snprintf(err, errlen, "trace format version %.0f is newer than this gpuspy reads (%u); "
			 "upgrade gpuspy", v, GSPY_FORMAT_VERSION);
		cJSON_Delete(o);
		return -ENOTSUP;
	}
	struct gs_proc *p = &in->proc;
	p->pid = (uint32_t)int_in(o, "pid", 0, UINT32_MAX, 0);
	p->ppid = (uint32_t)int_in(o, "ppid", 0, UINT32_MAX, 0);
	p->rank = (int32_t)int_in(o, "rank", -1, INT32_MAX, -1);
	p->local_rank = (int32_t)int_in(o, "local_rank", -1, INT32_MAX, -1);
	snprintf(p->host, sizeof(p->host), "%s", str(o, "host") ? str(o, "host") : "");
	snprintf(p->command, sizeof(p->command), "%s", str(o, "command") ? str(o, "command") : "");
	p->events = u64(o, "events");
	p->dropped = u64(o, "dropped");
	p->overwritten = u64(o, "overwritten");
	p->dropped_after_exit = u64(o, "dropped_after_exit");
	p->chunks_reused = u64(o, "chunks_reused");
	p->nvtx_too_deep = u64(o, "nvtx_too_deep");
	p->host_unwritten = u64(o, "host_unwritten");
	p->cpus = (uint32_t)u64(o, "cpus");
	p->stacks_taken = u64(o, "stacks_taken");
	p->stacks_ns = u64(o, "stacks_ns");
	p->stack_min_ns = u64(o, "stack_min_ns");
	p->wait_stack_min_ns = u64(o, "wait_stack_min_ns");
	nvml_from_json(o, p);
	const char *st = str(o, "state");
	p->state = st && !strcmp(st, "exited") ? GSPY_STATE_EXITED
		   : st && !strcmp(st, "signaled") ? GSPY_STATE_SIGNALED : GSPY_STATE_RUNNING;
	p->exit_signal = (int)int_in(o, "exit_signal", 0, 255, 0);
	p->exit_code = p->state == GSPY_STATE_EXITED ? (int)int_in(o, "exit_code", -1, 255, -1) : -1;
	if (!p->exit_signal)
		p->exit_signal = (int)int_in(o, "signal_seen", 0, 255, 0);
	p->truncated = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "truncated"));
	p->start_ns = u64(o, "start_ns");
	p->start_paused = str(o, "start") && !strcmp(str(o, "start"), "paused");
	p->windows = (unsigned)int_in(o, "windows", 0, UINT32_MAX, 0);
	p->notes_lost = u64(o, "notes_lost");
	notes_from_json(o, p);
	const char *gt = str(o, "gpu_timing");
	for (unsigned i = 0; gt && i < GSPY_GPU_TIMING_COUNT; i++)
		if (!strcmp(gs_gpu_timing_name(i), gt))
			p->gpu_timing = i;
	const cJSON *dm = cJSON_GetObjectItemCaseSensitive(o, "device_mem");
	for (int i = 0; i < GSPY_DEVICES && cJSON_IsArray(dm) && i < cJSON_GetArraySize(dm); i++) {
		const cJSON *x = cJSON_GetArrayItem(dm, i);
		p->device_mem[i] = cJSON_IsNumber(x) && x->valuedouble > 0 && x->valuedouble < 1.8e19
					   ? (uint64_t)x->valuedouble : 0;
	}
	cJSON_Delete(o);
	return 0;
}

int gs_input_open(const char *path, int nofollow, struct gs_input *in, char *err, size_t errlen)
{
	memset(in, 0, sizeof(*in));
	in->path = path;
	/* Not a regular file (a FIFO named *.gspy, a device): refused before
	 * anything reads it, and the open does not wait for a writer. A name
	 * found in a directory was a regular file when listed; one made a
	 * link since is not followed. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | (nofollow ? O_NOFOLLOW : 0));
	struct stat st;
	if (fd < 0) {
		int e = errno;
		if (e == ELOOP && nofollow)
			snprintf(err, errlen, "a symbolic link in a directory is not followed (name the file itself "
				 "to read it)");
		else
			snprintf(err, errlen, "cannot open: %s", strerror(e));
		return -e;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		snprintf(err, errlen, "not a regular file");
		return -EINVAL;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	FILE *f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		snprintf(err, errlen, "cannot open: %s", strerror(errno));
		return -errno;
	}
	int c = fgetc(f);
	if (c == '{') {
		ungetc(c, f);
		in->is_jsonl = 1;
		in->f = f;
		int rc = open_jsonl(in, err, errlen);
		if (rc)
			gs_input_close(in);
		return rc;
	}
	/* Through the descriptor already checked, never the name again. */
	int rc = gs_trace_open_fd(fileno(f), path, &in->trace, err, errlen);
	fclose(f);
	if (rc)
		return rc;
	proc_from_trace(in);
	return 0;
}

static int next_gspy(struct gs_input *in, struct gs_ev *ev)
{
	struct gs_event e;
	if (!gs_trace_next(&in->trace, &e))
		return 0;
	gs_ev_from_event(&in->trace, &e, ev);
	return 1;
}

void gs_ev_from_event(const struct gs_trace *t, const struct gs_event *ep, struct gs_ev *ev)
{
	const struct gs_event e = *ep;
	const struct gspy_record *r = e.rec;
	memset(ev, 0, sizeof(*ev));
	ev->kind = r->kind;
	ev->api = r->api;
	ev->dir = r->dir;
	ev->mem = r->mem;
	ev->device = r->device;
	ev->result = r->result;
	ev->tid = e.tid;
	ev->start_ns = e.start_ns;
	ev->end_ns = e.end_ns;
	ev->own_ns = e.own_ns;
	ev->stream = r->stream;
	ev->async = (r->flags & GSPY_FLAG_ASYNC) != 0;
	ev->captured = (r->flags & GSPY_FLAG_CAPTURED) != 0;
	ev->window = (r->flags & GSPY_FLAG_WINDOW) != 0;
	ev->corr = e.corr;
	if (r->kind == GSPY_KIND_launch && (gspy_api_graph_launch(r->api) || gspy_api_host_func(r->api))) {
		ev->addr = r->u.mem.addr; /* a graph launch's executable graph, a host function */
	} else if (r->kind == GSPY_KIND_launch || r->kind == GSPY_KIND_node_kernel) {
		ev->grid[0] = r->u.launch.grid_x;
		ev->grid[1] = r->u.launch.grid_yz[0];
		ev->grid[2] = r->u.launch.grid_yz[1];
		for (int i = 0; i < 3; i++)
			ev->block[i] = r->u.launch.block[i];
	} else if (r->kind >= GSPY_KIND_gpu_kernel && r->kind <= GSPY_KIND_gpu_memset) {
		ev->bytes = r->u.gpu.bytes;
		ev->graph_id = r->u.gpu.graph_id;
	} else if (r->kind == GSPY_KIND_gpu_span) {
		ev->gpu_ns = r->u.span.gpu_ns;
	} else if (r->kind == GSPY_KIND_nvml) {
		gspy_nvml_get(r, &ev->nvml);
		ev->stream = 0;
		ev->dir = ev->mem = 0;
		ev->result = 0;
	} else {
		ev->bytes = r->u.mem.bytes;
		ev->addr = r->u.mem.addr;
	}
	if (r->flags & GSPY_FLAG_STEP) {
		ev->step = r->u.mem.bytes;
		ev->has_step = 1;
		ev->bytes = 0;
	}
	ev->name = gs_trace_string(t, r->name_id);
	ev->stack_id = r->stack_id;
}

/* JSON Lines: {"type":"stack","id":N,"frames":["...", ...]} lines, kept by id. */
struct gs_stack_tab {
	uint32_t *ids;
	struct gs_stack *stacks;
	size_t n, cap;
	uint32_t *index; /* open addressing: position + 1, 0 free */
	size_t index_cap;
};

static size_t slot(uint32_t id, size_t cap)
{
	return (size_t)(id * 2654435761u) & (cap - 1);
}

static int reindex(struct gs_stack_tab *t)
{
	size_t cap = t->index_cap ? t->index_cap * 2 : 256;
	uint32_t *ix = calloc(cap, sizeof(*ix));
	if (!ix)
		return -1;
	for (size_t i = 0; i < t->n; i++) {
		size_t k = slot(t->ids[i], cap);
		while (ix[k])
			k = (k + 1) & (cap - 1);
		ix[k] = (uint32_t)i + 1;
	}
	free(t->index);
	t->index = ix;
	t->index_cap = cap;
	return 0;
}

static int add_jstack(struct gs_input *in, const cJSON *o)
{
	const cJSON *fr = cJSON_GetObjectItemCaseSensitive(o, "frames");
	uint32_t id = (uint32_t)int_in(o, "id", 0, UINT32_MAX, 0);
	if (!id || !cJSON_IsArray(fr))
		return -1;
	if (!in->jstacks && !(in->jstacks = calloc(1, sizeof(*in->jstacks))))
		return -1;
	struct gs_stack_tab *t = in->jstacks;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		uint32_t *ids = realloc(t->ids, cap * sizeof(*ids));
		if (ids)
			t->ids = ids;
		struct gs_stack *st = ids ? realloc(t->stacks, cap * sizeof(*st)) : NULL;
		if (!st)
			return -1;
		t->stacks = st;
		t->cap = cap;
	}
	int n = cJSON_GetArraySize(fr);
	struct gs_stack st = { 0, calloc((size_t)n + 1, sizeof(char *)) };
	if (!st.frames)
		return -1;
	for (int i = 0; i < n; i++) {
		const cJSON *x = cJSON_GetArrayItem(fr, i);
		if (cJSON_IsString(x) && (st.frames[st.n] = strdup(x->valuestring)))
			st.n++;
	}
	t->ids[t->n] = id;
	t->stacks[t->n++] = st;
	if (t->n * 2 > t->index_cap)
		return reindex(t);
	size_t k = slot(id, t->index_cap);
	while (t->index[k])
		k = (k + 1) & (t->index_cap - 1);
	t->index[k] = (uint32_t)t->n;
	return 0;
}

const struct gs_stack *gs_input_stack(struct gs_input *in, uint32_t id)
{
	if (!id)
		return NULL;
	if (!in->is_jsonl) {
		if (!in->sym)
			in->sym = gs_sym_open(&in->trace);
		return gs_sym_stack(in->sym, id);
	}
	struct gs_stack_tab *t = in->jstacks;
	if (!t || !t->index_cap)
		return NULL;
	for (size_t k = slot(id, t->index_cap); t->index[k]; k = (k + 1) & (t->index_cap - 1))
		if (t->ids[t->index[k] - 1] == id)
			return &t->stacks[t->index[k] - 1];
	return NULL;
}

static void dims(const cJSON *o, const char *k, uint32_t *d)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, k);
	for (int i = 0; i < 3; i++) {
		const cJSON *x = cJSON_IsArray(a) ? cJSON_GetArrayItem(a, i) : NULL;
		d[i] = cJSON_IsNumber(x) && x->valuedouble >= 0 && x->valuedouble <= UINT32_MAX
			       ? (uint32_t)x->valuedouble : 0;
	}
}

static int bad(struct gs_input *in, const char *what)
{
	snprintf(in->err, sizeof(in->err), "line %llu: %s", (unsigned long long)in->lineno, what);
	in->error = 1;
	return -1;
}

/* An nvml event's fields: null or absent is what NVML could not give. */
static void nvml_fields(const cJSON *o, struct gspy_nvml *s)
{
#define GSPY_X(f)                                                                                    \
	{                                                                                            \
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, #f);                          \
		s->f = cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < GSPY_NVML_NA \
			       ? (uint32_t)v->valuedouble                                          \
			       : GSPY_NVML_NA;                                                     \
	}
	GSPY_NVML_FIELDS(GSPY_X)
#undef GSPY_X
}

/* Long (about 80 lines): one field of the JSON Lines event a line, in
 * docs/format.md's order, so that it can be checked against the format at a
 * glance. */
static int next_jsonl(struct gs_input *in, struct gs_ev *ev)
{
	for (;;) {
		int got = read_line(in);
		if (got <= 0)
			return got;
		const char *p = in->line;
		while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
			p++;
		if (!*p)
			continue;
		cJSON *o = cJSON_Parse(in->line);
		if (!o)
			return bad(in, "not valid JSON");
		const char *type = str(o, "type");
		if (type && !strcmp(type, "stack")) {
			int rc = add_jstack(in, o);
			cJSON_Delete(o);
			if (rc)
				return bad(in, "a stack line lacks an id or frames");
			continue;
		}
		if (!type || strcmp(type, "event") != 0) {
			const char *why = type && !strcmp(type, "process")
						  ? "a second process line (one process per file)"
						  : "not an event line";
			cJSON_Delete(o);
			return bad(in, why);
		}
		memset(ev, 0, sizeof(*ev));
		int kind = gs_kind_from_name(str(o, "kind"));
		int api = gs_api_from_name(str(o, "api"));
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, "start_ns");
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "end_ns");
		if (kind <= 0 || api < 0 || !cJSON_IsNumber(s) || !cJSON_IsNumber(e)) {
			cJSON_Delete(o);
			return bad(in, "event lacks a known kind, api, start_ns or end_ns");
		}
		ev->kind = (uint8_t)kind;
		ev->api = (uint16_t)api;
		ev->tid = (uint32_t)int_in(o, "tid", 0, UINT32_MAX, 0);
		ev->start_ns = u64(o, "start_ns");
		ev->end_ns = u64(o, "end_ns");
		ev->result = (int32_t)int_in(o, "result", INT32_MIN, INT32_MAX, 0);
		ev->bytes = u64(o, kind == GSPY_KIND_graph ? "nodes" : "bytes");
		ev->addr = u64(o, kind == GSPY_KIND_graph ? "cugraph" : "addr");
		/* A map's handle (in dumps before 2026-12-01: its "stream"). */
		const char *sn = gspy_stream_name((unsigned)kind);
		ev->stream = u64(o, cJSON_GetObjectItemCaseSensitive(o, sn) ? sn : "stream");
		ev->async = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "async"));
		ev->captured = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "captured"));
		if (kind == GSPY_KIND_launch && cJSON_GetObjectItemCaseSensitive(o, "graph"))
			ev->addr = u64(o, "graph");
		ev->corr = u64(o, "corr");
		ev->graph_id = (uint32_t)int_in(o, "graph_id", 0, UINT32_MAX, 0);
		ev->gpu_ns = u64(o, "gpu_ns");
		ev->has_step = cJSON_GetObjectItemCaseSensitive(o, "step") != NULL;
		ev->window = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "window"));
		ev->step = u64(o, "step");
		ev->device = (int16_t)int_in(o, "device", -1, INT16_MAX, -1);
		ev->stack_id = (uint32_t)int_in(o, "stack", 0, UINT32_MAX, 0);
		ev->own_ns = u64(o, "own_ns");
		int d = gs_dir_from_name(str(o, "dir"));
		ev->dir = (uint8_t)(d > 0 ? d : 0);
		int m = gs_mem_from_name(str(o, kind == GSPY_KIND_copy || kind == GSPY_KIND_gpu_copy || kind == GSPY_KIND_node_copy
						   ? "host_mem" : "mem"));
		ev->mem = (uint8_t)(m > 0 ? m : 0);
		dims(o, "grid", ev->grid);
		dims(o, "block", ev->block);
		if (kind == GSPY_KIND_nvml) {
			nvml_fields(o, &ev->nvml);
			ev->stream = 0;
			ev->dir = ev->mem = 0;
		}
		const char *n = str(o, kind == GSPY_KIND_nvml ? "uuid" : "name");
		snprintf(in->name, sizeof(in->name), "%s",
			 n && !((kind == GSPY_KIND_launch || kind == GSPY_KIND_node_kernel) && n[0] == '(') ? n : "");
		ev->name = in->name;
		cJSON_Delete(o);
		if (ev->end_ns < ev->start_ns)
			return bad(in, "end_ns before start_ns");
		return 1;
	}
}

int gs_input_next(struct gs_input *in, struct gs_ev *ev)
{
	return in->is_jsonl ? next_jsonl(in, ev) : next_gspy(in, ev);
}

void gs_input_close(struct gs_input *in)
{
	if (in->f)
		fclose(in->f);
	free(in->line);
	gs_sym_close(in->sym); /* before the trace: it points into the mapping */
	in->sym = NULL;
	if (!in->is_jsonl)
		gs_trace_close(&in->trace);
	if (in->jstacks) {
		for (size_t i = 0; i < in->jstacks->n; i++) {
			for (uint32_t j = 0; j < in->jstacks->stacks[i].n; j++)
				free(in->jstacks->stacks[i].frames[j]);
			free(in->jstacks->stacks[i].frames);
		}
		free(in->jstacks->ids);
		free(in->jstacks->index);
		free(in->jstacks->stacks);
		free(in->jstacks);
		in->jstacks = NULL;
	}
	in->f = NULL;
	in->line = NULL;
}
