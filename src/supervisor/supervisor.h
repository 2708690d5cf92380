/* supervisor.h: the process that runs jobs and enforces lease deadlines, and main's handle. */
#ifndef SUPERVISOR_H
#define SUPERVISOR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto.h"

struct event_base;
struct supervisor;

struct supervisor_cb {
	void (*started)(uint32_t job, pid_t pid, void *arg);
	void (*start_failed)(uint32_t job, const char *why, void *arg);
	void (*exited)(uint32_t job, int status, enum proto_exit_reason, void *arg);
	void (*died)(void *arg); /* the supervisor is gone; its jobs were killed */
};

struct supervisor *supervisor_start(struct event_base *, const struct supervisor_cb *, void *arg);
int supervisor_free(struct supervisor *);
pid_t supervisor_pid(const struct supervisor *);
int supervisor_reap(struct supervisor *, pid_t pid, int status);
void supervisor_deadline(struct supervisor *, uint64_t epoch, uint64_t deadline_ns);
void supervisor_epoch_end(struct supervisor *, uint64_t epoch);
void supervisor_job_start(struct supervisor *, uint32_t job, uint64_t epoch,
                          const struct proto_spec *);
void supervisor_job_stop(struct supervisor *, uint32_t job, int sig, int64_t grace_ms);
int supervisor_running_jobs(const struct supervisor *);

/* Kill grace when a start spec names none, and the most one may name (a day). */
#define SUPERVISOR_DEFAULT_GRACE_MS 2000
#define SUPERVISOR_MAX_GRACE_MS     86400000ULL
/* The most arguments, and the most environment entries, in one start spec. */
#define SUPERVISOR_SPEC_MAX_ITEMS 4096

/* A start spec decoded: what the supervisor needs to start one job. */
struct supervisor_spec {
	const char *name;     /* NULL: none given */
	const char *log_path; /* absolute, or NULL: inherit the supervisor's output */
	uint64_t log_max;
	uint64_t grace_ms;
	char **argv; /* NULL-terminated, never empty; the strings point into the payload */
	char **env;  /* "KEY=VALUE", NULL-terminated, or NULL */
	const char *workdir, *user, *group;
	int umask; /* -1: inherit */
};

/*
 * Decode and check a start spec (the payload of PROTO_START); -1 with *cause (caller frees)
 * when it is malformed. Pure, so a fuzzer can drive it. Free with supervisor_spec_free.
 */
int supervisor_spec_parse(const char *payload, size_t len, struct supervisor_spec *, char **cause);
void supervisor_spec_free(struct supervisor_spec *);

const char *supervisor_exit_reason_name(enum proto_exit_reason);

#endif
