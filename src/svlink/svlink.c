/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process and `leasekeeper exec`. */
/*
 * svlink.c: main's handle on the supervisor process: forks it, tells it deadlines and
 * which jobs to start and stop, hears what became of them, and kills what the supervisor
 * leaves behind if it dies.
 */

#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "clock.h"
#include "compat.h"
#include "log.h"
#include "procstat.h"
#include "proto.h"
#include "supervisor.h"
#include "svlink.h"
#include "xmalloc.h"
#include "zk.h"

/* A job main started, remembered so its group can be killed if the supervisor dies. */
struct svlink_job {
	uint32_t id;
	pid_t pgid;
	int outlived; /* a process of its group was alive when main killed it (not a zombie) */
	TAILQ_ENTRY(svlink_job) entry;
};

struct svlink {
	pid_t pid;
	struct proto_conn *conn;
	struct svlink_cb cb;
	void *arg;
	int dead;
	int containment;          /* enum proto_containment, -1 until PROTO_HELLO */
	unsigned controllers;     /* enum proto_controller bits, from PROTO_HELLO */
	struct event *gone_timer; /* waiting for the dead supervisor's jobs to be gone */
	uint64_t gone_until;
	uint64_t witness_until; /* CLOCK_BOOTTIME: how long to wait for the witness's word */
	int witness_fd;         /* the witness's word: the wall time the supervisor died */
	pid_t witness_pid;
	uint64_t seen_ms; /* wall: when main saw the supervisor gone (and killed the groups) */
	uint64_t died_ms; /* wall: when it died: the witness's word, or seen_ms if earlier */
	TAILQ_HEAD(, svlink_job) jobs;
};

/* Forget a job. */
static void
svlink_forget(struct svlink *s, uint32_t id)
{
	struct svlink_job *sj;

	TAILQ_FOREACH(sj, &s->jobs, entry) {
		if (sj->id == id) {
			TAILQ_REMOVE(&s->jobs, sj, entry);
			free(sj);
			return;
		}
	}
}

/* A message from the supervisor. */
static void
svlink_msg_cb(const struct proto_msg *msg, void *arg)
{
	struct svlink *s = arg;
	struct svlink_job *sj;
	struct proto_usage usage;
	enum proto_exit_reason reason;

	switch (msg->type) {
	case PROTO_STARTED:
		TAILQ_FOREACH(sj, &s->jobs, entry) {
			if (sj->id == msg->job)
				sj->pgid = (pid_t)msg->v1;
		}
		if (s->cb.started != NULL)
			s->cb.started(msg->job, (pid_t)msg->v1, s->arg);
		break;
	case PROTO_START_FAILED:
		svlink_forget(s, msg->job);
		if (s->cb.start_failed != NULL)
			s->cb.start_failed(msg->job, msg->payload, s->arg);
		break;
	case PROTO_EXITED:
		svlink_forget(s, msg->job);
		proto_usage_parse(msg->payload, msg->len, &usage);
		reason = msg->v2 >= PROTO_EXIT_NORMAL && msg->v2 <= PROTO_EXIT_OOM
		             ? (enum proto_exit_reason)msg->v2
		             : PROTO_EXIT_NORMAL;
		if (s->cb.exited != NULL)
			s->cb.exited(msg->job, (int)msg->v1, reason, &usage, s->arg);
		break;
	case PROTO_HELLO:
		if (s->containment >= 0 || msg->v1 < PROTO_CONTAIN_PGROUP ||
		    msg->v1 > PROTO_CONTAIN_FAILED)
			break;
		s->containment = (int)msg->v1;
		s->controllers = (unsigned)msg->v2 &
		                 (PROTO_CTL_MEMORY | PROTO_CTL_CPU | PROTO_CTL_PIDS | PROTO_CTL_IO);
		if (s->cb.hello != NULL)
			s->cb.hello((enum proto_containment)msg->v1, s->controllers, msg->payload,
			            s->arg);
		break;
	case PROTO_STALE_GONE:
		if (s->cb.stale_gone != NULL && msg->v1 > 0)
			s->cb.stale_gone(msg->job, (uint64_t)msg->v1, s->arg);
		break;
	case PROTO_OUTPUT:
		if (s->cb.output != NULL && msg->v1 >= 0)
			s->cb.output(msg->job, (uint64_t)msg->v1, msg->payload, msg->len, s->arg);
		break;
	default:
		log_warnx("unknown message type %u from the supervisor ignored", msg->type);
		break;
	}
}

/*
 * Whether every process group of the dead supervisor's jobs is gone. Main is a child
 * subreaper, so the orphans come to it and its SIGCHLD handler reaps them: a group whose
 * last process has been reaped no longer exists.
 */
static int
svlink_groups_gone(struct svlink *s)
{
	struct svlink_job *sj;

	TAILQ_FOREACH(sj, &s->jobs, entry) {
		if (sj->pgid > 0 && (kill(-sj->pgid, 0) == 0 || errno == EPERM))
			return 0;
	}
	return 1;
}

/* Take the witness's word if it came: the supervisor's death, by the witness's clock. */
static int
svlink_witness_read(struct svlink *s)
{
	uint64_t ms;
	ssize_t n;

	if (s->witness_fd < 0)
		return 1;
	if ((n = read(s->witness_fd, &ms, sizeof ms)) < 0 && (errno == EAGAIN || errno == EINTR))
		return 0; /* not yet */
	/* Both saw the death after it came: the earlier of the two is the nearer. */
	if (n == (ssize_t)sizeof ms && ms < s->died_ms)
		s->died_ms = ms;
	close(s->witness_fd); /* its word, or none to come (it died, or an error) */
	s->witness_fd = -1;
	return 1;
}

/* Tell main's owner once the dead supervisor's jobs are really gone (or after 5 s). */
static void
svlink_gone_cb(int fd, short what, void *arg)
{
	struct svlink *s = arg;
	struct timeval tv = {0, 10000};
	uint64_t now = clock_now_ns();
	int heard = svlink_witness_read(s) || now >= s->witness_until;

	(void)fd;
	(void)what;
	if ((!svlink_groups_gone(s) || !heard) && now < s->gone_until) {
		evtimer_add(s->gone_timer, &tv);
		return;
	}
	if (!svlink_groups_gone(s))
		log_warnx("processes of jobs of the dead supervisor are still alive after 5 s");
	if (s->cb.died != NULL)
		s->cb.died(s->arg);
}

/*
 * Whether process group pgid has a process that is still running: not a zombie, which has
 * died already (main, a subreaper, reaps the supervisor's orphans only when it runs).
 */
static int
svlink_group_running(pid_t pgid)
{
	struct procstat ps;
	struct dirent *de;
	DIR *d;
	int running = 0;
	long pid;
	char *end;

	if ((d = opendir("/proc")) == NULL)
		return 1; /* cannot tell: say running (main's kill is then the end) */
	while (!running && (de = readdir(d)) != NULL) {
		pid = strtol(de->d_name, &end, 10);
		if (pid <= 0 || *end != '\0' || procstat_read((pid_t)pid, &ps) != 0)
			continue;
		running = ps.pgrp == pgid && ps.state != 'Z' && ps.state != 'X';
	}
	closedir(d);
	return running;
}

/*
 * The supervisor is gone. Its jobs die with it (PR_SET_PDEATHSIG), but their own children
 * do not inherit that: kill every job's process group from here as well, and report the
 * death (after which leases are released) only once those groups are gone, since both
 * kills take effect asynchronously. A group that still had a running process ended at this
 * kill; the others ended with the supervisor, when the witness saw it die.
 */
static void
svlink_eof_cb(void *arg)
{
	struct svlink *s = arg;
	struct svlink_job *sj;

	if (s->dead)
		return;
	s->dead = 1;
	s->seen_ms = s->died_ms = clock_wall_ms();
	log_warnx("the supervisor (pid %ld) is gone", (long)s->pid);
	TAILQ_FOREACH(sj, &s->jobs, entry) {
		if (sj->pgid <= 0)
			continue;
		sj->outlived = svlink_group_running(sj->pgid);
		if (kill(-sj->pgid, SIGKILL) == 0)
			log_warnx(
			    "killed process group %ld of a job left behind by the supervisor%s",
			    (long)sj->pgid, sj->outlived ? "" : " (its processes had died)");
	}
	s->gone_until = clock_now_ns() + 5000 * CLOCK_NS_PER_MS;
	s->witness_until = clock_now_ns() + 200 * CLOCK_NS_PER_MS;
	svlink_gone_cb(-1, 0, s);
}

/*
 * When the dead supervisor's run job ended (wall ms): when the supervisor died, or, if a
 * process of its group still ran then, when main killed the group.
 */
uint64_t
svlink_run_end_ms(const struct svlink *s, uint32_t job)
{
	const struct svlink_job *sj;

	TAILQ_FOREACH(sj, &s->jobs, entry) {
		if (sj->id == job && sj->outlived)
			return s->seen_ms;
	}
	return s->died_ms;
}

/*
 * The witness of the supervisor's death. Main may be stopped or busy when the supervisor
 * dies (a SIGSTOP, a long pause: the pause hazard) and see the death only when it runs
 * again, seconds later; the runs died with the supervisor at once (PR_SET_PDEATHSIG). The
 * witness, a small child of main that does nothing else, waits on a pipe whose one writer
 * is the supervisor, whose exit closes it; it writes the wall time of that EOF to main and
 * exits. So a run's recorded end is when it died, by the process that saw it.
 */
static pid_t
svlink_witness(int watch, int tell, pid_t main_pid, const sigset_t *mask)
{
	char buf[64];
	uint64_t ms;
	ssize_t n;
	int a, b, sig;
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	for (sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	sigprocmask(SIG_SETMASK, mask, NULL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != main_pid)
		_exit(0);
	a = fcntl(watch, F_DUPFD, 10);
	b = fcntl(tell, F_DUPFD, 10);
	if (a < 0 || b < 0 || dup2(a, 3) < 0 || dup2(b, 4) < 0)
		_exit(1);
	close_range(5, ~0U, 0);
	while ((n = read(3, buf, sizeof buf)) != 0 && (n > 0 || errno == EINTR))
		;
	ms = clock_wall_ms();
	if (write(4, &ms, sizeof ms) != (ssize_t)sizeof ms)
		_exit(1);
	_exit(0);
}

/* Fork the supervisor. */
struct svlink *
svlink_start(struct event_base *base, const struct svlink_cb *cb, void *arg,
             const struct supervisor_opts *opts)
{
	struct svlink *s;
	sigset_t all, old;
	int sp[2], wp[2], tp[2], sig, status, a, b;
	pid_t pid, witness, main_pid = getpid();

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) != 0)
		fatal("socketpair");
	/* wp: held open by the supervisor alone, for the witness; tp: the witness's word. */
	if (pipe2(wp, O_CLOEXEC) != 0 || pipe2(tp, O_CLOEXEC | O_NONBLOCK) != 0)
		fatal("pipe2");
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	pid = fork();
	if (pid < 0)
		fatal("fork");
	if (pid == 0) {
		/* Forget main's signal handlers before they can run here. */
		for (sig = 1; sig < NSIG; sig++)
			signal(sig, SIG_DFL);
		sigprocmask(SIG_SETMASK, &old, NULL);
		/* fd 3: main's socket; fd 4: the witness's pipe, closed in the runs (CLOEXEC). */
		a = fcntl(sp[1], F_DUPFD, 10);
		b = fcntl(wp[1], F_DUPFD_CLOEXEC, 10);
		if (a < 0 || b < 0 || dup2(a, 3) < 0 || dup2(b, 4) < 0 ||
		    fcntl(4, F_SETFD, FD_CLOEXEC) < 0)
			_exit(1);
		close_range(5, ~0U, 0);
		status = supervisor_main(3, opts);
		exit(status);
	}
	witness = svlink_witness(wp[0], tp[1], main_pid, &old);
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(sp[1]);
	close(wp[0]);
	close(wp[1]);
	close(tp[1]);
	if (witness < 0) {
		log_warn("fork of the supervisor's witness");
		close(tp[0]);
		tp[0] = -1;
	}
	s = xcalloc(1, sizeof *s);
	s->witness_fd = tp[0];
	s->witness_pid = witness;
	s->pid = pid;
	s->containment = -1;
	s->cb = *cb;
	s->arg = arg;
	TAILQ_INIT(&s->jobs);
	s->gone_timer = evtimer_new(base, svlink_gone_cb, s);
	/* Orphans of a dead supervisor come to us, so that we can tell when they are gone. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
		log_warn("PR_SET_CHILD_SUBREAPER");
	s->conn = proto_conn_new(base, sp[0], svlink_msg_cb, svlink_eof_cb, s);
	log_debug("supervisor started, pid %ld", (long)pid);
	return s;
}

/* The controllers the supervisor's run cgroups get (enum proto_controller bits). */
unsigned
svlink_controllers(const struct svlink *s)
{
	return s->controllers;
}

/* How the supervisor contains runs (enum proto_containment), or -1 until it said. */
int
svlink_containment(const struct svlink *s)
{
	return s->containment;
}

/* The supervisor's pid. */
pid_t
svlink_pid(const struct svlink *s)
{
	return s->pid;
}

/* Called by main's SIGCHLD handler: whether pid was the supervisor. */
int
svlink_reap(struct svlink *s, pid_t pid, int status)
{
	if (pid == s->witness_pid && pid > 0) {
		s->witness_pid = -1; /* it said its word, or had none to say */
		return 1;
	}
	if (pid != s->pid)
		return 0;
	if (WIFSIGNALED(status))
		log_warnx("the supervisor (pid %ld) was killed by signal %d", (long)pid,
		          WTERMSIG(status));
	else if (WEXITSTATUS(status) != 0)
		log_warnx("the supervisor (pid %ld) exited with status %d", (long)pid,
		          WEXITSTATUS(status));
	s->pid = -1;
	svlink_eof_cb(s);
	return 1;
}

/*
 * Close the socket (the supervisor kills what is left, waits until every job's process
 * group is gone, and exits) and wait for it, at most 5 s. Returns 1 if every job is known
 * to be gone, 0 if the supervisor had to be killed with jobs perhaps still alive: then the
 * caller must not give their leases away (it must not close its session).
 */
int
svlink_free(struct svlink *s)
{
	struct svlink_job *sj;
	uint64_t until = clock_now_ns() + 5000 * CLOCK_NS_PER_MS;
	int status, gone = 1;
	pid_t pid = s->pid;

	s->dead = 1;
	evtimer_del(s->gone_timer);
	event_free(s->gone_timer);
	proto_conn_free(s->conn);
	if (s->witness_fd >= 0)
		close(s->witness_fd); /* it exits once the supervisor is gone (or with main) */
	while (pid > 0) {
		if (waitpid(pid, &status, WNOHANG) == pid || errno == ECHILD)
			break;
		if (clock_now_ns() > until) {
			log_warnx("the supervisor (pid %ld) did not exit: killing it", (long)pid);
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			gone = 0;
			break;
		}
		usleep(5000);
	}
	TAILQ_FOREACH(sj, &s->jobs, entry) {
		if (sj->pgid > 0 && (kill(-sj->pgid, 0) == 0 || errno == EPERM))
			gone = 0;
	}
	while ((sj = TAILQ_FIRST(&s->jobs)) != NULL) {
		TAILQ_REMOVE(&s->jobs, sj, entry);
		free(sj);
	}
	free(s);
	return gone;
}

/* Tell the supervisor the lease deadline of an epoch (it only ever moves forward). */
static void
svlink_deadline(struct svlink *s, uint64_t epoch, uint64_t deadline_ns)
{
	if (!s->dead)
		proto_send(s->conn, PROTO_DEADLINE, 0, epoch, (int64_t)deadline_ns, 0, NULL, 0);
}

/* Tell the supervisor that a session and every older one are over. */
static void
svlink_epoch_end(struct svlink *s, uint64_t epoch)
{
	if (!s->dead)
		proto_send(s->conn, PROTO_EPOCH_END, 0, epoch, 0, 0, NULL, 0);
}

/*
 * The deadline glue, the one place where the session meets the supervisor: each answer
 * moves the lease deadline forward, an expiry ends the epoch, and a supervisor started
 * late (ZK_EVENT_DEADLINE passed by hand) learns the deadline of the current session.
 */
void
svlink_session(struct svlink *s, struct zk *zk, enum zk_event event)
{
	switch (event) {
	case ZK_EVENT_DEADLINE:
		if (zk_deadline_ns(zk) != 0)
			svlink_deadline(s, zk_epoch(zk), zk_deadline_ns(zk));
		break;
	case ZK_EVENT_EXPIRED:
		svlink_epoch_end(s, zk_epoch(zk));
		break;
	default:
		break;
	}
}

/* Ask the supervisor to start a job under the lease of an epoch. */
void
svlink_job_start(struct svlink *s, uint32_t job, uint64_t epoch, const struct proto_spec *spec)
{
	struct svlink_job *sj;

	char why[128];

	if (s->dead) {
		if (s->cb.start_failed != NULL)
			s->cb.start_failed(job, "the supervisor is gone", s->arg);
		return;
	}
	if (spec->len > PROTO_MAX_PAYLOAD) {
		snprintf(why, sizeof why,
		         "the command and its environment take %zu bytes; the most is %d",
		         spec->len, PROTO_MAX_PAYLOAD);
		if (s->cb.start_failed != NULL)
			s->cb.start_failed(job, why, s->arg);
		return;
	}
	sj = xcalloc(1, sizeof *sj);
	sj->id = job;
	TAILQ_INSERT_TAIL(&s->jobs, sj, entry);
	proto_send(s->conn, PROTO_START, job, epoch, 0, 0, spec->buf, spec->len);
}

/* Ask the supervisor to stop a job: sig now, SIGKILL after grace_ms (-1: never). */
void
svlink_job_stop(struct svlink *s, uint32_t job, int sig, int64_t grace_ms)
{
	if (!s->dead)
		proto_send(s->conn, PROTO_STOP, job, 0, sig, grace_ms, NULL, 0);
}

/* How many jobs main believes are running. */
int
svlink_running_jobs(const struct svlink *s)
{
	const struct svlink_job *sj;
	int n = 0;

	TAILQ_FOREACH(sj, &s->jobs, entry)
		n++;
	return n;
}
