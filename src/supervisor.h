/* supervisor.h: the process that runs jobs and enforces lease deadlines, and main's handle. */
#ifndef SUPERVISOR_H
#define SUPERVISOR_H

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

const char *supervisor_exit_reason_name(enum proto_exit_reason);

#endif
