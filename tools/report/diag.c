/* SPDX-License-Identifier: MIT */
/* What every diagnosis is made with: see diag.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/diag.h"
#include "report/report.h"
#include "util/units.h"
#include "util/xalloc.h"

void gs_diag_add(struct gs_report *r, const char *id, const char *fmt, ...)
{
	va_list ap, again;
	va_start(ap, fmt);
	va_copy(again, ap);
	int n = vsnprintf(NULL, 0, fmt, ap); /* whole, however long the names in it */
	va_end(ap);
	char *text = xcalloc(n > 0 ? (size_t)n + 1 : 1, 1);
	if (n > 0)
		vsnprintf(text, (size_t)n + 1, fmt, again);
	va_end(again);
	/* Out of memory is the command's one-line error (xalloc.h): a diagnosis
	 * is never left out, so its saving is never set on the one before. */
	r->diag = xrealloc(r->diag, (r->ndiag + 1) * sizeof(*r->diag));
	r->diag[r->ndiag] = (struct gs_diag){ .id = id, .text = text };
	r->ndiag++;
}

const char *gs_diag_saving(const struct gs_diag *d, char *buf, size_t cap)
{
	char all[32], per[32];
	if (!d->how)
		return NULL;
	const char *q = d->about ? "about" : "up to";
	if (d->steps)
		snprintf(buf, cap, "Saves %s %s a step (%s over %llu steps): %s.", q,
			 gs_fmt_ns(per, d->save_ns / d->steps), gs_fmt_ns(all, d->save_ns),
			 (unsigned long long)d->steps, d->how);
	else
		snprintf(buf, cap, "Saves %s %s in all: %s.", q, gs_fmt_ns(all, d->save_ns), d->how);
	return buf;
}

/* Narrows *span to the time in phases (the loop), which the diagnoses of a
 * loop take their shares of: start-up and teardown outside phases would
 * dilute them. Returns 0, *span left as the whole run, without phases. */
int gs_loop_span(const struct gs_report *r, uint64_t *span)
{
	if (r->nphases < 2 || *span <= r->phases[0].wall_ns)
		return 0;
	*span -= r->phases[0].wall_ns;
	return 1;
}
