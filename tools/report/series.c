/* SPDX-License-Identifier: MIT */
/* A process's run over time: see series.h. */
#include <stdlib.h>
#include <string.h>

#include "report/report.h"
#include "report/series.h"
#include "util/xalloc.h"

int gs_series_on;

static void bin_clear(struct gs_bin *b)
{
	memset(b, 0, sizeof(*b));
	b->reserved_max = b->reserved_last = -1;
}

struct gs_series *gs_series_new(uint64_t t0)
{
	struct gs_series *s = xcalloc(1, sizeof(*s));
	s->t0 = t0;
	s->bin_ns = 1024; /* doubles as the run outgrows the bins */
	for (size_t i = 0; i < GS_SERIES_BINS; i++)
		bin_clear(&s->bin[i]);
	s->step = xcalloc(GS_SERIES_STEPS, sizeof(*s->step));
	s->group = 1;
	return s;
}

void gs_series_free(struct gs_series *s)
{
	if (s)
		free(s->step);
	free(s);
}

static void bin_merge(struct gs_bin *a, const struct gs_bin *b)
{
	a->busy_ns += b->busy_ns;
	if (b->reserved_max > a->reserved_max)
		a->reserved_max = b->reserved_max;
	if (b->reserved_last >= 0)
		a->reserved_last = b->reserved_last;
	a->util_n += b->util_n;
	a->used_n += b->used_n;
	a->power_n += b->power_n;
	a->sm_n += b->sm_n;
	a->temp_n += b->temp_n;
	a->util += b->util;
	a->used_mib += b->used_mib;
	a->power_w += b->power_w;
	a->sm_mhz += b->sm_mhz;
	a->temp_c += b->temp_c;
}

/* Twice the width, half the bins: each new bin is two old ones added. */
static void bins_grow(struct gs_series *s)
{
	for (size_t i = 0; i < GS_SERIES_BINS / 2; i++) {
		struct gs_bin m = s->bin[2 * i];
		bin_merge(&m, &s->bin[2 * i + 1]);
		s->bin[i] = m;
	}
	for (size_t i = GS_SERIES_BINS / 2; i < GS_SERIES_BINS; i++)
		bin_clear(&s->bin[i]);
	s->bin_ns *= 2;
	s->used = (s->used + 1) / 2;
}

/* The bin of t (before the first event: the first bin). */
static struct gs_bin *bin_at(struct gs_series *s, uint64_t t, size_t *idx)
{
	uint64_t d = t > s->t0 ? t - s->t0 : 0;
	while (d / s->bin_ns >= GS_SERIES_BINS)
		bins_grow(s);
	size_t i = (size_t)(d / s->bin_ns);
	if (i + 1 > s->used)
		s->used = i + 1;
	if (idx)
		*idx = i;
	return &s->bin[i];
}

void gs_series_busy(struct gs_series *s, uint64_t start, uint64_t end)
{
	if (!s)
		return;
	bin_at(s, end, NULL); /* the width the whole interval needs */
	while (start < end) {
		size_t i;
		struct gs_bin *b = bin_at(s, start, &i);
		/* The bin's end, saturated: a time near 2^64 (a forged trace's)
		 * wrapped it to the start, and the loop never ended. */
		uint64_t off = (uint64_t)i * s->bin_ns, room = UINT64_MAX - s->t0 - off;
		uint64_t edge = s->bin_ns > room ? UINT64_MAX : s->t0 + off + s->bin_ns;
		uint64_t piece = (end < edge ? end : edge) - start;
		if (!piece)
			break;
		b->busy_ns += piece;
		start += piece;
	}
}

void gs_series_reserved(struct gs_series *s, uint64_t t, int64_t reserved)
{
	if (!s)
		return;
	struct gs_bin *b = bin_at(s, t, NULL);
	int64_t v = reserved > 0 ? reserved : 0;
	if (v > b->reserved_max)
		b->reserved_max = v;
	b->reserved_last = v;
	s->reserved = v;
}

void gs_series_nvml(struct gs_series *s, uint64_t t, const struct gspy_nvml *v)
{
	if (!s)
		return;
	struct gs_bin *b = bin_at(s, t, NULL);
	if (v->util_gpu != GSPY_NVML_NA) {
		b->util_n++;
		b->util += v->util_gpu;
	}
	if (v->used_mib != GSPY_NVML_NA) {
		b->used_n++;
		b->used_mib += v->used_mib;
	}
	if (v->power_dw != GSPY_NVML_NA) {
		b->power_n++;
		b->power_w += v->power_dw / 10.0;
	}
	if (v->sm_mhz && v->sm_mhz != GSPY_NVML_NA) {
		b->sm_n++;
		b->sm_mhz += v->sm_mhz;
	}
	if (v->temp_c != GSPY_NVML_NA) {
		b->temp_n++;
		b->temp_c += v->temp_c;
	}
}

void gs_series_phase_begin(struct gs_series *s, const struct gs_report *r, size_t p, int depth)
{
	if (!s || depth != 0 || r->phases[p].library || r->phases[p].compile)
		return;
	for (size_t k = 0; k < s->nslots; k++)
		if (s->slot_phase[k] == p)
			return;
	if (s->nslots == GS_SERIES_PHASES)
		return;
	s->slot_phase[s->nslots] = p;
	s->slot_wall[s->nslots++] = r->phases[p].wall_ns;
}

void gs_series_top_end(struct gs_series *s, uint64_t t)
{
	if (s)
		s->top_end = t;
}

/* Two points into one: the steps per point double. */
static void steps_halve(struct gs_series *s)
{
	for (size_t i = 0; i < s->nsteps / 2; i++) {
		struct gs_step_point m = s->step[2 * i];
		const struct gs_step_point *b = &s->step[2 * i + 1];
		m.n += b->n;
		m.total_ns += b->total_ns;
		m.coll_ns += b->coll_ns;
		for (int k = 0; k <= GS_SERIES_PHASES; k++)
			m.ph[k] += b->ph[k];
		s->step[i] = m;
	}
	s->nsteps /= 2;
	s->group *= 2;
}

/* The open step ends at t: its phases' time since the last boundary. */
static void step_close(struct gs_series *s, const struct gs_report *r, uint64_t t)
{
	struct gs_step_point *c = &s->cur;
	uint64_t total = t > s->step_begin ? t - s->step_begin : 0, in = 0;
	if (!c->n)
		c->t = s->step_begin - s->t0;
	for (size_t k = 0; k < s->nslots; k++) {
		uint64_t w = r->phases[s->slot_phase[k]].wall_ns;
		uint64_t d = w > s->slot_wall[k] ? w - s->slot_wall[k] : 0;
		s->slot_wall[k] = w;
		c->ph[k] += d;
		in += d;
	}
	c->ph[GS_SERIES_PHASES] += total > in ? total - in : 0;
	c->total_ns += total;
	c->coll_ns += s->coll_step;
	s->coll_step = 0;
	c->n++;
	if (c->n == s->group) {
		if (s->nsteps == GS_SERIES_STEPS)
			steps_halve(s);
		if (c->n == s->group) { /* halving may have made it a half point */
			s->step[s->nsteps++] = *c;
			memset(c, 0, sizeof(*c));
		}
	}
}

void gs_series_step(struct gs_series *s, const struct gs_report *r, uint64_t t, uint64_t first)
{
	if (!s)
		return;
	if (first) {
		s->first = first;
		s->nsteps = 0;
		s->group = 1;
		s->step_begin = 0;
		s->coll_step = 0;
		memset(&s->cur, 0, sizeof(s->cur));
	}
	if (s->step_begin)
		step_close(s, r, t);
	else /* the phases' time so far is no step's */
		for (size_t k = 0; k < s->nslots; k++)
			s->slot_wall[k] = r->phases[s->slot_phase[k]].wall_ns;
	s->step_begin = t;
}

void gs_series_collective(struct gs_series *s, uint64_t ns)
{
	if (s && s->step_begin)
		s->coll_step += ns;
}

void gs_series_end(struct gs_series *s, const struct gs_report *r, uint64_t t_last)
{
	if (!s)
		return;
	bin_at(s, t_last, NULL);
	if (s->step_begin && s->top_end > s->step_begin)
		step_close(s, r, s->top_end);
	s->step_begin = 0;
	if (s->cur.n) { /* a last point of fewer steps: its n says so */
		if (s->nsteps == GS_SERIES_STEPS)
			steps_halve(s);
		s->step[s->nsteps++] = s->cur;
		memset(&s->cur, 0, sizeof(s->cur));
	}
}

static cJSON *mean_array(const struct gs_series *s, size_t off_sum, size_t off_n)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < s->used; i++) {
		const char *b = (const char *)&s->bin[i];
		double sum;
		uint32_t n;
		memcpy(&sum, b + off_sum, sizeof(sum));
		memcpy(&n, b + off_n, sizeof(n));
		cJSON_AddItemToArray(a, n ? cJSON_CreateNumber(sum / n) : cJSON_CreateNull());
	}
	return a;
}

cJSON *gs_series_json(const struct gs_series *s, const struct gs_report *r)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "t0_ns", (double)s->t0);
	cJSON_AddNumberToObject(o, "bin_ns", (double)s->bin_ns);
	int devices = 0;
	for (int d = 0; d < GSPY_DEVICES; d++)
		devices += r->dev[d].ops != 0;
	cJSON_AddNumberToObject(o, "devices", devices);
	cJSON *busy = cJSON_AddArrayToObject(o, "busy_ns");
	cJSON *res = cJSON_AddArrayToObject(o, "reserved");
	int64_t last = 0;
	for (size_t i = 0; i < s->used; i++) {
		const struct gs_bin *b = &s->bin[i];
		cJSON_AddItemToArray(busy, cJSON_CreateNumber((double)b->busy_ns));
		/* The most held in the bin, else what was held from before. */
		cJSON_AddItemToArray(res, cJSON_CreateNumber((double)(b->reserved_max >= 0 ? b->reserved_max : last)));
		if (b->reserved_last >= 0)
			last = b->reserved_last;
	}
	uint64_t nvml = 0;
	for (size_t i = 0; i < s->used; i++)
		nvml += s->bin[i].util_n + s->bin[i].used_n + s->bin[i].power_n;
	if (nvml) {
		cJSON *n = cJSON_AddObjectToObject(o, "nvml");
#define MEAN(key, f, fn) \
	cJSON_AddItemToObject(n, key, mean_array(s, offsetof(struct gs_bin, f), offsetof(struct gs_bin, fn)))
		MEAN("util_pct", util, util_n);
		MEAN("used_mib", used_mib, used_n);
		MEAN("power_w", power_w, power_n);
		MEAN("sm_mhz", sm_mhz, sm_n);
		MEAN("temp_c", temp_c, temp_n);
#undef MEAN
	}
	cJSON *st = cJSON_AddObjectToObject(o, "steps");
	cJSON_AddNumberToObject(st, "per_point", (double)s->group);
	cJSON_AddNumberToObject(st, "first", (double)s->first);
	cJSON *t = cJSON_AddArrayToObject(st, "t_ns"), *n = cJSON_AddArrayToObject(st, "n");
	cJSON *tot = cJSON_AddArrayToObject(st, "total_ns");
	for (size_t i = 0; i < s->nsteps; i++) {
		cJSON_AddItemToArray(t, cJSON_CreateNumber((double)s->step[i].t));
		cJSON_AddItemToArray(n, cJSON_CreateNumber((double)s->step[i].n));
		cJSON_AddItemToArray(tot, cJSON_CreateNumber((double)s->step[i].total_ns));
	}
	cJSON *ph = cJSON_AddArrayToObject(st, "phases");
	for (size_t k = 0; k <= s->nslots; k++) {
		size_t slot = k < s->nslots ? k : GS_SERIES_PHASES;
		uint64_t any = 0;
		for (size_t i = 0; i < s->nsteps; i++)
			any |= s->step[i].ph[slot];
		if (slot == GS_SERIES_PHASES && !any)
			continue; /* every step's time is in its phases */
		cJSON *p = cJSON_CreateObject();
		cJSON_AddStringToObject(p, "name",
					k < s->nslots ? r->phases[s->slot_phase[k]].name : "(outside these phases)");
		cJSON *v = cJSON_AddArrayToObject(p, "ns");
		for (size_t i = 0; i < s->nsteps; i++)
			cJSON_AddItemToArray(v, cJSON_CreateNumber((double)s->step[i].ph[slot]));
		cJSON_AddItemToArray(ph, p);
	}
	return o;
}
