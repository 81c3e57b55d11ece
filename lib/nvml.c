/* SPDX-License-Identifier: MIT */
/*
 * Device telemetry (GPUSPY_NVML_MS, default 100 ms; 0 is off): a thread
 * reads NVML for each device this process has used and writes one nvml
 * record per device and sample (struct gspy_nvml in format.h): what
 * `nvidia-smi dmon` shows, on the same clock as the program's calls.
 *
 * NVML is dlopen'ed (libnvidia-ml.so.1), never linked; the declarations
 * below are written from NVML's public API reference. The thread starts
 * once the trace file is open and never runs in a hook; a device is found
 * by its PCI bus id, so CUDA_VISIBLE_DEVICES does not confuse it.
 *
 * One process per device samples: the first to take the device's lock
 * file ($TMPDIR or /tmp, gpuspy-nvml-BUSID.lock, flock, holding its pid;
 * only a regular file of this user's own is taken, else this user's own
 * gpuspy-nvml-BUSID-uUID.lock).
 * Each process's header names, per device, the pid that samples it. The
 * lock goes with the process that holds it (a fork child inherits the
 * descriptor, not the role: it closes it and asks again).
 *
 * Cost: none on the program's threads. PCIe throughput is NVML's 20 ms
 * sample, read on this thread.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gs.h"
#include "symbols.h"
#include "writer.h"
#include "module.h"

/* NVML's API, as its reference gives it. */
typedef struct nvml_device *nvml_dev;
typedef struct { unsigned gpu, memory; } nvml_util;
typedef struct { unsigned long long total, free, used; } nvml_memory;
/* nvmlMemory_v2_t: "used" without the driver's reservation, as nvidia-smi shows it. */
typedef struct { unsigned version; unsigned long long total, reserved, free, used; } nvml_memory2;
#define NVML_MEMORY_V2 ((unsigned)sizeof(nvml_memory2) | 2u << 24)
typedef struct { unsigned pid; unsigned long long used; unsigned gi, ci; } nvml_process; /* nvmlProcessInfo_v2_t */
enum { NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_TEMPERATURE_GPU = 0, NVML_PCIE_TX = 0, NVML_PCIE_RX = 1 };
enum { NVML_ERROR_INSUFFICIENT_SIZE = 7 };
#define NVML_UUID_LEN 96
#define PROCS 64

static struct {
	int (*init)(void);
	int (*by_bus)(const char *, nvml_dev *);
	int (*uuid)(nvml_dev, char *, unsigned);
	int (*util)(nvml_dev, nvml_util *);
	int (*memory)(nvml_dev, nvml_memory *);
	int (*memory2)(nvml_dev, nvml_memory2 *);
	int (*power)(nvml_dev, unsigned *);
	int (*limit)(nvml_dev, unsigned *);
	int (*clock)(nvml_dev, int, unsigned *);
	int (*max_clock)(nvml_dev, int, unsigned *);
	int (*reasons)(nvml_dev, unsigned long long *);
	int (*temp)(nvml_dev, int, unsigned *);
	int (*pcie)(nvml_dev, int, unsigned *);
	int (*gen)(nvml_dev, unsigned *), (*gen_max)(nvml_dev, unsigned *);
	int (*width)(nvml_dev, unsigned *), (*width_max)(nvml_dev, unsigned *);
	int (*procs)(nvml_dev, unsigned *, nvml_process *);
} n;

struct dev {
	int state;           /* 0 not looked at, 1 sampled here, 2 not (another process, or none) */
	nvml_dev h;
	uint32_t uuid;       /* string id */
	unsigned sm_max, mem_max, gen_max, width_max;
	int lock_fd;
	dev_t lock_dev;      /* lock_fd's file, to close only it in a fork child */
	ino_t lock_ino;
};

static struct {
	struct gspy_header *hdr;
	unsigned ms;
	int started;
	pid_t pid;
	struct dev d[GSPY_DEVICES];
} nv = { .d = { [0 ... GSPY_DEVICES - 1] = { .lock_fd = -1 } } };

static int open_nvml(void)
{
	void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		return -1;
#define SYM(f, name) (*(void **)&n.f = dlsym(lib, name))
	SYM(init, "nvmlInit_v2");
	SYM(by_bus, "nvmlDeviceGetHandleByPciBusId_v2");
	SYM(uuid, "nvmlDeviceGetUUID");
	SYM(util, "nvmlDeviceGetUtilizationRates");
	SYM(memory, "nvmlDeviceGetMemoryInfo");
	SYM(memory2, "nvmlDeviceGetMemoryInfo_v2");
	SYM(power, "nvmlDeviceGetPowerUsage");
	SYM(limit, "nvmlDeviceGetEnforcedPowerLimit");
	SYM(clock, "nvmlDeviceGetClockInfo");
	SYM(max_clock, "nvmlDeviceGetMaxClockInfo");
	if (!SYM(reasons, "nvmlDeviceGetCurrentClocksEventReasons"))
		SYM(reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
	SYM(temp, "nvmlDeviceGetTemperature");
	SYM(pcie, "nvmlDeviceGetPcieThroughput");
	SYM(gen, "nvmlDeviceGetCurrPcieLinkGeneration");
	SYM(gen_max, "nvmlDeviceGetMaxPcieLinkGeneration");
	SYM(width, "nvmlDeviceGetCurrPcieLinkWidth");
	SYM(width_max, "nvmlDeviceGetMaxPcieLinkWidth");
	SYM(procs, "nvmlDeviceGetComputeRunningProcesses_v3");
#undef SYM
	if (!n.init || !n.by_bus || n.init() != 0)
		return -1;
	return 0;
}

/* Opens the lock file at path if it is this user's own: a regular file,
 * one link, owned by our euid. The directory is shared ($TMPDIR, /tmp):
 * another user may have planted a symbolic link to a victim's file there
 * (O_NOFOLLOW), a hard link (st_nlink), a FIFO (O_NONBLOCK, S_ISREG) or a
 * file of their own (st_uid); gpuspy truncates and writes the file it
 * takes, so it must never take one of those. -1 with errno: ENOENT-like
 * failures mean nothing is there to agree through; EEXIST, something
 * that is not ours is. */
static int open_own(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
	if (fd < 0) {
		if (errno == ELOOP || errno == EACCES || errno == EPERM || errno == ENXIO || errno == EISDIR)
			errno = EEXIST; /* a link, or another user's file (protected_regular) */
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 || st.st_uid != geteuid()) {
		close(fd);
		errno = EEXIST;
		return -1;
	}
	return fd;
}

/* The device's lock: 1 when this process samples it, else 0 with the
 * pid of the one that does in *owner (0 when unknown). */
static int take_lock(struct dev *v, const char *bus, int32_t *owner)
{
	char path[256], id[64];
	const char *tmp = getenv("TMPDIR");
	size_t j = 0;
	for (const char *c = bus; *c && j + 1 < sizeof(id); c++)
		id[j++] = (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f') || (*c >= 'A' && *c <= 'F') ? *c : '_';
	id[j] = 0;
	tmp = tmp && *tmp == '/' ? tmp : "/tmp";
	snprintf(path, sizeof(path), "%s/gpuspy-nvml-%s.lock", tmp, id);
	int fd = open_own(path);
	if (fd < 0 && errno == EEXIST) {
		/* The shared name is not ours to write: agree with this user's
		 * own processes through a name of our own. Another user's
		 * process may then sample the device too. */
		snprintf(path, sizeof(path), "%s/gpuspy-nvml-%s-u%u.lock", tmp, id, (unsigned)geteuid());
		fd = open_own(path);
		if (fd < 0 && errno == EEXIST) {
			*owner = 0; /* both names taken over by someone else: not sampled */
			return 0;
		}
	}
	if (fd < 0) {
		*owner = nv.pid; /* nothing to agree through: sample */
		return 1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
		char b[16];
		int len = snprintf(b, sizeof(b), "%d\n", (int)nv.pid);
		/* If the pid cannot be written the others do not know who samples,
		 * but the lock still keeps them off. */
		if (ftruncate(fd, 0) == 0)
			(void)!pwrite(fd, b, (size_t)len, 0);
		/* Kept for the process's life: above the numbers a program
		 * expects to be free, as the trace's (the lock is the open
		 * file's, which the copy shares). */
		int high = fcntl(fd, F_DUPFD_CLOEXEC, 100);
		if (high >= 0) {
			close(fd);
			fd = high;
		}
		struct stat st;
		if (fstat(fd, &st) == 0) {
			v->lock_dev = st.st_dev;
			v->lock_ino = st.st_ino;
		}
		v->lock_fd = fd;
		*owner = nv.pid;
		return 1;
	}
	char b[16] = { 0 };
	*owner = pread(fd, b, sizeof(b) - 1, 0) > 0 ? atoi(b) : 0;
	close(fd);
	return 0;
}

static void attach(int d)
{
	struct dev *v = &nv.d[d];
	char bus[64], uuid[NVML_UUID_LEN];
	int32_t owner = 0;
	v->state = 2;
	if (gs_device_bus_id(d, bus, sizeof(bus)) != 0 || n.by_bus(bus, &v->h) != 0)
		return;
	if (take_lock(v, bus, &owner))
		v->state = 1;
	__atomic_store_n(&nv.hdr->nvml_sampler[d], owner, __ATOMIC_RELAXED);
	if (v->state != 1)
		return;
	if (n.uuid && n.uuid(v->h, uuid, sizeof(uuid)) == 0) {
		uuid[sizeof(uuid) - 1] = 0;
		v->uuid = gs_intern(uuid);
	}
	/* Maxima do not change while the device runs. */
	if (!n.max_clock || n.max_clock(v->h, NVML_CLOCK_SM, &v->sm_max) != 0)
		v->sm_max = 0;
	if (!n.max_clock || n.max_clock(v->h, NVML_CLOCK_MEM, &v->mem_max) != 0)
		v->mem_max = 0;
	if (!n.gen_max || n.gen_max(v->h, &v->gen_max) != 0)
		v->gen_max = 0;
	if (!n.width_max || n.width_max(v->h, &v->width_max) != 0)
		v->width_max = 0;
}

/* One reading: 1 when NVML has the function and gave a value. */
#define READ(fn, ...) (n.fn && n.fn(__VA_ARGS__) == 0)

static void sample(int d)
{
	struct dev *v = &nv.d[d];
	struct gspy_nvml s;
	unsigned u;
	unsigned long long r;
	memset(&s, 0xff, sizeof(s));
	s.sm_mhz = s.mem_mhz = s.gen = s.width = 0;
	s.sm_max_mhz = v->sm_max, s.mem_max_mhz = v->mem_max;
	s.gen_max = v->gen_max, s.width_max = v->width_max;
	uint64_t t0 = gs_now();
	nvml_util ut;
	if (READ(util, v->h, &ut))
		s.util_gpu = ut.gpu, s.util_mem = ut.memory;
	nvml_memory m;
	nvml_memory2 m2 = { .version = NVML_MEMORY_V2 };
	if (READ(memory2, v->h, &m2))
		s.used_mib = (uint32_t)(m2.used >> 20);
	else if (READ(memory, v->h, &m))
		s.used_mib = (uint32_t)(m.used >> 20);
	if (READ(power, v->h, &u))
		s.power_dw = u / 100;
	if (READ(limit, v->h, &u))
		s.limit_w = u / 1000;
	if (READ(clock, v->h, NVML_CLOCK_SM, &u))
		s.sm_mhz = u;
	if (READ(clock, v->h, NVML_CLOCK_MEM, &u))
		s.mem_mhz = u;
	if (READ(reasons, v->h, &r))
		s.reasons = (uint32_t)r & 0x7fffffffu;
	if (READ(temp, v->h, NVML_TEMPERATURE_GPU, &u))
		s.temp_c = u;
	if (READ(pcie, v->h, NVML_PCIE_TX, &u))
		s.tx_mbs = u / 1000;
	if (READ(pcie, v->h, NVML_PCIE_RX, &u))
		s.rx_mbs = u / 1000;
	if (READ(gen, v->h, &u))
		s.gen = u;
	if (READ(width, v->h, &u))
		s.width = u;
	nvml_process p[PROCS];
	unsigned np = PROCS;
	if (READ(procs, v->h, &np, p)) {
		uint64_t other = 0;
		for (unsigned i = 0; i < np && i < PROCS; i++)
			if (p[i].pid != (unsigned)nv.pid && p[i].used != ~0ull)
				other += p[i].used;
		s.other_mib = (uint32_t)(other >> 20);
	}
	if (gs_writer_ready() != 0)
		return;
	struct gspy_record rec;
	memset(&rec, 0, sizeof(rec));
	rec.kind = GSPY_KIND_nvml;
	rec.api = GSPY_API_nvml_sample;
	rec.device = (int16_t)d;
	rec.name_id = v->uuid;
	rec.start = t0;
	gspy_nvml_put(&rec, &s);
	rec.end = gs_now();
	gs_commit(&gs_tls, &rec);
}

/* NVML is loaded once a device has been seen and a period has passed,
 * never at the start: a fork while this thread is inside dlopen would
 * leave the child the loader's lock. fork() waits for it (the lock below);
 * a raw fork system call runs no handler, so this keeps the window off the
 * moments programs fork (just after start, just after the first call). */
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
GS_FORK_LOCK(nvml_load, load_lock);

static void *sampler(void *arg)
{
	(void)arg;
	gs_tls.depth = 1; /* NVML's own allocations are not the program's */
	/* Samples start every period, however long a reading takes (PCIe
	 * throughput is two 20 ms samples of NVML's); one that overran starts
	 * the next a period on from now. */
	uint64_t period = (uint64_t)nv.ms * 1000000u, next = gs_mono_ns();
	int loaded = 0;
	for (;;) {
		uint64_t now = gs_mono_ns();
		next = next + period > now ? next + period : now + period;
		struct timespec at = { (time_t)(next / 1000000000u), (long)(next % 1000000000u) };
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) == EINTR)
			;
		unsigned seen = gs_devices_seen();
		if (!seen || __atomic_load_n(&gs_g.paused, __ATOMIC_RELAXED)) /* gpuspy_pause: nothing recorded */
			continue;
		if (!loaded) {
			pthread_mutex_lock(&load_lock);
			int rc = open_nvml();
			pthread_mutex_unlock(&load_lock);
			__atomic_store_n(&nv.hdr->nvml_state, rc ? GSPY_NVML_unavailable : GSPY_NVML_on, __ATOMIC_RELAXED);
			if (rc)
				return NULL;
			loaded = 1;
			continue; /* a period on from the device's first use */
		}
		for (int d = 0; d < GSPY_DEVICES; d++) {
			if (!(seen & 1u << d))
				continue;
			if (!nv.d[d].state)
				attach(d);
			if (nv.d[d].state == 1)
				sample(d);
		}
	}
	return NULL;
}

static void nvml_started(struct gspy_header *h)
{
	nv.ms = (unsigned)gs_optu(GS_OPT_NVML_MS);
	h->nvml_ms = nv.ms;
	if (!nv.ms || nv.started)
		return;
	nv.hdr = h;
	nv.pid = getpid();
	nv.started = 1;
	if (gs_start_thread(sampler, NULL, "gpuspy-nvml", 256 << 10) != 0)
		h->nvml_state = GSPY_NVML_unavailable;
}

/* A fork child has no sampler thread and does not hold its parent's
 * locks' role: it starts afresh with its own file. */
static void nvml_forked(void)
{
	for (int d = 0; d < GSPY_DEVICES; d++) {
		struct stat st;
		/* The parent's descriptor keeps the lock; the number is closed
		 * only if it is still that file (the program may have closed it
		 * and opened its own there). */
		if (nv.d[d].lock_fd >= 0 && fstat(nv.d[d].lock_fd, &st) == 0 && st.st_dev == nv.d[d].lock_dev &&
		    st.st_ino == nv.d[d].lock_ino)
			close(nv.d[d].lock_fd);
		memset(&nv.d[d], 0, sizeof(nv.d[d]));
		nv.d[d].lock_fd = -1;
	}
	nv.started = 0;
	nv.hdr = NULL;
}

GS_MODULE(nvml, 95, .started = nvml_started, .forked = nvml_forked);
