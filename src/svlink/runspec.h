/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process and `leasekeeper exec`. */
/* runspec.h: what one run needs, as the supervisor is told it. */
#ifndef RUNSPEC_H
#define RUNSPEC_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

/*
 * A run: the command, its LEASEKEEPER_* facts and how the supervisor runs it. Optional
 * strings are NULL when not set; tick and umask are -1.
 */
struct runspec {
	const char *name;
	const char *run_id; /* a run's id (LEASEKEEPER_RUN_ID), NULL for a hook */
	char *const *argv;  /* NULL-terminated */
	char *const *env;   /* the job's own NAME=VALUE, before LEASEKEEPER_* */
	size_t nenv;
	char *const *pass_env; /* config_job's pass_env: the worker's variables passed on */
	int inherit_env; /* exec: the command keeps the caller's environment; jobs: 0, clean */
	const char *node_id;
	int64_t fence;
	const char *fences; /* LEASEKEEPER_FENCES: "path=fence,..." for every lock, or NULL */
	int leases;
	int deadline_ms; /* LEASEKEEPER_DEADLINE_MS */
	int64_t tick;    /* scheduled: the tick, seconds; -1 if none */
	const char *workdir;
	const char *user;
	const char *group;
	int umask; /* -1 to inherit */
	const char *log_file;
	uint64_t log_max_bytes;
	uint64_t record_output; /* bytes of the output's end sent back at the exit, 0: none */
	uint64_t kill_grace_ms;
	struct proto_limits limits; /* 0 in a field: no limit */
	/* A hook: killed after hook_ms; facts are its LEASEKEEPER_* (NULL-terminated) */
	uint64_t hook_ms; /* 0: a run of the job's command */
	char *const *facts;
};

void runspec_build(const struct runspec *, struct proto_spec *);

struct config;
struct config_job;

/* A limit of a job that this host cannot enforce (runspec_unenforced). */
typedef void (*runspec_limit_cb)(const struct config_job *, const char *key, const char *value,
                                 const char *controller, void *arg);

/*
 * Call cb for every limit of cfg's jobs whose controller is not among controllers (enum
 * proto_controller bits: those the run cgroups get; 0 without cgroups). How many.
 */
int runspec_unenforced(const struct config *, unsigned controllers, runspec_limit_cb, void *arg);

/* The enum proto_controller bit of a controller's name, or 0. */
unsigned runspec_controller_bit(const char *name);

#endif
