/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/* config.h: the worker configuration and its job files, parsed and validated. */
#ifndef CONFIG_H
#define CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct schedule;

/* What a job does with its running command when the worker is asked to stop. */
enum config_on_shutdown { CONFIG_SHUTDOWN_TERMINATE, CONFIG_SHUTDOWN_WAIT };
/* What a scheduled job does with the ticks it missed (catch_up). */
enum config_catch_up { CONFIG_CATCH_UP_LATEST, CONFIG_CATCH_UP_NONE, CONFIG_CATCH_UP_ALL };
/* What a scheduled job does with a tick due while its run goes on (overlap). */
enum config_overlap { CONFIG_OVERLAP_QUEUE, CONFIG_OVERLAP_SKIP, CONFIG_OVERLAP_REPLACE };

/* How the workers share a scheduled job's tick ([worker] tick_claim). */
enum config_tick_claim {
	CONFIG_TICK_RANKED,  /* the first in rank contends; the others step in only if needed */
	CONFIG_TICK_CONTEND, /* every worker contends at every tick (for benchmarks) */
};

/* [worker] cgroups: how runs are contained. */
enum config_cgroups { CONFIG_CGROUPS_AUTO, CONFIG_CGROUPS_REQUIRED, CONFIG_CGROUPS_OFF };

/*
 * A run's resource limits, enforced through its cgroup where the host delegates the
 * controller (memory, cpu, pids, io); 0 in a field: no limit.
 */
struct config_limits {
	uint64_t memory_max;  /* bytes: memory.max (the OOM killer beyond it) */
	uint64_t memory_high; /* bytes: memory.high (throttled and reclaimed beyond it) */
	uint64_t cpu_max;     /* percent of one CPU: cpu.max, 50 is half a CPU, 200 two */
	uint64_t tasks_max;   /* processes and threads: pids.max */
	uint64_t io_weight;   /* 1-10000: io.weight (100 is the kernel's default) */
};

/* Commands run after a run (through /bin/sh -c), as the job's user; NULL: none. */
struct config_hooks {
	char *on_failure; /* outcome failed, timeout, oom or aborted */
	char *on_success; /* outcome ok */
	char *on_missed;  /* a tick nobody ran, by the worker that records it */
	uint64_t timeout_ms;
};

#define CONFIG_DEFAULT_HOOK_TIMEOUT_MS 30000
#define CONFIG_MAX_HOOK_TIMEOUT_MS     3600000

/* Bytes of a run's output kept in its run record unless the job says (record_output). */
#define CONFIG_DEFAULT_RECORD_OUTPUT 4096

/* The controller a limit needs: "memory", "cpu", "pids" or "io". */
#define CONFIG_LIMIT_KEYS 5
extern const char *const config_limit_keys[CONFIG_LIMIT_KEYS];
extern const char *const config_limit_controllers[CONFIG_LIMIT_KEYS];
/* The value of limit key i (config_limit_keys order). */
uint64_t config_limit_value(const struct config_limits *, int i);
/* A limit's value as written in the config (caller's buffer). */
const char *config_limit_format(int i, uint64_t value, char *buf, size_t size);

/* One term of a job's constraint: the worker's label key must (or must not) be value. */
struct config_term {
	char *key;
	char *value;
	int negate; /* key!=value: the worker must not carry key=value */
};

/* The kind of one of a job's locks (the same order as lease.h's enum lease_kind). */
enum config_lock_kind {
	CONFIG_LOCK_MUTEX,
	CONFIG_LOCK_SEMAPHORE,
	CONFIG_LOCK_READ,  /* the read side of a read-write lock */
	CONFIG_LOCK_WRITE, /* its write side */
};

/* One lock a job takes (config-lock.c). */
struct config_lock {
	char *name;  /* the lock's name, or NULL when given as an absolute path */
	char *znode; /* resolved: <root>/{mutex,semaphore,rwlock}/<name>, or the path */
	enum config_lock_kind kind;
	int leases; /* a semaphore's size; else 1 */
};

/* One [job NAME] section, with every default resolved. */
struct config_job {
	char *name;
	char *file; /* where the section starts */
	int line;

	char *command;
	int shell;              /* 1: /bin/sh -c command; 0: split on whitespace, quotes group */
	char **argv;            /* the resolved argv (NULL terminated): sh -c or the split words */
	char *schedule;         /* as written: "@continuous", "0 3 * * *", "@every 30s" */
	struct schedule *sched; /* parsed; never NULL once loaded */
	char *timezone;         /* IANA name; NULL: the worker's */
	char *zone; /* the zone sched runs in: timezone, else the worker's; NULL: local */

	int leases;      /* >= 1; 1 is a mutex, N a semaphore */
	char *lock;      /* lock name (defaults to the job name) */
	char *lock_path; /* absolute path that overrides <root>/{mutex,semaphore}/<lock>, or NULL */
	char *lock_znode; /* resolved: lock_path, <root>/mutex/<lock> or <root>/semaphore/<lock> */
	struct config_lock *locks; /* every lock, as written; never empty once resolved */
	size_t nlocks;
	int has_locks;                  /* locks or lock_mode is set */
	int per_tick;                   /* hosts that run one tick (scheduled jobs), default 1 */
	uint64_t jitter_ms;             /* scheduled: ticks shifted by a per-job offset below it */
	struct config_term *constraint; /* every term must match the worker's labels */
	size_t nconstraint;
	uint64_t start_deadline_ms; /* scheduled: a tick not started by then is missed */

	uint64_t timeout_ms;           /* 0: none */
	int retries;                   /* scheduled: extra attempts after a failed run */
	enum config_catch_up catch_up; /* scheduled: the missed ticks run (latest, none, all) */
	int catch_up_limit;            /* catch_up = all: at most this many, the newest */
	enum config_overlap overlap;   /* scheduled: a tick due while the run goes on */
	uint64_t retry_backoff_ms;     /* first retry delay, doubled each time, with jitter */
	int max_failures; /* @continuous: consecutive failures before handing the lease over */
	uint64_t restart_backoff_ms; /* @continuous: first restart delay, doubled per failure */
	uint64_t kill_grace_ms; /* SIGTERM to SIGKILL when the job is stopped; default [safety] */

	char *user;    /* run as; NULL: the worker's user */
	char *group;   /* NULL: the user's primary group */
	uid_t uid;     /* user resolved at load time; (uid_t)-1 when user is NULL */
	gid_t gid;     /* group, else the user's primary group; (gid_t)-1 when neither is set */
	int umask;     /* -1: inherit */
	char *workdir; /* NULL: the state dir */
	char **env;    /* "KEY=VALUE", NULL terminated */
	size_t nenv;
	char **pass_env; /* names (or PREFIX*) passed from the worker's environment; NULL ends */
	char **params;   /* "NAME" or "NAME=DEFAULT" a manual run may be given; NULL: none */
	char **after;    /* chained: parents, "JOB" (its ok runs), "JOB:any", "JOB:failed"; NULL */

	struct config_limits limits; /* [worker]'s, unless the job sets its own ("max": none) */

	char *log_file;            /* default <state_dir>/jobs/<name>.log */
	uint64_t log_max_bytes;    /* size cap before rotation to .1 */
	int history;               /* run records kept in ZooKeeper */
	uint64_t record_output;    /* bytes of the output's end kept in each run record, 0: none */
	struct config_hooks hooks; /* [worker]'s, unless the job sets its own */
	enum config_on_shutdown on_shutdown;
};

/* The worker: conf/worker.ini plus every job file it names. */
struct config {
	char *file;
	char *dir;        /* absolute directory of file: relative paths are resolved against it */
	char **job_files; /* the job files [worker] jobs matched, in the order they were read */
	size_t njob_files;

	/* [zookeeper] */
	char *hosts; /* "host:port,host:port[/chroot]" */
	char *root;  /* default /leasekeeper */
	uint64_t session_timeout_ms;
	char *auth;        /* "user:password" for digest auth (from auth or auth_file), or NULL */
	char *auth_file;   /* where auth was read from, or NULL */
	int require_acl;   /* refuse to start if others may create or delete in our folders */
	char *reader;      /* a read-only identity's digest id, USER:BASE64, given READ; or NULL */
	char *operator_id; /* the operator identity's digest id: control records only; or NULL */

	/* [worker] */
	char *node_id; /* default: the host name */
	char *jobs;    /* a file, a directory (every *.ini in it) or a glob; relative to file */
	char *state_dir;
	int allow_root_jobs;    /* jobs may run as root only when this is set */
	int allow_no_jobs;      /* a configuration without jobs is refused unless this is set */
	int allow_open_control; /* honour run requests, pauses, drains on a root without ACLs */
	int allow_open_output;  /* record output tails in run records without credentials */
	enum config_on_shutdown on_shutdown;
	enum config_cgroups cgroups; /* a cgroup v2 per run: auto, required or off */
	struct config_limits limits; /* every job's defaults */
	char *timezone;  /* default zone for jobs; NULL: the process's (TZ or /etc/localtime) */
	char **pass_env; /* default pass_env of jobs, NULL terminated (empty: none) */
	enum config_tick_claim tick_claim;
	int unhealthy_after; /* host start failures in a row that make it unhealthy; 0 never */
	uint64_t unhealthy_probe_ms; /* unhealthy: a trial start at most this often */
	char **labels;               /* "key=value", sorted by key, NULL terminated (empty: none) */
	struct config_hooks hooks;   /* every job's defaults */

	/* [safety] */
	uint64_t safety_margin_ms;
	uint64_t kill_grace_ms;

	/* [http] */
	char *http_listen; /* "127.0.0.1:9187", or NULL when disabled */

	struct config_job **jobs_list;
	size_t njobs;
};

/* Every problem found while loading, each "file:line: message" (the message names the fix). */
struct config_errors {
	char **lines;
	size_t n;
};

#define CONFIG_LOAD_ALLOW_NO_JOBS 0x1 /* a command that runs no job: no jobs is no error */
int config_load(const char *file, struct config **out, struct config_errors *errors);
int config_load_opts(const char *file, struct config **out, struct config_errors *errors,
                     unsigned flags);
struct config *config_load_print(const char *file);
void config_free(struct config *);
int config_free_jobs(struct config *, size_t n);
void config_errors_free(struct config_errors *);
/* The same load in steps (config.c): new, step until it returns 1, finish. */
struct config_loader;
struct config_loader *config_loader_new(const char *file, unsigned flags);
int config_loader_step(struct config_loader *);
int config_loader_finish(struct config_loader *, struct config **out, struct config_errors *);
void config_print(const struct config *, FILE *);
struct config_job *config_find_job(const struct config *, const char *name);
int config_job_equal(const struct config_job *, const struct config_job *);
int config_locks_equal(const struct config_job *, const struct config_job *);
const char *config_on_shutdown_name(enum config_on_shutdown);
const char *config_lock_kind_name(enum config_lock_kind);
const char *config_catch_up_name(enum config_catch_up);
const char *config_overlap_name(enum config_overlap);
const char *config_tick_claim_name(enum config_tick_claim);
const char *config_cgroups_name(enum config_cgroups);
const char *config_auth_warning(const struct config *);

/*
 * Whether hosts is a valid ZooKeeper connect string, "HOST:PORT[,HOST:PORT...][/chroot]"
 * (hosts are names, IPv4 or [IPv6] addresses, ports 1-65535); if not, *cause names the fix.
 */
int config_valid_hosts(const char *hosts, char **cause);

/*
 * Whether labels ("key=value", NULL terminated) satisfy every term of the job's constraint;
 * if not, and why is not NULL, why (size bytes) gets the first term that fails ("zone=b").
 */
#define CONFIG_TERM_MAX 132 /* a term's text with its NUL: 63 + "!=" + 63 + 1, rounded */
int config_job_matches(const struct config_job *, char *const *labels, char *why, size_t size);
/* A constraint as written in the config ("zone=a, role!=batch"), caller frees; "" if none. */
char *config_constraint_text(const struct config_job *);

/* Whether the variable name (len bytes) is one that pass_env names. */
int config_pass_env_match(char *const *pass_env, const char *name, size_t len);
/*
 * The program a job without a shell runs: argv[0] searched in the PATH it will start
 * with (from env, else pass_env of the caller's PATH, else LK_JOB_PATH), into buf; NULL
 * when no executable file is found. For display: at run time the child searches again.
 */
const char *config_job_program(const struct config_job *, char *buf, size_t size);

#endif
