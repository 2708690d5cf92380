/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process and `leasekeeper exec`. */
/* svlink.h: main's handle on the supervisor process. */
#ifndef SVLINK_H
#define SVLINK_H

#include <stdint.h>
#include <sys/types.h>

#include "proto.h"
#include "supervisor.h"
#include "zk.h"

struct event_base;
struct svlink;

struct svlink_cb {
	void (*started)(uint32_t job, pid_t pid, void *arg);
	void (*start_failed)(uint32_t job, const char *why, void *arg);
	void (*exited)(uint32_t job, int status, enum proto_exit_reason, const struct proto_usage *,
	               void *arg);
	void (*died)(void *arg); /* the supervisor is gone; its jobs were killed */
	/*
	 * the supervisor is ready (what a previous one left is gone): how it contains runs,
	 * and the controllers (enum proto_controller bits) their limits can use
	 */
	void (*hello)(enum proto_containment, unsigned controllers, const char *note, void *arg);
	/* or NULL: a run's output from offset on (PROTO_OUTPUT; gaps are output lost) */
	void (*output)(uint32_t job, uint64_t offset, const char *buf, size_t len, void *arg);
	/* or NULL: the dead supervisor's run job ended at wall time gone_ms (PROTO_STALE_GONE) */
	void (*stale_gone)(uint32_t job, uint64_t gone_ms, void *arg);
};

struct svlink *svlink_start(struct event_base *, const struct svlink_cb *, void *arg,
                            const struct supervisor_opts *);
int svlink_containment(const struct svlink *);      /* enum proto_containment; -1: not yet said */
unsigned svlink_controllers(const struct svlink *); /* enum proto_controller bits, from hello */
int svlink_free(struct svlink *);
pid_t svlink_pid(const struct svlink *);
int svlink_reap(struct svlink *, pid_t pid, int status);
void svlink_session(struct svlink *, struct zk *, enum zk_event);
void svlink_job_start(struct svlink *, uint32_t job, uint64_t epoch, const struct proto_spec *);
void svlink_job_stop(struct svlink *, uint32_t job, int sig, int64_t grace_ms);
int svlink_running_jobs(const struct svlink *);
uint64_t svlink_run_end_ms(const struct svlink *, uint32_t job);

#endif
