/* SPDX-License-Identifier: MIT */
/* The traced processes of this machine, from /proc: see procs.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <linux/magic.h>
#include <unistd.h>

#include "read/procs.h"

int gs_proc_uid(int pid, uid_t *uid)
{
	char p[64], line[256];
	snprintf(p, sizeof(p), "/proc/%d/status", pid);
	FILE *f = fopen(p, "re");
	if (!f)
		return -errno;
	int rc = -ESRCH;
	unsigned long r, e;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Uid: %lu %lu", &r, &e) == 2) {
			*uid = (uid_t)e;
			rc = 0;
			break;
		}
	fclose(f);
	return rc;
}

/*
 * The path in /proc/PID/maps is a string in the process's mount namespace:
 * a process that mounts a tmpfs of its own (unshare -Urm) maps a trace
 * there while, at the same path in ours, its user leaves a symlink to
 * another user's file, a FIFO or a device. Root's top and serve must not
 * open those. So the file is opened through /proc/PID/map_files/START-END,
 * the kernel's link to the very file mapped (the string is never resolved
 * here; the link is not a symlink an attacker names, so it is followed,
 * which O_NOFOLLOW would refuse). Following it needs CAP_CHECKPOINT_RESTORE
 * or CAP_SYS_ADMIN: root has it. Another user cannot (EPERM) and then
 * opens the path through /proc/PID/root, which resolves it in the
 * process's mount namespace, with O_NOFOLLOW; such a reader sees only its
 * own processes and opens only what it may open anyway. Either way nothing
 * but a regular file is opened (stat first: opening a device can act),
 * O_NONBLOCK|O_NOCTTY (a FIFO does not block, a terminal is not taken), and
 * fstat on the descriptor decides: a regular file, owned by the process's
 * user, with the maps line's device and inode (the device not on overlayfs,
 * whose files the maps show by the layer's device on older kernels).
 */
int gs_pid_trace_open(const struct gs_mapped *m, int rw)
{
	uid_t uid;
	int rc = gs_proc_uid(m->pid, &uid);
	if (rc)
		return rc;
	char p[PATH_MAX + 64];
	int flags = (rw ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
	struct stat st;
	snprintf(p, sizeof(p), "/proc/%d/map_files/%lx-%lx", m->pid, m->start, m->end);
	if (stat(p, &st) != 0) {
		if (errno != EPERM && errno != EACCES)
			return -errno;
		if (snprintf(p, sizeof(p), "/proc/%d/root%s", m->pid, m->path) >= (int)sizeof(p))
			return -ENAMETOOLONG;
		flags |= O_NOFOLLOW;
		if (lstat(p, &st) != 0)
			return -errno;
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != uid)
		return -EPERM;
	int fd = open(p, flags);
	if (fd < 0)
		return -errno;
	struct statfs sf;
	int overlay = fstatfs(fd, &sf) == 0 && sf.f_type == OVERLAYFS_SUPER_MAGIC;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != uid || st.st_ino != m->ino ||
	    (!overlay && st.st_dev != m->dev)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

int gs_pid_traces(int pid, int (*fn)(void *arg, const struct gs_mapped *m), void *arg, int *deleted)
{
	char maps[64];
	snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
	FILE *f = fopen(maps, "re");
	if (!f)
		return -errno;
	char line[PATH_MAX + 128];
	int found = 0;
	while (!found && fgets(line, sizeof(line), f)) {
		struct gs_mapped m = { .pid = pid };
		unsigned maj = 0, min = 0;
		int at = 0;
		line[strcspn(line, "\n")] = 0;
		if (sscanf(line, "%lx-%lx %*s %*s %x:%x %lu %n", &m.start, &m.end, &maj, &min, &m.ino, &at) < 5 || !at)
			continue;
		m.dev = makedev(maj, min);
		m.path = line + at;
		size_t n = strlen(m.path);
		if (n > 16 && !strcmp(m.path + n - 10, " (deleted)") && strstr(m.path, ".gspy")) {
			*deleted = 1;
			continue;
		}
		if (n >= 5 && !strcmp(m.path + n - 5, ".gspy"))
			found = fn(arg, &m);
	}
	fclose(f);
	return found;
}
