/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process (main or the supervisor). */
/* proto.h: the messages between the main process and the supervisor. */
#ifndef PROTO_H
#define PROTO_H

#include <stddef.h>
#include <stdint.h>

struct event_base;
struct proto_conn;

#define PROTO_MAX_PAYLOAD 65536

enum proto_type {
	/* main -> supervisor */
	PROTO_START = 1, /* job, epoch; payload: the start spec */
	PROTO_STOP,      /* job; v1 first signal, v2 grace ms before SIGKILL (-1: never) */
	PROTO_DEADLINE,  /* epoch; v1 lease deadline (CLOCK_BOOTTIME ns) */
	PROTO_EPOCH_END, /* epoch: that session and every older one is gone: kill their jobs */
	/* supervisor -> main */
	PROTO_STARTED,      /* job; v1 pid (= process group) */
	PROTO_START_FAILED, /* job; payload: the reason */
	PROTO_EXITED,       /* job; v1 wait status of the leader, v2 enum proto_exit_reason;
	                       payload: the run's usage (proto_usage_add), or none */
	PROTO_HELLO,        /* v1 enum proto_containment, v2 the controllers runs get (enum
	                       proto_controller bits); payload: the run cgroups' folder, or
	                       why there is none. Sent once, when the cgroups of a previous
	                       supervisor or worker are empty and removed: jobs may start */
	PROTO_OUTPUT,       /* job; v1 the offset of the payload's first byte in the run's
	                       output; payload: what the run wrote (runs whose output is kept,
	                       record_output). Sent only when nothing else waits: a gap in the
	                       offsets is output main never got (`logs --follow` says so) */
	PROTO_STALE_GONE,   /* job: the run whose cgroup a previous supervisor left holding
	                       processes (a daemon that left the run's process group); v1 the
	                       wall time (ms) they were all gone, the run's true end. Sent
	                       before PROTO_HELLO */
};

/* How the supervisor keeps a run's processes together (PROTO_HELLO). */
enum proto_containment {
	PROTO_CONTAIN_PGROUP, /* process groups: a process that calls setsid() escapes */
	PROTO_CONTAIN_CGROUP, /* a cgroup v2 per run */
	PROTO_CONTAIN_FAILED, /* cgroups = required and no usable cgroup v2: no job may start */
};

/* The cgroup v2 controllers a run's limits need (PROTO_HELLO's v2: those runs get). */
enum proto_controller {
	PROTO_CTL_MEMORY = 1,
	PROTO_CTL_CPU = 2,
	PROTO_CTL_PIDS = 4,
	PROTO_CTL_IO = 8,
};

/* Why a job ended, as the supervisor saw it. */
enum proto_exit_reason {
	PROTO_EXIT_NORMAL,   /* the command ended on its own */
	PROTO_EXIT_STOPPED,  /* main asked */
	PROTO_EXIT_DEADLINE, /* the lease deadline passed */
	PROTO_EXIT_EPOCH,    /* the session was declared lost */
	PROTO_EXIT_OOM,      /* it ended on its own, and the OOM killer killed in its cgroup */
};

struct proto_msg {
	uint32_t type;
	uint32_t job;
	uint64_t epoch;
	int64_t v1;
	int64_t v2;
	size_t len;
	const char *payload; /* NUL-terminated for convenience; valid during the callback */
};

/* Start spec: tagged strings. */
enum proto_tag {
	PROTO_TAG_NAME = 'n',   /* job name, for logs */
	PROTO_TAG_RUN_ID = 'r', /* the run's id (docs/design.md, "Run identity"), for logs */
	PROTO_TAG_ARG = 'a',    /* one argv element, in order */
	PROTO_TAG_ENV = 'e',    /* one KEY=VALUE, added to the job's environment */
	PROTO_TAG_INHERIT_ENV =
	    'i', /* (empty) start from the supervisor's environment, not a clean one */
	PROTO_TAG_WORKDIR = 'w',
	PROTO_TAG_USER = 'u',    /* user name: uid, primary gid, groups, HOME */
	PROTO_TAG_GROUP = 'g',   /* group name overriding the primary group */
	PROTO_TAG_UMASK = 'm',   /* octal */
	PROTO_TAG_LOG = 'o',     /* output file; absent: inherit stdin/stdout/stderr */
	PROTO_TAG_LOG_MAX = 'M', /* bytes before rotation */
	PROTO_TAG_GRACE = 'k',   /* kill grace in ms for deadline kills */
	PROTO_TAG_TAIL = 't',    /* bytes of the output's end sent back in EXITED (record_output) */
	PROTO_TAG_HOOK = 'h',    /* a hook: ms it may run, outside any lease (no epoch deadline) */
	/* limits, each a positive decimal, applied to the run's cgroup where it has one */
	PROTO_TAG_MEMORY_MAX = 'X',  /* bytes: memory.max */
	PROTO_TAG_MEMORY_HIGH = 'H', /* bytes: memory.high */
	PROTO_TAG_CPU_MAX = 'c',     /* percent of one CPU: cpu.max */
	PROTO_TAG_TASKS_MAX = 'T',   /* pids.max */
	PROTO_TAG_IO_WEIGHT = 'W',   /* 1-10000: io.weight */
	/* usage, PROTO_EXITED's payload: each a decimal */
	PROTO_TAG_CPU_USEC = 'C', /* CPU time of every process of the run (cpu.stat) */
	PROTO_TAG_MEM_PEAK = 'P', /* bytes: the most memory the run used (memory.peak) */
	PROTO_TAG_OUTPUT = 'O',   /* the last bytes of its output, at most the spec's 't', no NUL */
	/* times, PROTO_EXITED's payload: each wall-clock ms as the supervisor saw it */
	PROTO_TAG_EXEC_MS = 'S',  /* the command was exec'd */
	PROTO_TAG_END_MS = 'E',   /* the run's last process was gone (its cgroup or group empty) */
	PROTO_TAG_TERM_MS = 'Q',  /* the first signal was sent */
	PROTO_TAG_TERM_SIG = 'q', /* ... which signal */
	PROTO_TAG_TERM_WHY = 'R', /* ... why (enum proto_signal_why) */
	PROTO_TAG_KILL_MS = 'K',  /* SIGKILL was sent */
	PROTO_TAG_KILL_WHY = 'L', /* ... why (enum proto_signal_why) */
};

/* Why the supervisor signalled a run (PROTO_EXITED's times; the run record's names). */
enum proto_signal_why {
	PROTO_WHY_NONE,
	PROTO_WHY_STOP,         /* main asked */
	PROTO_WHY_DEADLINE,     /* the lease deadline: near (SIGTERM) or passed (SIGKILL) */
	PROTO_WHY_SESSION,      /* the session epoch is over */
	PROTO_WHY_MAIN_GONE,    /* main went away */
	PROTO_WHY_GRACE,        /* kill_grace passed after the first signal */
	PROTO_WHY_LEFTOVERS,    /* the leader exited and left processes */
	PROTO_WHY_HOOK_TIMEOUT, /* a hook ran for its hook_timeout */
};
#define PROTO_WHY_MAX PROTO_WHY_HOOK_TIMEOUT

/* A run's limits (0: none). */
struct proto_limits {
	uint64_t memory_max, memory_high; /* bytes */
	uint64_t cpu_max;                 /* percent of one CPU */
	uint64_t tasks_max;
	uint64_t io_weight;
};

/* The most a limit in a start spec may be. */
#define PROTO_MAX_MEMORY      (UINT64_C(1) << 62)
#define PROTO_MAX_CPU_PERCENT 100000
#define PROTO_MAX_TASKS       4194304
#define PROTO_MAX_IO_WEIGHT   10000

/* The most output a run's EXITED carries back (for its run record, record_output). */
#define PROTO_MAX_TAIL 16384

/*
 * What a run used, as its cgroup counted it (-1: not known: no cgroup, no controller), and
 * the end of its output (output_len bytes, no NUL; output NULL: none kept). Read back, the
 * output points into the payload. The times are the supervisor's, wall-clock ms taken when
 * it saw each event (-1: it did not happen, or not known); term_sig 0: no first signal.
 * exec_ms, the run's start, is when it made the run's first process, for a run whose
 * command was then exec'd.
 */
struct proto_usage {
	int64_t cpu_usec;
	int64_t mem_peak;
	const char *output;
	size_t output_len;
	int64_t exec_ms, end_ms, term_ms, kill_ms;
	int term_sig;
	enum proto_signal_why term_why, kill_why;
};

struct proto_spec {
	char *buf;
	size_t len;
};

/*
 * A connection reads every message waiting on its socket and hands each one that decodes to
 * msg_cb; a frame that is truncated, oversized (even if recv() cut it to fit) or of no known
 * type is logged and dropped. eof_cb (may be NULL) is called once, when the peer is gone or
 * the socket fails.
 */
typedef void (*proto_msg_cb)(const struct proto_msg *, void *arg);
typedef void (*proto_eof_cb)(void *arg);

struct proto_conn *proto_conn_new(struct event_base *, int fd, proto_msg_cb, proto_eof_cb,
                                  void *arg);
void proto_conn_free(struct proto_conn *);
int proto_send_lossy(struct proto_conn *, uint32_t type, uint32_t job, uint64_t epoch, int64_t v1,
                     const void *payload, size_t len);
void proto_send(struct proto_conn *, uint32_t type, uint32_t job, uint64_t epoch, int64_t v1,
                int64_t v2, const void *payload, size_t len);

/* Kill grace when a start spec names none, and the most one may name (a day). */
#define PROTO_DEFAULT_GRACE_MS 2000
#define PROTO_MAX_GRACE_MS     86400000ULL
/* The longest run id a start spec may carry. */
#define PROTO_MAX_RUN_ID 160
/* The most arguments, and the most environment entries, in one start spec. */
#define PROTO_SPEC_MAX_ITEMS 4096

/* A start spec decoded: what the supervisor needs to start one run. */
struct proto_run {
	const char *name;     /* NULL: none given */
	const char *run_id;   /* NULL: none given (a hook); else [A-Za-z0-9._-], at most 160 */
	const char *log_path; /* absolute, or NULL: inherit the supervisor's output */
	uint64_t log_max;
	uint64_t tail_max; /* bytes of output's end to send back in EXITED, 0: none */
	uint64_t hook_ms;  /* a hook: killed after this long, whatever the session; 0: a run */
	uint64_t grace_ms;
	char **argv;     /* NULL-terminated, never empty; the strings point into the payload */
	char **env;      /* "KEY=VALUE", NULL-terminated, or NULL */
	int inherit_env; /* 1: env is added to the supervisor's environment (exec); 0: a clean one */
	const char *workdir, *user, *group;
	int umask; /* -1: inherit */
	struct proto_limits limits;
};

/* Main writes a start spec (runspec.c) with these; free its buffer with proto_spec_free. */
void proto_spec_add(struct proto_spec *, enum proto_tag, const char *value);
void proto_spec_free(struct proto_spec *);

/*
 * The supervisor reads one with this: decode and check a start spec (the payload of
 * PROTO_START) into run, whose strings then point into payload; -1 with *cause (caller
 * frees) when it is malformed. Free with proto_run_free.
 */
int proto_spec_parse(const char *payload, size_t len, struct proto_run *, char **cause);
void proto_run_free(struct proto_run *);

/* A run's limits, added to a start spec (runspec.c); those at 0 are left out. */
void proto_spec_add_limits(struct proto_spec *, const struct proto_limits *);

/*
 * A run's usage and output's end as PROTO_EXITED's payload (the supervisor), and read back
 * (main): 0, or -1 when the payload is malformed (usage then all -1, no output). An empty
 * payload is all -1. The output must hold no NUL (the supervisor replaces them).
 */
void proto_usage_init(struct proto_usage *);
void proto_usage_add(struct proto_spec *, const struct proto_usage *);
int proto_usage_parse(const char *payload, size_t len, struct proto_usage *);

const char *proto_type_name(uint32_t type);
const char *proto_exit_reason_name(enum proto_exit_reason);
const char *proto_containment_name(enum proto_containment);
const char *proto_signal_why_name(enum proto_signal_why);

#endif
