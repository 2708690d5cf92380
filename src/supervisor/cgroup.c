/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the supervisor process. */
/*
 * cgroup.c: the cgroup v2 files the supervisor reads and writes. Each run lives in a cgroup
 * of its own; whatever its processes do with sessions and process groups, they stay in it,
 * so the supervisor signals them all (cgroup.procs), kills them all at once (cgroup.kill)
 * and knows when they are all gone (cgroup.events: populated 0). Everything here works on
 * directory descriptors and file texts, so a unit test drives it with a plain directory
 * laid out like a cgroup.
 */

#include <sys/stat.h>
#include <sys/syscall.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/sched.h>

#include "cgroup.h"
#include "log.h"
#include "procstat.h"
#include "xmalloc.h"

/* The most pids one read of cgroup.procs takes at a time. */
#define CGROUP_READ_MAX 65536

/* Undo mountinfo's octal escapes (\040 for a space) in place. */
static void
cgroup_unescape(char *s)
{
	char *out = s;

	while (*s != '\0') {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*out++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 4;
		} else
			*out++ = *s++;
	}
	*out = '\0';
}

/* The mount point of the first cgroup2 file system in a mountinfo text, or NULL. */
static char *
cgroup_mount_find(const char *mountinfo)
{
	const char *line = mountinfo, *end, *sep;
	char *copy, *field[5], *save, *mnt = NULL;
	int i;

	while (mnt == NULL && line != NULL && *line != '\0') {
		end = strchr(line, '\n');
		copy = xstrndup(line, end != NULL ? (size_t)(end - line) : strlen(line));
		/* "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE ..." */
		sep = strstr(copy, " - ");
		if (sep != NULL && strncmp(sep + 3, "cgroup2 ", 8) == 0) {
			field[0] = strtok_r(copy, " ", &save);
			for (i = 1; i < 5 && field[i - 1] != NULL; i++)
				field[i] = strtok_r(NULL, " ", &save);
			if (i == 5 && field[4] != NULL && field[4][0] == '/') {
				cgroup_unescape(field[4]);
				mnt = xstrdup(field[4]);
			}
		}
		free(copy);
		line = end != NULL ? end + 1 : NULL;
	}
	return mnt;
}

/* The "0::/path" line of a /proc/PID/cgroup text: the path, or NULL. */
static char *
cgroup_own_path(const char *text)
{
	const char *line = text, *end;

	while (line != NULL && *line != '\0') {
		end = strchr(line, '\n');
		if (strncmp(line, "0::/", 4) == 0)
			return xstrndup(line + 3,
			                end != NULL ? (size_t)(end - line - 3) : strlen(line + 3));
		line = end != NULL ? end + 1 : NULL;
	}
	return NULL;
}

/*
 * The cgroup the worker was started in, from its current path: the current path itself,
 * or, when it is already in name's daemon leaf (a supervisor started again by the same
 * main), that leaf's grandparent. Caller frees.
 */
static char *
cgroup_base_path(const char *own, const char *name)
{
	char *suffix, *base;
	size_t lown, lsuf;

	xasprintf(&suffix, "/%s/%s", name, CGROUP_DAEMON_LEAF);
	lown = strlen(own);
	lsuf = strlen(suffix);
	if (lown >= lsuf && strcmp(own + lown - lsuf, suffix) == 0)
		base = lown == lsuf ? xstrdup("/") : xstrndup(own, lown - lsuf);
	else
		base = xstrdup(own);
	free(suffix);
	return base;
}

/* Where the worker's folder goes, from the texts of mountinfo and /proc/PID/cgroup (see cgroup.h). */
char *
cgroup_locate(const char *mountinfo, const char *proc_cgroup, const char *name, char **cause)
{
	char *mnt, *own, *base, *dir;

	*cause = NULL;
	if ((mnt = mountinfo != NULL ? cgroup_mount_find(mountinfo) : NULL) == NULL) {
		xasprintf(cause, "no cgroup v2 file system is mounted (/proc/self/mountinfo)");
		return NULL;
	}
	if ((own = proc_cgroup != NULL ? cgroup_own_path(proc_cgroup) : NULL) == NULL) {
		xasprintf(cause,
		          "this process is in no cgroup v2 (/proc/self/cgroup has no 0:: line)");
		free(mnt);
		return NULL;
	}
	base = cgroup_base_path(own, name);
	xasprintf(&dir, "%s%s", mnt, strcmp(base, "/") == 0 ? "" : base);
	free(mnt);
	free(own);
	free(base);
	return dir;
}

/* The name of a worker's folder (see cgroup.h). */
char *
cgroup_worker_name(const char *node_id, const char *state_dir)
{
	uint32_t h = 2166136261U; /* FNV-1a */
	const char *p;
	char *name;

	for (p = state_dir; *p != '\0'; p++)
		h = (h ^ (unsigned char)*p) * 16777619U;
	xasprintf(&name, "leasekeeper-%s-%08x", node_id, h);
	return name;
}

/* Write text to a cgroup file. */
int
cgroup_write(int dirfd, const char *file, const char *text)
{
	size_t len = strlen(text);
	ssize_t n;
	int fd, saved;

	if ((fd = openat(dirfd, file, O_WRONLY | O_CLOEXEC)) < 0)
		return -1;
	do
		n = write(fd, text, len);
	while (n < 0 && errno == EINTR);
	saved = errno;
	close(fd);
	errno = saved;
	if (n < 0)
		return -1;
	if ((size_t)n != len) {
		errno = EIO;
		return -1;
	}
	return 0;
}

/* Read a cgroup file, at most max bytes (caller frees), or NULL with errno. */
static char *
cgroup_read(int dirfd, const char *file, size_t max)
{
	char *buf = xmalloc(max + 1);
	size_t len = 0;
	ssize_t n;
	int fd, saved;

	if ((fd = openat(dirfd, file, O_RDONLY | O_CLOEXEC)) < 0) {
		free(buf);
		return NULL;
	}
	while (len < max) {
		n = read(fd, buf + len, max - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n < 0) {
				saved = errno;
				close(fd);
				free(buf);
				errno = saved;
				return NULL;
			}
			break;
		}
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	return buf;
}

/* Whether the cgroup has a process in it or below, from cgroup.events. */
int
cgroup_populated(int dirfd)
{
	char *text, *p;
	int populated = -1;

	if ((text = cgroup_read(dirfd, "cgroup.events", 4096)) == NULL)
		return -1;
	for (p = text; p != NULL && *p != '\0'; p = strchr(p, '\n'), p = p != NULL ? p + 1 : NULL) {
		if (strncmp(p, "populated ", 10) == 0) {
			populated = p[10] == '1';
			break;
		}
	}
	free(text);
	if (populated < 0)
		errno = EINVAL;
	return populated;
}

/* Call fn(pid, arg) for every pid in the cgroup's cgroup.procs. The count, or -1. */
static int
cgroup_each_pid(int dirfd, int (*fn)(pid_t, void *), void *arg)
{
	char *text, *p, *end;
	long pid;
	int n = 0;

	if ((text = cgroup_read(dirfd, "cgroup.procs", CGROUP_READ_MAX)) == NULL)
		return -1;
	for (p = text; *p != '\0'; p = end) {
		errno = 0;
		pid = strtol(p, &end, 10);
		if (end == p) {
			end = p + 1;
			continue;
		}
		if (errno == 0 && pid > 0 && fn((pid_t)pid, arg) == 0)
			n++;
	}
	free(text);
	return n;
}

/* cgroup_each_pid: send *(int *)arg to pid. */
static int
cgroup_signal_one(pid_t pid, void *arg)
{
	return kill(pid, *(int *)arg);
}

/* Send sig to every process of the cgroup. */
int
cgroup_signal(int dirfd, int sig)
{
	return cgroup_each_pid(dirfd, cgroup_signal_one, &sig);
}

/* SIGKILL every process of the cgroup and below. */
int
cgroup_kill(int dirfd)
{
	DIR *d;
	struct dirent *de;
	int fd, rc = 0;

	if (cgroup_write(dirfd, "cgroup.kill", "1") == 0)
		return 0;
	if (errno != ENOENT)
		return -1;
	/* No cgroup.kill: this cgroup's processes, then those of every cgroup below. */
	if (cgroup_signal(dirfd, SIGKILL) < 0)
		return -1;
	if ((fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if ((fd = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
			continue;
		if (cgroup_kill(fd) != 0)
			rc = -1;
		close(fd);
	}
	closedir(d);
	return rc;
}

/* The pids a foreign check ignores: these, and the other children of the last (main). */
struct cgroup_mine {
	const pid_t *pids;
	size_t n;
	pid_t foreign;
};

/*
 * cgroup_each_pid: note a pid that is not one of ours. Main's other children (the witness
 * of its supervisor's death, svlink.c; a supervisor still going away) are ours: another
 * worker's processes are not its children.
 */
static int
cgroup_foreign_one(pid_t pid, void *arg)
{
	struct cgroup_mine *m = arg;
	struct procstat ps;
	size_t i;

	for (i = 0; i < m->n; i++) {
		if (m->pids[i] == pid)
			return -1;
	}
	if (m->n > 0 && procstat_read(pid, &ps) == 0 && ps.ppid == m->pids[m->n - 1])
		return -1;
	if (m->foreign == 0)
		m->foreign = pid;
	return 0;
}

/* Whether a pid other than ours is in the cgroup. */
pid_t
cgroup_foreign_pid(int dirfd, const pid_t *mine, size_t nmine)
{
	struct cgroup_mine m = {mine, nmine, 0};

	cgroup_each_pid(dirfd, cgroup_foreign_one, &m);
	return m.foreign;
}

/* Remove a cgroup and the cgroups below it, deepest first. */
int
cgroup_remove(int parentfd, const char *name)
{
	DIR *d;
	struct dirent *de;
	int fd;

	if (unlinkat(parentfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
		return 0;
	if (errno != EBUSY && errno != ENOTEMPTY)
		return -1;
	if ((fd = openat(parentfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -1;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_type == DT_DIR && strcmp(de->d_name, ".") != 0 &&
		    strcmp(de->d_name, "..") != 0)
			cgroup_remove(dirfd(d), de->d_name);
	}
	closedir(d);
	return unlinkat(parentfd, name, AT_REMOVEDIR);
}

/* The controllers limits use, with their enum proto_controller bits. */
static const struct {
	const char *name;
	unsigned bit;
} cgroup_ctls[] = {
    {"memory", PROTO_CTL_MEMORY},
    {"cpu", PROTO_CTL_CPU},
    {"pids", PROTO_CTL_PIDS},
    {"io", PROTO_CTL_IO},
};

/* The bits of the controllers named in a cgroup.controllers text (space-separated). */
unsigned
cgroup_controller_bits(const char *text)
{
	const char *p = text;
	unsigned bits = 0;
	size_t i, len;

	while (p != NULL && *p != '\0') {
		p += strspn(p, " \n");
		len = strcspn(p, " \n");
		for (i = 0; i < sizeof cgroup_ctls / sizeof cgroup_ctls[0]; i++) {
			if (len == strlen(cgroup_ctls[i].name) &&
			    strncmp(p, cgroup_ctls[i].name, len) == 0)
				bits |= cgroup_ctls[i].bit;
		}
		p += len;
	}
	return bits;
}

/* Enable in the cgroup at dirfd's subtree_control each of want that it has. Those enabled. */
static unsigned
cgroup_enable_in(int dirfd, unsigned want)
{
	char *text, plus[16];
	unsigned have, done = 0;
	size_t i;

	if ((text = cgroup_read(dirfd, "cgroup.controllers", 4096)) == NULL)
		return 0;
	have = cgroup_controller_bits(text) & want;
	free(text);
	for (i = 0; i < sizeof cgroup_ctls / sizeof cgroup_ctls[0]; i++) {
		if ((have & cgroup_ctls[i].bit) == 0)
			continue;
		snprintf(plus, sizeof plus, "+%s", cgroup_ctls[i].name);
		if (cgroup_write(dirfd, "cgroup.subtree_control", plus) == 0)
			done |= cgroup_ctls[i].bit;
		else
			log_debug("cgroups: cannot enable %s: %s", cgroup_ctls[i].name,
			          strerror(errno));
	}
	return done;
}

/* Enable the controllers limits need for the run cgroups (see cgroup.h). */
unsigned
cgroup_enable_controllers(int dirfd)
{
	unsigned all = PROTO_CTL_MEMORY | PROTO_CTL_CPU | PROTO_CTL_PIDS | PROTO_CTL_IO;
	int parent;

	if ((parent = openat(dirfd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		cgroup_enable_in(parent, all);
		close(parent);
	}
	return cgroup_enable_in(dirfd, all);
}

/* Write one limit file; a missing file sets bit in *skipped. 0, or -1 with *cause. */
static int
cgroup_limit(int dirfd, const char *file, const char *text, unsigned bit, unsigned *skipped,
             char **cause)
{
	if (cgroup_write(dirfd, file, text) == 0)
		return 0;
	if (errno == ENOENT) {
		*skipped |= bit;
		return 0;
	}
	xasprintf(cause, "cannot write %s to %s: %s", text, file, strerror(errno));
	return -1;
}

/* Write a run's limits into its cgroup (see cgroup.h). */
int
cgroup_set_limits(int dirfd, const struct proto_limits *l, unsigned *skipped, char **cause)
{
	char text[64];
	int rc = 0;

	*skipped = 0;
	*cause = NULL;
	if (rc == 0 && l->memory_high != 0) {
		snprintf(text, sizeof text, "%llu", (unsigned long long)l->memory_high);
		rc = cgroup_limit(dirfd, "memory.high", text, PROTO_CTL_MEMORY, skipped, cause);
	}
	if (rc == 0 && l->memory_max != 0) {
		snprintf(text, sizeof text, "%llu", (unsigned long long)l->memory_max);
		rc = cgroup_limit(dirfd, "memory.max", text, PROTO_CTL_MEMORY, skipped, cause);
		if (rc == 0 && (*skipped & PROTO_CTL_MEMORY) == 0)
			rc = cgroup_limit(dirfd, "memory.oom.group", "1", PROTO_CTL_MEMORY, skipped,
			                  cause);
	}
	if (rc == 0 && l->cpu_max != 0) {
		/* N% of one CPU: N ms of CPU time in each 100 ms period */
		snprintf(text, sizeof text, "%llu 100000", (unsigned long long)l->cpu_max * 1000);
		rc = cgroup_limit(dirfd, "cpu.max", text, PROTO_CTL_CPU, skipped, cause);
	}
	if (rc == 0 && l->tasks_max != 0) {
		snprintf(text, sizeof text, "%llu", (unsigned long long)l->tasks_max);
		rc = cgroup_limit(dirfd, "pids.max", text, PROTO_CTL_PIDS, skipped, cause);
	}
	if (rc == 0 && l->io_weight != 0) {
		snprintf(text, sizeof text, "default %llu", (unsigned long long)l->io_weight);
		rc = cgroup_limit(dirfd, "io.weight", text, PROTO_CTL_IO, skipped, cause);
	}
	return rc;
}

/* The number after "key " on a line of a flat-keyed cgroup file, or -1. */
static int64_t
cgroup_keyed(const char *text, const char *key)
{
	const char *p = text;
	size_t klen = strlen(key);
	long long v;
	char *end;

	while (p != NULL && *p != '\0') {
		if (strncmp(p, key, klen) == 0 && p[klen] == ' ') {
			errno = 0;
			v = strtoll(p + klen + 1, &end, 10);
			return errno == 0 && end != p + klen + 1 && v >= 0 ? (int64_t)v : -1;
		}
		p = strchr(p, '\n');
		if (p != NULL)
			p++;
	}
	return -1;
}

/* What the run in a cgroup used (see cgroup.h). */
void
cgroup_usage(int dirfd, struct proto_usage *u, int64_t *oom_kills)
{
	char *text, *end;
	long long v;

	u->cpu_usec = u->mem_peak = -1;
	*oom_kills = 0;
	if ((text = cgroup_read(dirfd, "cpu.stat", 4096)) != NULL) {
		u->cpu_usec = cgroup_keyed(text, "usage_usec");
		free(text);
	}
	if ((text = cgroup_read(dirfd, "memory.peak", 64)) != NULL) {
		errno = 0;
		v = strtoll(text, &end, 10);
		if (errno == 0 && end != text && v >= 0)
			u->mem_peak = (int64_t)v;
		free(text);
	}
	if ((text = cgroup_read(dirfd, "memory.events", 4096)) != NULL) {
		if ((*oom_kills = cgroup_keyed(text, "oom_kill")) < 0)
			*oom_kills = 0;
		free(text);
	}
}

/* A small file's text (caller frees), or NULL with errno. */
static char *
cgroup_read_path(const char *path)
{
	return cgroup_read(AT_FDCWD, path, 1 << 20);
}

/* Wait until the cgroup at dirfd is empty, saying so every 5 s while it is not. */
static void
cgroup_wait_empty(int dirfd, const char *what)
{
	int waited_ms = 0, populated;

	while ((populated = cgroup_populated(dirfd)) == 1) {
		if (waited_ms > 0 && waited_ms % 5000 == 0)
			log_warnx("cgroups: %s is still not empty after %d s (a process in "
			          "uninterruptible sleep?): waiting",
			          what, waited_ms / 1000);
		usleep(10000);
		waited_ms += 10;
	}
	if (populated < 0)
		log_warn("cgroups: cannot read %s/cgroup.events", what);
}

/* cgroup_locate on this process's own /proc files. */
static char *
cgroup_locate_self(const char *name, char **cause)
{
	char *mi = cgroup_read_path("/proc/self/mountinfo");
	char *pc = cgroup_read_path("/proc/self/cgroup");
	char *dir = cgroup_locate(mi, pc, name, cause);

	free(mi);
	free(pc);
	return dir;
}

/* How often setup starts over when the folder vanished under it (an older supervisor). */
#define CGROUP_SETUP_TRIES 20

/*
 * One attempt of cgroup_setup: the folder's descriptor, or -1 with *cause and *vanished: 1
 * when the folder or its leaf was removed meanwhile (ENOENT, ENODEV: an older incarnation's
 * supervisor, leaving, removed them), so that the caller tries again; 2 when another worker
 * is still in the leaf.
 */
static int
cgroup_setup_once(const char *path, char **cause, int *vanished)
{
	char pid[32];
	pid_t mine[2] = {getpid(), getppid()}, foreign = 0;
	int fd = -1, leaf = -1, i;

	*vanished = 0;
	if (mkdir(path, 0755) != 0 && errno != EEXIST) {
		xasprintf(cause,
		          "cannot create %s: %s (is the cgroup delegated to this user? "
		          "under systemd: Delegate=yes)",
		          path, strerror(errno));
		return -1;
	}
	if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 || cgroup_populated(fd) < 0) {
		*vanished = errno == ENOENT || errno == ENODEV;
		xasprintf(cause, "%s is not a cgroup v2: %s", path, strerror(errno));
		goto fail;
	}
	if ((mkdirat(fd, CGROUP_DAEMON_LEAF, 0755) != 0 && errno != EEXIST) ||
	    (leaf = openat(fd, CGROUP_DAEMON_LEAF, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		*vanished = errno == ENOENT || errno == ENODEV;
		xasprintf(cause, "cannot create %s/%s: %s", path, CGROUP_DAEMON_LEAF,
		          strerror(errno));
		goto fail;
	}
	/* A worker that is still going away (its supervisor kills its runs) gets 10 s. */
	for (i = 0; i < 1000 && (foreign = cgroup_foreign_pid(leaf, mine, 2)) != 0; i++)
		usleep(10000);
	if (foreign != 0) {
		xasprintf(cause,
		          "another worker (pid %ld) runs with this node_id and state_dir (it is in "
		          "%s/%s)",
		          (long)foreign, path, CGROUP_DAEMON_LEAF);
		*vanished = 2;
		goto fail;
	}
	/*
	 * Once main and the supervisor are in the leaf, neither the leaf (populated) nor the
	 * folder (not empty) can be removed by anyone: a move that works is for good.
	 */
	snprintf(pid, sizeof pid, "%ld", (long)mine[1]);
	if (cgroup_write(leaf, "cgroup.procs", pid) != 0 ||
	    cgroup_write(leaf, "cgroup.procs", "0") != 0) {
		*vanished = errno == ENOENT || errno == ENODEV;
		xasprintf(cause, "cannot move the worker into %s/%s: %s", path, CGROUP_DAEMON_LEAF,
		          strerror(errno));
		goto fail;
	}
	close(leaf);
	return fd;

fail:
	if (leaf >= 0)
		close(leaf);
	if (fd >= 0)
		close(fd);
	return -1;
}

/*
 * Set up the worker's folder: <mount><the cgroup the worker started in>/<name>, with the
 * leaf CGROUP_DAEMON_LEAF holding main (our parent) and the supervisor, since cgroup v2
 * lets a cgroup that hands controllers down to children hold no process itself. Returns
 * the folder's descriptor and its path in *dir, or -1 with *cause and *usable: the host's
 * cgroup v2 works, the folder kept vanishing or another worker is in it, which is no
 * reason to fall back to process groups. A folder that vanishes meanwhile (the supervisor
 * of an older incarnation, leaving, removed what it left empty) is made again.
 */
int
cgroup_setup(const char *name, char **dir, char **cause, int *usable)
{
	char *base, *path;
	int fd = -1, vanished = 1, i;

	*dir = NULL;
	*cause = NULL;
	*usable = 0;
	if ((base = cgroup_locate_self(name, cause)) == NULL)
		return -1;
	xasprintf(&path, "%s/%s", base, name);
	free(base);
	for (i = 0; fd < 0 && vanished == 1 && i < CGROUP_SETUP_TRIES; i++) {
		if (i > 0) {
			log_info("cgroups: %s (an older supervisor removed it): making it again",
			         *cause);
			free(*cause);
			*cause = NULL;
			usleep(10000);
		}
		fd = cgroup_setup_once(path, cause, &vanished);
	}
	if (fd < 0) {
		*usable = vanished != 0;
		free(path);
		return -1;
	}
	*dir = path;
	return fd;
}

/*
 * Kill what is left in the run cgroups of a previous supervisor or worker under the folder
 * at dirfd (path dir), wait until each is empty, and remove it. The number removed.
 */
int
cgroup_clean_stale(int dirfd, const char *dir, void (*gone)(unsigned run, void *arg), void *arg)
{
	DIR *d;
	struct dirent *de;
	char *what, *end;
	unsigned long run;
	int fd, dupfd, held, n = 0;

	if ((dupfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    (d = fdopendir(dupfd)) == NULL) {
		if (dupfd >= 0)
			close(dupfd);
		log_warn("cgroups: cannot list %s", dir);
		return 0;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_type != DT_DIR || strncmp(de->d_name, "run-", 4) != 0)
			continue;
		if ((fd = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
			continue;
		xasprintf(&what, "%s/%s", dir, de->d_name);
		if ((held = cgroup_populated(fd) == 1)) {
			log_warnx("cgroups: %s holds processes of a previous run: killing them",
			          what);
			if (cgroup_kill(fd) != 0)
				log_warn("cgroups: cannot kill the processes of %s", what);
		}
		cgroup_wait_empty(fd, what);
		close(fd);
		errno = 0;
		run = strtoul(de->d_name + 4, &end, 10);
		if (held && gone != NULL && errno == 0 && end != de->d_name + 4 && *end == '\0' &&
		    run <= UINT32_MAX)
			gone((unsigned)run, arg);
		if (cgroup_remove(dirfd, de->d_name) != 0)
			log_warn("cgroups: cannot remove %s", what);
		else
			n++;
		free(what);
	}
	closedir(d);
	return n;
}

/*
 * What `check` shows: whether this process could give each run a cgroup under the
 * folder name, 0 with *where (the folder and the controllers it would have), or -1 with
 * *cause. Reads only; creates nothing.
 */
int
cgroup_probe(const char *name, char **where, unsigned *controllers, char **cause)
{
	char *text, *path = NULL, *ctl = NULL, *nl;
	int rc = -1;

	*where = *cause = NULL;
	*controllers = 0;
	if ((path = cgroup_locate_self(name, cause)) != NULL) {
		if (access(path, W_OK) != 0)
			xasprintf(cause, "%s is not writable (under systemd: Delegate=yes)", path);
		else {
			xasprintf(&text, "%s/cgroup.controllers", path);
			ctl = cgroup_read_path(text);
			free(text);
			if (ctl != NULL && (nl = strchr(ctl, '\n')) != NULL)
				*nl = '\0';
			if (ctl != NULL)
				*controllers = cgroup_controller_bits(ctl);
			xasprintf(where, "%s/%s (controllers: %s)", path, name,
			          ctl == NULL || ctl[0] == '\0' ? "none" : ctl);
			rc = 0;
		}
	}
	free(ctl);
	free(path);
	return rc;
}

/*
 * At the supervisor's end: move main (if it is still our parent) and the supervisor back
 * to the cgroup the worker started in and remove the worker's folder, which goes only if
 * no run cgroup is left in it. Where that is refused (controllers enabled there), the
 * folder stays; the next start uses it again. When main is gone (killed), a new worker may
 * be setting the folder up already: it is left as it is, for that one or the next.
 */
void
cgroup_teardown(int dirfd, const char *name, pid_t main_pid)
{
	char pid[32];
	int base;

	if ((base = openat(dirfd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return;
	snprintf(pid, sizeof pid, "%ld", (long)main_pid);
	if (getppid() != main_pid)
		cgroup_write(base, "cgroup.procs", "0");
	else if (cgroup_write(base, "cgroup.procs", pid) == 0 &&
	         cgroup_write(base, "cgroup.procs", "0") == 0 &&
	         unlinkat(dirfd, CGROUP_DAEMON_LEAF, AT_REMOVEDIR) == 0)
		unlinkat(base, name, AT_REMOVEDIR);
	close(base);
}

/*
 * fork(), or with a cgroup clone3() straight into it (CLONE_INTO_CGROUP, Linux 5.7), so
 * that the child is in its cgroup from its first instruction; *joined says if it is. The
 * child of a plain fork joins the cgroup itself before anything else (child.c).
 */
pid_t
cgroup_spawn(int cgfd, int *joined)
{
	struct clone_args args;
	long pid;

	*joined = 0;
	if (cgfd < 0)
		return fork();
	memset(&args, 0, sizeof args);
	args.flags = CLONE_INTO_CGROUP;
	args.exit_signal = SIGCHLD;
	args.cgroup = (uint64_t)cgfd;
	pid = syscall(SYS_clone3, &args, sizeof args);
	if (pid >= 0) {
		*joined = 1;
		return (pid_t)pid;
	}
	if (errno == EAGAIN || errno == ENOMEM)
		return -1;
	return fork(); /* no clone3 (ENOSYS, or a seccomp filter), or no CLONE_INTO_CGROUP */
}
