/* SPDX-License-Identifier: Apache-2.0 */
/* test_cgroup.c: the cgroup v2 files the supervisor reads and writes, on a plain directory. */

#include <sys/stat.h>
#include <sys/wait.h>

#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cgroup.h"

/* Write a file under dir. */
static void
put(const char *dir, const char *file, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, file);
	assert_non_null(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
}

/* A file's text under dir (static buffer). */
static const char *
get(const char *dir, const char *file)
{
	static char buf[512];
	char path[512];
	FILE *f;
	size_t n;

	snprintf(path, sizeof path, "%s/%s", dir, file);
	assert_non_null(f = fopen(path, "r"));
	n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* A child that waits to be signalled. */
static pid_t
sleeper(void)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		pause();
		_exit(0);
	}
	return pid;
}

/* cgroup_locate, with its result freed; NULL (and *why set) when it finds nothing. */
static char *
locate(const char *mountinfo, const char *proc_cgroup, const char *name, char *why, size_t n)
{
	char *cause = NULL, *dir = cgroup_locate(mountinfo, proc_cgroup, name, &cause);

	why[0] = '\0';
	if (cause != NULL)
		snprintf(why, n, "%s", cause);
	free(cause);
	return dir;
}

/* The cgroup v2 mount is found among other mounts, with optional fields and escapes. */
static void
test_locate_mount(void **state)
{
	const char *mi = "22 1 0:21 / /sys rw - sysfs sysfs rw\n"
	                 "30 22 0:26 / /sys/fs/cgroup ro - tmpfs tmpfs ro\n"
	                 "40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
	const char *esc = "40 30 0:37 / /cg\\040two rw shared:9 - cgroup2 none rw\n";
	char why[256], *d;

	(void)state;
	d = locate(mi, "0::/\n", "leasekeeper-n-1", why, sizeof why);
	assert_string_equal(d, "/sys/fs/cgroup/unified");
	free(d);
	d = locate(esc, "0::/\n", "leasekeeper-n-1", why, sizeof why); /* an escaped space */
	assert_string_equal(d, "/cg two");
	free(d);
	assert_null(locate("30 22 0:26 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw\n", "0::/\n",
	                   "leasekeeper-n-1", why, sizeof why));
	assert_non_null(strstr(why, "no cgroup v2 file system is mounted"));
	assert_null(locate("", "0::/\n", "leasekeeper-n-1", why, sizeof why));
	assert_null(locate(NULL, "0::/\n", "leasekeeper-n-1", why, sizeof why));
	assert_non_null(strstr(why, "no cgroup v2 file system is mounted"));
}

/* The worker's own cgroup is the "0::" line; in its daemon leaf, the leaf's grandparent. */
static void
test_locate_own_and_base(void **state)
{
	const char *mi = "40 30 0:37 / /cg rw - cgroup2 cgroup2 rw\n";
	const char *name = "leasekeeper-n-1";
	char why[256], *d;

	(void)state;
	d = locate(mi, "12:pids:/x\n1:name=systemd:/y\n0::/system.slice/lk.service\n", name, why,
	           sizeof why);
	assert_string_equal(d, "/cg/system.slice/lk.service");
	free(d);
	assert_null(locate(mi, "4:memory:/a\n", name, why, sizeof why));
	assert_non_null(strstr(why, "in no cgroup v2"));
	assert_null(locate(mi, NULL, name, why, sizeof why));
	/* a supervisor started again by the same main finds itself in the daemon leaf */
	d = locate(mi, "0::/system.slice/lk.service/leasekeeper-n-1/daemon\n", name, why,
	           sizeof why);
	assert_string_equal(d, "/cg/system.slice/lk.service");
	free(d);
	d = locate(mi, "0::/leasekeeper-n-1/daemon\n", name, why, sizeof why);
	assert_string_equal(d, "/cg");
	free(d);
	d = locate(mi, "0::/other/daemon\n", name, why, sizeof why);
	assert_string_equal(d, "/cg/other/daemon");
	free(d);
}

static void
test_worker_name(void **state)
{
	char *a = cgroup_worker_name("alpha", "/var/lib/leasekeeper");
	char *b = cgroup_worker_name("alpha", "/var/lib/leasekeeper");
	char *c = cgroup_worker_name("alpha", "/tmp/other");

	(void)state;
	assert_string_equal(a, b);
	assert_string_not_equal(a, c);
	assert_int_equal(strncmp(a, "leasekeeper-alpha-", 18), 0);
	assert_int_equal(strlen(a), 18 + 8);
	free(a);
	free(b);
	free(c);
}

/* A temp directory laid out like a run's cgroup. */
static char *
fake_cgroup(int *fd)
{
	static char dir[] = "/tmp/lk-test-cgroup-XXXXXX";

	strcpy(dir, "/tmp/lk-test-cgroup-XXXXXX");
	assert_non_null(mkdtemp(dir));
	put(dir, "cgroup.events", "populated 1\nfrozen 0\n");
	put(dir, "cgroup.procs", "");
	*fd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(*fd >= 0);
	return dir;
}

static void
remove_fake(const char *dir)
{
	char cmd[600];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static void
test_populated_and_write(void **state)
{
	int fd;
	char *dir = fake_cgroup(&fd);

	(void)state;
	assert_int_equal(cgroup_populated(fd), 1);
	put(dir, "cgroup.events", "frozen 0\npopulated 0\n");
	assert_int_equal(cgroup_populated(fd), 0);
	put(dir, "cgroup.events", "frozen 0\n");
	assert_int_equal(cgroup_populated(fd), -1);
	assert_int_equal(cgroup_write(fd, "cgroup.procs", "123"), 0);
	assert_string_equal(get(dir, "cgroup.procs"), "123");
	/* never creates a file: a cgroup has the files it has */
	assert_int_equal(cgroup_write(fd, "memory.max", "1"), -1);
	close(fd);
	remove_fake(dir);
}

static void
test_signal_and_kill(void **state)
{
	char text[128], sub[600];
	pid_t a = sleeper(), b = sleeper(), c = sleeper(), mine[1];
	int fd, status;
	char *dir = fake_cgroup(&fd);

	(void)state;
	snprintf(text, sizeof text, "%ld\n%ld\n", (long)a, (long)b);
	put(dir, "cgroup.procs", text);
	mine[0] = a;
	assert_int_equal(cgroup_foreign_pid(fd, mine, 1), b);
	mine[0] = b;
	assert_int_equal(cgroup_foreign_pid(fd, mine, 0), a);
	/* the last of mine is main: its other children (the witness) are not foreign */
	mine[0] = getpid();
	assert_int_equal(cgroup_foreign_pid(fd, mine, 1), 0);

	/* every process listed gets the signal */
	assert_int_equal(cgroup_signal(fd, SIGTERM), 2);
	assert_int_equal(waitpid(a, &status, 0), a);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
	assert_int_equal(waitpid(b, &status, 0), b);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);

	/* cgroup.kill is written when there is one */
	put(dir, "cgroup.kill", "");
	assert_int_equal(cgroup_kill(fd), 0);
	assert_string_equal(get(dir, "cgroup.kill"), "1");

	/* without it (before Linux 5.14): SIGKILL to each process, here and below */
	snprintf(sub, sizeof sub, "%s/cgroup.kill", dir);
	unlink(sub);
	snprintf(sub, sizeof sub, "%s/child", dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	snprintf(text, sizeof text, "%ld\n", (long)c);
	put(sub, "cgroup.procs", text);
	put(dir, "cgroup.procs", "");
	assert_int_equal(cgroup_kill(fd), 0);
	assert_int_equal(waitpid(c, &status, 0), c);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	close(fd);
	remove_fake(dir);
}

static void
test_remove(void **state)
{
	char dir[] = "/tmp/lk-test-cgroup-XXXXXX", path[600];
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	snprintf(path, sizeof path, "%s/run-1", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof path, "%s/run-1/nested", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof path, "%s/run-1/nested/deeper", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	/* a cgroup with cgroups below it goes, deepest first */
	assert_int_equal(cgroup_remove(fd, "run-1"), 0);
	snprintf(path, sizeof path, "%s/run-1", dir);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(cgroup_remove(fd, "run-2"), 0); /* already gone */
	close(fd);
	assert_int_equal(rmdir(dir), 0);
}

/* Each limit goes to its file before the run starts; one without its file is left out. */
static void
test_set_limits(void **state)
{
	struct proto_limits l = {512ULL << 20, 384ULL << 20, 150, 64, 50};
	unsigned skipped;
	char *cause = NULL;
	int fd;
	char *dir = fake_cgroup(&fd);

	(void)state;
	/* every controller delegated: each file written as the kernel reads it (a plain file
	 * is not truncated by a write, as a cgroup's is not: they start empty here) */
	put(dir, "memory.max", "");
	put(dir, "memory.high", "");
	put(dir, "memory.oom.group", "");
	put(dir, "cpu.max", "");
	put(dir, "pids.max", "");
	put(dir, "io.weight", "");
	assert_int_equal(cgroup_set_limits(fd, &l, &skipped, &cause), 0);
	assert_null(cause);
	assert_int_equal(skipped, 0);
	assert_string_equal(get(dir, "memory.max"), "536870912");
	assert_string_equal(get(dir, "memory.high"), "402653184");
	assert_string_equal(get(dir, "memory.oom.group"), "1"); /* the OOM killer ends all of it */
	assert_string_equal(get(dir, "cpu.max"), "150000 100000");
	assert_string_equal(get(dir, "pids.max"), "64");
	assert_string_equal(get(dir, "io.weight"), "default 50");

	/* no limits: nothing written */
	put(dir, "pids.max", "max\n");
	memset(&l, 0, sizeof l);
	assert_int_equal(cgroup_set_limits(fd, &l, &skipped, &cause), 0);
	assert_string_equal(get(dir, "pids.max"), "max\n");
	close(fd);
	remove_fake(dir);

	/* no controller but pids: the others are left out, and said to be */
	dir = fake_cgroup(&fd);
	put(dir, "pids.max", "");
	l = (struct proto_limits){1ULL << 30, 0, 50, 32, 10};
	assert_int_equal(cgroup_set_limits(fd, &l, &skipped, &cause), 0);
	assert_int_equal(skipped, PROTO_CTL_MEMORY | PROTO_CTL_CPU | PROTO_CTL_IO);
	assert_string_equal(get(dir, "pids.max"), "32");
	close(fd);
	remove_fake(dir);

	/* a write the kernel refuses fails the start, naming the file */
	dir = fake_cgroup(&fd);
	snprintf(cause = malloc(600), 600, "%s/pids.max", dir);
	assert_int_equal(mkdir(cause, 0700), 0); /* open(O_WRONLY) fails: EISDIR */
	free(cause);
	cause = NULL;
	l = (struct proto_limits){0, 0, 0, 32, 0};
	assert_int_equal(cgroup_set_limits(fd, &l, &skipped, &cause), -1);
	assert_non_null(strstr(cause, "cannot write 32 to pids.max"));
	free(cause);
	close(fd);
	remove_fake(dir);
}

/* Controllers are enabled in the folder's parent, then in the folder, where they exist. */
static void
test_enable_controllers(void **state)
{
	char sub[600];
	int fd, child;
	char *dir = fake_cgroup(&fd);

	(void)state;
	assert_int_equal(cgroup_controller_bits("cpuset cpu io memory hugetlb pids rdma misc\n"),
	                 PROTO_CTL_CPU | PROTO_CTL_IO | PROTO_CTL_MEMORY | PROTO_CTL_PIDS);
	assert_int_equal(cgroup_controller_bits("cpuset hugetlb\n"), 0);
	assert_int_equal(cgroup_controller_bits(""), 0);
	put(dir, "cgroup.controllers", "cpuset cpu memory pids\n");
	put(dir, "cgroup.subtree_control", "");
	snprintf(sub, sizeof sub, "%s/worker", dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	put(sub, "cgroup.controllers", "memory pids\n"); /* as the parent delegates them */
	put(sub, "cgroup.subtree_control", "");
	assert_true((child = openat(fd, "worker", O_RDONLY | O_DIRECTORY)) >= 0);
	assert_int_equal(cgroup_enable_controllers(child), PROTO_CTL_MEMORY | PROTO_CTL_PIDS);
	/* each written alone (a plain file shows the last write over the earlier ones) */
	assert_int_equal(strncmp(get(dir, "cgroup.subtree_control"), "+pids", 5), 0);
	assert_int_equal(strncmp(get(sub, "cgroup.subtree_control"), "+pids", 5), 0);
	/* a host that delegates none, as this hybrid-layout one: nothing enabled */
	put(sub, "cgroup.controllers", "\n");
	assert_int_equal(cgroup_enable_controllers(child), 0);
	close(child);
	close(fd);
	remove_fake(dir);
}

/* What a run used: cpu.stat always, memory.peak and memory.events with the memory controller. */
static void
test_usage(void **state)
{
	struct proto_usage u;
	int64_t ooms;
	int fd;
	char *dir = fake_cgroup(&fd);

	(void)state;
	/* no controller at all: cpu.stat only (cgroup v2 core) */
	put(dir, "cpu.stat", "usage_usec 1234567\nuser_usec 1000000\nsystem_usec 234567\n");
	cgroup_usage(fd, &u, &ooms);
	assert_int_equal(u.cpu_usec, 1234567);
	assert_int_equal(u.mem_peak, -1);
	assert_int_equal(ooms, 0);
	/* the memory controller: peak, and OOM kills counted (not oom_group_kill) */
	put(dir, "memory.peak", "52428800\n");
	put(dir, "memory.events",
	    "low 0\nhigh 3\nmax 9\noom 1\noom_kill 2\n"
	    "oom_group_kill 1\n");
	cgroup_usage(fd, &u, &ooms);
	assert_int_equal(u.mem_peak, 52428800);
	assert_int_equal(ooms, 2);
	put(dir, "memory.events", "low 0\noom_group_kill 1\n");
	cgroup_usage(fd, &u, &ooms);
	assert_int_equal(ooms, 0);
	/* garbage reads as not known */
	put(dir, "cpu.stat", "usage_usec x\n");
	put(dir, "memory.peak", "max\n");
	cgroup_usage(fd, &u, &ooms);
	assert_int_equal(u.cpu_usec, -1);
	assert_int_equal(u.mem_peak, -1);
	close(fd);
	remove_fake(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_locate_mount),    cmocka_unit_test(test_locate_own_and_base),
	    cmocka_unit_test(test_worker_name),     cmocka_unit_test(test_populated_and_write),
	    cmocka_unit_test(test_signal_and_kill), cmocka_unit_test(test_remove),
	    cmocka_unit_test(test_set_limits),      cmocka_unit_test(test_enable_controllers),
	    cmocka_unit_test(test_usage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
