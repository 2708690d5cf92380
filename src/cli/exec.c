/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: a one-shot command (`leasekeeper exec`). */
/*
 * exec.c: `leasekeeper exec`: run one command under a lease, with the worker's safety.
 *
 * Like `run`, exec forks a supervisor that runs the command in its own process group and
 * kills it at the lease deadline if the session can no longer be trusted. The command
 * inherits exec's standard input, output and error. exec exits with the command's
 * status (128 + N when a signal N ended it), or with EXIT_TIMEOUT when no lease came
 * within --timeout.
 */

#include <sys/wait.h>

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "authfile.h"
#include "clock.h"
#include "config.h"
#include "duration.h"
#include "cli.h"
#include "leasekeeper.h"
#include "target.h"
#include "usage.h"
#include "jobrec.h"
#include "layout.h"
#include "lease.h"
#include "log.h"
#include "runspec.h"
#include "svlink.h"
#include "xmalloc.h"
#include "zk.h"
#include "znode.h"

#define EXEC_MAX_LOCKS 16 /* as many as a job's locks may list */

enum exec_state {
	EXEC_CONNECTING, /* waiting for a session */
	EXEC_AGREEING,   /* checking the cluster's lease count */
	EXEC_CONTENDING, /* waiting for the lease */
	EXEC_RUNNING,    /* the command runs */
	EXEC_DONE,
};

struct exec {
	struct event_base *base;
	struct zk *zk;
	struct svlink *sv;
	struct lease *lease;
	struct jobrec *rec;
	enum exec_state state;

	const char *name;
	const char *hosts;
	char *root;
	char *node_id;
	char *lock_path;
	int leases;
	int explicit_lock_path;
	enum lease_kind mode; /* --read, --write; else LEASE_MUTEX (a semaphore with --leases) */
	const char *lock_paths[EXEC_MAX_LOCKS]; /* every --lock-path, in the order given */
	int nlock_paths;
	uint64_t timeout_ms;
	uint64_t kill_grace_ms;
	int safety_margin_ms;
	char **argv;
	struct config_limits limits; /* [worker]'s defaults, with -c */
	enum config_cgroups cgroups; /* [worker] cgroups, with -c; else auto */
	const char *reader;          /* [zookeeper] reader's digest id, with -c; or NULL */
	const char *operator_id;     /* [zookeeper] operator's digest id, with -c; or NULL */

	uint64_t started_ns;
	int exit_code;
	int signalled;               /* the signal that asked us to stop, 0 if none */
	struct event *timer;         /* --timeout */
	struct event *connect_timer; /* no first session within LK_CONNECT_TIMEOUT_S */
	struct event *signals[4];
};

static const char *exec_state_names[] = {"CONNECTING", "AGREEING", "CONTENDING", "RUNNING", "DONE"};

static void exec_finish(struct exec *, int code);

/* Move to a new state, logging the transition by name. */
static void
exec_set_state(struct exec *e, enum exec_state state)
{
	if (e->state == state)
		return;
	log_debug("exec: %s -> %s", exec_state_names[e->state], exec_state_names[state]);
	e->state = state;
}

/* Start the command under the lease. */
static void
exec_start(struct exec *e)
{
	struct proto_spec spec = {NULL, 0};
	struct runspec rs;

	rs = (struct runspec){
	    .name = e->name,
	    .argv = e->argv,
	    /* the operator's own command: it keeps the environment exec was started with */
	    .inherit_env = 1,
	    .node_id = e->node_id,
	    .fence = lease_fence(e->lease),
	    .fences = lease_fences(e->lease),
	    .leases = e->leases,
	    .deadline_ms = zk_timeout_ms(e->zk) - e->safety_margin_ms,
	    .tick = -1,
	    .umask = -1,
	    .kill_grace_ms = e->kill_grace_ms,
	    .limits = {e->limits.memory_max, e->limits.memory_high, e->limits.cpu_max,
	               e->limits.tasks_max, e->limits.io_weight},
	};
	runspec_build(&rs, &spec);
	exec_set_state(e, EXEC_RUNNING);
	svlink_job_start(e->sv, 1, zk_epoch(e->zk), &spec);
	proto_spec_free(&spec);
}

static void
exec_acquired_cb(struct lease *l, void *arg)
{
	struct exec *e = arg;

	log_info("exec: lease acquired on %s (fence %lld)", lease_path(l),
	         (long long)lease_fence(l));
	evtimer_del(e->timer);
	exec_start(e);
}

static void
exec_lost_cb(struct lease *l, const char *why, void *arg)
{
	struct exec *e = arg;

	(void)l;
	log_warnx("exec: lease lost: %s; killing the command", why);
	if (e->state == EXEC_RUNNING)
		svlink_job_stop(e->sv, 1, SIGKILL, -1);
}

static void
exec_failed_cb(struct lease *l, const char *why, void *arg)
{
	struct exec *e = arg;

	(void)l;
	if (e->state != EXEC_CONTENDING)
		return;
	if (zk_state(e->zk) == ZK_STATE_EXPIRED || zk_state(e->zk) == ZK_STATE_CONNECTING) {
		/* The session went while we waited: contend again in the next one. */
		exec_set_state(e, EXEC_CONNECTING);
		return;
	}
	log_warnx("exec: %s", why);
	exec_finish(e, EXIT_UNAVAILABLE);
}

/* The cluster's lease count is ours: contend. */
static void
exec_agreed_cb(struct jobrec *jr, void *arg)
{
	struct exec *e = arg;

	(void)jr;
	if (e->state != EXEC_AGREEING)
		return;
	exec_set_state(e, EXEC_CONTENDING);
	lease_acquire(e->lease, 0); /* exec's own timer enforces --timeout */
}

/* The cluster agreed on another lease count: refuse. */
static void
exec_conflict_cb(struct jobrec *jr, int cluster, void *arg)
{
	struct exec *e = arg;

	(void)jr;
	if (e->state == EXEC_RUNNING || e->state == EXEC_DONE)
		return;
	log_warnx("exec: the cluster agreed on %d lease(s) for \"%s\" but --leases is %d: use "
	          "--leases %d, or `leasekeeper set-leases %s %d` to change the cluster's count",
	          cluster, e->name, e->leases, cluster, e->name, e->leases);
	exec_finish(e, EXIT_UNAVAILABLE);
}

/* The command ended (all of it: its cgroup, or its process group, is empty). */
static void
exec_exited_cb(uint32_t job, int status, enum proto_exit_reason reason,
               const struct proto_usage *usage, void *arg)
{
	struct exec *e = arg;
	int code;

	(void)job;
	if (reason == PROTO_EXIT_OOM)
		log_warnx("exec: the OOM killer killed in the command's cgroup (memory_max %llu "
		          "bytes)",
		          (unsigned long long)e->limits.memory_max);
	if (usage->cpu_usec >= 0)
		log_info("exec: the command used %.3f s of CPU", (double)usage->cpu_usec / 1e6);
	if (WIFEXITED(status))
		code = WEXITSTATUS(status);
	else
		code = 128 + WTERMSIG(status);
	if (reason == PROTO_EXIT_DEADLINE || reason == PROTO_EXIT_EPOCH)
		log_warnx("exec: the command was killed because the lease could no longer be "
		          "trusted (%s)",
		          proto_exit_reason_name(reason));
	log_debug("exec: command ended with %d", code);
	exec_finish(e, code);
}

static void
exec_start_failed_cb(uint32_t job, const char *why, void *arg)
{
	(void)job;
	log_warnx("exec: cannot run the command: %s", why);
	exec_finish(arg, EXIT_CANNOT_RUN);
}

static void
exec_sv_started_cb(uint32_t job, pid_t pid, void *arg)
{
	(void)job;
	(void)arg;
	log_debug("exec: command running, pid %ld", (long)pid);
}

/*
 * The supervisor says how it contains the command: a cgroup of its own under
 * leasekeeper-exec-<pid> where cgroup v2 is usable. With cgroups = required (-c), no usable
 * cgroup, or a [worker] limit whose controller is missing, ends exec before it contends.
 */
static void
exec_sv_hello_cb(enum proto_containment mode, unsigned controllers, const char *note, void *arg)
{
	struct exec *e = arg;
	int i, required = e->cgroups == CONFIG_CGROUPS_REQUIRED, missing = 0;

	if (mode == PROTO_CONTAIN_FAILED) {
		log_warnx("exec: [worker] cgroups = required, but the command cannot get a cgroup: "
		          "%s",
		          note);
		exec_finish(e, EXIT_CONFIG);
		return;
	}
	if (mode == PROTO_CONTAIN_CGROUP)
		log_info("exec: the command gets a cgroup of its own under %s", note);
	else
		log_info("exec: the command is contained by its process group only (%s)", note);
	if (mode != PROTO_CONTAIN_CGROUP)
		controllers = 0;
	for (i = 0; i < CONFIG_LIMIT_KEYS; i++) {
		if (config_limit_value(&e->limits, i) == 0 ||
		    (runspec_controller_bit(config_limit_controllers[i]) & controllers) != 0)
			continue;
		missing++;
		log_warnx("exec: [worker] %s %s: the %s controller is not delegated here",
		          config_limit_keys[i], required ? "cannot be enforced" : "is not enforced",
		          config_limit_controllers[i]);
	}
	if (missing > 0 && required)
		exec_finish(e, EXIT_CONFIG);
}

static void
exec_sv_died_cb(void *arg)
{
	struct exec *e = arg;

	if (e->state == EXEC_DONE)
		return;
	log_warnx("exec: the supervisor died; the command was killed");
	exec_finish(e, EXIT_SOFTWARE_ERROR);
}

/* Release the lease, close the session and leave the loop. */
static void
exec_finish(struct exec *e, int code)
{
	if (e->state == EXEC_DONE)
		return;
	exec_set_state(e, EXEC_DONE);
	e->exit_code = code;
	evtimer_del(e->timer);
	evtimer_del(e->connect_timer);
	lease_release(e->lease);
	zk_close(e->zk);
	event_base_loopbreak(e->base);
}

/* Session events. */
static void
exec_zk_cb(struct zk *zk, enum zk_event event, void *arg)
{
	struct exec *e = arg;
	char *path;

	if (e->state == EXEC_DONE)
		return;
	svlink_session(e->sv, zk, event);
	if (event == ZK_EVENT_DEADLINE)
		return;
	lease_session(e->lease, event);
	if (e->rec != NULL)
		jobrec_session(e->rec, event);
	if (event != ZK_EVENT_SESSION_NEW || e->state != EXEC_CONNECTING)
		return;
	evtimer_del(e->connect_timer);
	if (e->explicit_lock_path) {
		exec_set_state(e, EXEC_CONTENDING);
		lease_acquire(e->lease, 0);
		return;
	}
	/* The lease count of NAME is agreed in <root>/jobs/NAME, like a job's. */
	path = layout_jobs(e->root);
	zk_create_path(zk, path, ZOO_PERSISTENT, NULL, NULL);
	free(path);
	exec_set_state(e, EXEC_AGREEING);
	jobrec_check(e->rec);
}

/*
 * No first session within --timeout, or without one within the connect limit of every
 * command: ZooKeeper cannot be reached, which is not the same as a lease held elsewhere.
 */
static void
exec_connect_timer_cb(int fd, short what, void *arg)
{
	struct exec *e = arg;
	char dur[32];

	(void)fd;
	(void)what;
	if (e->state != EXEC_CONNECTING)
		return;
	if (e->timeout_ms > 0 && e->timeout_ms < LK_CONNECT_TIMEOUT_S * 1000ULL)
		duration_format(e->timeout_ms, dur, sizeof dur);
	else
		snprintf(dur, sizeof dur, "%ds", LK_CONNECT_TIMEOUT_S);
	log_warnx("exec: ZooKeeper unreachable: no session with %s within %s", e->hosts, dur);
	exec_finish(e, EXIT_UNAVAILABLE);
}

/* The overall timeout ran out before the lease came. */
static void
exec_timer_cb(int fd, short what, void *arg)
{
	struct exec *e = arg;
	char dur[32];

	(void)fd;
	(void)what;
	if (e->state == EXEC_RUNNING || e->state == EXEC_DONE)
		return;
	if (e->state == EXEC_CONNECTING) {
		exec_connect_timer_cb(fd, what, arg);
		return;
	}
	duration_format(e->timeout_ms, dur, sizeof dur);
	log_warnx("exec: no lease on %s within %s", e->lock_path, dur);
	exec_finish(e, EXIT_TIMEOUT);
}

/* SIGINT, SIGTERM, SIGHUP: passed on to the command; before it runs, give up. */
static void
exec_signal_cb(int sig, short what, void *arg)
{
	struct exec *e = arg;
	int status;

	(void)what;
	if (sig == SIGCHLD) {
		while (waitpid(-1, &status, WNOHANG) > 0)
			;
		return;
	}
	if (e->state == EXEC_RUNNING) {
		log_debug("exec: passing signal %d on to the command", sig);
		svlink_job_stop(e->sv, 1, sig, -1);
		return;
	}
	log_info("exec: interrupted before the lease was acquired");
	exec_finish(e, 128 + sig);
}

/* Print exec's usage. */
static int
exec_usage(FILE *f)
{
	if (f != stdout)
		return usage_hint("exec");
	fputs(
	    "usage: leasekeeper exec [-c FILE | --zk HOSTS] [--root PATH] [--auth-file FILE]\n"
	    "                        [--leases N | --read | --write] [--timeout DUR]\n"
	    "                        [--lock-path PATH]... [--node-id ID]\n"
	    "                        [--session-timeout DUR]\n"
	    "                        [--safety-margin DUR] [--kill-grace DUR] [-v]\n"
	    "                        NAME -- CMD [ARGS...]\n"
	    "\n"
	    "Run one command under a lease of the lock NAME, with the worker's safety: the "
	    "command\n"
	    "is killed before the session could expire. Exits with the command's status.\n"
	    "\n"
	    "  -l, --leases N             a semaphore of N leases (default 1: a mutex)\n"
	    "  -t, --timeout DUR          give up waiting for the lease after DUR (exit 75)\n"
	    "      --read, --write        take the read or the write side of a read-write lock\n"
	    "                             (Curator's InterProcessReadWriteLock) instead\n"
	    "  -p, --lock-path PATH       an absolute lock path instead of NAME's under the root;\n"
	    "                             again for several locks, taken in path order, all or\n"
	    "                             none\n"
	    "  -N, --node-id ID           who holds the lease, in its node (default: the host)\n"
	    "  -s, --session-timeout DUR  the ZooKeeper session timeout asked for\n"
	    "  -m, --safety-margin DUR    kill this long before the session could expire\n"
	    "  -g, --kill-grace DUR       SIGTERM this long before SIGKILL\n"
	    "  -v, --verbose              log debug lines too\n" TARGET_OPTIONS_HELP,
	    f);
	return 0;
}

/* Parse a positive number for an option. */
static int
exec_number(const char *opt, const char *text, int max, int *out)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(text, &end, 10);
	if (errno != 0 || end == text || *end != '\0' || n < 1 || n > max) {
		fprintf(stderr, "leasekeeper exec: %s takes a number from 1 to %d, not \"%s\"\n",
		        opt, max, text);
		return -1;
	}
	*out = (int)n;
	return 0;
}

/* Parse a duration for an option. */
static int
exec_duration(const char *opt, const char *text, uint64_t *ms)
{
	char *cause;

	if (duration_parse(text, ms, &cause) != 0) {
		fprintf(stderr, "leasekeeper exec: %s: %s\n", opt, cause);
		free(cause);
		return -1;
	}
	return 0;
}

/* Add a --lock-path: valid, not given before, at most EXEC_MAX_LOCKS; -1 when not. */
static int
exec_lock_path(struct exec *e, const char *path)
{
	char *cause;
	int i;

	for (i = 0; i < e->nlock_paths; i++)
		if (strcmp(e->lock_paths[i], path) == 0) {
			fprintf(stderr, "leasekeeper exec: --lock-path %s given twice\n", path);
			return -1;
		}
	if (e->nlock_paths == EXEC_MAX_LOCKS) {
		fprintf(stderr, "leasekeeper exec: at most %d --lock-path\n", EXEC_MAX_LOCKS);
		return -1;
	}
	if (!znode_valid_path(path, &cause)) {
		fprintf(stderr, "leasekeeper exec: --lock-path: %s\n", cause);
		free(cause);
		return -1;
	}
	e->lock_paths[e->nlock_paths++] = path;
	return 0;
}

/*
 * The lease: every --lock-path (all or none, in path order), else the lock named after the
 * command, in <root>/rwlock with --read or --write; e->lock_path is the first.
 */
static void
exec_lease_new(struct exec *e, const char *root, const char *data, const struct lease_cb *cb)
{
	struct lease_spec specs[EXEC_MAX_LOCKS];
	int i, n = e->nlock_paths > 0 ? e->nlock_paths : 1;
	char *dir;

	if (e->nlock_paths > 0)
		e->lock_path = xstrdup(e->lock_paths[0]);
	else if (e->mode == LEASE_READ || e->mode == LEASE_WRITE) {
		dir = znode_join(root, "rwlock");
		e->lock_path = znode_join(dir, e->name);
		free(dir);
	} else
		e->lock_path = layout_lock_path(root, e->name, NULL, e->leases);
	for (i = 0; i < n; i++) {
		specs[i].path = e->nlock_paths > 0 ? e->lock_paths[i] : e->lock_path;
		specs[i].kind = e->mode == LEASE_MUTEX && e->leases > 1 ? LEASE_SEMAPHORE : e->mode;
		specs[i].leases = e->leases;
	}
	e->lease = lease_new_set(e->base, e->zk, specs, n, data, cb, e);
}

/* What exec's command line says, before the configuration fills in the rest. */
struct exec_args {
	const char *file, *hosts, *root, *node_id, *lock_path, *auth_file;
	uint64_t session_timeout_ms, margin_ms, grace_ms;
	int verbose;
};

/* Take exec's options into e and a; -1 to go on, else the status to exit with. */
static int
exec_options(int argc, char **argv, struct exec *e, struct exec_args *a)
{
	static const struct option longopts[] = {{"config", required_argument, NULL, 'c'},
	                                         {"zk", required_argument, NULL, 'z'},
	                                         {"root", required_argument, NULL, 'r'},
	                                         {"leases", required_argument, NULL, 'l'},
	                                         {"timeout", required_argument, NULL, 't'},
	                                         {"lock-path", required_argument, NULL, 'p'},
	                                         {"node-id", required_argument, NULL, 'N'},
	                                         {"session-timeout", required_argument, NULL, 's'},
	                                         {"safety-margin", required_argument, NULL, 'm'},
	                                         {"kill-grace", required_argument, NULL, 'g'},
	                                         {"auth-file", required_argument, NULL, 'A'},
	                                         {"verbose", no_argument, NULL, 'v'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {"read", no_argument, NULL, 'R'},
	                                         {"write", no_argument, NULL, 'W'},
	                                         {NULL, 0, NULL, 0}};
	int ch;

	while ((ch = getopt_long(argc, argv, "+c:z:r:l:t:p:N:s:m:g:A:vhRW", longopts, NULL)) !=
	       -1) {
		switch (ch) {
		case 'c':
			a->file = optarg;
			break;
		case 'z':
			a->hosts = optarg;
			break;
		case 'r':
			a->root = optarg;
			break;
		case 'l':
			if (exec_number("--leases", optarg, LK_MAX_LEASES, &e->leases) != 0)
				return EXIT_USAGE;
			break;
		case 't':
			if (exec_duration("--timeout", optarg, &e->timeout_ms) != 0)
				return EXIT_USAGE;
			break;
		case 'p':
			if (exec_lock_path(e, optarg) != 0)
				return EXIT_USAGE;
			a->lock_path = optarg;
			break;
		case 'R':
		case 'W':
			e->mode = ch == 'R' ? LEASE_READ : LEASE_WRITE;
			break;
		case 'N':
			a->node_id = optarg;
			break;
		case 's':
			if (exec_duration("--session-timeout", optarg, &a->session_timeout_ms) != 0)
				return EXIT_USAGE;
			break;
		case 'm':
			if (exec_duration("--safety-margin", optarg, &a->margin_ms) != 0)
				return EXIT_USAGE;
			break;
		case 'g':
			if (exec_duration("--kill-grace", optarg, &a->grace_ms) != 0)
				return EXIT_USAGE;
			break;
		case 'A':
			a->auth_file = optarg;
			break;
		case 'v':
			a->verbose++;
			break;
		case 'h':
			return exec_usage(stdout);
		default:
			return exec_usage(stderr);
		}
	}
	if (argc - optind < 2 || strcmp(argv[optind + 1], "--") != 0 || argc - optind < 3) {
		fprintf(stderr, "leasekeeper exec: give a name, then --, then the command\n");
		return exec_usage(stderr);
	}
	e->name = argv[optind];
	e->argv = argv + optind + 2;
	return -1;
}

/* Check what the command line says on its own; -1 to go on, else the status to exit with. */
static int
exec_check_args(const struct exec *e, const struct exec_args *a)
{
	char *cause;

	if (!znode_valid_name(e->name, &cause)) {
		fprintf(stderr, "leasekeeper exec: bad name: %s\n", cause);
		free(cause);
		return EXIT_USAGE;
	}
	if (e->mode != LEASE_MUTEX && e->leases != 1) {
		fprintf(stderr, "leasekeeper exec: --read and --write take no --leases (a "
		                "read-write lock has no count)\n");
		return EXIT_USAGE;
	}
	if (a->root != NULL && !znode_valid_path(a->root, &cause)) {
		fprintf(stderr, "leasekeeper exec: --root: %s\n", cause);
		free(cause);
		return EXIT_USAGE;
	}
	/* A connect string that cannot parse would be retried for ever. */
	if (a->hosts != NULL && !config_valid_hosts(a->hosts, &cause)) {
		fprintf(stderr, "leasekeeper exec: --zk: %s\n", cause);
		free(cause);
		return EXIT_USAGE;
	}
	if (a->node_id != NULL && !znode_valid_name(a->node_id, &cause)) {
		fprintf(stderr, "leasekeeper exec: --node-id: %s\n", cause);
		free(cause);
		return EXIT_USAGE;
	}
	/* The same range as session_timeout in [zookeeper]; the others must fit in half. */
	if (a->session_timeout_ms != 0 &&
	    (a->session_timeout_ms < 1000 || a->session_timeout_ms > 60000)) {
		fprintf(stderr,
		        "leasekeeper exec: --session-timeout must be from 1s to 60s, e.g. 10s\n");
		return EXIT_USAGE;
	}
	if (a->margin_ms > 30000 || a->grace_ms > 30000) {
		fprintf(stderr, "leasekeeper exec: --safety-margin and --kill-grace must be at "
		                "most 30s (half of the longest session timeout)\n");
		return EXIT_USAGE;
	}
	return -1;
}

/*
 * Fill in from the configuration (the command line wins) and the defaults, read
 * --auth-file into *auth; -1 to go on, else the status to exit with. host holds the host
 * name when it becomes the node id.
 */
static int
exec_settle(struct exec *e, struct exec_args *a, struct config **cfg, char **auth, char *host,
            size_t hostlen)
{
	struct config_errors errors = {NULL, 0};
	char *cause;
	uint64_t ms;
	size_t i;

	if (a->hosts == NULL && a->file == NULL) {
		if (access(LEASEKEEPER_DEFAULT_CONFIG, R_OK) != 0) {
			fprintf(stderr, "leasekeeper exec: give -c FILE or --zk HOSTS\n");
			return EXIT_USAGE;
		}
		a->file = LEASEKEEPER_DEFAULT_CONFIG;
	}
	if (a->file != NULL) {
		if (config_load_opts(a->file, cfg, &errors, CONFIG_LOAD_ALLOW_NO_JOBS) != 0) {
			for (i = 0; i < errors.n; i++)
				fprintf(stderr, "%s\n", errors.lines[i]);
			config_errors_free(&errors);
			return EXIT_CONFIG;
		}
		config_errors_free(&errors);
		if (a->hosts == NULL)
			a->hosts = (*cfg)->hosts;
		if (a->root == NULL)
			a->root = (*cfg)->root;
		if (a->node_id == NULL)
			a->node_id = (*cfg)->node_id;
		/* The command line wins over the file. */
		if (a->session_timeout_ms == 0)
			a->session_timeout_ms = (*cfg)->session_timeout_ms;
		e->kill_grace_ms = (*cfg)->kill_grace_ms;
		e->safety_margin_ms = (int)(*cfg)->safety_margin_ms;
		e->limits = (*cfg)->limits;
		e->cgroups = (*cfg)->cgroups;
		e->reader = (*cfg)->reader;
		e->operator_id = (*cfg)->operator_id;
	}
	/* --auth-file overrides the configuration's credentials; refused like auth_file. */
	if (a->auth_file != NULL && authfile_read(a->auth_file, auth, &cause) != 0) {
		fprintf(stderr, "leasekeeper exec: --auth-file: %s\n", cause);
		free(cause);
		return EXIT_CONFIG;
	}
	if (a->session_timeout_ms == 0)
		a->session_timeout_ms = 10000;
	if (a->margin_ms > 0)
		e->safety_margin_ms = (int)a->margin_ms;
	if (a->grace_ms > 0)
		e->kill_grace_ms = a->grace_ms;
	if (a->root == NULL)
		a->root = "/leasekeeper";
	if (a->node_id == NULL) {
		if (gethostname(host, hostlen) != 0)
			snprintf(host, hostlen, "localhost");
		host[hostlen - 1] = '\0';
		a->node_id = host;
	}
	ms = (uint64_t)e->safety_margin_ms + e->kill_grace_ms;
	if (a->session_timeout_ms < 1000 || ms > a->session_timeout_ms / 2) {
		fprintf(
		    stderr,
		    "leasekeeper exec: --safety-margin + --kill-grace (%llu ms) must be at most "
		    "half of the session timeout (%llu ms): lower them or raise "
		    "--session-timeout\n",
		    (unsigned long long)ms, (unsigned long long)a->session_timeout_ms);
		return EXIT_USAGE;
	}
	return -1;
}

/* Run the command under the lease on a loop of its own; the status to exit with. */
static int
exec_run(struct exec *e, const struct exec_args *a, const char *auth)
{
	static const struct lease_cb lcb = {exec_acquired_cb, exec_lost_cb, exec_failed_cb, NULL};
	static const struct jobrec_cb rcb = {exec_agreed_cb, exec_conflict_cb, NULL, NULL};
	static const struct svlink_cb scb = {exec_sv_started_cb,
	                                     exec_start_failed_cb,
	                                     exec_exited_cb,
	                                     exec_sv_died_cb,
	                                     exec_sv_hello_cb,
	                                     NULL,
	                                     NULL};
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGCHLD};
	struct supervisor_opts sv_opts;
	char *cgroup_name = NULL, *data;
	size_t i;
	int rc;

	e->root = xstrdup(a->root);
	e->node_id = xstrdup(a->node_id);
	e->explicit_lock_path = a->lock_path != NULL;
	e->started_ns = clock_now_ns();
	signal(SIGPIPE, SIG_IGN);
	if ((e->base = event_base_new()) == NULL)
		fatalx("event_base_new");
	for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		e->signals[i] = evsignal_new(e->base, sigs[i], exec_signal_cb, e);
		event_add(e->signals[i], NULL);
	}
	e->timer = evtimer_new(e->base, exec_timer_cb, e);
	if (e->timeout_ms > 0) {
		struct timeval tv = {(time_t)(e->timeout_ms / 1000),
		                     (suseconds_t)(e->timeout_ms % 1000) * 1000};

		evtimer_add(e->timer, &tv);
	}
	e->connect_timer = evtimer_new(e->base, exec_connect_timer_cb, e);
	if (e->timeout_ms == 0 || e->timeout_ms > LK_CONNECT_TIMEOUT_S * 1000ULL) {
		struct timeval tv = {LK_CONNECT_TIMEOUT_S, 0};

		evtimer_add(e->connect_timer, &tv);
	}
	e->hosts = a->hosts;
	/* A folder of exec's own (by pid): a worker's folder holds only that worker. */
	xasprintf(&cgroup_name, "leasekeeper-exec-%ld", (long)getpid());
	sv_opts.cgroup_name = cgroup_name;
	sv_opts.cgroups = e->cgroups == CONFIG_CGROUPS_OFF        ? SUPERVISOR_CGROUPS_OFF
	                  : e->cgroups == CONFIG_CGROUPS_REQUIRED ? SUPERVISOR_CGROUPS_REQUIRED
	                                                          : SUPERVISOR_CGROUPS_AUTO;
	e->sv = svlink_start(e->base, &scb, e, &sv_opts);
	e->zk = zk_create(e->base, a->hosts, (int)a->session_timeout_ms, e->safety_margin_ms, auth,
	                  exec_zk_cb, e);
	/* The nodes exec creates get the worker's ACLs: the reader reads, the operator controls. */
	if (e->reader != NULL)
		zk_set_reader(e->zk, e->reader);
	if (e->operator_id != NULL)
		zk_set_operator(e->zk, a->root, e->operator_id);
	data = lease_data(e->node_id, e->name, clock_wall_ms());
	exec_lease_new(e, a->root, data, &lcb);
	free(data);
	if (!e->explicit_lock_path)
		e->rec =
		    jobrec_new(e->zk, e->root, e->name, e->leases, e->lock_path, NULL, &rcb, e);

	event_base_dispatch(e->base);

	rc = e->exit_code;
	/* The supervisor goes first: the session may close only once no job can be alive. */
	if (!svlink_free(e->sv))
		zk_abandon(e->zk);
	lease_free(e->lease);
	jobrec_free(e->rec);
	zk_free(e->zk);
	for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		event_free(e->signals[i]);
	event_free(e->timer);
	event_free(e->connect_timer);
	event_base_free(e->base);
	free(e->root);
	free(e->node_id);
	free(e->lock_path);
	free(cgroup_name);
	return rc;
}

/* `exec NAME -- CMD...`: one command under a lease, with the worker's safety. */
int
exec_main(int argc, char **argv)
{
	struct exec e;
	struct exec_args a;
	struct config *cfg = NULL;
	char host[HOST_NAME_MAX + 1], *auth = NULL;
	int rc;

	memset(&e, 0, sizeof e);
	memset(&a, 0, sizeof a);
	e.leases = 1;
	e.kill_grace_ms = 2000;
	e.safety_margin_ms = 1000;
	if ((rc = exec_options(argc, argv, &e, &a)) >= 0)
		return rc;
	log_init(a.verbose - 1, "exec");
	if ((rc = exec_check_args(&e, &a)) >= 0)
		return rc;
	if ((rc = exec_settle(&e, &a, &cfg, &auth, host, sizeof host)) < 0)
		rc = exec_run(&e, &a, auth != NULL ? auth : cfg != NULL ? cfg->auth : NULL);
	if (auth != NULL)
		explicit_bzero(auth, strlen(auth));
	free(auth);
	config_free(cfg);
	return rc;
}
