/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: a job's child process, between the supervisor's fork and exec. */
/*
 * child.c: a job's child, from the supervisor's fork to the exec of the job's command.
 * Whatever goes wrong here is written to the error pipe for the supervisor to report, and
 * the child exits 127.
 */

#include <sys/prctl.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "child.h"
#include "leasekeeper.h"

/* In the child: report why it cannot exec, and exit. */
static void __attribute__((noreturn)) child_fail(int errfd, const char *what, const char *arg)
{
	char buf[512];
	int n;

	n = snprintf(buf, sizeof buf, "%s %s: %s", what, arg, strerror(errno));
	if (n > 0 && write(errfd, buf, (size_t)n) < 0)
		_exit(126);
	_exit(127);
}

/* Mark every descriptor from lowfd on close-on-exec. */
static void
child_cloexec_from(int lowfd)
{
	long fd, max;

	if (close_range((unsigned)lowfd, ~0U, CLOSE_RANGE_CLOEXEC) == 0)
		return;
	max = sysconf(_SC_OPEN_MAX);
	for (fd = lowfd; fd < (max > 0 ? max : 1024); fd++)
		fcntl((int)fd, F_SETFD, FD_CLOEXEC);
}

/*
 * Set the job's environment. A job starts from a clean one: PATH, then HOME, USER, LOGNAME
 * and SHELL from pw (the user it runs as; NULL when that uid has no entry), then the spec's
 * entries in order (LANG, TZ, pass_env, env lines, LEASEKEEPER_*), a later one replacing an
 * earlier. With inherit_env (exec) the spec's entries are added to the supervisor's own.
 */
static void
child_environment(const struct proto_run *spec, const struct passwd *pw, int errfd)
{
	size_t i;

	if (!spec->inherit_env && (clearenv() != 0 || setenv("PATH", LK_JOB_PATH, 1) != 0))
		child_fail(errfd, "set", "the environment");
	if (pw != NULL && (!spec->inherit_env || spec->user != NULL) &&
	    (setenv("HOME", pw->pw_dir, 1) != 0 || setenv("USER", pw->pw_name, 1) != 0 ||
	     setenv("LOGNAME", pw->pw_name, 1) != 0 ||
	     setenv("SHELL", pw->pw_shell[0] != '\0' ? pw->pw_shell : "/bin/sh", 1) != 0))
		child_fail(errfd, "set", "the environment");
	for (i = 0; spec->env != NULL && spec->env[i] != NULL; i++) {
		if (putenv(spec->env[i]) != 0)
			child_fail(errfd, "putenv", spec->env[i]);
	}
}

/* Become the job: session, signals, environment, output, credentials, directory, exec. */
void
child_exec(const struct proto_run *spec, pid_t svpid, int errfd, int outfd, int cgfd)
{
	const char *workdir = spec->workdir, *user = spec->user, *group = spec->group;
	char **argv = spec->argv, *home = NULL;
	struct passwd *pw;
	struct group *gr;
	sigset_t all;
	int sig, fd;
	uid_t uid = 0;
	gid_t gid = 0;

	/* Into the run's cgroup before anything else: nothing may start outside it. */
	if (cgfd >= 0 && cgroup_write(cgfd, "cgroup.procs", "0") != 0)
		child_fail(errfd, "join", "the run's cgroup");
	setsid();
	for (sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);

	if (user != NULL && (pw = getpwnam(user)) == NULL) {
		errno = ENOENT;
		child_fail(errfd, "unknown user", user);
	} else if (user == NULL)
		pw = getpwuid(getuid());
	if (user != NULL) {
		/* later lookups (groups) may reuse getpwnam's buffer */
		uid = pw->pw_uid;
		gid = pw->pw_gid;
		if ((home = strdup(pw->pw_dir)) == NULL)
			child_fail(errfd, "copy the home directory of", user);
	}
	child_environment(spec, pw, errfd);
	if (outfd >= 0) {
		if ((fd = open("/dev/null", O_RDONLY)) < 0)
			child_fail(errfd, "open", "/dev/null");
		dup2(fd, STDIN_FILENO);
		dup2(outfd, STDOUT_FILENO);
		dup2(outfd, STDERR_FILENO);
	}
	if (spec->umask >= 0)
		umask((mode_t)spec->umask);
	if (user != NULL) {
		if (group != NULL) {
			if ((gr = getgrnam(group)) == NULL) {
				errno = ENOENT;
				child_fail(errfd, "unknown group", group);
			}
			gid = gr->gr_gid;
		}
		if (getuid() == 0 && initgroups(user, gid) != 0)
			child_fail(errfd, "initgroups", user);
		if (setgid(gid) != 0)
			child_fail(errfd, "setgid for", user);
		if (setuid(uid) != 0)
			child_fail(errfd, "setuid to", user);
	} else if (group != NULL) {
		if ((gr = getgrnam(group)) == NULL) {
			errno = ENOENT;
			child_fail(errfd, "unknown group", group);
		}
		if (setgid(gr->gr_gid) != 0)
			child_fail(errfd, "setgid to", group);
	}
	if (workdir != NULL && chdir(workdir) != 0)
		child_fail(errfd, "chdir", workdir);
	if (workdir == NULL && user != NULL && chdir(home) != 0 && chdir("/") != 0)
		child_fail(errfd, "chdir", "/");
	child_cloexec_from(STDERR_FILENO + 1);
	/*
	 * Die with the supervisor. Set last: changing credentials clears it. If the
	 * supervisor is already gone, so is the point of running.
	 */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != svpid)
		_exit(127);
	/* searched in the job's PATH: the environment is the job's by now */
	execvp(argv[0], argv);
	child_fail(errfd, "exec", argv[0]);
}
