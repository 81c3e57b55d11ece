/* SPDX-License-Identifier: MIT */
/*
 * Device telemetry in the report: the NVML samples the library took
 * (GPUSPY_NVML_MS, lib/nvml.c) summed per device and per phase, read
 * against what the program's calls and CUPTI say, and the diagnoses that
 * only the device's own view can give: clocks held back and why, power
 * under its limit while busy, a PCIe link below its best, another
 * process's memory, heat, and GPU-Util against the GPU's real busy time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "report/diag.h"
#include "report/pass.h"
#include "report/report.h"
#include "report/section.h"
#include "report/series.h"
#include "report/steps.h"
#include "util/units.h"
#include "util/escape.h"
#include "util/xalloc.h"

/* Reasons that slow a GPU that has work: power and thermal limits. Of
 * those, the ones a change can lift: heat and the board's power brake.
 * The software power cap holds a busy GPU at its power limit, as designed,
 * which is no change to make (the what-if suite's GPU-bound loop,
 * whatif/healthy.py, was held so in 6 to 8 of its 7 or 8 busy samples in
 * each set read: run1, run4, run5, run11 and run12). */
#define SLOWING (0x4u | 0x8u | 0x20u | 0x40u | 0x80u)
#define LIFTABLE (0x8u | 0x20u | 0x40u | 0x80u)
#define HOT_C 85
#define LINK_MOVING_MBS 100 /* PCIe TX + RX from which a sample counts as moving data */

static const struct { uint32_t bit; const char *id, *text; } reasons[GS_NVML_REASONS] = {
#define GSPY_X(bit, id, text) { bit, #id, text },
	GSPY_NVML_REASON_LIST(GSPY_X)
#undef GSPY_X
};

void gs_tele_event(struct gs_pass *pass, unsigned feed, const struct gs_ev *ev, size_t cur)
{
	struct gs_report *r = pass->r;
	(void)feed;
	if (ev->device < 0 || ev->device >= GSPY_DEVICES)
		return;
	const struct gspy_nvml *s = &ev->nvml;
	struct gs_tele *t = &r->tele[ev->device];
	struct gs_phase_stat *p = &r->phases[cur];
	if (!t->n++)
		t->first_ns = ev->start_ns;
	t->last_ns = ev->start_ns;
	t->period_ns = (uint64_t)r->proc.nvml_ms * 1000000u;
	if (ev->name && *ev->name)
		snprintf(t->uuid, sizeof(t->uuid), "%s", ev->name);
	p->nvml_n++;
	gs_series_nvml(r->series, ev->start_ns, s);
	if (s->util_gpu != GSPY_NVML_NA) {
		t->util_n++;
		t->util_sum += s->util_gpu;
		t->util_mem_sum += s->util_mem != GSPY_NVML_NA ? s->util_mem : 0;
		p->util_sum += s->util_gpu;
	}
	int busy = s->util_gpu != GSPY_NVML_NA && s->util_gpu > 0;
	t->busy_n += busy;
	if (s->power_dw != GSPY_NVML_NA) {
		t->power_n++;
		t->power_sum += s->power_dw / 10.0;
		p->power_sum += s->power_dw / 10.0;
		if (s->limit_w != GSPY_NVML_NA && s->limit_w) {
			t->limit_w = s->limit_w;
			t->busy_low_power_n += busy && s->power_dw < 7u * s->limit_w;
		}
	}
	if (s->sm_mhz) {
		t->sm_n++;
		t->sm_sum += s->sm_mhz;
		p->sm_sum += s->sm_mhz;
	}
	if (s->sm_max_mhz)
		t->sm_max = s->sm_max_mhz;
	if (s->reasons != GSPY_NVML_NA) {
		for (int i = 0; i < GS_NVML_REASONS; i++)
			t->reason_n[i] += (s->reasons & reasons[i].bit) != 0;
		t->slowed_n += busy && (s->reasons & SLOWING);
	}
	if (!t->keep)
		t->keep = xcalloc(GS_TELE_KEEP, sizeof(*t->keep));
	t->keep[t->kept++ % GS_TELE_KEEP] = (struct gs_tele_sample){
		ev->start_ns, s->sm_mhz, (uint8_t)busy,
		(uint8_t)(busy && s->reasons != GSPY_NVML_NA ? s->reasons & LIFTABLE : 0)
	};
	if (s->temp_c != GSPY_NVML_NA) {
		t->temp_n++;
		if (s->temp_c > t->temp_max)
			t->temp_max = s->temp_c;
		t->hot_n += s->temp_c >= HOT_C;
	}
	if (s->used_mib != GSPY_NVML_NA && s->used_mib > t->used_max)
		t->used_max = s->used_mib;
	if (s->other_mib != GSPY_NVML_NA && s->other_mib > t->other_max)
		t->other_max = s->other_mib;
	if (s->gen && s->width) {
		int low = (s->gen_max && s->gen < s->gen_max) || (s->width_max && s->width < s->width_max);
		int moving = s->tx_mbs != GSPY_NVML_NA && s->rx_mbs != GSPY_NVML_NA &&
			     s->tx_mbs + s->rx_mbs >= LINK_MOVING_MBS;
		t->link_n += moving;
		t->link_low_n += moving && low;
		if (!t->link_low_n || (moving && low))
			t->gen = s->gen, t->gen_max = s->gen_max, t->width = s->width, t->width_max = s->width_max;
	}
}

void gs_tele_merge(struct gs_report *dst, const struct gs_report *src)
{
	for (int d = 0; d < GSPY_DEVICES; d++) {
		struct gs_tele *a = &dst->tele[d];
		const struct gs_tele *b = &src->tele[d];
		if (!b->n)
			continue;
		if (!a->n) {
			*a = *b;
			a->keep = NULL; /* the loop is one process's: a whole of several keeps none */
			a->kept = 0;
			continue;
		}
		a->first_ns = b->first_ns < a->first_ns ? b->first_ns : a->first_ns;
		a->last_ns = b->last_ns > a->last_ns ? b->last_ns : a->last_ns;
#define SUM(f) a->f += b->f
#define MAX(f) a->f = b->f > a->f ? b->f : a->f
		SUM(n), SUM(util_n), SUM(power_n), SUM(sm_n), SUM(temp_n), SUM(util_sum), SUM(util_mem_sum);
		SUM(power_sum), SUM(sm_sum), SUM(slowed_n), SUM(busy_n), SUM(busy_low_power_n), SUM(hot_n);
		SUM(link_n), SUM(link_low_n);
		MAX(limit_w), MAX(sm_max), MAX(temp_max), MAX(used_max), MAX(other_max);
		for (int i = 0; i < GS_NVML_REASONS; i++)
			SUM(reason_n[i]);
#undef SUM
#undef MAX
	}
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* The device's busy share by CUPTI over the traced time, or -1. */
static double busy_pct(const struct gs_report *r, int d)
{
	uint64_t span = r->t_last - r->t_first;
	if (r->gpu_timing != GSPY_GPU_TIMING_cupti || !r->dev[d].ops || !span)
		return -1;
	return pct(r->dev[d].busy_ns, span);
}

/* "software power cap 50%, hardware thermal slowdown 10%" of the samples. */
static void reason_list(char *buf, size_t cap, const struct gs_tele *t)
{
	size_t n = 0;
	buf[0] = 0;
	for (int i = 0; i < GS_NVML_REASONS && n < cap; i++)
		if (t->reason_n[i] && (reasons[i].bit & SLOWING))
			n += (size_t)snprintf(buf + n, cap - n, "%s%s %.0f%%", n ? ", " : "", reasons[i].text,
					      pct(t->reason_n[i], t->n));
}

/* The seed's nvidia-smi patterns, the first that fits: memory full,
 * clocks throttled, a slow link, then by mean GPU-Util: starved (under
 * 50%), partly busy, healthy (80% or more). NULL with too few samples. */
static const char *pattern(const struct gs_report *r, int d, const char **why)
{
	const struct gs_tele *t = &r->tele[d];
	uint64_t total = (r->proc.device_mem[d] ? r->proc.device_mem[d] : r->device_total) >> 20;
	double util = t->util_n ? t->util_sum / (double)t->util_n : -1;
	if (t->n < 5)
		return NULL;
	if (total && t->used_max >= total * 95 / 100) {
		*why = "device memory 95% full or more";
		return "memory_full";
	}
	if (t->busy_n && pct(t->slowed_n, t->busy_n) >= 10) {
		*why = "clocks held back by power or heat";
		return "throttled";
	}
	if (t->link_low_n && pct(t->link_low_n, t->link_n) >= 50) {
		*why = "PCIe link below its best while moving data";
		return "link_below_max";
	}
	if (util < 0)
		return NULL;
	*why = util < 50 ? "GPU-Util under 50%: the GPU waits for work (input, the host, synchronization)"
	       : util < 80 ? "GPU-Util 50-80%" : "GPU-Util 80% or more, clocks not held back";
	return util < 50 ? "starved" : util < 80 ? "partly_busy" : "healthy";
}

void gs_tele_diagnose(struct gs_report *r)
{
	char a[32], b[32], why[256];
	for (int d = 0; d < GSPY_DEVICES; d++) {
		const struct gs_tele *t = &r->tele[d];
		if (t->n < 5) /* half a second at the default: too few to say */
			continue;
		double util = t->util_n ? t->util_sum / (double)t->util_n : -1, busy = busy_pct(r, d);
		if (busy >= 0 && util >= 0 && util - busy >= 20)
			gs_diag_add(r, "gpu_util_vs_busy",
				    "nvidia-smi's GPU-Util averaged %.0f%% on GPU %d; this process's kernels kept it busy "
				    "%.0f%% (CUPTI).\n  GPU-Util counts any kernel resident, another process's too: the "
				    "difference is not this program's work.", util, d, busy);
		if (t->busy_n && pct(t->slowed_n, t->busy_n) >= 10) {
			reason_list(why, sizeof(why), t);
			gs_diag_add(r, "clocks_throttled",
				    "GPU %d's clocks were held back in %.0f%% of the busy samples (about %s): %s; the SM "
				    "clock averaged %.0f of %u MHz.",
				    d, pct(t->slowed_n, t->busy_n), gs_fmt_ns(a, t->slowed_n * t->period_ns), why,
				    t->sm_n ? t->sm_sum / (double)t->sm_n : 0.0, t->sm_max);
		}
		if (t->limit_w && t->busy_n >= 5 && pct(t->busy_low_power_n, t->busy_n) >= 50)
			gs_diag_add(r, "power_below_limit",
				    "GPU %d drew under 70%% of its %u W limit in %.0f%% of the busy samples (%.0f W on "
				    "average): its kernels do not load it fully (small kernels, or waits on memory or the "
				    "host).", d, t->limit_w, pct(t->busy_low_power_n, t->busy_n),
				    t->power_n ? t->power_sum / (double)t->power_n : 0.0);
		if (t->link_low_n && pct(t->link_low_n, t->link_n) >= 50)
			gs_diag_add(r, "pcie_link_below_max",
				    "GPU %d's PCIe link ran at gen%u x%u while moving data (%.0f%% of those samples); "
				    "it can run gen%u x%u.\n  The slot, a riser or the BIOS's link settings can hold it there.",
				    d, t->gen, t->width, pct(t->link_low_n, t->link_n), t->gen_max, t->width_max);
		if (t->other_max)
			gs_diag_add(r, "other_process_memory",
				    "Other processes held up to %s on GPU %d while this one ran: it shares the GPU's "
				    "memory and time.", gs_fmt_bytes(b, (uint64_t)t->other_max << 20), d);
		if (t->hot_n)
			gs_diag_add(r, "gpu_hot", "GPU %d reached %u C (%d C or more in %.0f%% of the samples).", d,
				    t->temp_max, HOT_C, pct(t->hot_n, t->temp_n));
	}
}

/* The loop's busy samples on a device, those kept from `from` to `to`:
 * how many; how many were held back for a reason a change can lift, those
 * reasons' bits, and what they lost, the sum of (max - clock) / max; the
 * mean SM clock of them all (0: none known). */
struct loop_tele {
	uint64_t busy, slowed;
	unsigned why;
	double lost, sm;
};

static void loop_samples(const struct gs_tele *t, uint64_t from, uint64_t to, struct loop_tele *o)
{
	uint64_t sum = 0, n = 0;
	memset(o, 0, sizeof(*o));
	for (uint64_t i = t->kept > GS_TELE_KEEP ? t->kept - GS_TELE_KEEP : 0; t->keep && i < t->kept; i++) {
		const struct gs_tele_sample *x = &t->keep[i % GS_TELE_KEEP];
		if (x->t < from || x->t > to || !x->busy)
			continue;
		o->busy++;
		if (x->sm_mhz)
			sum += x->sm_mhz, n++;
		if (!x->slowed)
			continue;
		o->slowed++;
		o->why |= x->slowed;
		if (x->sm_mhz && x->sm_mhz < t->sm_max)
			o->lost += (double)(t->sm_max - x->sm_mhz) / (double)t->sm_max;
	}
	o->sm = n ? (double)sum / (double)n : 0;
}

/* The device the process's kernels kept busiest (CUPTI), -1 none: the
 * loop's, whose clocks the step waits on. (Another device's samples show
 * other processes' work too: GPU-Util counts any kernel resident.) */
static int loop_device(const struct gs_report *r)
{
	int best = -1;
	for (int d = 0; d < GSPY_DEVICES; d++)
		if (r->dev[d].busy_ns && (best < 0 || r->dev[d].busy_ns > r->dev[best].busy_ns))
			best = d;
	return best;
}

void gs_tele_loop(struct gs_report *r, const struct gs_steps *s, int64_t floor)
{
	char a[32], why[256], text[1024], how[240];
	int d = loop_device(r);
	if (!s->found || !s->gpu_ns || s->gpu_ns * 2 < s->step_ns || d < 0)
		return; /* the step does not wait on the GPU's work: faster kernels would not shorten it */
	const struct gs_tele *t = &r->tele[d];
	struct loop_tele o;
	loop_samples(t, s->steady_from, s->steady_to, &o);
	if (o.busy < 5 || o.slowed * 10 < o.busy || !t->sm_max || o.sm <= 0)
		return;
	/* Each held-back sample stands for its share of the loop's busy time,
	 * the GPU's work slowed by (max - clock) / max in it. */
	uint64_t gpu = s->gpu_ns < s->step_ns ? s->gpu_ns : s->step_ns;
	uint64_t bound = (uint64_t)((double)gpu * o.lost / (double)o.busy);
	if ((int64_t)bound < floor)
		return;
	size_t w = 0;
	why[0] = 0;
	for (int i = 0; i < GS_NVML_REASONS && w < sizeof(why); i++)
		if (o.why & reasons[i].bit)
			w += (size_t)snprintf(why + w, sizeof(why) - w, "%s%s", w ? ", " : "", reasons[i].text);
	snprintf(text, sizeof(text),
		 "GPU %d's clocks were held back in %.0f%% of the loop's busy samples (%s): the SM clock averaged "
		 "%.0f of %u MHz there, and the GPU's work holds %.0f%% of the step.\n  Raise the power limit or "
		 "improve the cooling: `nvidia-smi -q -d PERFORMANCE,POWER,TEMPERATURE` says which held it back "
		 "(the limit: `nvidia-smi -pl`, as root).",
		 d, 100.0 * (double)o.slowed / (double)o.busy, why, o.sm, t->sm_max,
		 100.0 * (double)gpu / (double)s->step_ns);
	snprintf(how, sizeof(how), "the GPU's work a step (%s) at the max clock in the samples held back; "
		 "kernels bound by memory gain less", gs_fmt_ns(a, gpu));
	char head[24];
	snprintf(head, sizeof(head), "GPU %d's", d);
	struct gs_diag *g = NULL;
	for (size_t i = 0; i < r->ndiag && !g; i++)
		if (!strcmp(r->diag[i].id, "clocks_throttled") && !strncmp(r->diag[i].text, head, strlen(head)))
			g = &r->diag[i];
	if (!g) { /* the run's samples did not make it context: the loop's alone do */
		gs_diag_add(r, "clocks_throttled", "%s", text);
		g = &r->diag[r->ndiag - 1];
	} else {
		free(g->text);
		g->text = xstrdup(text);
	}
	free(g->how);
	g->how = xstrdup(how);
	g->context = 0;
	g->about = 0;
	g->steps = s->steps;
	g->save_ns = bound * s->steps;
}

void gs_tele_free(struct gs_report *r)
{
	for (int d = 0; d < GSPY_DEVICES; d++) {
		free(r->tele[d].keep);
		r->tele[d].keep = NULL;
	}
}

void gs_tele_print(FILE *f, const struct gs_report *r, const struct gs_style *st)
{
	const char *bold = st->bold, *reset = st->reset;
	char a[32], b[32], c[32], why[256], uuid[4 * sizeof(r->tele[0].uuid)];
	int any = 0;
	for (int d = 0; d < GSPY_DEVICES; d++) {
		const struct gs_tele *t = &r->tele[d];
		if (!t->n)
			continue;
		if (!any++)
			fprintf(f, "\n  %sTelemetry%s (NVML, every %u ms)\n", bold, reset, r->proc.nvml_ms);
		/* The trace's bytes, on one line (escaped, newlines too). */
		fprintf(f, "  device %d %s: %s %s over %s\n", d, gs_term_line(uuid, sizeof(uuid), t->uuid, SIZE_MAX),
			gs_fmt_count(a, t->n), gs_pl(t->n, "sample", "samples"),
			gs_fmt_ns(b, t->last_ns - t->first_ns + t->period_ns));
		if (t->util_n) {
			fprintf(f, "    GPU-Util %.0f%% (memory %.0f%%)", t->util_sum / (double)t->util_n,
				t->util_mem_sum / (double)t->util_n);
			double busy = busy_pct(r, d);
			if (busy >= 0)
				fprintf(f, "; kernels kept it busy %.0f%% of the traced time (CUPTI)", busy);
			fprintf(f, "\n");
		}
		if (t->power_n || t->sm_n) {
			fprintf(f, "    power %.1f W", t->power_n ? t->power_sum / (double)t->power_n : 0.0);
			if (t->limit_w)
				fprintf(f, " of %u W", t->limit_w);
			if (t->sm_n)
				fprintf(f, "; SM clock %.0f of %u MHz", t->sm_sum / (double)t->sm_n, t->sm_max);
			if (t->temp_n)
				fprintf(f, "; %u C at most", t->temp_max);
			fprintf(f, "\n");
		}
		fprintf(f, "    memory used up to %s", gs_fmt_bytes(a, (uint64_t)t->used_max << 20));
		if (t->other_max)
			fprintf(f, ", other processes' up to %s", gs_fmt_bytes(b, (uint64_t)t->other_max << 20));
		fprintf(f, "\n");
		reason_list(why, sizeof(why), t);
		if (*why)
			fprintf(f, "    clocks held back: %s of the samples; busy and held back: %s (about %s)\n", why,
				gs_fmt_count(a, t->slowed_n), gs_fmt_ns(c, t->slowed_n * t->period_ns));
		if (t->gen)
			fprintf(f, "    PCIe gen%u x%u (at most gen%u x%u)\n", t->gen, t->width, t->gen_max, t->width_max);
		const char *said = NULL, *pat = pattern(r, d, &said);
		if (pat)
			fprintf(f, "    pattern: %s (%s)\n", pat, said);
	}
	for (int d = 0; d < GSPY_DEVICES; d++)
		if (r->proc.nvml_sampler[d] && r->proc.nvml_sampler[d] != (int)r->proc.pid && !r->tele[d].n)
			fprintf(f, "\n  Telemetry: device %d is sampled by pid %d (one process per device samples)\n", d,
				r->proc.nvml_sampler[d]);
	if (!any)
		return;
	int rows = 0;
	for (size_t i = 0; i < r->nphases; i++) {
		const struct gs_phase_stat *p = &r->phases[i];
		if (!p->nvml_n || rows >= 20)
			continue;
		if (!rows++)
			fprintf(f, "  %-24s %8s %9s %9s %9s\n", "by phase", "samples", "GPU-Util", "power", "SM clock");
		char nm[4 * 24 + 1]; /* the trace's bytes, on one line */
		fprintf(f, "  %-24s %8llu %8.0f%% %7.1f W %5.0f MHz\n", gs_term_line(nm, sizeof(nm), p->name, 24),
			(unsigned long long)p->nvml_n,
			p->util_sum / (double)p->nvml_n, p->power_sum / (double)p->nvml_n, p->sm_sum / (double)p->nvml_n);
	}
}

void gs_tele_json(cJSON *o, const struct gs_report *r, const struct gs_style *st)
{
	(void)st;
	cJSON *a = cJSON_AddArrayToObject(o, "telemetry");
	for (int d = 0; d < GSPY_DEVICES; d++) {
		const struct gs_tele *t = &r->tele[d];
		if (!t->n)
			continue;
		cJSON *j = cJSON_CreateObject();
		cJSON_AddNumberToObject(j, "device", d);
		cJSON_AddStringToObject(j, "uuid", t->uuid);
		cJSON_AddNumberToObject(j, "samples", (double)t->n);
		cJSON_AddNumberToObject(j, "period_ns", (double)t->period_ns);
		cJSON_AddNumberToObject(j, "util_gpu_mean", t->util_n ? t->util_sum / (double)t->util_n : 0);
		cJSON_AddNumberToObject(j, "util_mem_mean", t->util_n ? t->util_mem_sum / (double)t->util_n : 0);
		double busy = busy_pct(r, d);
		if (busy >= 0)
			cJSON_AddNumberToObject(j, "busy_pct_cupti", busy);
		cJSON_AddNumberToObject(j, "power_w_mean", t->power_n ? t->power_sum / (double)t->power_n : 0);
		cJSON_AddNumberToObject(j, "power_limit_w", t->limit_w);
		cJSON_AddNumberToObject(j, "sm_mhz_mean", t->sm_n ? t->sm_sum / (double)t->sm_n : 0);
		cJSON_AddNumberToObject(j, "sm_max_mhz", t->sm_max);
		cJSON_AddNumberToObject(j, "temp_max_c", t->temp_max);
		cJSON_AddNumberToObject(j, "used_max_mib", t->used_max);
		cJSON_AddNumberToObject(j, "other_max_mib", t->other_max);
		cJSON *rs = cJSON_AddObjectToObject(j, "reasons");
		for (int i = 0; i < GS_NVML_REASONS; i++)
			if (t->reason_n[i])
				cJSON_AddNumberToObject(rs, reasons[i].id, (double)t->reason_n[i]);
		cJSON_AddNumberToObject(j, "slowed_busy_samples", (double)t->slowed_n);
		cJSON_AddNumberToObject(j, "busy_samples", (double)t->busy_n);
		cJSON_AddNumberToObject(j, "throttled_ns", (double)(t->slowed_n * t->period_ns));
		const char *why = NULL, *pat = pattern(r, d, &why);
		if (pat)
			cJSON_AddStringToObject(j, "pattern", pat);
		else
			cJSON_AddNullToObject(j, "pattern");
		cJSON *l = cJSON_AddObjectToObject(j, "pcie");
		cJSON_AddNumberToObject(l, "gen", t->gen);
		cJSON_AddNumberToObject(l, "gen_max", t->gen_max);
		cJSON_AddNumberToObject(l, "width", t->width);
		cJSON_AddNumberToObject(l, "width_max", t->width_max);
		cJSON_AddNumberToObject(l, "moving_samples", (double)t->link_n);
		cJSON_AddNumberToObject(l, "below_max_samples", (double)t->link_low_n);
		cJSON_AddItemToArray(a, j);
	}
}
