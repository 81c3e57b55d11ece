/* SPDX-License-Identifier: MIT */
/*
 * A double of NVML (libnvidia-ml.so.1) for the telemetry tests: the
 * functions gpuspy's sampler calls, with NVML's signatures, answering what
 * FAKENVML says. FAKENVML is a comma list of name=value; a value may be a
 * '/'-separated cycle, one entry per sample of that device (a sample is
 * counted at each nvmlDeviceGetUtilizationRates):
 *
 *   util=95/40  mem_util  used_mib  power_mw  limit_mw  sm  sm_max  memclk
 *   mem_max  reasons  temp  tx_kbs  rx_kbs  gen  gen_max  width  width_max
 *   other_mib (one other process's memory)  missing=pcie,temp (NOT_SUPPORTED)
 *
 * Devices are found by the PCI bus ids of the driver double
 * ("0000:1D:00.0" is device 13 - 0x10); their UUIDs read GPU-fake-<d>.
 * FAKENVML_LOG=FILE appends one line per sample: the device and the
 * sample's number, so a test can count the samples NVML gave.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define DEVS 8
enum { OK = 0, NOT_SUPPORTED = 3, INVALID = 2, NOT_FOUND = 6 };

struct dev { int id; unsigned n; };
static struct dev devs[DEVS];

/* The value of name at sample i, or dflt. */
static unsigned long long val(const char *name, unsigned i, unsigned long long dflt)
{
	const char *s = getenv("FAKENVML");
	size_t len = strlen(name);
	while (s && *s) {
		if (!strncmp(s, name, len) && s[len] == '=') {
			const char *v = s + len + 1;
			unsigned k = 0;
			for (const char *c = v; *c && *c != ','; c++)
				k += *c == '/';
			for (unsigned j = i % (k + 1); j; j--)
				v = strchr(v, '/') + 1;
			return strtoull(v, NULL, 0);
		}
		s = strchr(s, ',');
		s = s ? s + 1 : NULL;
	}
	return dflt;
}

static int missing(const char *what)
{
	const char *s = getenv("FAKENVML");
	const char *m = s ? strstr(s, "missing=") : NULL;
	return m && strstr(m, what) != NULL;
}

static struct dev *D(void *h) { return (struct dev *)h; }
static unsigned at(void *h) { return D(h)->n ? D(h)->n - 1 : 0; }

EXPORT int nvmlInit_v2(void) { return OK; }
EXPORT int nvmlShutdown(void) { return OK; }
EXPORT int nvmlDeviceGetHandleByPciBusId_v2(const char *bus, void **h)
{
	unsigned dom, b, dev, fn;
	if (sscanf(bus, "%x:%x:%x.%x", &dom, &b, &dev, &fn) != 4 || b < 0x10 || b >= 0x10 + DEVS)
		return NOT_FOUND;
	devs[b - 0x10].id = (int)(b - 0x10);
	*h = &devs[b - 0x10];
	return OK;
}
EXPORT int nvmlDeviceGetUUID(void *h, char *buf, unsigned len)
{
	snprintf(buf, len, "GPU-fake-%d", D(h)->id);
	return OK;
}
struct util { unsigned gpu, memory; };
EXPORT int nvmlDeviceGetUtilizationRates(void *h, struct util *u)
{
	unsigned i = D(h)->n++;
	const char *log = getenv("FAKENVML_LOG");
	FILE *f = log ? fopen(log, "a") : NULL;
	if (f) {
		fprintf(f, "device %d sample %u\n", D(h)->id, i);
		fclose(f);
	}
	u->gpu = (unsigned)val("util", i, 0);
	u->memory = (unsigned)val("mem_util", i, 0);
	return OK;
}
struct memory { unsigned long long total, free, used; };
EXPORT int nvmlDeviceGetMemoryInfo(void *h, struct memory *m)
{
	m->total = 80ull << 30;
	m->used = val("used_mib", at(h), 1024) << 20;
	m->free = m->total - m->used;
	return OK;
}
EXPORT int nvmlDeviceGetPowerUsage(void *h, unsigned *mw) { *mw = (unsigned)val("power_mw", at(h), 100000); return OK; }
EXPORT int nvmlDeviceGetEnforcedPowerLimit(void *h, unsigned *mw) { *mw = (unsigned)val("limit_mw", at(h), 700000); return OK; }
EXPORT int nvmlDeviceGetClockInfo(void *h, int type, unsigned *mhz)
{
	*mhz = (unsigned)(type == 1 ? val("sm", at(h), 1980) : val("memclk", at(h), 2619));
	return type == 1 || type == 2 ? OK : INVALID;
}
EXPORT int nvmlDeviceGetMaxClockInfo(void *h, int type, unsigned *mhz)
{
	*mhz = (unsigned)(type == 1 ? val("sm_max", 0, 1980) : val("mem_max", 0, 2619));
	return type == 1 || type == 2 ? OK : INVALID;
}
EXPORT int nvmlDeviceGetCurrentClocksEventReasons(void *h, unsigned long long *r) { *r = val("reasons", at(h), 0); return OK; }
EXPORT int nvmlDeviceGetTemperature(void *h, int sensor, unsigned *c)
{
	if (missing("temp"))
		return NOT_SUPPORTED;
	*c = (unsigned)val("temp", at(h), 40);
	return OK;
}
EXPORT int nvmlDeviceGetPcieThroughput(void *h, int counter, unsigned *kbs)
{
	if (missing("pcie"))
		return NOT_SUPPORTED;
	*kbs = (unsigned)(counter == 0 ? val("tx_kbs", at(h), 0) : val("rx_kbs", at(h), 0));
	return OK;
}
EXPORT int nvmlDeviceGetCurrPcieLinkGeneration(void *h, unsigned *g) { *g = (unsigned)val("gen", at(h), 5); return OK; }
EXPORT int nvmlDeviceGetMaxPcieLinkGeneration(void *h, unsigned *g) { *g = (unsigned)val("gen_max", 0, 5); return OK; }
EXPORT int nvmlDeviceGetCurrPcieLinkWidth(void *h, unsigned *w) { *w = (unsigned)val("width", at(h), 16); return OK; }
EXPORT int nvmlDeviceGetMaxPcieLinkWidth(void *h, unsigned *w) { *w = (unsigned)val("width_max", 0, 16); return OK; }
struct process { unsigned pid; unsigned long long used; unsigned gi, ci; };
/* This process with 512 MiB, and one other with other_mib when set. */
EXPORT int nvmlDeviceGetComputeRunningProcesses_v3(void *h, unsigned *count, struct process *p)
{
	unsigned long long other = val("other_mib", at(h), 0);
	unsigned need = other ? 2 : 1;
	if (*count < need) {
		*count = need;
		return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
	}
	p[0] = (struct process){ (unsigned)getpid(), 512ull << 20, 0, 0 };
	if (other)
		p[1] = (struct process){ 1, other << 20, 0, 0 };
	*count = need;
	return OK;
}
