/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the supervisor process. */
/*
 * supervisor.c: the supervisor process's loop: runs jobs and enforces lease deadlines.
 *
 * The supervisor is forked by the main process and is the parent of every job. It never
 * talks to ZooKeeper and never waits on anything but its own events. Main tells it the
 * lease deadline of each session epoch; the supervisor sends SIGTERM to every job of
 * that epoch at deadline - kill_grace and SIGKILL at the deadline, on its own clock, so a
 * main process that is stopped, swapped out or stuck cannot keep a job alive past the
 * time its session could expire. If main goes away (EOF on the socket) every job is
 * killed at once. Jobs get PR_SET_PDEATHSIG(SIGKILL) in case the supervisor itself dies,
 * and main kills their process groups too when it sees the supervisor go.
 *
 * A job is its own session and process group; stopping it means the whole group. A job
 * is over only when its group is empty: if the leader exits and leaves processes behind,
 * they are sent SIGTERM and then SIGKILL, and the supervisor is a child subreaper so
 * that it reaps them. Only then does main hear that the job exited and release its lease.
 *
 * Deadlines are on CLOCK_BOOTTIME and the timer is a timerfd on that clock with an
 * absolute expiry, so a suspend does not postpone a kill. A job's child between fork and
 * exec is child.c, its log file joblog.c; main's handle on this process is svlink.c.
 */

#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "cgroup.h"
#include "clock.h"
#include "compat.h"
#include "child.h"
#include "joblog.h"
#include "log.h"
#include "proto.h"
#include "sabotage.h"
#include "supervisor.h"
#include "svrun.h"
#include "svstamp.h"
#include "xmalloc.h"

#define SV_OUTPUT_BURST (64 * 1024)

/* One job the supervisor runs. */
struct sjob {
	struct sv *sv;
	uint32_t id;
	uint64_t epoch;
	char *name;
	char *run_id; /* as main named the run (its log lines' run=), or its number */
	pid_t pid;    /* leader, and process group id */
	struct svrun run;

	int errfd; /* exec error pipe, until exec or failure */
	struct event *errev;
	int outfd; /* output pipe, when logging to a file */
	struct event *outev;
	struct joblog log;
	char *tail;            /* the output's last tail_len bytes, for the run record */
	size_t tail_len;       /* at most tail_max */
	size_t tail_max;       /* 0: none kept */
	int tail_cut;          /* output before the tail was dropped */
	uint64_t out_off;      /* bytes of output so far (PROTO_OUTPUT's offsets) */
	int64_t spawn_ms;      /* wall: when the run's first process was made (its start) */
	uint64_t own_deadline; /* a hook: its own deadline (hook_timeout), not its epoch's */

	int status; /* of the leader, once reaped */
	/* When exec, the first signal, SIGKILL and the end happened, on our clock, and why. */
	struct proto_usage stamp;

	int cgfd;        /* the run's cgroup (-1: process group only) */
	int cgwd;        /* its cgroup.events inotify watch, or -1 */
	char cgname[32]; /* run-<id>, under the worker's folder */

	TAILQ_ENTRY(sjob) entry;
};

/* The deadline of one session epoch. */
struct sepoch {
	uint64_t epoch;
	uint64_t deadline_ns;
	TAILQ_ENTRY(sepoch) entry;
};

struct sv {
	struct event_base *base;
	struct proto_conn *conn;
	int timerfd;
	struct event *timerev;
	int sigfd;
	struct event *sigchld;
	uint64_t ended_epoch; /* every epoch up to this one is over */
	int exiting;
	enum proto_containment containment;
	unsigned controllers; /* enum proto_controller bits the run cgroups get */
	int cgfd;             /* the worker's cgroup folder, or -1 */
	char *cgdir;          /* its path */
	int inofd;            /* inotify: the run cgroups' cgroup.events */
	pid_t main_pid;
	const char *cgname; /* the folder's name */
	struct event *inoev;
	TAILQ_HEAD(, sjob) jobs;
	TAILQ_HEAD(, sepoch) epochs;
};

static void sv_schedule(struct sv *);

/* The deadline known for an epoch, or 0 if none (or if it ended). */
static uint64_t
sv_deadline(struct sv *sv, uint64_t epoch)
{
	struct sepoch *e;

	if (epoch <= sv->ended_epoch)
		return 0;
	TAILQ_FOREACH(e, &sv->epochs, entry) {
		if (e->epoch == epoch)
			return e->deadline_ns;
	}
	return 0;
}

/*
 * The deadline of a job's run: its epoch's, or for a hook, which runs outside any lease,
 * its own (hook_timeout and kill_grace after its start, whatever becomes of the session).
 */
static uint64_t
sv_job_deadline(struct sv *sv, const struct sjob *j)
{
	return j->own_deadline != 0 ? j->own_deadline : sv_deadline(sv, j->epoch);
}

/*
 * Send sig to a job's whole process group. Until the child's setsid() has run there is
 * no group yet: then the child alone is signalled (it has no children of its own yet).
 */
static void
sv_signal(struct sjob *j, int sig)
{
	if (j->cgfd >= 0) {
		/* Every process of the run's cgroup; SIGKILL all at once (cgroup.kill). */
		if ((sig == SIGKILL ? cgroup_kill(j->cgfd) : cgroup_signal(j->cgfd, sig)) < 0)
			log_warn("supervisor: cannot signal the cgroup %s of job %s", j->cgname,
			         j->name);
		/* A child that forked without a cgroup may not have joined it yet. */
		if (svrun_leader_alive(&j->run))
			kill(j->pid, sig);
		return;
	}
	if (kill(-j->pid, sig) == 0)
		return;
	if (errno == ESRCH && svrun_leader_alive(&j->run) && kill(j->pid, sig) == 0)
		return;
	if (errno != ESRCH)
		log_warn("supervisor: kill(-%ld, %d) for job %s", (long)j->pid, sig, j->name);
}

/* Keep the end of a run's output: the last tail_max bytes of everything written. */
static void
sv_tail_add(struct sjob *j, const char *buf, size_t n)
{
	if (j->tail_max == 0)
		return;
	if (n >= j->tail_max) {
		j->tail_cut |= n > j->tail_max || j->tail_len > 0;
		memcpy(j->tail, buf + (n - j->tail_max), j->tail_max);
		j->tail_len = j->tail_max;
		return;
	}
	if (j->tail_len + n > j->tail_max) {
		size_t drop = j->tail_len + n - j->tail_max;

		memmove(j->tail, j->tail + drop, j->tail_len - drop);
		j->tail_len -= drop;
		j->tail_cut = 1;
	}
	memcpy(j->tail + j->tail_len, buf, n);
	j->tail_len += n;
}

/*
 * Drain a job's output pipe into its log, at most SV_OUTPUT_BURST bytes per call so that
 * a chatty job cannot hold the loop (the deadline timer also has a higher priority).
 */
static void
sv_output_cb(int fd, short what, void *arg)
{
	struct sjob *j = arg;
	char buf[16384];
	ssize_t n;
	size_t done = 0;

	(void)what;
	while (done < SV_OUTPUT_BURST) {
		n = read(fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			event_del(j->outev);
			return;
		}
		joblog_write(&j->log, buf, (size_t)n);
		sv_tail_add(j, buf, (size_t)n);
		/* Kept output for followers (not a hook's), once the start was told: sv_job_step */
		if (j->tail_max > 0 && j->own_deadline == 0 && j->stamp.exec_ms != 0)
			proto_send_lossy(j->sv->conn, PROTO_OUTPUT, j->id, j->epoch,
			                 (int64_t)j->out_off, buf, (size_t)n);
		j->out_off += (uint64_t)n;
		done += (size_t)n;
	}
}

/* Free a job's resources. */
static void
sv_job_free(struct sv *sv, struct sjob *j)
{
	TAILQ_REMOVE(&sv->jobs, j, entry);
	free(j->run_id);
	if (j->outev != NULL) {
		sv_output_cb(j->outfd, EV_READ, j);
		event_free(j->outev);
	}
	if (j->outfd >= 0)
		close(j->outfd);
	if (j->errev != NULL)
		event_free(j->errev);
	if (j->errfd >= 0)
		close(j->errfd);
	if (j->cgwd >= 0)
		inotify_rm_watch(sv->inofd, j->cgwd);
	if (j->cgfd >= 0) {
		close(j->cgfd);
		if (cgroup_remove(sv->cgfd, j->cgname) != 0)
			log_warn("supervisor: cannot remove the cgroup %s/%s", sv->cgdir,
			         j->cgname);
	}
	joblog_close(&j->log);
	free(j->tail);
	free(j->name);
	free(j);
}

/* What a run's signals go to, for logs: "cgroup run-7" or "pgid 1234". */
static const char *
sv_target(const struct sjob *j, char *buf, size_t size)
{
	if (j->cgfd >= 0)
		snprintf(buf, size, "cgroup %s", j->cgname);
	else
		snprintf(buf, size, "pgid %ld", (long)j->pid);
	return buf;
}

/* Log a signal the run asked for, as the reason for it deserves, and send it. */
static void
sv_job_signal(struct sjob *j, int sig, enum svrun_why why, uint64_t deadline)
{
	char t[48];

	svstamp_signal(&j->stamp, sig, svstamp_why(why, j->own_deadline != 0), clock_wall_ms());

	switch (why) {
	case SVRUN_WHY_DEADLINE_NEAR:
		if (j->own_deadline != 0) {
			log_warnx("supervisor: the hook of job %s ran for its hook_timeout: "
			          "SIGTERM to %s",
			          j->name, sv_target(j, t, sizeof t));
			break;
		}
		log_warnx("supervisor: lease deadline of job %s is %s: SIGTERM to %s", j->name,
		          deadline == 0 ? "gone" : "near", sv_target(j, t, sizeof t));
		break;
	case SVRUN_WHY_DEADLINE_PASSED:
		if (j->own_deadline != 0) {
			log_warnx("supervisor: the hook of job %s did not stop after its "
			          "hook_timeout: SIGKILL "
			          "to %s",
			          j->name, sv_target(j, t, sizeof t));
			break;
		}
		log_warnx("supervisor: lease deadline of job %s passed: SIGKILL to %s", j->name,
		          sv_target(j, t, sizeof t));
		break;
	case SVRUN_WHY_GRACE_OVER:
		log_info("supervisor: job %s did not stop within its grace: SIGKILL to %s", j->name,
		         sv_target(j, t, sizeof t));
		break;
	case SVRUN_WHY_LEFTOVERS:
		log_info("supervisor: job %s (pid %ld) exited and left processes in its %s: "
		         "terminating them",
		         j->name, (long)j->pid, j->cgfd >= 0 ? "cgroup" : "group");
		break;
	case SVRUN_WHY_EPOCH:
		log_warnx("supervisor: session epoch %llu is over: SIGKILL to job %s (%s)",
		          (unsigned long long)j->epoch, j->name, sv_target(j, t, sizeof t));
		break;
	case SVRUN_WHY_STOP:
	case SVRUN_WHY_MAIN_GONE:
		break; /* logged once by the caller */
	}
#ifdef LEASEKEEPER_SABOTAGE
	if ((why == SVRUN_WHY_DEADLINE_NEAR || why == SVRUN_WHY_DEADLINE_PASSED) &&
	    sabotage_on("no-kill"))
		return; /* sabotage: the lease deadline kills nothing */
#endif
	sv_signal(j, sig);
}

/*
 * The run is over (its leader reaped, its cgroup or group empty): read what it used from
 * its cgroup before the cgroup goes, and tell main, with the usage as the payload. A run
 * that ended on its own after the OOM killer killed in its cgroup ended by OOM.
 */
static void
sv_job_exited(struct sv *sv, struct sjob *j)
{
	struct proto_usage u = j->stamp;
	struct proto_spec payload = {NULL, 0};
	enum proto_exit_reason reason = j->run.reason;
	int64_t ooms = 0;
	char what[64], used[96];

	if (j->cgfd >= 0)
		cgroup_usage(j->cgfd, &u, &ooms);
	/* Every process is gone: what is left in the pipe is the output's end. */
	if (j->outev != NULL)
		sv_output_cb(j->outfd, EV_READ, j);
	if (ooms > 0 && reason == PROTO_EXIT_NORMAL)
		reason = PROTO_EXIT_OOM;
	if (WIFEXITED(j->status))
		snprintf(what, sizeof what, "exited with status %d", WEXITSTATUS(j->status));
	else
		snprintf(what, sizeof what, "killed by signal %d", WTERMSIG(j->status));
	used[0] = '\0';
	if (u.cpu_usec >= 0)
		snprintf(used, sizeof used, ", cpu %.3f s", (double)u.cpu_usec / 1e6);
	if (u.mem_peak >= 0)
		snprintf(used + strlen(used), sizeof used - strlen(used), ", peak memory %.1f MiB",
		         (double)u.mem_peak / (1024.0 * 1024.0));
	log_info("supervisor: job %s (pid %ld) %s%s cause=%s run=%s", j->name, (long)j->pid, what,
	         used, proto_exit_reason_name(reason), j->run_id);
	if (j->own_deadline != 0) /* a hook's lines in the job's log say so */
		snprintf(what + strlen(what), sizeof what - strlen(what), " (hook)");
	joblog_note(&j->log, j->name, reason == PROTO_EXIT_OOM ? "killed by the OOM killer" : what);
	if (j->tail_max > 0)
		svstamp_output(j->tail, j->tail_len, j->tail_cut, &u);
	proto_usage_add(&payload, &u);
	if (sv->conn != NULL)
		proto_send(sv->conn, PROTO_EXITED, j->id, j->epoch, j->status, reason, payload.buf,
		           payload.len);
	proto_spec_free(&payload);
}

/*
 * Feed one event to a job's run and do what it says: signals, messages to main, and the
 * end of the job (freed, so j is gone when this returns 1). *wake, if given, is lowered
 * to the next time the run must be looked at. failure: why exec failed (SVRUN_EXEC_FAILED).
 */
static int
sv_job_step(struct sv *sv, struct sjob *j, struct svrun_input *in, const char *failure,
            uint64_t *wake)
{
	struct svrun_actions act;
	int i;

	in->deadline = sv_job_deadline(sv, j);
	svrun_step(&j->run, in, &act);
	for (i = 0; i < act.nsig; i++)
		sv_job_signal(j, act.sig[i], act.why[i], in->deadline);
	if (act.send_started) {
		j->stamp.exec_ms = j->spawn_ms; /* not when we heard of the exec: a busy host */
		log_info("supervisor: job %s started, pid %ld run=%s", j->name, (long)j->pid,
		         j->run_id);
		proto_send(sv->conn, PROTO_STARTED, j->id, j->epoch, j->pid, 0, NULL, 0);
		if (j->tail_max > 0 && j->own_deadline == 0 && j->tail_len > 0)
			proto_send(sv->conn, PROTO_OUTPUT, j->id, j->epoch,
			           (int64_t)(j->out_off - j->tail_len), 0, j->tail, j->tail_len);
	}
	if (act.send_start_failed) {
		log_debug("supervisor: job %s could not start: %s", j->name, failure);
		joblog_note(&j->log, j->name, failure);
		proto_send(sv->conn, PROTO_START_FAILED, j->id, j->epoch, 0, 0, failure,
		           strlen(failure));
	}
	if (wake != NULL && act.wake != 0 && (*wake == 0 || act.wake < *wake))
		*wake = act.wake;
	if (j->run.state != SVRUN_DONE)
		return 0;
	if (act.send_exited) {
		j->stamp.end_ms = (int64_t)clock_wall_ms(); /* the run's last process is gone */
		sv_job_exited(sv, j);
	}
	sv_job_free(sv, j);
	return 1;
}

/* Feed an event that needs nothing but the time. 1 if the job is freed. */
static int
sv_job_event(struct sv *sv, struct sjob *j, enum svrun_event event, uint64_t *wake)
{
	struct svrun_input in;

	memset(&in, 0, sizeof in);
	in.event = event;
	in.now = clock_now_ns();
	return sv_job_step(sv, j, &in, NULL, wake);
}

/* Whether any process is left in the job's cgroup, or else in its process group. */
static int
sv_group_alive(struct sjob *j)
{
	int populated;

	if (j->cgfd >= 0) {
		if ((populated = cgroup_populated(j->cgfd)) >= 0)
			return populated;
		log_warn("supervisor: cannot read cgroup.events of job %s", j->name);
	}
	return kill(-j->pid, 0) == 0 || errno == EPERM;
}

/* The leader is reaped (or was, and the group is polled): tell the run. 1 if freed. */
static int
sv_job_leader_exited(struct sv *sv, struct sjob *j)
{
	struct svrun_input in;

	memset(&in, 0, sizeof in);
	in.event = SVRUN_LEADER_EXITED;
	in.now = clock_now_ns();
	in.group_alive = sv_group_alive(j);
#ifdef LEASEKEEPER_SABOTAGE
	if (sabotage_on("late-release"))
		in.group_alive = 0; /* sabotage: over (and the lease released) with the leader */
#endif
	return sv_job_step(sv, j, &in, NULL, NULL);
}

/*
 * Read what a job's child wrote before exec: nothing (exec worked) or why it failed, and
 * feed it to the run. 1 if the run ended and j is freed (svrun never ends a run on an exec
 * result today, but the callers must not depend on it).
 */
static int
sv_job_exec_result(struct sv *sv, struct sjob *j)
{
	struct svrun_input in;
	char buf[512];
	ssize_t n;

	do
		n = read(j->errfd, buf, sizeof buf - 1);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN) {
		event_add(j->errev, NULL);
		return 0;
	}
	event_free(j->errev);
	j->errev = NULL;
	close(j->errfd);
	j->errfd = -1;
	if (n > 0) {
		buf[n] = '\0';
		memset(&in, 0, sizeof in);
		in.event = SVRUN_EXEC_FAILED;
		in.now = clock_now_ns();
		return sv_job_step(sv, j, &in, buf, NULL); /* the child exits 127 on its own */
	}
	return sv_job_event(sv, j, SVRUN_EXEC_OK, NULL);
}

/* The exec error pipe is readable: exec happened, or the child says why it failed. */
static void
sv_exec_cb(int fd, short what, void *arg)
{
	struct sjob *j = arg;
	struct sv *sv = j->sv; /* j may be freed below */

	(void)fd;
	(void)what;
	sv_job_exec_result(sv, j);
	sv_schedule(sv);
}

/* Refuse a start of run j (NULL: its spec could not be read), telling main why. */
static void
sv_refuse(struct sv *sv, const struct proto_msg *msg, const struct sjob *j, const char *why)
{
	log_warnx("supervisor: refusing to start job %s run=%s: %s", j != NULL ? j->name : "?",
	          j != NULL ? j->run_id : "?", why);
	proto_send(sv->conn, PROTO_START_FAILED, msg->job, msg->epoch, 0, 0, why, strlen(why));
}

/* Create a run's cgroup with its limits, and watch its cgroup.events. 0, or -1 with why. */
static int
sv_job_cgroup(struct sv *sv, struct sjob *j, const struct proto_limits *limits, char *why,
              size_t whylen)
{
	char path[PATH_MAX], *cause = NULL;
	unsigned skipped;

	snprintf(j->cgname, sizeof j->cgname, "run-%u", j->id);
	if (mkdirat(sv->cgfd, j->cgname, 0755) != 0 ||
	    (j->cgfd = openat(sv->cgfd, j->cgname, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		snprintf(why, whylen, "cannot create the cgroup %s/%s: %s", sv->cgdir, j->cgname,
		         strerror(errno));
		if (errno != EEXIST)
			unlinkat(sv->cgfd, j->cgname, AT_REMOVEDIR);
		return -1;
	}
	/* Before the child exists: nothing of the run ever runs without its limits. */
	if (cgroup_set_limits(j->cgfd, limits, &skipped, &cause) != 0) {
		snprintf(why, whylen, "cannot set the limits of job %s in %s/%s: %s", j->name,
		         sv->cgdir, j->cgname, cause);
		free(cause);
		return -1; /* sv_job_free removes the cgroup */
	}
	if (skipped != 0)
		log_debug("supervisor: job %s: limits left out, their controllers are not "
		          "delegated (bits 0x%x)",
		          j->name, skipped);
	snprintf(path, sizeof path, "%s/%s/cgroup.events", sv->cgdir, j->cgname);
	if ((j->cgwd = inotify_add_watch(sv->inofd, path, IN_MODIFY)) < 0)
		log_warn("supervisor: inotify on %s (the run's end is polled)", path);
	return 0;
}

/* Start a job, unless its lease deadline is unknown or too close. */
static void
sv_start(struct sv *sv, const struct proto_msg *msg)
{
	struct sjob *j;
	struct proto_run spec;
	char why[PATH_MAX + 256], *cause = NULL;
	uint64_t deadline = sv_deadline(sv, msg->epoch), now = clock_now_ns();
	int errpipe[2], outpipe[2] = {-1, -1}, joined = 0;
	sigset_t all, old;
	pid_t pid, svpid;

	if (proto_spec_parse(msg->payload, msg->len, &spec, &cause) != 0) {
		snprintf(why, sizeof why, "bad start spec: %s", cause);
		free(cause);
		sv_refuse(sv, msg, NULL, why);
		return;
	}
	j = xcalloc(1, sizeof *j);
	j->sv = sv;
	j->id = msg->job;
	j->epoch = msg->epoch;
	j->errfd = j->outfd = j->log.fd = j->log.dirfd = j->cgfd = j->cgwd = -1;
	j->name = xstrdup(spec.name != NULL ? spec.name : "?");
	if (spec.run_id != NULL)
		j->run_id = xstrdup(spec.run_id);
	else
		xasprintf(&j->run_id, "%lu", (unsigned long)j->id);
	proto_usage_init(&j->stamp);
	svrun_init(&j->run, j->name, spec.grace_ms * CLOCK_NS_PER_MS);
	if (spec.hook_ms > 0) {
		/* SIGTERM at hook_timeout, SIGKILL kill_grace later. */
		deadline = now + (spec.hook_ms + spec.grace_ms) * CLOCK_NS_PER_MS;
		j->own_deadline = deadline;
	}
	if (spec.log_path != NULL)
		j->log.path = xstrdup(spec.log_path);
	j->log.max = spec.log_max;
	/* Only output that goes through our pipe (to a log file) can be kept. */
	if (spec.log_path != NULL && spec.tail_max > 0) {
		j->tail_max = (size_t)spec.tail_max;
		j->tail = xmalloc(j->tail_max);
	}
	TAILQ_INSERT_TAIL(&sv->jobs, j, entry);

	if (deadline == 0 || now + j->run.grace_ns >= deadline) {
		sv_refuse(sv, msg, j, "the lease deadline is too close to start a job");
		goto discard;
	}
	if (sv->containment == PROTO_CONTAIN_FAILED) {
		sv_refuse(sv, msg, j, "cgroups = required, and runs cannot get a cgroup");
		goto discard;
	}
	if (j->log.path != NULL && joblog_open(&j->log, geteuid() == 0, &cause) != 0) {
		snprintf(why, sizeof why, "job %s: cannot open log file: %s", j->name, cause);
		free(cause);
		sv_refuse(sv, msg, j, why);
		goto discard;
	}
	if (pipe2(errpipe, O_CLOEXEC) != 0 ||
	    (j->log.path != NULL && pipe2(outpipe, O_CLOEXEC) != 0)) {
		snprintf(why, sizeof why, "pipe: %s", strerror(errno));
		sv_refuse(sv, msg, j, why);
		goto discard;
	}
	if (sv->cgfd >= 0 && sv_job_cgroup(sv, j, &spec.limits, why, sizeof why) != 0) {
		close(errpipe[0]);
		close(errpipe[1]);
		if (outpipe[0] >= 0) {
			close(outpipe[0]);
			close(outpipe[1]);
		}
		sv_refuse(sv, msg, j, why);
		goto discard;
	}
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	svpid = getpid();
	j->spawn_ms = (int64_t)clock_wall_ms();
	pid = cgroup_spawn(j->cgfd, &joined);
	if (pid == 0) {
		close(errpipe[0]);
		if (outpipe[0] >= 0)
			close(outpipe[0]);
		child_exec(&spec, svpid, errpipe[1], outpipe[1], joined ? -1 : j->cgfd);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(errpipe[1]);
	if (outpipe[1] >= 0)
		close(outpipe[1]);
	if (pid < 0) {
		close(errpipe[0]);
		if (outpipe[0] >= 0)
			close(outpipe[0]);
		snprintf(why, sizeof why, "fork: %s", strerror(errno));
		sv_refuse(sv, msg, j, why);
		goto discard;
	}
	j->pid = pid;
	j->errfd = errpipe[0];
	fcntl(j->errfd, F_SETFL, O_NONBLOCK);
	if (outpipe[0] >= 0) {
		j->outfd = outpipe[0];
		fcntl(j->outfd, F_SETFL, O_NONBLOCK);
		j->outev = event_new(sv->base, j->outfd, EV_READ | EV_PERSIST, sv_output_cb, j);
		event_add(j->outev, NULL);
		joblog_note(&j->log, j->name, j->own_deadline != 0 ? "hook starting" : "starting");
	}
	j->errev = event_new(sv->base, j->errfd, EV_READ, sv_exec_cb, j);
	event_add(j->errev, NULL);
	proto_run_free(&spec);
	sv_schedule(sv);
	return;

discard:
	proto_run_free(&spec);
	sv_job_free(sv, j);
}

/* Find a job by id. */
static struct sjob *
sv_find(struct sv *sv, uint32_t id)
{
	struct sjob *j;

	TAILQ_FOREACH(j, &sv->jobs, entry) {
		if (j->id == id && j->run.state != SVRUN_START_FAILED)
			return j;
	}
	return NULL;
}

/* Kill every job of epochs up to `epoch`, at once. */
static void
sv_epoch_end(struct sv *sv, uint64_t epoch)
{
	struct sjob *j, *jnext;
	struct sepoch *e, *next;

	if (epoch > sv->ended_epoch)
		sv->ended_epoch = epoch;
	TAILQ_FOREACH_SAFE(e, &sv->epochs, entry, next) {
		if (e->epoch <= sv->ended_epoch) {
			TAILQ_REMOVE(&sv->epochs, e, entry);
			free(e);
		}
	}
	TAILQ_FOREACH_SAFE(j, &sv->jobs, entry, jnext) {
		if (j->epoch <= sv->ended_epoch && j->own_deadline == 0) /* hooks hold no lease */
			sv_job_event(sv, j, SVRUN_EPOCH_END, NULL);
	}
}

/* A message from main. */
static void
sv_msg_cb(const struct proto_msg *msg, void *arg)
{
	struct sv *sv = arg;
	struct svrun_input in;
	struct sepoch *e;
	struct sjob *j;
	char t[48];

	switch (msg->type) {
	case PROTO_START:
		sv_start(sv, msg);
		break;
	case PROTO_STOP:
		if ((j = sv_find(sv, msg->job)) == NULL)
			break;
		log_info("supervisor: stopping job %s (%s) with signal %d", j->name,
		         sv_target(j, t, sizeof t), (int)msg->v1);
		memset(&in, 0, sizeof in);
		in.event = SVRUN_STOP;
		in.now = clock_now_ns();
		in.sig = (int)msg->v1;
		in.kill_at = msg->v2 < 0 ? 0 : in.now + (uint64_t)msg->v2 * CLOCK_NS_PER_MS;
		sv_job_step(sv, j, &in, NULL, NULL);
		break;
	case PROTO_DEADLINE:
		if (msg->epoch <= sv->ended_epoch)
			break;
		TAILQ_FOREACH(e, &sv->epochs, entry) {
			if (e->epoch == msg->epoch)
				break;
		}
		if (e == NULL) {
			e = xcalloc(1, sizeof *e);
			e->epoch = msg->epoch;
			TAILQ_INSERT_TAIL(&sv->epochs, e, entry);
			/* A new session: every older one is over. */
			if (msg->epoch > 1)
				sv_epoch_end(sv, msg->epoch - 1);
		}
		if ((uint64_t)msg->v1 > e->deadline_ns)
			e->deadline_ns = (uint64_t)msg->v1;
		break;
	case PROTO_EPOCH_END:
		sv_epoch_end(sv, msg->epoch);
		break;
	default:
		log_warnx("supervisor: unknown message type %u ignored", msg->type);
		break;
	}
	sv_schedule(sv);
}

/* A run cgroup's cgroup.events changed: see whether a group emptied. */
static void
sv_inotify_cb(int fd, short what, void *arg)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

	(void)what;
	while (read(fd, buf, sizeof buf) > 0)
		;
	sv_schedule(arg);
}

/*
 * A run of the dead supervisor kept processes in its cgroup past main's kill of its process
 * group (a daemon that called setsid()): they are gone now, which is when the run ended.
 */
static void
sv_stale_gone(unsigned run, void *arg)
{
	struct sv *sv = arg;

	proto_send(sv->conn, PROTO_STALE_GONE, run, 0, (int64_t)clock_wall_ms(), 0, "", 0);
}

/*
 * Set up containment before anything starts: the worker's cgroup folder, main and the
 * supervisor in its leaf, the run cgroups a previous supervisor or worker left emptied
 * and removed. Then tell main how runs are contained (PROTO_HELLO): jobs may contend.
 */
static void
sv_containment(struct sv *sv, const struct supervisor_opts *opts)
{
	char *cause = NULL;
	const char *note;
	int n, usable = 0;

	sv->containment = PROTO_CONTAIN_PGROUP;
	note = "cgroups = off";
	if (opts->cgroups != SUPERVISOR_CGROUPS_OFF) {
		sv->cgfd = cgroup_setup(opts->cgroup_name, &sv->cgdir, &cause, &usable);
		if (sv->cgfd >= 0 && (sv->inofd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0) {
			xasprintf(&cause, "inotify_init1: %s", strerror(errno));
			close(sv->cgfd);
			sv->cgfd = -1;
		}
	}
	if (sv->cgfd >= 0) {
		sv->containment = PROTO_CONTAIN_CGROUP;
		note = sv->cgdir;
		sv->controllers = cgroup_enable_controllers(sv->cgfd);
		if ((n = cgroup_clean_stale(sv->cgfd, sv->cgdir, sv_stale_gone, sv)) > 0)
			log_warnx("supervisor: removed %d cgroup(s) left by a previous run of this "
			          "worker",
			          n);
		sv->inoev = event_new(sv->base, sv->inofd, EV_READ | EV_PERSIST, sv_inotify_cb, sv);
		event_add(sv->inoev, NULL);
		log_debug("supervisor: each run gets a cgroup under %s", sv->cgdir);
	} else if (cause != NULL) {
		note = cause; /* never process groups where cgroups work (but failed us now) */
		if (opts->cgroups == SUPERVISOR_CGROUPS_REQUIRED || usable)
			sv->containment = PROTO_CONTAIN_FAILED;
	}
	proto_send(sv->conn, PROTO_HELLO, 0, 0, sv->containment, sv->controllers, note,
	           strlen(note));
	free(cause);
}

/* Main is gone: kill every job now, and exit once they are all reaped. */
static void
sv_eof_cb(void *arg)
{
	struct sv *sv = arg;
	struct sjob *j, *next;

	if (!TAILQ_EMPTY(&sv->jobs))
		log_warnx("supervisor: the main process is gone: killing every job");
	sv->exiting = 1;
	TAILQ_FOREACH_SAFE(j, &sv->jobs, entry, next)
		sv_job_event(sv, j, SVRUN_MAIN_GONE, NULL);
	sv_schedule(sv);
}

/* Enforce deadlines and escalations that are due, then arm the timer for the next one. */
static void
sv_schedule(struct sv *sv)
{
	struct sjob *j, *next;
	struct itimerspec its;
	uint64_t wake = 0;
	int poll_groups = 0;

	TAILQ_FOREACH_SAFE(j, &sv->jobs, entry, next)
		sv_job_event(sv, j, SVRUN_TIMER, &wake);
	/* A reaped leader's job is done when its group is empty: poll the group. */
	TAILQ_FOREACH_SAFE(j, &sv->jobs, entry, next) {
		if (!svrun_leader_alive(&j->run) && !sv_job_leader_exited(sv, j))
			poll_groups = 1;
	}
	if (poll_groups) {
		uint64_t poll_at = clock_now_ns() + 20 * CLOCK_NS_PER_MS;

		if (wake == 0 || poll_at < wake)
			wake = poll_at;
	}

	if (sv->exiting && TAILQ_EMPTY(&sv->jobs)) {
		event_base_loopbreak(sv->base);
		return;
	}
	memset(&its, 0, sizeof its);
	if (wake != 0) {
		its.it_value.tv_sec = (time_t)(wake / 1000000000ULL);
		its.it_value.tv_nsec = (long)(wake % 1000000000ULL);
		if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
			its.it_value.tv_nsec = 1;
	}
	/* The system call, not the wrapper a preloaded libfaketime moves by its clock skew. */
	if (syscall(SYS_timerfd_settime, sv->timerfd, TFD_TIMER_ABSTIME, &its, NULL) != 0)
		fatal("supervisor: timerfd_settime");
}

/* The timer fired. */
static void
sv_timer_cb(int fd, short what, void *arg)
{
	uint64_t expirations;

	(void)what;
	if (read(fd, &expirations, sizeof expirations) < 0 && errno != EAGAIN)
		log_warn("supervisor: timerfd read");
	sv_schedule(arg);
}

/* SIGCHLD (through a signalfd): reap every child that is done. */
static void
sv_sigchld_cb(int fd, short what, void *arg)
{
	struct sv *sv = arg;
	struct signalfd_siginfo si;
	struct sjob *j;
	int status;
	pid_t pid;

	(void)what;
	while (read(fd, &si, sizeof si) == (ssize_t)sizeof si)
		;
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		TAILQ_FOREACH(j, &sv->jobs, entry) {
			if (j->pid == pid && svrun_leader_alive(&j->run))
				break;
		}
		if (j == NULL)
			continue; /* an orphaned grandchild we adopted as subreaper */
		/* The child is gone: no read can wait. */
		if (j->errfd >= 0 && sv_job_exec_result(sv, j))
			continue;
		j->status = status;
		sv_job_leader_exited(sv, j);
	}
	sv_schedule(sv);
}

/* The supervisor's life, on the socket at fd. Returns the exit status. */
int
supervisor_main(int fd, const struct supervisor_opts *opts)
{
	struct sv sv;
	struct sepoch *e;
	sigset_t mask;

	memset(&sv, 0, sizeof sv);
	sv.cgfd = sv.inofd = -1;
	sv.main_pid = getppid();
	sv.cgname = opts->cgroup_name;
	TAILQ_INIT(&sv.jobs);
	TAILQ_INIT(&sv.epochs);
	log_set_process("supervisor");
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
		log_warn("supervisor: PR_SET_CHILD_SUBREAPER");
	if ((sv.base = event_base_new()) == NULL)
		fatalx("supervisor: event_base_new");
	sv.timerfd = timerfd_create(CLOCK_BOOTTIME, TFD_NONBLOCK | TFD_CLOEXEC);
	if (sv.timerfd < 0)
		fatal("supervisor: timerfd_create");
	/* Two priorities: the deadline timer (0) runs before anything else that is ready. */
	event_base_priority_init(sv.base, 2);
	sv.timerev = event_new(sv.base, sv.timerfd, EV_READ | EV_PERSIST, sv_timer_cb, &sv);
	event_priority_set(sv.timerev, 0);
	event_add(sv.timerev, NULL);
	/*
	 * Main decides when to stop: a terminal's ^C or systemd's SIGTERM is its to handle.
	 * SIGCHLD comes through a signalfd rather than libevent's signal handling, whose
	 * process-wide state we inherited from main's event base.
	 */
	signal(SIGTERM, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	if ((sv.sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC)) < 0)
		fatal("supervisor: signalfd");
	sv.sigchld = event_new(sv.base, sv.sigfd, EV_READ | EV_PERSIST, sv_sigchld_cb, &sv);
	event_add(sv.sigchld, NULL);
	sv.conn = proto_conn_new(sv.base, fd, sv_msg_cb, sv_eof_cb, &sv);
	log_debug("supervisor: started");
	sv_containment(&sv, opts);

	event_base_dispatch(sv.base);

	while ((e = TAILQ_FIRST(&sv.epochs)) != NULL) {
		TAILQ_REMOVE(&sv.epochs, e, entry);
		free(e);
	}
	proto_conn_free(sv.conn);
	event_free(sv.timerev);
	event_free(sv.sigchld);
	if (sv.inoev != NULL)
		event_free(sv.inoev);
	if (sv.inofd >= 0)
		close(sv.inofd);
	if (sv.cgfd >= 0) {
		cgroup_teardown(sv.cgfd, sv.cgname, sv.main_pid);
		close(sv.cgfd);
	}
	free(sv.cgdir);
	close(sv.sigfd);
	close(sv.timerfd);
	event_base_free(sv.base);
	log_debug("supervisor: exiting");
	return 0;
}
